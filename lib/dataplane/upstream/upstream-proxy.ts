// The proxy hop: one request (or one WebSocket handshake) to a balancer-chosen peer, through one undici
// Pool per peer, with ingress-nginx's upstream headers and its retry rules (proxy-next-upstream).
//
// Hot path: one header pass over rawHeaders, one pick, one dispatch; the handler object is the request's
// only allocation of note and serves every try. Bodies stream both ways with backpressure: undici pauses
// the client request when the upstream socket is full, the handler pauses undici when the client response
// is full. Nothing here throws to the caller: failures become an error page, a cut connection, and an
// event on `dataplaneError`.
//
// This file holds the entry points and what outlives one exchange (pools, tunnels, mirrors); the parts of
// an exchange are in request-headers.ts, body.ts, exchange.ts (tries and retries), web-exchange.ts,
// upgrade-exchange.ts, response-headers.ts and failures.ts. Named UpstreamProxy, not Proxy: the global
// Proxy stays usable and a reader never wonders which one is meant.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import { DEFAULT_HTTP_POLICY } from '../http-policy.ts';
import { type LinkSlot, LiveSet, type Slotted } from '../live-set.ts';
import type { RequestRecord } from '../request-record.ts';
import { type CustomErrors, errorRequestHeaders } from '../responses/custom-errors.ts';
import { sendErrorPage } from '../responses/error-pages.ts';
import type { BackendTls } from './backend-tls.ts';
import { limitBody, readBody } from './body.ts';
import { noop } from './failures.ts';
import { MirrorClient } from './mirror.ts';
import {
  createPool,
  isTls,
  type PeerPool,
  type PoolProtocol,
  type ProxyOptions,
  poolProtocol,
  servernameOf,
  type UpstreamDispatch,
} from './pools.ts';
import { ReadDeadlines, readTimeoutSwept } from './read-deadlines.ts';
import { forwardHeaders, upstreamPath } from './request-headers.ts';
import { generateRequestId } from './request-id.ts';
import { setOwnResponseHeaders } from './response-headers.ts';
import type { ProxyTarget, RequestContext } from './target.ts';
import { registerProxyHeaderNames } from './undici-names.ts';
import { UpgradeExchange } from './upgrade-exchange.ts';
import { WebExchange } from './web-exchange.ts';

/** A WebSocket (or other upgraded) tunnel's client socket (live-set.ts: not a Set). */
const TUNNEL = Symbol('tunnel');
const TUNNEL_SLOT: LinkSlot<Duplex> = {
  name: 'tunnel',
  get: (socket) => (socket as unknown as Slotted)[TUNNEL],
  set: (socket, link) => {
    (socket as unknown as Slotted)[TUNNEL] = link;
  },
};

/** The client's response is gone: a closed HTTP/1.x response, or an HTTP/2 one whose stream closed. */
function responseClosed(res: ServerResponse): boolean {
  return res.destroyed || (res as ServerResponse & { stream?: Duplex }).stream?.destroyed === true;
}

/** Ends a socket once its buffered writes are out, then destroys it (net.Socket#destroySoon). */
function finish(socket: Duplex): void {
  if (socket.destroyed) return;
  const soon = (socket as Duplex & { destroySoon?: () => void }).destroySoon;
  if (typeof soon === 'function') soon.call(socket);
  else socket.destroy();
}

/** Http2ServerRequest: whether the client's HEADERS frame carried END_STREAM (no body). */
function endedAfterHeaders(req: IncomingMessage): boolean {
  return (
    (req as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream?.endAfterHeaders === true
  );
}

/** An exchange's own 'close' listener on its response. */
export function listenForClose(res: ServerResponse, exchange: WebExchange): void {
  res.on('close', () => exchange.responseClosed());
}

export class UpstreamProxy {
  private keepAliveTimeoutMs: number | undefined;
  private connections: number | undefined;
  private maxRequestsPerClient: number | undefined;
  /** by peer key; one Pool per connect timeout in use for that peer (normally exactly one) */
  private readonly pools = new Map<string, PeerPool[]>();
  private readonly tunnels = new LiveSet<Duplex>(TUNNEL_SLOT);
  /** proxy-read-timeout of the requests without a body (read-deadlines.ts) */
  readonly readDeadlines = new ReadDeadlines();
  /** mirror-target copies (fire and forget) */
  readonly mirrors = new MirrorClient();

  /**
   * Where an exception outside every listener's boundary goes (a deferred try, a buffered body's
   * completion): the data plane's boundary answers 500 or cuts the response, logs and counts it.
   */
  contain: (error: unknown, req: IncomingMessage, res: ServerResponse) => void = (_error, _req, res) => {
    res.destroy();
  };
  /** The same for a WebSocket tunnel's exchange (its socket is already closed). */
  containSocket: (error: unknown) => void = noop;
  /**
   * How an exchange hears that its client's response closed. The data plane hands this to the
   * request pipeline, whose listener every response has anyway; alone, the exchange listens itself.
   */
  watchClose: (res: ServerResponse, exchange: WebExchange) => void = listenForClose;

  constructor(options: ProxyOptions = {}) {
    registerProxyHeaderNames();
    this.configure(options);
  }

  /** Pool settings (upstream-keepalive-*): pools created from now on get them; existing pools keep theirs. */
  configure(options: ProxyOptions): void {
    this.keepAliveTimeoutMs = options.keepAliveTimeoutMs;
    this.connections = options.connections;
    this.maxRequestsPerClient = options.maxRequestsPerClient;
  }

  /** Proxies one HTTP request; always answers (response, error page or cut connection), never throws. */
  web(
    req: IncomingMessage,
    res: ServerResponse,
    target: ProxyTarget,
    ctx: RequestContext,
    record: RequestRecord | null = null,
  ): void {
    const forward = forwardHeaders(req, ctx, ctx.upstreamHost ?? target.upstreamHost);
    const headers = forward.headers;
    const hasLength = forward.hasLength;
    // an HTTP/2 request has a body unless its HEADERS frame ended the stream (gRPC sends no length)
    const hasBody = forward.hasBody || (req.httpVersionMajor === 2 && !endedAfterHeaders(req));
    const protocol = poolProtocol(target.protocol, ctx.https);
    const grpc = protocol === 'GRPC' || protocol === 'GRPCS';
    // grpc_pass sends `TE: trailers` (h2 forbids any other TE; gRPC servers expect it)
    if (grpc) headers.push('te', 'trailers');
    const method = req.method ?? 'GET';
    const opts: UpstreamDispatch = {
      path: ctx.path ?? upstreamPath(req.url),
      method,
      headers,
      body: null,
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
      servername: servernameOf(protocol, target),
    };
    // undici then writes `connection: close` and does not reuse the connection (h2 has no such header)
    if (target.closeConnection === true && !grpc) opts.reset = true;
    const limit = target.maxBodySize ?? 0;
    // gRPC streams are never buffered (they may last as long as the call)
    if (hasBody && limit > 0 && target.bufferRequest === true && !grpc) {
      // proxy-request-buffering on: the whole body first (a Content-Length over the limit was refused
      // by the router); the tries then send it with its length and may resend it
      const policy = ctx.policy ?? DEFAULT_HTTP_POLICY;
      let answered = false;
      // client-body-timeout while the body is read (watchBody's rule: 408, then the connection closes)
      if (policy.clientBodyTimeoutMs > 0 && !req.complete) {
        req.setTimeout(policy.clientBodyTimeoutMs, () => {
          if (req.complete || answered) return;
          answered = true;
          if (record !== null) record.status = 408;
          res.setHeader('connection', 'close');
          setOwnResponseHeaders(res, policy);
          sendErrorPage(res, 408);
        });
        req.once('end', () => req.socket?.setTimeout(0));
      }
      readBody(req, limit, (body) => {
        if (answered) return;
        answered = true;
        // the body's 'end' listener: no boundary of the data plane's reaches here
        try {
          if (body === null) {
            if (ctx.hsts !== null) res.setHeader('Strict-Transport-Security', ctx.hsts);
            setOwnResponseHeaders(res, policy);
            sendErrorPage(res, 413);
            return;
          }
          if (!hasLength) headers.push('content-length', String(body.length));
          opts.body = body;
          if (ctx.mirror != null) this.mirrors.send(req, ctx.mirror, body);
          this.#start(req, res, target, ctx, opts, protocol, false, record);
        } catch (error) {
          this.contain(error, req, res);
        }
      });
      return;
    }
    if (hasBody) {
      const body = limit > 0 && !hasLength ? limitBody(req, limit) : req;
      // the copy reads the body as it passes, never holding the upstream back
      opts.body = ctx.mirror == null ? body : this.mirrors.tee(req, ctx.mirror, body);
    } else if (ctx.mirror != null) {
      this.mirrors.send(req, ctx.mirror, null);
    }
    this.#start(req, res, target, ctx, opts, protocol, hasBody, record);
  }

  #start(
    req: IncomingMessage,
    res: ServerResponse,
    target: ProxyTarget,
    ctx: RequestContext,
    opts: Dispatcher.DispatchOptions,
    protocol: PoolProtocol,
    streamed: boolean,
    record: RequestRecord | null,
  ): void {
    // the client left before the exchange began (while its body was read, or an auth-url check
    // ran): an exchange now would hear no 'close' and could hold its upstream request open
    if (responseClosed(res)) return;
    const exchange = new WebExchange(this, req, res, target, opts, streamed, ctx.hsts, record);
    this.watchClose(res, exchange);
    exchange.hashKey = ctx.hashKey;
    exchange.session = ctx.session;
    exchange.protocol = protocol;
    if (ctx.policy !== undefined) exchange.policy = ctx.policy;
    if (streamed) exchange.watchBody(req, exchange.policy.clientBodyTimeoutMs);
    if (readTimeoutSwept(target.readTimeoutMs, opts.body != null)) {
      // undici would make a timer per request for these (read-deadlines.ts)
      opts.headersTimeout = 0;
      opts.bodyTimeout = 0;
      exchange.readDeadlines = this.readDeadlines;
    }
    if (ctx.errors != null) {
      exchange.errors = ctx.errors;
      exchange.context = ctx;
    }
    exchange.next();
  }

  /**
   * Sends the request to the error backend for `code` (custom-http-errors, or a route without
   * endpoints served by its default-backend Service): URI `/`, no body, the X-Code headers; its
   * response goes to the client as it is. `forwarded`: the upstream headers already built.
   */
  customError(
    req: IncomingMessage,
    res: ServerResponse,
    errors: CustomErrors,
    code: number,
    ctx: RequestContext,
    record: RequestRecord | null,
    forwarded?: string[],
  ): void {
    const target = errors.target;
    const requestId = ctx.requestId === '' ? generateRequestId() : ctx.requestId;
    const headers = errorRequestHeaders(
      req,
      forwarded ?? forwardHeaders(req, ctx).headers,
      errors,
      code,
      requestId,
    );
    const opts: UpstreamDispatch = {
      path: '/',
      method: req.method ?? 'GET',
      headers,
      body: null,
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
      // the error backend's pool is a cleartext one (the exchange's protocol stays HTTP)
      servername: servernameOf('HTTP', target),
    };
    const exchange = new WebExchange(this, req, res, target, opts, false, ctx.hsts, record);
    this.watchClose(res, exchange);
    if (ctx.policy !== undefined) exchange.policy = ctx.policy;
    exchange.next();
  }

  /** Proxies an HTTP/1.1 Upgrade request (WebSocket) from the server's 'upgrade' event. */
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: ProxyTarget,
    ctx: RequestContext,
    record: RequestRecord | null = null,
  ): void {
    const { headers } = forwardHeaders(req, ctx, ctx.upstreamHost ?? target.upstreamHost);
    // a WebSocket tunnel is HTTP/1.1: TLS to HTTPS/GRPCS peers, cleartext otherwise
    const poolKind = poolProtocol(target.protocol, ctx.https);
    const protocol = poolKind === 'GRPCS' ? 'HTTPS' : poolKind === 'GRPC' ? 'HTTP' : poolKind;
    const opts: UpstreamDispatch = {
      path: ctx.path ?? upstreamPath(req.url),
      method: req.method ?? 'GET',
      headers,
      body: null,
      upgrade: req.headers.upgrade || 'websocket',
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
      servername: servernameOf(protocol, target),
    };
    const exchange = new UpgradeExchange(this, socket, head, target, opts, record);
    exchange.hashKey = ctx.hashKey;
    exchange.session = ctx.session;
    exchange.protocol = protocol;
    if (ctx.policy !== undefined) exchange.policy = ctx.policy;
    exchange.next();
  }

  /**
   * The pool for a peer (created on first use, kept across runtime swaps until retired). Routes that
   * differ in connect timeout, protocol, proxy-ssl settings or response head limit get pools of their
   * own, so each location keeps its settings as an NGINX location does.
   */
  pool(
    key: string,
    connectTimeoutMs: number,
    protocol: PoolProtocol = 'HTTP',
    backendTls: BackendTls | null = null,
    maxHeaderSize = 0,
  ): Pool {
    const settings = backendTls !== null && isTls(protocol) ? backendTls : null;
    const tls = settings?.id ?? '';
    let list = this.pools.get(key);
    if (list !== undefined) {
      for (const p of list)
        if (
          p.connectTimeoutMs === connectTimeoutMs &&
          p.protocol === protocol &&
          p.tls === tls &&
          p.maxHeaderSize === maxHeaderSize
        )
          return p.pool;
    } else {
      list = [];
      this.pools.set(key, list);
    }
    const pool = createPool(key, connectTimeoutMs, protocol, settings, {
      keepAliveTimeoutMs: this.keepAliveTimeoutMs,
      connections: this.connections,
      maxRequestsPerClient: this.maxRequestsPerClient,
      maxHeaderSize,
    });
    list.push({ connectTimeoutMs, protocol, tls, maxHeaderSize, pool });
    return pool;
  }

  /**
   * Pipes an upgraded client socket and upstream socket together. A FIN travels through the pipes; when
   * one side has closed, the other is ended once its pending bytes are flushed (a WebSocket close frame
   * still in a buffer is not lost); an error on either side destroys both. No timeouts on the tunnel.
   */
  tunnel(client: Duplex, upstream: Duplex): void {
    const tunnels = this.tunnels;
    tunnels.add(client);
    const destroyBoth = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', destroyBoth);
    upstream.on('error', destroyBoth);
    client.on('close', () => {
      tunnels.delete(client);
      finish(upstream);
    });
    upstream.on('close', () => finish(client));
    (client as Duplex & { setTimeout?: (ms: number) => void }).setTimeout?.(0);
    upstream.pipe(client);
    client.pipe(upstream);
  }

  /** Closes the pools of peers that no runtime uses any more, once their requests in flight finish. */
  retire(keys: Iterable<string>): void {
    for (const key of keys) {
      const list = this.pools.get(key);
      if (list === undefined) continue;
      this.pools.delete(key);
      for (const p of list) p.pool.close().catch(noop);
    }
  }

  /**
   * Closes the TLS pools whose proxy-ssl settings no runtime compiles any more (a rotated Secret, a
   * changed annotation), once their requests in flight finish; pools without settings stay.
   */
  retireTls(inUse: ReadonlySet<string>): void {
    for (const [key, list] of this.pools) {
      const keep = list.filter((p) => p.tls === '' || inUse.has(p.tls));
      if (keep.length === list.length) continue;
      for (const p of list) if (!keep.includes(p)) p.pool.close().catch(noop);
      if (keep.length === 0) this.pools.delete(key);
      else this.pools.set(key, keep);
    }
  }

  /** Closes every pool (waiting for requests in flight) and cuts the WebSocket tunnels. */
  async close(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const list of this.pools.values()) for (const p of list) closing.push(p.pool.close().catch(noop));
    this.pools.clear();
    for (const socket of this.tunnels) socket.destroy();
    this.tunnels.clear();
    closing.push(this.mirrors.close());
    // the pools close once their requests are over, timed out by the deadlines' timer if need be
    await Promise.all(closing);
    this.readDeadlines.close();
  }
}
