// use-regex, rewrite-target and x-forwarded-prefix: recorded on each route; use-regex or a
// rewrite-target other than the path switches the whole host to regex matching (see Server.regex).
// The data plane applies the rewrite: the upstream path becomes the target with `$1..$9` replaced by
// the captures of the path regex, the query string kept; x-forwarded-prefix is sent only with it.

import type { AnnotationGroup } from './group.ts';

export interface RewriteAnnotations {
  /** `use-regex`: paths of the host are case-insensitive regexes anchored at the start */
  useRegex: boolean;
  /** `rewrite-target`: the upstream URI, `$1..$n` refer to captures of the path regex; null when unset */
  target: string | null;
  /** `x-forwarded-prefix`: the X-Forwarded-Prefix header sent with a rewrite (may use `$1..$n`); null when unset */
  forwardedPrefix: string | null;
}

// ingress-nginx's validator for rewrite-target and x-forwarded-prefix (parser.RegexPathWithCapture)
const PATH_WITH_CAPTURES = /^\/?[-._~a-zA-Z0-9/:$]*$/;

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
    {
      name: 'x-forwarded-prefix',
      default: '',
      doc: 'Send X-Forwarded-Prefix with this value (may use $1..$n) on routes with a rewrite-target.',
    },
  ],
  defaults: { useRegex: false, target: null, forwardedPrefix: null },
  parse(read) {
    const useRegex = read.bool('use-regex', false, 'default');
    let target = read.string('rewrite-target') ?? null;
    if (target !== null && !PATH_WITH_CAPTURES.test(target)) {
      read.invalid('rewrite-target', target, 'only letters, digits and -._~/:$ are allowed', 'default');
      target = null;
    }
    // ingress-nginx validates it with spaces removed, and its error skips the Ingress
    let forwardedPrefix = read.string('x-forwarded-prefix') ?? null;
    if (forwardedPrefix !== null && !PATH_WITH_CAPTURES.test(forwardedPrefix.replaceAll(' ', ''))) {
      read.invalid(
        'x-forwarded-prefix',
        forwardedPrefix,
        'only letters, digits, spaces and -._~/:$ are allowed',
        'drop',
      );
      forwardedPrefix = null;
    }
    return { useRegex, target, forwardedPrefix };
  },
};
