// app-root: a request for `/` on the host answers 302 to `<scheme>://<Host header><app-root>`
// (ingress-nginx renders it at server level, before any location: `if ($uri = /) { return 302 ... }`).
// Host-level: the oldest Ingress of the host that sets it wins. It must be a path starting with `/`
// (not a URL); anything else drops the Ingress, as ingress-nginx's parser errors.

import type { AnnotationGroup } from './group.ts';

export interface AppRootAnnotations {
  /** null: none */
  path: string | null;
}

const PATH = /^\/[^\s?#]*(\?[^\s#]*)?$/;

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
    if (!PATH.test(value)) {
      read.invalid('app-root', value, 'expected a path starting with /', 'drop');
      return { path: null };
    }
    return { path: value };
  },
  isSet: (value) => value.path !== null,
};
