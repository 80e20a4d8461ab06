// backend-protocol: how the proxy talks to the route's upstream (ingress-nginx renders proxy_pass
// http:// / https:// / $scheme://, grpc_pass grpc:// / grpcs://, or fastcgi_pass per location).
// Case-insensitive; an invalid value falls back to HTTP with a warning, as ingress-nginx's parser does.
// FCGI is parsed but cannot be served: the build reports it and the route answers 502.

import type { AnnotationGroup } from './group.ts';

export const BACKEND_PROTOCOLS = ['HTTP', 'HTTPS', 'AUTO_HTTP', 'GRPC', 'GRPCS', 'FCGI'] as const;
export type BackendProtocol = (typeof BACKEND_PROTOCOLS)[number];

export interface BackendProtocolAnnotations {
  /**
   * HTTP: HTTP/1.1; HTTPS: HTTP/1.1 over TLS (verified only per proxy-ssl-*); AUTO_HTTP: the
   * client's scheme; GRPC: HTTP/2 cleartext (prior knowledge); GRPCS: HTTP/2 over TLS; FCGI: refused
   */
  protocol: BackendProtocol;
}

export const backendProtocol: AnnotationGroup<BackendProtocolAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'backend-protocol',
      default: 'HTTP',
      doc: "Protocol to the backend: HTTP, HTTPS (TLS; verified and with a client certificate only per proxy-ssl-*), AUTO_HTTP (the client's scheme), GRPC (HTTP/2 cleartext), GRPCS (HTTP/2 over TLS); FCGI is refused (the paths answer 502).",
    },
  ],
  defaults: { protocol: 'HTTP' },
  parse(read) {
    const value = read.string('backend-protocol');
    if (value === undefined) return { protocol: 'HTTP' };
    const upper = value.trim().toUpperCase();
    const protocol = BACKEND_PROTOCOLS.find((p) => p === upper);
    if (protocol === undefined) {
      read.invalid('backend-protocol', value, `expected one of ${BACKEND_PROTOCOLS.join(', ')}`, 'default');
      return { protocol: 'HTTP' };
    }
    return { protocol };
  },
};
