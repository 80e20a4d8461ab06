// The HTTPS listener: one `node:http2` secure server that offers h2 and http/1.1 by ALPN (HTTP/1.1
// requests, WebSocket upgrades included, take Node's HTTP/1 path). Certificates come from the SNI
// store as for any TLS server (sni.ts); whether h2 is offered is read at every handshake, so a swap
// turning ConfigMap `use-http2` off or on applies to the next connection without a restart.
//
// Node's http2 server has no closeAllConnections: the listener tracks its TLS sockets and HTTP/2
// sessions itself, for a graceful close (GOAWAY, idle HTTP/1.1 connections closed) then a hard one.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { type LinkSlot, LiveSet, type Slotted } from '../live-set.ts';
import { adoptProxied } from './proxy-front.ts';
import { httpsServerOptions, type SniStore } from './sni.ts';

export interface HttpsListener {
  readonly server: Http2SecureServer;
  /** offer h2 by ALPN (ConfigMap use-http2); read at every handshake */
  http2: boolean;
  /**
   * Streams an HTTP/2 session serves, then GOAWAY (NGINX ≥ 1.19.7 bounds them with keepalive_requests);
   * read at every stream
   */
  maxRequests: number;
  /** Graceful: GOAWAY on every HTTP/2 session (in-flight streams finish), idle HTTP/1.1 connections closed. */
  closeIdle(): void;
  /** Cuts every connection still open. */
  destroyAll(): void;
  /**
   * Puts `accept` in front of the TLS server's handling of each new connection (the PROXY header, ssl-passthrough):
   * it gets the raw socket and `handOver`, which gives the socket to TLS (bytes read from it must be
   * put back with `socket.unshift` first). The server keeps listening itself, so its connection
   * tracking (HTTP/1.1 header timeouts, idle connections), counters and close are unchanged.
   */
  front(accept: (socket: Socket, handOver: (socket: Socket) => void) => void): void;
}

/** The listener's open TLS connections and HTTP/2 sessions (live-set.ts: not Sets). */
const TLS_SOCKET = Symbol('open TLS connection');
const HTTP2_SESSION = Symbol('open HTTP/2 session');
const TLS_SOCKET_SLOT: LinkSlot<Socket> = {
  name: 'open TLS connection',
  get: (socket) => (socket as unknown as Slotted)[TLS_SOCKET],
  set: (socket, link) => {
    (socket as unknown as Slotted)[TLS_SOCKET] = link;
  },
};
const HTTP2_SESSION_SLOT: LinkSlot<ServerHttp2Session> = {
  name: 'open HTTP/2 session',
  get: (session) => (session as unknown as Slotted)[HTTP2_SESSION],
  set: (session, link) => {
    (session as unknown as Slotted)[HTTP2_SESSION] = link;
  },
};

/** The ALPN protocol for a ClientHello's list: h2 first when offered and enabled, like NGINX. */
export function selectAlpn(offered: readonly string[], http2: boolean): string | undefined {
  if (http2 && offered.includes('h2')) return 'h2';
  if (offered.includes('http/1.1')) return 'http/1.1';
  return undefined;
}

/**
 * An HTTP/2 session without any frame for this long is closed gracefully (GOAWAY; streams still open
 * finish): NGINX's keepalive_timeout for HTTP/2, 75 s in ingress-nginx.
 */
export const IDLE_SESSION_MS = 75_000;

/**
 * SETTINGS_MAX_CONCURRENT_STREAMS the listener advertises until the first swap: ingress-nginx's
 * `http2-max-concurrent-streams` default (NGINX's http2_max_concurrent_streams; the ConfigMap key
 * changes it for new sessions). Each open stream may hold one upstream request, so this bounds what
 * one client connection holds open upstream; Node refuses a stream over it with RST_STREAM
 * REFUSED_STREAM, whether or not the client honours the setting.
 */
export const HTTP2_MAX_CONCURRENT_STREAMS = 128;

export function createHttpsListener(
  getStore: () => SniStore,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  idleSessionMs = IDLE_SESSION_MS,
  ticketKeys?: Uint8Array,
): HttpsListener {
  const sockets = new LiveSet<Socket>(TLS_SOCKET_SLOT);
  const sessions = new LiveSet<ServerHttp2Session>(HTTP2_SESSION_SLOT);
  const { ALPNProtocols: _fixed, ...tlsOptions } = httpsServerOptions(getStore);
  // client-header-timeout checked every second on HTTP/1.1 connections, and Host checked by
  // rejectedStatus, as on the HTTP listener (allowHTTP1 options Node reads, missing from @types/node)
  const http1Options = { connectionsCheckingInterval: 1000, requireHostHeader: false } as object;
  const listener: HttpsListener = {
    server: createSecureServer(
      {
        ...tlsOptions,
        ...http1Options,
        ...(ticketKeys === undefined ? {} : { ticketKeys: Buffer.from(ticketKeys) }),
        allowHTTP1: true,
        settings: { maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS },
        ALPNCallback: ({ protocols }) => selectAlpn(protocols, listener.http2),
      },
      // the compatibility API's request and response stand in for Node's HTTP/1 ones (upstream/ reads
      // the few places they differ: pseudo-headers, the stream's END_STREAM, trailers)
      handler as unknown as Parameters<typeof createSecureServer>[1],
    ),
    http2: true,
    maxRequests: 1000,
    closeIdle() {
      for (const session of sessions) if (!session.closed) session.close();
      // allowHTTP1 servers have HTTP/1's closeIdleConnections (missing from @types/node)
      (listener.server as unknown as { closeIdleConnections(): void }).closeIdleConnections();
    },
    destroyAll() {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
    front() {},
  };
  // the TLS server's own 'connection' listener, registered by its constructor: the one `front` wraps
  const [tlsConnection, ...others] = listener.server.rawListeners('connection');
  if (tlsConnection === undefined || others.length > 0) {
    throw new Error('the HTTPS server does not have exactly one connection listener (its TLS one)');
  }
  listener.front = (accept) => {
    const server = listener.server;
    const handOver = (socket: Socket): void => {
      tlsConnection.call(server, socket);
    };
    server.removeListener('connection', tlsConnection as (socket: Socket) => void);
    // first, as the TLS listener was: listeners added later (the connection cap) see it already taken
    server.prependListener('connection', (socket: Socket) => accept(socket, handOver));
  };
  // before the HTTP/1.1 parser or HTTP/2 session the server sets up: their requests see the PROXY verdict
  listener.server.prependListener('secureConnection', adoptProxied);
  listener.server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  listener.server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    // a client that breaks its session: one error, no crash
    session.on('error', () => {});
    session.setTimeout(idleSessionMs, () => session.close());
    // the stream that reaches the limit is served, later ones are refused (the client retries them on
    // a new connection), as NGINX's GOAWAY after keepalive_requests
    let streams = 0;
    session.on('stream', () => {
      if (++streams >= listener.maxRequests && !session.closed) session.close();
    });
  });
  return listener;
}
