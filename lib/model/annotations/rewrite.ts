// use-regex and rewrite-target: recorded on each route; either one switches the whole host to regex
// matching (see Server.regex). The data plane applies the rewrite.

import type { AnnotationGroup } from './group.ts';

export interface RewriteAnnotations {
  /** `use-regex`: paths of the host are case-insensitive regexes anchored at the start */
  useRegex: boolean;
  /** `rewrite-target`: the upstream URI, `$1..$n` refer to captures of the path regex; null when unset */
  target: string | null;
}

// ingress-nginx's validator for rewrite-target (parser.RegexPathWithCapture)
const REWRITE_TARGET = /^\/?[-._~a-zA-Z0-9/:$]*$/;

export const rewrite: AnnotationGroup<RewriteAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'use-regex',
      default: 'false',
      doc: 'Match every path of the host as a case-insensitive regex anchored at the start.',
    },
    {
      name: 'rewrite-target',
      default: '',
      doc: 'Rewrite the upstream URI; $1..$n are captures of the path regex. Turns on regex matching host-wide.',
    },
  ],
  defaults: { useRegex: false, target: null },
  parse(read) {
    const useRegex = read.bool('use-regex', false, 'default');
    let target = read.string('rewrite-target') ?? null;
    if (target !== null && !REWRITE_TARGET.test(target)) {
      read.invalid('rewrite-target', target, 'only letters, digits and -._~/:$ are allowed', 'default');
      target = null;
    }
    return { useRegex, target };
  },
};
