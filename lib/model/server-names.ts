// The other names a server answers to: its server-alias names, and the name from-to-www-redirect
// sends to it. A name that is already a host of its own, or taken, is dropped with a diagnostic.

import type { ServerDraft } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { Server } from './types.ts';

export function resolveAliases(
  servers: Server[],
  drafts: Map<string, ServerDraft>,
  diagnostics: DiagnosticsCollector,
): void {
  const claimed = new Map<string, string>();
  for (const server of servers) {
    const source = drafts.get(server.hostname)?.annotationSource.alias;
    if (source === undefined) continue;
    const kept: string[] = [];
    for (const alias of server.annotations.alias.aliases) {
      let reason: string | null = null;
      if (alias === server.hostname) reason = 'is the host itself';
      else if (drafts.has(alias)) reason = 'is already a host of its own';
      else if (claimed.has(alias)) reason = `is already an alias of host ${claimed.get(alias)}`;
      if (reason !== null) {
        diagnostics.report(
          'Ingress',
          source,
          'ALIAS_CONFLICT',
          `server-alias ${alias} of host ${server.hostname} ${reason}; the alias is ignored`,
          undefined,
          { host: server.hostname },
        );
        continue;
      }
      claimed.set(alias, server.hostname);
      kept.push(alias);
    }
    server.annotations = { ...server.annotations, alias: { aliases: kept } };
  }
}

/**
 * from-to-www-redirect: `www.<host>` for a host without `www.`, else the host minus `www.`; skipped
 * when that name is a host of its own (ingress-nginx) or the host is a wildcard.
 */
export function resolveWwwRedirects(
  servers: Server[],
  drafts: Map<string, ServerDraft>,
  diagnostics: DiagnosticsCollector,
): void {
  for (const server of servers) {
    const setting = server.annotations.fromToWww;
    const source = drafts.get(server.hostname)?.annotationSource.fromToWww;
    if (!setting.enabled || source === undefined) continue;
    const host = server.hostname;
    const from = host.startsWith('www.') ? host.slice(4) : `www.${host}`;
    let reason: string | null = null;
    if (host.startsWith('*.')) reason = 'the host is a wildcard';
    else if (drafts.has(from)) reason = `${from} is a host of its own`;
    if (reason !== null) {
      diagnostics.report(
        'Ingress',
        source,
        'WWW_REDIRECT_SKIPPED',
        `from-to-www-redirect on host ${host}: ${reason}; no redirect is made`,
      );
      continue;
    }
    server.annotations = { ...server.annotations, fromToWww: { enabled: true, from } };
  }
}
