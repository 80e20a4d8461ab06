// server-alias: more host names answered by the same server. Host-level: the oldest Ingress of the
// host that sets it wins; aliases that collide with a real host are dropped by the build.

import { hostProblem } from '../hosts.ts';
import type { AnnotationGroup } from './group.ts';

export interface ServerAliasAnnotations {
  /** lower-cased, deduplicated, sorted */
  aliases: string[];
}

export const serverAlias: AnnotationGroup<ServerAliasAnnotations> = {
  scope: 'server',
  annotations: [
    {
      name: 'server-alias',
      default: '',
      doc: 'Comma-separated extra host names (exact or single-label wildcard) served like the Ingress host.',
    },
  ],
  defaults: { aliases: [] },
  parse(read) {
    const raw = read.string('server-alias');
    if (raw === undefined) return { aliases: [] };
    const aliases = new Set<string>();
    for (const part of raw.split(',')) {
      const alias = part.trim().toLowerCase();
      if (alias === '') continue;
      const problem = hostProblem(alias);
      if (problem !== null) {
        // ingress-nginx renders aliases verbatim into server_name; anything but a host name is refused here.
        read.invalid('server-alias', raw, `alias "${alias}": ${problem}`, 'drop');
        return { aliases: [] };
      }
      aliases.add(alias);
    }
    return { aliases: [...aliases].sort() };
  },
  isSet: (value) => value.aliases.length > 0,
};
