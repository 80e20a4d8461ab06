// app-root: a request for `/` on the host answers 302 to `<scheme>://<Host header><app-root>`
// (ingress-nginx renders it at server level, before any location: `if ($uri = /) { return 302 ... }`).
// Host-level: the oldest Ingress of the host that sets it wins. As ingress-nginx's rewrite parser: a
// path starting with `/` of letters, digits and -._~/:$ only (no query, no URL); anything else is
// ignored with a warning, the Ingress is kept.

import type { AnnotationGroup } from './group.ts';
import { matches, PATH_WITH_CAPTURES } from './validators.ts';

export interface AppRootAnnotations {
  /** null: none */
  path: string | null;
}

export const appRoot: AnnotationGroup<AppRootAnnotations> = {
  scope: 'server',
  annotations: [
    {
      name: 'app-root',
      default: '',
      doc: 'Redirect requests for / on the host (302) to this path, e.g. /app1.',
    },
  ],
  defaults: { path: null },
  parse(read) {
    const value = read.string('app-root');
    if (value === undefined) return { path: null };
    if (!value.startsWith('/') || !matches(PATH_WITH_CAPTURES, value, false)) {
      read.invalid(
        'app-root',
        value,
        'expected a path starting with / of letters, digits and -._~/:$',
        'default',
      );
      return { path: null };
    }
    return { path: value };
  },
  isSet: (value) => value.path !== null,
};
