// What the proxy is given for one request: the route's upstream settings (ProxyTarget, compiled once per
// route) and the request's own values (RequestContext, made per request by the data plane).

import type { IncomingMessage } from 'node:http';
import type { Affinity, Rewrite } from '../../model/index.ts';
import type { HttpPolicy } from '../http-policy.ts';
import type { CustomErrors } from '../responses/custom-errors.ts';
import type { BackendTls } from './backend-tls.ts';
import type { Balancer } from './balancer.ts';
import type { MirrorRequest } from './mirror.ts';

export interface ProxyTarget {
  /** upstream name, for error events */
  upstream: string;
  balancer: Balancer;
  /** proxy-connect-timeout, default 5000 */
  connectTimeoutMs: number;
  /** proxy-send-timeout, default 60000: the longest the upstream may refuse request body bytes */
  sendTimeoutMs: number;
  /** proxy-read-timeout, default 60000: waiting for the response head, and between body chunks */
  readTimeoutMs: number;
  /** proxy-next-upstream-tries, default 3: total attempts; 0 = one per peer */
  tries: number;
  /**
   * proxy-next-upstream, default "error timeout" (+ non_idempotent); `invalidHeader`: an unparsable
   * response head; `statuses`: http_500... (a try answered with one of them goes to another peer)
   */
  retryOn: {
    error: boolean;
    timeout: boolean;
    nonIdempotent: boolean;
    invalidHeader?: boolean;
    statuses?: ReadonlySet<number> | null;
  };
  /** proxy-next-upstream-timeout: no try starts this long after the first one; 0/absent: no limit */
  nextUpstreamTimeoutMs?: number;
  /** proxy-body-size in bytes: a larger request body gets 413; 0/absent: unlimited */
  maxBodySize?: number;
  /**
   * proxy-buffer-size in bytes: a larger response head fails the try as an invalid header (undici's
   * maxHeaderSize, which counts header names and values); absent: undici's default
   */
  maxResponseHead?: number;
  /** proxy-request-buffering on: a body (with a finite maxBodySize) is read whole before the first try */
  bufferRequest?: boolean;
  /** upstream-vhost without variables: the Host header sent upstream; null/absent: the request's */
  upstreamHost?: string | null;
  /** upstream-vhost with NGINX variables ($host, $http_x...), evaluated per request by the router */
  upstreamHostOf?:
    | ((input: { req: IncomingMessage; uri: string; host: string; https: boolean }) => string)
    | null;
  /** proxy-cookie-domain, proxy-cookie-path, proxy-redirect-*: null/absent when all are off */
  rewrite?: ResponseRewrite | null;
  /** affinity: cookie of the upstream (its balancer is then a StickyBalancer), or null */
  affinity: Affinity | null;
  /** upstream-hash-by: computes a request's key (hash-key.ts), or null */
  hashKey:
    | ((input: {
        req: IncomingMessage;
        uri: string;
        host: string;
        https: boolean;
        remoteAddress?: string;
      }) => string)
    | null;
  /** backend-protocol (FCGI never reaches the proxy); absent: HTTP */
  protocol?: TargetProtocol;
  /** connection-proxy-header: close: `Connection: close` upstream, the connection not reused (HTTP/1.1) */
  closeConnection?: boolean;
  /** limit-rate / limit-rate-after: the pace of a response body after its first `after` bytes */
  limitRate?: { bytesPerSecond: number; after: number } | null;
  /** proxy-ssl-*: the TLS of HTTPS/GRPCS connections; absent or null: not verified, Host as SNI */
  backendTls?: BackendTls | null;
}

/** backend-protocol values the proxy speaks. */
export type TargetProtocol = 'HTTP' | 'HTTPS' | 'AUTO_HTTP' | 'GRPC' | 'GRPCS';

/** Response header rewrites (NGINX proxy_cookie_domain, proxy_cookie_path, proxy_redirect). */
export interface ResponseRewrite {
  /** a Set-Cookie Domain equal to `from` (case-insensitive, leading dots ignored) becomes `to` */
  cookieDomain: Rewrite | null;
  /** a Set-Cookie Path starting with `from` gets `to` instead of that prefix */
  cookiePath: Rewrite | null;
  /** a Location (or a Refresh url=) starting with `from` gets `to` instead of that prefix */
  redirect: Rewrite | null;
}

export interface RequestContext {
  /** the connection came in on the HTTPS listener */
  https: boolean;
  /** the port the request came in on */
  listenPort: number;
  /** the port a PROXY header says the client connected to ($proxy_protocol_server_port): X-Forwarded-Port */
  serverPort?: number | undefined;
  /** client address: the socket peer, or the real IP the trusted forwarded-for chain names */
  remoteAddress: string;
  /** the socket peer ($realip_remote_addr); default remoteAddress */
  peerAddress?: string;
  /** X-Request-ID to send (the incoming one or a generated one); '' for none (generate-request-id off) */
  requestId: string;
  /** the ConfigMap's request/response settings of the runtime; default: ingress-nginx's defaults */
  policy?: HttpPolicy;
  /** custom-http-errors / default-backend of the route (plain HTTP requests only) */
  errors?: CustomErrors | null;
  /** Strict-Transport-Security for the response (HTTPS, host with TLS, hsts on), or null */
  hsts: string | null;
  /** upstream-hash-by: this request's key (the same for every try), else '' */
  hashKey: string;
  /** affinity: cookie on the target upstream, else null */
  session: SessionContext | null;
  /** upstream-vhost evaluated for this request (ProxyTarget.upstreamHostOf), when it has variables */
  upstreamHost?: string | null;
  /** rewrite-target: the upstream request target (path and query) instead of the client's */
  path?: string | undefined;
  /** x-forwarded-prefix (only with rewrite-target): replaces any X-Forwarded-Prefix of the client */
  forwardedPrefix?: string | undefined;
  /** auth-tls: the ssl-client-* headers for the upstream (name, value pairs), replacing the client's */
  clientCertHeaders?: readonly string[] | undefined;
  /** OpenTelemetry: traceparent and tracestate for the upstream (name, value pairs), replacing the client's */
  traceHeaders?: readonly string[] | undefined;
  /** mirror-target: where this request's copy goes (mirror.ts), or null/absent: not mirrored */
  mirror?: MirrorRequest | null;
}

export interface SessionContext {
  /** the session key of the request's affinity cookie for this upstream, or null; a new session's
   * key replaces it */
  key: string | null;
  changeOnFailure: boolean;
  /** the Set-Cookie for a new session's cookie value; null: this route does not set the cookie */
  cookie: ((value: string) => string) | null;
}
