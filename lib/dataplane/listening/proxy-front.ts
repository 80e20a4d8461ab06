// use-proxy-protocol on the HTTP and HTTPS listeners: each new connection's PROXY header is read
// (proxy-protocol.ts) before anything else sees the connection (the HTTP parser, ssl-passthrough's
// ClientHello peek, TLS), then the connection goes on with the bytes after the header put back.
//
// The header is judged here, once per connection, and its verdict is stored on the socket, where
// peerOf (access/access.ts) reads it for every consumer: X-Forwarded-For, X-Real-IP, the access log,
// allow/deny lists, rate limits, auth and hash variables. NGINX does the same per request with
// `real_ip_header proxy_protocol` and `set_real_ip_from` (proxy-real-ip-cidr): the header's address
// replaces the peer's when the peer (the balancer) is trusted. Judged at accept with the runtime of
// that moment, as an NGINX connection keeps the configuration of the worker that accepted it.
//
// A missing, malformed or late header closes the connection without a byte of answer, as NGINX does.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { type ClientSocket, PROXY_CLIENT, PROXY_SERVER_PORT, unmapped } from '../access/access.ts';
import { dataplaneError } from '../events.ts';
import { type LinkSlot, LiveMap, type Slotted } from '../live-set.ts';
import { readProxyHeader } from './proxy-protocol.ts';

/** A connection whose PROXY header is being read (live-set.ts: not a Map). */
const READING_PROXY_HEADER = Symbol('reading a PROXY header');
const READING_PROXY_HEADER_SLOT: LinkSlot<Socket> = {
  name: 'reading a PROXY header',
  get: (socket) => (socket as unknown as Slotted)[READING_PROXY_HEADER],
  set: (socket, link) => {
    (socket as unknown as Slotted)[READING_PROXY_HEADER] = link;
  },
};

/** What the current runtime says about PROXY headers. */
export interface ProxyProtocolSettings {
  /** null: use-proxy-protocol is off, connections go on untouched */
  readonly proxyProtocol: { readonly headerTimeoutMs: number } | null;
  /** proxy-real-ip-cidr: whether the socket peer may name the client */
  readonly trustedPeer: (address: string) => boolean;
}

export interface ProxyProtocolFront {
  /** Reads the connection's header (when on) and calls `next` with it, or closes the connection. */
  accept(socket: Socket, next: (socket: Socket) => void): void;
  /** Closes the connections still sending their header (graceful stop). */
  destroyPending(): void;
}

/** At most one line about malformed headers per this many ms: a scanner must not flood the log. */
export const MALFORMED_REPORT_MS = 10_000;

/** How often the pending connections' deadlines are checked: a fifth of the timeout, 10 ms to 1 s. */
export function sweepInterval(timeoutMs: number): number {
  return Math.min(1000, Math.max(10, Math.floor(timeoutMs / 5)));
}

export function createProxyProtocolFront(settings: () => ProxyProtocolSettings): ProxyProtocolFront {
  /** connections sending their header: when their time is up, and how to stop the read */
  const pending = new LiveMap<Socket, { deadline: number; stop: (cause: 'timeout' | 'closed') => void }>(
    READING_PROXY_HEADER_SLOT,
  );
  // one timer for every pending connection, not one each (a timer per connection is a good part of
  // the front's cost); it runs only while some connection is pending
  let sweeper: NodeJS.Timeout | null = null;
  const sweep = (): void => {
    const now = performance.now();
    for (const [, read] of pending) if (read.deadline <= now) read.stop('timeout');
    if (pending.size === 0 && sweeper !== null) {
      clearInterval(sweeper);
      sweeper = null;
    }
  };
  let lastReport = Number.NEGATIVE_INFINITY;
  let unreported = 0;
  const reportMalformed = (reason: string, socket: Socket): void => {
    const now = performance.now();
    if (now - lastReport < MALFORMED_REPORT_MS) {
      unreported++;
      return;
    }
    const more = unreported === 0 ? '' : ` (and ${unreported} more since the last report)`;
    lastReport = now;
    unreported = 0;
    dataplaneError.publish({
      message: `PROXY protocol: ${reason}; connection closed${more}`,
      peer: unmapped(socket.remoteAddress ?? ''),
    });
  };
  return {
    accept(socket, next) {
      const { proxyProtocol, trustedPeer } = settings();
      if (proxyProtocol === null) {
        next(socket);
        return;
      }
      const timeoutMs = proxyProtocol.headerTimeoutMs;
      const stop = readProxyHeader(socket, null, (result) => {
        pending.delete(socket);
        if (!result.ok) {
          // a client gone or silent is routine (balancer health checks connect and close); a
          // header that is not one is worth a line, without any of its bytes
          if (result.cause === 'invalid') reportMalformed(result.reason, socket);
          socket.destroy();
          return;
        }
        const addresses = result.addresses;
        if (addresses !== null) {
          const marked = socket as Socket & ClientSocket;
          marked[PROXY_SERVER_PORT] = addresses.destinationPort;
          const peer = unmapped(socket.remoteAddress ?? '');
          if (trustedPeer(peer)) marked[PROXY_CLIENT] = unmapped(addresses.sourceAddress);
        }
        next(socket);
      });
      pending.set(socket, { deadline: performance.now() + timeoutMs, stop });
      if (sweeper === null) {
        sweeper = setInterval(sweep, sweepInterval(timeoutMs));
        sweeper.unref();
      }
    },
    destroyPending() {
      for (const [socket, read] of pending) {
        read.stop('closed');
        socket.destroy();
      }
      pending.clear();
    },
  };
}

/**
 * Puts `accept` in front of an HTTP server's own handling of new connections: it gets the raw
 * socket and `handOver`, which gives the socket to the server's parser and lets it read the bytes
 * put back. The server still counts and tracks the socket (timeouts, closeAllConnections).
 */
export function frontHttpServer(
  server: Server,
  accept: (socket: Socket, handOver: (socket: Socket) => void) => void,
): void {
  const [own, ...others] = server.rawListeners('connection');
  if (own === undefined || others.length > 0) {
    throw new Error('the HTTP server does not have exactly one connection listener (its own)');
  }
  const handOver = (socket: Socket): void => {
    own.call(server, socket);
    // a socket a reader paused: the parser only sees bytes put back once it flows again
    if (socket.isPaused()) socket.resume();
  };
  server.removeListener('connection', own as (socket: Socket) => void);
  server.prependListener('connection', (socket: Socket) => accept(socket, handOver));
}

/**
 * A TLS socket made over a raw socket that carried a PROXY header takes the header's verdict, so
 * that peerOf on the TLS socket (and on an HTTP/2 session's socket proxy) sees it. Node keeps the
 * raw socket a TLS socket wraps as `_parent`.
 */
export function adoptProxied(tlsSocket: Socket): void {
  const raw = (tlsSocket as Socket & { _parent?: ClientSocket | null })._parent;
  if (raw === undefined || raw === null) return;
  const client = raw[PROXY_CLIENT];
  const port = raw[PROXY_SERVER_PORT];
  const marked = tlsSocket as Socket & ClientSocket;
  if (client !== undefined) marked[PROXY_CLIENT] = client;
  if (port !== undefined) marked[PROXY_SERVER_PORT] = port;
}
