// Upstream connection pools: one undici Pool per peer and connection kind (protocol, connect timeout,
// proxy-ssl settings), made here with the options of its backend protocol; UpstreamProxy keeps them.

import { buildConnector, type Dispatcher, Pool } from 'undici';
import type { BackendTls } from './backend-tls.ts';
import type { ProxyTarget, TargetProtocol } from './target.ts';

/** How one pool talks to its peer: HTTP/1.1, HTTP/1.1 over TLS, h2 cleartext (prior knowledge), h2 over TLS. */
export type PoolProtocol = 'HTTP' | 'HTTPS' | 'GRPC' | 'GRPCS';

/** The pool protocol of a request: AUTO_HTTP follows the client's scheme (ingress-nginx's `$scheme://`). */
export function poolProtocol(protocol: TargetProtocol | undefined, https: boolean): PoolProtocol {
  if (protocol === undefined) return 'HTTP';
  if (protocol === 'AUTO_HTTP') return https ? 'HTTPS' : 'HTTP';
  return protocol;
}

/** Pool settings of the whole proxy (upstream-keepalive-*, the connection limit). */
export interface ProxyOptions {
  /** idle upstream keep-alive connections close after this long (undici default 4000) */
  keepAliveTimeoutMs?: number;
  /** most connections per peer (default: no limit, like NGINX) */
  connections?: number;
  /** requests per upstream connection before it is closed (upstream-keepalive-requests) */
  maxRequestsPerClient?: number;
  /** proxy-buffer-size: the response head limit of HTTP/1.1 pools (undici's maxHeaderSize); 0: undici's default */
  maxHeaderSize?: number;
}

export interface PeerPool {
  connectTimeoutMs: number;
  protocol: PoolProtocol;
  /** BackendTls.id of a TLS pool with proxy-ssl settings, else '' */
  tls: string;
  /** proxy-buffer-size in bytes; 0: undici's default */
  maxHeaderSize: number;
  pool: Pool;
}

export const isTls = (protocol: PoolProtocol): boolean => protocol === 'HTTPS' || protocol === 'GRPCS';

/**
 * undici options per backend protocol. HTTPS stays on HTTP/1.1 like proxy_pass https://; GRPC is h2
 * with prior knowledge; GRPCS offers h2 by ALPN. Without proxy-ssl settings (a route with no usable
 * proxy-ssl-secret), TLS peers are not verified (ingress-nginx's `proxy_ssl_verify off`) and get the
 * request's Host as SNI (undici's rule; NGINX sends none by default), so a peer serving several Hosts
 * reconnects when the Host changes. With them, the pool connects with their compiled TLS
 * (backend-tls.ts) and a fixed SNI (or none).
 */
// `useH2c` at the top: the Pool's own connector reads it there (undici's types only list h2Options')
const POOL_OPTIONS: Record<PoolProtocol, { origin: string; options: Pool.Options & { useH2c?: boolean } }> = {
  HTTP: { origin: 'http', options: {} },
  HTTPS: { origin: 'https', options: { allowH2: false, connect: { rejectUnauthorized: false } } },
  GRPC: { origin: 'http', options: { allowH2: true, useH2c: true, h2Options: { useH2c: true } } },
  // h2 offered first (a peer speaking both must not pick HTTP/1.1 for gRPC)
  GRPCS: {
    origin: 'https',
    options: {
      allowH2: true,
      connect: { rejectUnauthorized: false, preferH2: true } as Pool.Options['connect'],
    },
  },
};

/** What a request's dispatch options carry: undici's, and the servername its types leave out. */
export type UpstreamDispatch = Dispatcher.DispatchOptions & { servername?: string | undefined };

/**
 * A plain (cleartext) pool's requests name a servername that nothing reads: undici's connector
 * ignores it without TLS, and given one undici does not derive it from the Host header, which costs
 * two IP-address regular expressions per request.
 */
const CLEARTEXT_SERVERNAME = 'cleartext';

/**
 * The servername of a request's dispatch: proxy-ssl's constant one for a TLS pool with settings
 * (BackendTls), undici's own choice (the Host) for a TLS pool without, and an unread constant for a
 * cleartext pool.
 */
export function servernameOf(protocol: PoolProtocol, target: ProxyTarget): string | undefined {
  if (!isTls(protocol)) return CLEARTEXT_SERVERNAME;
  return target.backendTls?.requestServername;
}

/** undici's connector with the settings' TLS; the SNI is theirs, never the request's Host. */
function tlsConnector(
  tls: BackendTls,
  timeout: number,
  allowH2: boolean,
  preferH2: boolean,
): buildConnector.connector {
  const connect = buildConnector({ ...tls.options, timeout, allowH2, preferH2 });
  const servername = tls.servername ?? undefined;
  // host '' with no servername: undici derives none (it would take a DNS peer's name otherwise)
  return (options, callback) => connect({ ...options, host: '', servername }, callback);
}

/**
 * A new Pool for a peer (`host:port`): the options of its protocol, the proxy-ssl `settings` of a TLS
 * pool that has them (else null), the proxy's pool settings.
 */
export function createPool(
  key: string,
  connectTimeoutMs: number,
  protocol: PoolProtocol,
  settings: BackendTls | null,
  poolSettings: ProxyOptions,
): Pool {
  const { origin, options } = POOL_OPTIONS[protocol];
  return new Pool(`${origin}://${key}`, {
    ...options,
    ...(settings === null
      ? {}
      : {
          connect: tlsConnector(settings, connectTimeoutMs, protocol === 'GRPCS', protocol === 'GRPCS'),
        }),
    connections: poolSettings.connections ?? null,
    keepAliveTimeout: poolSettings.keepAliveTimeoutMs,
    maxRequestsPerClient: poolSettings.maxRequestsPerClient,
    connectTimeout: connectTimeoutMs,
    // undici's HTTP/2 client (GRPC, GRPCS) does not read it
    ...(poolSettings.maxHeaderSize ? { maxHeaderSize: poolSettings.maxHeaderSize } : {}),
  });
}
