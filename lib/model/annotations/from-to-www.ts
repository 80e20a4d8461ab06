// from-to-www-redirect: host `foo.com` also answers `www.foo.com` (and `www.foo.com` answers
// `foo.com`) with a redirect to itself, unless that other name is a host of its own. Host-level: each
// Ingress of the host that sets it turns it on. The build resolves the name redirected (`from`); an
// invalid value drops the Ingress (ingress-nginx's redirect parser propagates the error).

import type { AnnotationGroup } from './group.ts';

export interface FromToWwwAnnotations {
  enabled: boolean;
  /** set by the build: the host name redirected to this host, or null (off, or that name is taken) */
  from: string | null;
}

export const fromToWww: AnnotationGroup<FromToWwwAnnotations> = {
  scope: 'server',
  annotations: [
    {
      name: 'from-to-www-redirect',
      default: 'false',
      doc: 'Redirect www.<host> to <host> (or <host> to www.<host> for a www. host) with ConfigMap http-redirect-code.',
    },
  ],
  defaults: { enabled: false, from: null },
  parse(read) {
    return { enabled: read.bool('from-to-www-redirect', false, 'drop'), from: null };
  },
  isSet: (value) => value.enabled,
};
