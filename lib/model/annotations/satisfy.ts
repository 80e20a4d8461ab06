// satisfy: how the access checks of a location combine (NGINX's `satisfy` directive). `all` (the
// default): the allow/deny lists and authentication must all let the request in. `any`: one is
// enough (an allowlisted client skips authentication, a client the lists reject may still log in).
// ingress-nginx ignores any other value (the parser falls back to the default, the Ingress is used).

import type { AnnotationGroup } from './group.ts';

export interface SatisfyAnnotations {
  /** `satisfy: "any"` */
  any: boolean;
}

export const satisfy: AnnotationGroup<SatisfyAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'satisfy',
      default: 'all',
      doc: 'any: the request is let in when the allow/deny lists or authentication accept it; all: both must.',
    },
  ],
  defaults: { any: false },
  parse(read) {
    const value = read.string('satisfy');
    if (value === undefined) return { any: false };
    const trimmed = value.trim();
    if (trimmed === 'any') return { any: true };
    if (trimmed !== 'all') read.invalid('satisfy', value, 'expected "any" or "all"', 'default');
    return { any: false };
  },
};
