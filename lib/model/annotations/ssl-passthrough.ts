// ssl-passthrough: TLS to the host is not terminated; the connection (its ClientHello included) is
// relayed to the backend of the host's path `/`, chosen by the ClientHello's server name. Host-level
// with ingress-nginx's "any true": the host is passthrough when any Ingress defining it sets it, so
// it is read by the build (no oldest-wins conflict). It needs --enable-ssl-passthrough.

import type { AnnotationGroup } from './group.ts';

export interface SslPassthroughAnnotations {
  enabled: boolean;
}

export const sslPassthrough: AnnotationGroup<SslPassthroughAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'ssl-passthrough',
      default: 'false',
      doc: 'Relay TLS connections for the hosts of this Ingress to the backend of path / without terminating TLS (needs --enable-ssl-passthrough).',
    },
  ],
  defaults: { enabled: false },
  parse(read) {
    return { enabled: read.bool('ssl-passthrough', false, 'drop') };
  },
};
