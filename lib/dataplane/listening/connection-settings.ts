// The client side of the global ConfigMap applied to the listeners at each swap (keep-alive,
// keep-alive-requests, client-header-timeout) and to the upstream pools (upstream-keepalive-*), and
// the per-request reads use-forwarded-headers and real-IP need from the request head.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GlobalConfig } from '../../model/index.ts';
import type { HttpPolicy } from '../http-policy.ts';
import { headerValue } from '../request-values.ts';
import type { UpstreamProxy } from '../upstream/upstream-proxy.ts';
import type { HttpsListener } from './https-listener.ts';

/**
 * The server properties Node's HTTP/1.1 connection handling reads: an `http.Server`'s, and those of
 * the HTTPS listener's `Http2SecureServer`, whose HTTP/1.1 connections (allowHTTP1) read the same
 * properties from it although its type does not declare them.
 */
export interface Http1Timeouts {
  keepAliveTimeout: number;
  headersTimeout: number;
  requestTimeout: number;
}

/**
 * Sets the listeners' connection limits and the settings of upstream pools created from now on.
 * Node reads these server properties for every connection and check, so a swap applies them to
 * new requests without a restart.
 */
export function applyConnectionSettings(
  config: GlobalConfig,
  servers: readonly Http1Timeouts[],
  proxy: UpstreamProxy,
): void {
  const { keepAlive, headerTimeout } = config.client;
  for (const server of servers) {
    // keep-alive 0 disables client keep-alive in NGINX: one request per connection
    server.keepAliveTimeout = keepAlive * 1000;
    server.headersTimeout = headerTimeout * 1000;
    // Node refuses a request timeout shorter than the headers timeout (default 300 s)
    if (server.requestTimeout > 0 && server.requestTimeout < server.headersTimeout) {
      server.requestTimeout = server.headersTimeout;
    }
  }
  const upstream = config.upstreamKeepalive;
  proxy.configure({
    keepAliveTimeoutMs: upstream.timeout * 1000,
    // not a cap: NGINX's keepalive N bounds idle connections only, and undici has no such setting;
    // a cap here would queue requests (long polls, streams) that NGINX would serve at once
    connections: undefined,
    maxRequestsPerClient: upstream.requests,
  });
}

/** Node's default SETTINGS_MAX_HEADER_LIST_SIZE, and the header pairs it takes per request (maxHeaderListPairs). */
const NODE_MAX_HEADER_LIST_SIZE = 65535;
const NODE_MAX_HEADER_PAIRS = 128;

/**
 * HTTP/2 sessions opened from now on: http2-max-concurrent-streams, keep-alive-requests (GOAWAY after
 * that many streams; keep-alive 0: after one), and the SETTINGS_MAX_HEADER_LIST_SIZE advertised: at
 * least what large-client-header-buffers allows (counted as the RFC does, 32 bytes more per header
 * than NGINX counts), since clients that honour it (Go's) would not send a larger head at all. Node
 * does not enforce it on what arrives; rejectedStatus holds the exact bound.
 */
export function applyHttp2Settings(config: GlobalConfig, listener: HttpsListener): void {
  const { keepAlive, keepAliveRequests } = config.client;
  listener.maxRequests = keepAlive === 0 ? 1 : keepAliveRequests;
  const { count, size } = config.largeClientHeaderBuffers;
  listener.server.updateSettings({
    maxConcurrentStreams: config.http2MaxConcurrentStreams,
    maxHeaderListSize: Math.max(NODE_MAX_HEADER_LIST_SIZE, count * size + 32 * NODE_MAX_HEADER_PAIRS),
  });
}

const REQUESTS = Symbol('requests on this connection');

/**
 * keep-alive-requests (keep-alive 0: one request per connection): the response to the connection's
 * last allowed request says `Connection: close` and the connection closes after it, as NGINX does.
 * Not `server.maxRequestsPerSocket`, which answers 503 to requests beyond the limit, so that lowering
 * the limit on a swap would turn requests on open connections into errors.
 */
export function countRequest(req: IncomingMessage, res: ServerResponse, config: GlobalConfig): void {
  const socket = req.socket as IncomingMessage['socket'] & { [REQUESTS]?: number };
  const count = (socket[REQUESTS] ?? 0) + 1;
  socket[REQUESTS] = count;
  const { keepAlive, keepAliveRequests } = config.client;
  if (count >= (keepAlive === 0 ? 1 : keepAliveRequests)) res.shouldKeepAlive = false;
}

/** How many requests the connection of `socket` carried so far ($connection_requests; 1 before any). */
export function requestsOn(socket: object): number {
  return (socket as { [REQUESTS]?: number })[REQUESTS] ?? 1;
}

/** The real client address: the rightmost untrusted address of the forwarded-for chain, when the
 * socket peer is a trusted proxy (real_ip_recursive). */
export function clientAddressOf(req: IncomingMessage, policy: HttpPolicy, peer: string): string {
  const resolve = policy.clientAddress;
  return resolve === null ? peer : resolve(peer, headerValue(req, policy.realIpHeader));
}

/** use-forwarded-headers: $pass_access_scheme is X-Forwarded-Proto when the request has one. */
export function forwardedHttps(req: IncomingMessage, https: boolean): boolean {
  const proto = headerValue(req, 'x-forwarded-proto');
  return proto === undefined || proto === '' ? https : proto === 'https';
}
