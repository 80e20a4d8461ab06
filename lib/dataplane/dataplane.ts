// The data plane: HTTP and HTTPS listeners created once, a current Runtime swapped by one
// assignment. Every request and handshake reads `#runtime` once and keeps that runtime to the end
// (its retries, its streamed body, its WebSocket tunnel).

import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { DEFAULT_GLOBAL_CONFIG, type Model, type PathRegexCache } from '../model/index.ts';
import {
  type AccessPolicy,
  ADMITTED_WITH_SLOT,
  ALLOWLISTED,
  admit,
  leave,
  listed,
  peerOf,
  unmapped,
} from './access/access.ts';
import { type AuthVerdict, authenticate, type RouteAuth, sendSocketAuthDenial } from './access/auth.ts';
import {
  sendClientAuthRejection,
  sendSocketClientAuthRejection,
  serverClientAuth,
} from './access/client-cert.ts';
import { ExternalAuthClient } from './access/external-auth.ts';
import { beforeCompile, createRuntimeCaches, type RuntimeCaches } from './caches.ts';
import { CertificateInfoCache } from './describe/certificates.ts';
import { describeRuntime } from './describe/describe-runtime.ts';
import type { RuntimeDescription } from './describe/types.ts';
import {
  dataplaneError,
  type RequestFailure,
  requestFailed,
  requestLogged,
  requestRefused,
  runtimeSwapped,
} from './events.ts';
import {
  copyStats,
  type DataPlaneHandle,
  type DataPlaneStats,
  type ListenAddresses,
  type SwapResult,
} from './handle.ts';
import { DEFAULT_HTTP_POLICY } from './http-policy.ts';
import {
  answerClientError,
  applyHeaderSize,
  clientErrorAnswer,
  connectRejectedStatus,
  type HeaderSizeLimited,
  maxHeaderSize,
  overConnectionCap,
  rejectedStatus,
  upgradeRejectedStatus,
} from './listening/client-limits.ts';
import {
  applyConnectionSettings,
  clientAddressOf,
  countRequest,
  forwardedHttps,
  type Http1Timeouts,
} from './listening/connection-settings.ts';
import { createHttpsListener, type HttpsListener } from './listening/https-listener.ts';
import { createPassthroughFront, type PassthroughFront } from './listening/passthrough.ts';
import { applyDefaultCertificate, type CertificatePair, initialSniStore } from './listening/sni.ts';
import {
  byteSourceOf,
  finishOnClose,
  finishRecord,
  type RequestRecord,
  socketBytes,
  startRecord,
  unparsedRecord,
} from './request-record.ts';
import { cookieValue } from './request-values.ts';
import type { CustomErrors } from './responses/custom-errors.ts';
import { sendErrorPage, sendSocketErrorPage } from './responses/error-pages.ts';
import { applyRewrite } from './responses/rewrite.ts';
import { isPreflight, type RouteResponse, responsePolicy } from './responses/route-headers.ts';
import { routeToCanary } from './routing/canary.ts';
import { absoluteForm, normalizeHost, normalizePath, type PathMatch } from './routing/router.ts';
import { type Action, compileRuntime, type RoutedAction, type Runtime } from './routing/runtime.ts';
import { affinityCookie } from './upstream/affinity-cookie.ts';
import type { BalancerEnv } from './upstream/balancer.ts';
import { createEwmaStore } from './upstream/balancers/ewma.ts';
import { defaultBalancerEnv } from './upstream/balancers/index.ts';
import { StickyBalancer } from './upstream/balancers/sticky.ts';
import { mirrorRequestOf } from './upstream/mirror.ts';
import { generateRequestId } from './upstream/request-id.ts';
import { setOwnResponseHeaders } from './upstream/response-headers.ts';
import type { ProxyTarget, RequestContext, SessionContext } from './upstream/target.ts';
import { UpstreamProxy } from './upstream/upstream-proxy.ts';

export interface DataPlaneOptions {
  httpPort: number;
  httpsPort: number;
  /** '' → every interface */
  bindAddress: string;
  generatedDefaultCertificate: CertificatePair;
  balancerEnv?: BalancerEnv;
  /** --enable-ssl-passthrough: HTTPS connections are peeked at while some host passes through */
  sslPassthrough?: boolean;
  /**
   * the build's compiled regex-mode paths, when the build runs on this thread: the compile reuses
   * its objects and the build rotates it. Default: the data plane's own, rotated per full compile.
   */
  pathRegexes?: PathRegexCache;
}

export type { DataPlaneStats, ListenAddresses } from './handle.ts';

/** Where the router placed a request: for the request record (logs, metrics). */
interface Placement {
  /** normalized Host ('' when none) */
  host: string;
  /** null: not routed (no runtime yet, or a malformed path) */
  match: PathMatch<Action> | null;
  /** the incoming X-Request-ID, or the generated one for proxied requests */
  requestId: string | undefined;
  /** the client address (real IP when enabled), for the request record; undefined: the socket peer */
  clientAddress?: string;
  /** satisfy any: the allowlist let the client in, the route's authentication is skipped */
  allowlisted?: boolean;
}

type Decision = Placement &
  (
    | { kind: 'error'; status: number }
    /** auth-tls: 400 (495/496: missing or bad client certificate), 403 (match-cn), 421 (SNI ≠ Host) */
    | { kind: 'clientAuth'; status: 495 | 496 | 403 | 421 }
    /** a CORS preflight from an allowed Origin: 204 with the route's CORS headers */
    | { kind: 'preflight' }
    /** `location`: permanent-/temporal-redirect's URL; null: the ssl-redirect to https */
    | { kind: 'redirect'; code: number; location: string | null }
    /** `canary`: the canary upstream when the canary serves this request ($proxy_alternative_upstream_name), else '';
     * `release`: frees the request's limit-connections slot when it ends, or null */
    | {
        kind: 'proxy';
        target: ProxyTarget;
        context: RequestContext;
        canary: string;
        release?: (() => void) | null;
      }
    /** the route has no endpoints and its error backend answers (default-backend, custom-http-errors) */
    | { kind: 'customError'; code: number; errors: CustomErrors; context: RequestContext }
  );

const PIPELINE = Symbol('pipelined requests');

/** An HTTP/1.1 connection while one of its requests is served: that one's response, and the requests after it. */
interface Pipeline {
  /** kept here: `res.req.socket` is null once Node detached the connection from the response */
  socket: PipelinedSocket;
  current: ServerResponse;
  waiting: Array<{ req: IncomingMessage; res: ServerResponse; https: boolean }>;
}

type PipelinedSocket = IncomingMessage['socket'] & { [PIPELINE]?: Pipeline | undefined };
/** Each HTTP/1.x response knows its connection's pipeline. */
type PipelinedResponse = ServerResponse & { [PIPELINE]?: Pipeline };

/**
 * Stops or restarts reading a client connection. Node's HTTP parser reads the socket's handle itself,
 * so `socket.pause()` would not stop it parsing (and keeping) every request a client pipelines; the
 * handle's own readStop does, and the bytes wait in the kernel as they do in front of NGINX.
 */
function reading(socket: IncomingMessage['socket'], on: boolean): void {
  const handle = (socket as unknown as { _handle?: { readStart?(): number; readStop?(): number } | null })
    ._handle;
  if (on) handle?.readStart?.();
  else handle?.readStop?.();
}

/** A request's record and what its bytes are counted on, from its start (request-record.ts). */
interface Recording {
  record: RequestRecord;
  source: Duplex;
}

const REDIRECT_REASONS: Record<number, string> = {
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Moved Temporarily',
  303: 'See Other',
  304: 'Not Modified',
  305: 'Use Proxy',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
};

export class DataPlane implements DataPlaneHandle {
  readonly #options: DataPlaneOptions;
  /** the canary weight draw: the balancers' random source (tests seed it) */
  readonly #random: () => number;
  readonly #proxy = new UpstreamProxy();
  /** auth-url / global-auth-url requests */
  readonly #authClient = new ExternalAuthClient();
  readonly #ewmaStore = createEwmaStore();
  /** what this data plane keeps across its runtimes (path regexes, bcrypt outcomes, verified leaves) */
  readonly #caches: RuntimeCaches;
  /** parsed certificates of /debug/model descriptions */
  readonly #certificateInfo = new CertificateInfoCache();
  readonly #http: Server;
  readonly #https: Http2SecureServer;
  readonly #httpsListener: HttpsListener;
  /** ssl-passthrough's front of the HTTPS listener, or null without --enable-ssl-passthrough */
  readonly #passthrough: PassthroughFront | null = null;
  #runtime: Runtime | null = null;
  #httpPort = 0;
  readonly #stats: DataPlaneStats = {
    accepted: 0,
    active: 0,
    requests: 0,
    mirror: this.#proxy.mirrors.stats,
  };
  /** requests (not WebSocket tunnels) whose response has not closed yet, with the request's record
   * when one is kept (published when the response closes) */
  readonly #inFlight = new Map<ServerResponse, Recording | null>();
  /** close() has begun: responses say Connection: close, connections are closed as they go idle */
  #draining = false;
  #drained: () => void = () => {};
  /** ConfigMap max-worker-connections and large-client-header-buffers, set at each swap */
  #maxConnections = DEFAULT_GLOBAL_CONFIG.maxWorkerConnections;
  #headerBufferSize = DEFAULT_GLOBAL_CONFIG.largeClientHeaderBuffers.size;

  constructor(options: DataPlaneOptions) {
    this.#options = options;
    this.#caches = createRuntimeCaches(options.pathRegexes);
    const env = options.balancerEnv ?? defaultBalancerEnv;
    this.#random = () => env.random();
    // what fails in the proxy's deferred work (a next try, a buffered body's end) meets the same boundary
    this.#proxy.contain = (error, req, res) => this.#failed(error, 'proxy', req, res);
    this.#proxy.containSocket = (error) => this.#publishFailure(error, 'upgrade', null);
    // Node checks client-header-timeout every connectionsCheckingInterval (30 s by default): each
    // second keeps the limit within a second of NGINX's
    // requireHostHeader: rejectedStatus checks Host instead, answering with NGINX's page
    const http1 = {
      maxHeaderSize: maxHeaderSize(DEFAULT_GLOBAL_CONFIG),
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
    };
    this.#http = createHttpServer(http1, (req, res) => this.#handle(req, res, false));
    // until the first swap, every handshake gets the generated default certificate
    const initialSni = initialSniStore(options.generatedDefaultCertificate);
    this.#httpsListener = createHttpsListener(
      () => this.#runtime?.sni ?? initialSni,
      (req, res) => this.#handle(req, res, true),
    );
    this.#https = this.#httpsListener.server;
    if (options.sslPassthrough === true) {
      const front = createPassthroughFront({
        table: () => this.#runtime?.passthrough ?? null,
        helloTimeoutMs: () =>
          (this.#runtime?.model.config.client.headerTimeout ?? DEFAULT_GLOBAL_CONFIG.client.headerTimeout) *
          1000,
        tunnel: (client, upstream) => this.#proxy.tunnel(client, upstream),
      });
      this.#httpsListener.front(front.accept);
      this.#passthrough = front;
    }
    applyHeaderSize(DEFAULT_GLOBAL_CONFIG, [this.#https as HeaderSizeLimited]);
    for (const [server, https] of [
      [this.#http, false],
      [this.#https, true],
    ] as const) {
      // HTTPS counts TCP connections too ('connection'), before the handshake, as NGINX does
      (server as Server).on('connection', (socket: Duplex) => {
        // max-worker-connections: over the cap the connection is closed at once, as NGINX does
        if (overConnectionCap(this.#stats.active, this.#maxConnections)) {
          socket.destroy();
          return;
        }
        this.#stats.accepted++;
        this.#stats.active++;
        socket.once('close', () => this.#stats.active--);
      });
      (server as Server).on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        const before = socketBytes(socket);
        try {
          this.#upgrade(req, socket, head, https);
        } catch (error) {
          this.#socketFailed(error, 'upgrade', req, socket, socketBytes(socket) === before);
        }
      });
      // without a listener Node closes an HTTP/1 CONNECT's connection with no answer at all
      (server as Server).on(
        'connect',
        (req: IncomingMessage, socket: Duplex | ServerResponse, head?: Buffer) => {
          try {
            this.#connect(req, socket, head, https);
          } catch (error) {
            if (head === undefined) this.#failed(error, 'request', req, socket as ServerResponse);
            else this.#socketFailed(error, 'connection', req, socket as Duplex, true);
          }
        },
      );
      (server as Server).on(
        'clientError',
        (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
          try {
            const status = clientErrorAnswer(error, socket, this.#headerBufferSize);
            if (status !== 0 && requestRefused.hasSubscribers) {
              const record = unparsedRecord(socket, error.rawPacket, https, generateRequestId());
              finishOnClose(record, socket, socket, () => status, requestRefused);
            }
            answerClientError(socket, status);
          } catch (failure) {
            this.#socketFailed(failure, 'connection', null, socket, false);
          }
        },
      );
    }
  }

  /** Connection and request counters, live (read them, do not keep a copy). */
  get stats(): Readonly<DataPlaneStats> {
    return this.#stats;
  }

  /** The runtime requests are served from now; null before the first swap. */
  get current(): Runtime | null {
    return this.#runtime;
  }

  /** Compile the model and make it current. Returns whether it was an endpoints-only update. */
  swap(model: Model): 'full' | 'endpoints' | 'unchanged' {
    const previous = this.#runtime;
    if (previous !== null && previous.hash === model.hash) return 'unchanged';
    beforeCompile(this.#caches, previous, model);
    const next = compileRuntime(model, previous, {
      generatedDefaultCertificate: this.#options.generatedDefaultCertificate,
      balancerEnv: this.#options.balancerEnv ?? defaultBalancerEnv,
      ewmaStore: this.#ewmaStore,
      caches: this.#caches,
    });
    this.#runtime = next;
    // handshakes without SNI use the server's own credentials, not the SNICallback
    applyDefaultCertificate(this.#https, next.sni);
    applyConnectionSettings(model.config, [this.#http, this.#https as unknown as Http1Timeouts], this.#proxy);
    applyHeaderSize(model.config, [this.#http as HeaderSizeLimited, this.#https as HeaderSizeLimited]);
    this.#maxConnections = model.config.maxWorkerConnections;
    this.#headerBufferSize = model.config.largeClientHeaderBuffers.size;
    this.#httpsListener.http2 = next.model.config.useHttp2;
    const kind = previous !== null && previous.routesHash === model.routesHash ? 'endpoints' : 'full';
    if (previous !== null) {
      const gone = [...previous.peerKeys].filter((key) => !next.peerKeys.has(key));
      if (gone.length > 0) this.#proxy.retire(gone);
      if (next.backendTlsIds !== previous.backendTlsIds) this.#proxy.retireTls(next.backendTlsIds);
    }
    if (runtimeSwapped.hasSubscribers) runtimeSwapped.publish({ kind, hash: model.hash });
    return kind;
  }

  // DataPlaneHandle: in this thread, a swap serves once swap() returns
  async apply(model: Model): Promise<SwapResult> {
    return { kind: this.swap(model), hash: model.hash };
  }

  ready(): boolean {
    return this.#runtime !== null;
  }

  statsSnapshot(): DataPlaneStats {
    return copyStats(this.#stats);
  }

  async describe(): Promise<RuntimeDescription | null> {
    const runtime = this.#runtime;
    return runtime === null ? null : describeRuntime(runtime, this.#certificateInfo);
  }

  async listen(): Promise<ListenAddresses> {
    const host = this.#options.bindAddress === '' ? undefined : this.#options.bindAddress;
    const listen = (server: Server | Http2SecureServer, port: number) =>
      new Promise<AddressInfo>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    const http = await listen(this.#http, this.#options.httpPort);
    this.#httpPort = http.port;
    const https = await listen(this.#https, this.#options.httpsPort);
    return { http, https };
  }

  /**
   * Graceful stop (NGINX's `quit`): stop accepting, close idle keep-alive connections (GOAWAY on HTTP/2
   * sessions), let the requests in flight finish for up to `drainMs` (ConfigMap worker-shutdown-timeout),
   * closing each HTTP/1.1 connection as its last request ends; then cut what is left, WebSocket tunnels
   * last. Resolves once every listener is closed.
   */
  async close(drainMs = 0): Promise<void> {
    const servers = [this.#http, this.#https];
    const closed = Promise.all(
      servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
    const drained = new Promise<void>((resolve) => {
      this.#drained = resolve;
    });
    this.#draining = true;
    // responses not begun yet tell their client the connection closes after them
    for (const res of this.#inFlight.keys()) if (!res.headersSent) res.shouldKeepAlive = false;
    this.#closeIdle();
    if (this.#inFlight.size === 0) this.#drained();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, drainMs);
    });
    await Promise.race([drained, deadline]);
    clearTimeout(timer);
    // the requests are done (or out of time): the connections, then the WebSocket tunnels
    this.#http.closeAllConnections();
    this.#httpsListener.destroyAll();
    this.#passthrough?.destroyPending();
    // tunnels last: WebSockets and ssl-passthrough connections
    await this.#proxy.close();
    await this.#authClient.close();
    await closed;
  }

  /** While draining: idle HTTP/1.1 connections closed, HTTP/2 sessions told GOAWAY. */
  #closeIdle(): void {
    this.#http.closeIdleConnections();
    this.#httpsListener.closeIdle();
  }

  /** One listener for every response (no closure per request): `this` is the response. */
  readonly #onResponseClose = ((plane: DataPlane) =>
    function (this: ServerResponse): void {
      try {
        plane.#requestClosed(this);
      } catch (error) {
        plane.#inFlight.delete(this);
        plane.#publishFailure(error, 'close', this.req);
      }
    })(this);

  /** A request's response closed (sent or aborted): while draining, its connection may now be idle. */
  #requestClosed(res: ServerResponse): void {
    const recording = this.#inFlight.get(res);
    this.#inFlight.delete(res);
    if (recording != null) {
      // the source kept from the start: `res.req.socket` is null once the connection was detached
      finishRecord(recording.record, recording.source, res.headersSent ? res.statusCode : 499);
    }
    this.#nextPipelined(res);
    if (!this.#draining) return;
    // the connection goes idle once the response is detached from it (after this event)
    setImmediate(() => this.#closeIdle());
    if (this.#inFlight.size === 0) this.#drained();
  }

  /**
   * The routing decision shared by requests and WebSocket upgrades (ingress-nginx's order): $uri,
   * host, path, ssl-redirect, then the route's action.
   */
  #route(req: IncomingMessage, https: boolean): Decision {
    const runtime = this.#runtime;
    if (runtime === null) return { kind: 'error', status: 503, host: '', match: null, requestId: undefined };
    const path = normalizePath(req.url ?? '/');
    if (path === null) return { kind: 'error', status: 400, host: '', match: null, requestId: undefined };
    // block-cidrs: denied whatever the host or path (NGINX's http-level deny)
    if (runtime.blockCidrs !== null) {
      const peer = peerOf(req.socket);
      const client = runtime.http.clientAddress === null ? peer : clientAddressOf(req, runtime.http, peer);
      if (listed(runtime.blockCidrs, unmapped(client)) || client === '') {
        return {
          kind: 'error',
          status: 403,
          host: '',
          match: null,
          requestId: undefined,
          clientAddress: client,
        };
      }
    }
    // the two headers routing needs, read from rawHeaders: `req.headers` would build an object per request
    let host: string | undefined;
    let incomingId: string | undefined;
    let contentLength: string | undefined;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      if (name.length === 4) {
        if (host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
      } else if (name.length === 10) {
        // HTTP/2: the authority pseudo-header is the Host
        if (host === undefined && name === ':authority') host = raw[i + 1];
      } else if (name.length === 12) {
        if (incomingId === undefined && name.toLowerCase() === 'x-request-id') incomingId = raw[i + 1];
      } else if (name.length === 14) {
        if (contentLength === undefined && name.toLowerCase() === 'content-length')
          contentLength = raw[i + 1];
      }
    }
    const hostname = normalizeHost(host);
    const server = runtime.hosts.lookup(hostname);
    if (incomingId === '') incomingId = undefined;
    // server level: the client certificate (auth-tls), before any redirect or location
    let clientCertHeaders: string[] | undefined;
    const clientAuth = serverClientAuth(req, https, hostname, server.clientAuth);
    if (clientAuth !== null) {
      if (clientAuth.kind === 'redirect') {
        const location = clientAuth.location;
        return { kind: 'redirect', code: 302, location, host: hostname, match: null, requestId: incomingId };
      }
      if (clientAuth.kind === 'reject') {
        const { status } = clientAuth;
        if (status === 503)
          return { kind: 'error', status, host: hostname, match: null, requestId: incomingId };
        return { kind: 'clientAuth', status, host: hostname, match: null, requestId: incomingId };
      }
      clientCertHeaders = clientAuth.headers;
    }
    // from-to-www-redirect: the whole name redirects, port always included ($server_port: 443 on HTTPS)
    if (server.redirectTo !== null) {
      let uri = req.url ?? '/';
      if (uri.endsWith('/')) uri = uri.slice(0, -1);
      const location = https
        ? `https://${server.redirectTo}:443${uri}`
        : `http://${server.redirectTo}:${this.#httpPort}${uri}`;
      const code = runtime.model.config.httpRedirectCode;
      return { kind: 'redirect', code, location, host: hostname, match: null, requestId: incomingId };
    }
    const match = server.paths.match(path);
    const policy = runtime.tlsPolicy;
    // app-root acts at server level, before any location (and so before every other redirect)
    if (server.appRoot !== null && path === '/') {
      const location = `${https ? 'https' : 'http'}://${host ?? ''}${server.appRoot}`;
      return { kind: 'redirect', code: 302, location, host: hostname, match, requestId: incomingId };
    }
    const action = match.value;
    // CORS preflight: the first thing the location does (before redirects, ssl-redirect, access and 503)
    if (action.response !== null && isPreflight(req, action.response)) {
      return { kind: 'preflight', host: hostname, match, requestId: incomingId };
    }
    // a route's own redirect comes before ssl-redirect (ingress-nginx's rewrite phase order)
    if (action.type === 'redirect') {
      return {
        kind: 'redirect',
        code: action.code,
        location: action.location,
        host: hostname,
        match,
        requestId: incomingId,
      };
    }
    // proxy-body-size: a declared length over the location's limit, before the upstream is involved
    if (contentLength !== undefined && action.type === 'proxy' && tooLarge(contentLength, action.target)) {
      return { kind: 'error', status: 413, host: hostname, match, requestId: incomingId };
    }
    // use-forwarded-headers: the scheme the client used in front of the load balancer decides
    const secure = runtime.http.useForwardedHeaders ? forwardedHttps(req, https) : https;
    // rewrite-target (ngx_http_rewrite, before lua's ssl-redirect): a URL target answers 302
    const rewritten =
      action.rewrite === null
        ? null
        : applyRewrite(action.rewrite, path, req.url ?? '/', match.captures, https);
    if (rewritten?.redirect !== undefined) {
      return {
        kind: 'redirect',
        code: 302,
        location: rewritten.redirect,
        host: hostname,
        match,
        requestId: incomingId,
      };
    }
    // a denied location answers 503 in NGINX's rewrite phase, before lua's ssl-redirect
    if (action.type === 'status' && action.denied === true) {
      return { kind: 'error', status: 503, host: hostname, match, requestId: incomingId };
    }
    if (!secure && action.httpsRedirect !== null) {
      return {
        kind: 'redirect',
        code: action.httpsRedirect.code,
        location: httpsLocation(
          req,
          action.httpsRedirect.preserveTrailingSlash,
          runtime.http.useForwardedHeaders,
          action.httpsRedirect.withPort,
        ),
        host: hostname,
        match,
        requestId: incomingId,
      };
    }
    if (action.type === 'status') {
      // the built-in default backend (404) answers in NGINX's content phase, after the access phase
      // (a host's unmatched paths inherit its Ingress's lists); an unknown upstream's 503 comes before
      const denied =
        action.access === null || action.status === 503
          ? 0
          : this.#accessStatus(req, runtime, action.access, action.auth?.any === true);
      if (denied === ALLOWLISTED) {
        return {
          kind: 'error',
          status: action.status,
          host: hostname,
          match,
          requestId: incomingId,
          allowlisted: true,
        };
      }
      return { kind: 'error', status: denied || action.status, host: hostname, match, requestId: incomingId };
    }
    const http = runtime.http;
    if (action.target.balancer.peers.length === 0) {
      const errors = action.errors ?? null;
      const code = action.whenEmpty;
      if (
        errors === null ||
        errors.target.balancer.peers.length === 0 ||
        !(errors.whenEmpty || errors.codes.has(code))
      ) {
        return { kind: 'error', status: code, host: hostname, match, requestId: incomingId };
      }
      const requestId = incomingId ?? generateRequestId();
      const peerAddress = peerOf(req.socket);
      const remoteAddress =
        http.clientAddress === null ? peerAddress : clientAddressOf(req, http, peerAddress);
      return {
        kind: 'customError',
        code,
        errors,
        context: {
          https,
          listenPort: https ? 443 : this.#httpPort,
          remoteAddress,
          peerAddress,
          requestId,
          policy: http,
          hsts: https && server.tls ? policy.hsts : null,
          hashKey: '',
          session: null,
        },
        host: hostname,
        match,
        requestId,
        clientAddress: remoteAddress,
      };
    }
    const peerAddress = peerOf(req.socket);
    const remoteAddress = http.clientAddress === null ? peerAddress : clientAddressOf(req, http, peerAddress);
    // the access phase: rate limits, then denylist/allowlist (access.ts)
    let release: (() => void) | null = null;
    let allowlisted = false;
    const access = action.access;
    if (access !== null) {
      const verdict = admit(access, remoteAddress, performance.now(), action.auth?.any === true);
      // satisfy any: an allowlisted client skips authentication (the flags share the verdict)
      if (verdict > 0 && verdict < 100) {
        if ((verdict & ADMITTED_WITH_SLOT) !== 0) release = () => leave(access, remoteAddress);
        allowlisted = (verdict & ALLOWLISTED) !== 0;
      } else if (verdict !== 0) {
        return {
          kind: 'error',
          status: verdict,
          host: hostname,
          match,
          requestId: incomingId,
          clientAddress: remoteAddress,
        };
      }
    }
    const requestId = incomingId ?? (http.generateRequestId ? generateRequestId() : '');
    // the canary decision, once per request (retries stay where it sent them); a canary without
    // endpoints never gets the request. A request whose affinity cookie was minted by the main
    // upstream stays on main, one minted by a sticky canary goes to the canary.
    let target = action.target;
    let canary = '';
    const alternative = action.canary;
    const affinity = target.affinity ?? alternative?.target.affinity ?? null;
    const cookie = affinity === null ? undefined : cookieValue(req, affinity.cookieName);
    if (alternative !== null && alternative.target.balancer.peers.length > 0) {
      const toCanary = affinitized(cookie, target)
        ? false
        : affinitized(cookie, alternative.target) || routeToCanary(req, alternative, this.#random);
      if (toCanary) {
        target = alternative.target;
        canary = target.upstream;
      }
    }
    return {
      kind: 'proxy',
      target,
      canary,
      release,
      context: {
        https,
        listenPort: https ? 443 : this.#httpPort,
        remoteAddress,
        peerAddress,
        requestId,
        policy: allowlisted ? (action.auth?.policy ?? http) : http,
        errors: action.errors ?? null,
        hsts: https && server.tls ? policy.hsts : null,
        hashKey:
          target.hashKey === null
            ? ''
            : target.hashKey({ req, uri: rewritten?.uri ?? path, host: hostname, https, remoteAddress }),
        session: sessionOf(req, target, cookie, action.setsAffinityCookie, match.locationPath, https),
        upstreamHost:
          target.upstreamHostOf == null
            ? null
            : target.upstreamHostOf({ req, uri: rewritten?.uri ?? path, host: hostname, https }) || null,
        mirror:
          action.mirror === null
            ? null
            : mirrorRequestOf(action.mirror, {
                req,
                uri: rewritten?.uri ?? path,
                host: hostname,
                https,
                remoteAddress,
              }),
        ...(clientCertHeaders === undefined ? {} : { clientCertHeaders }),
        ...(rewritten === null ? {} : { path: rewritten.path, forwardedPrefix: rewritten.forwardedPrefix }),
      },
      host: hostname,
      match,
      requestId,
      clientAddress: remoteAddress,
      ...(allowlisted ? { allowlisted } : {}),
    };
  }

  /** The access phase of a request answered at once: its status, 0, or ALLOWLISTED (satisfy any: skip auth); a connection slot is given back at once. */
  #accessStatus(req: IncomingMessage, runtime: Runtime, access: AccessPolicy, satisfyAny: boolean): number {
    const peer = peerOf(req.socket);
    const client = runtime.http.clientAddress === null ? peer : clientAddressOf(req, runtime.http, peer);
    const verdict = admit(access, client, performance.now(), satisfyAny);
    if (verdict >= 100) return verdict;
    if ((verdict & ADMITTED_WITH_SLOT) !== 0) leave(access, client);
    return verdict & ALLOWLISTED;
  }

  /** $remote_addr for the request record: the real IP when enabled, else the socket peer. */
  #clientAddress(req: IncomingMessage, decision: Decision): string | undefined {
    if (decision.clientAddress !== undefined) return decision.clientAddress;
    const policy = this.#runtime?.http;
    if (policy === undefined || policy.clientAddress === null) return undefined;
    return clientAddressOf(req, policy, peerOf(req.socket));
  }

  /**
   * The error boundary of a request: an exception while serving it is contained to it (#failed).
   * Its asynchronous continuations have their own (#settle); the response's close listener too.
   */
  #handle(req: IncomingMessage, res: ServerResponse, https: boolean): void {
    try {
      this.#stats.requests++;
      this.#inFlight.set(res, null);
      res.on('close', this.#onResponseClose);
      // HTTP/1.1 pipelining: Node hands over every request of a pipelined batch at once; NGINX serves
      // them one after the other, so one connection holds at most one request upstream (an HTTP/2
      // connection: one per stream, bounded by SETTINGS_MAX_CONCURRENT_STREAMS)
      if ((req as IncomingMessage & { stream?: unknown }).stream === undefined) {
        const socket = req.socket as PipelinedSocket;
        const pipeline = socket[PIPELINE];
        if (pipeline !== undefined) {
          (res as PipelinedResponse)[PIPELINE] = pipeline;
          // and no more is read meanwhile: what waits is bounded by one read, not by what the client sends
          if (pipeline.waiting.push({ req, res, https }) === 1) reading(socket, false);
          return;
        }
        const started: Pipeline = { socket, current: res, waiting: [] };
        socket[PIPELINE] = started;
        (res as PipelinedResponse)[PIPELINE] = started;
      }
      this.#serve(req, res, https);
    } catch (error) {
      this.#failed(error, 'request', req, res);
    }
  }

  /**
   * An unexpected exception while serving `req`: a 500 when nothing was sent yet (the connection
   * closed after it, whatever state the failure left behind), else the response cut; published
   * with the request id (log line, ingress_ts_request_errors_total). The process goes on serving.
   */
  #failed(error: unknown, where: RequestFailure['where'], req: IncomingMessage, res: ServerResponse): void {
    try {
      if (!res.headersSent && !res.writableEnded && !res.destroyed) {
        for (const name of res.getHeaderNames()) res.removeHeader(name);
        res.shouldKeepAlive = false;
        sendErrorPage(res, 500);
      } else {
        res.destroy();
      }
    } catch {
      res.destroy();
    }
    this.#publishFailure(error, where, req, this.#inFlight.get(res)?.record.requestId);
  }

  /** #failed for a connection: a raw 500 when `unanswered` (nothing written yet), then closed. */
  #socketFailed(
    error: unknown,
    where: RequestFailure['where'],
    req: IncomingMessage | null,
    socket: Duplex,
    unanswered: boolean,
  ): void {
    try {
      if (unanswered && socket.writable) sendSocketErrorPage(socket, 500);
      else socket.destroy();
    } catch {
      socket.destroy();
    }
    this.#publishFailure(error, where, req);
  }

  #publishFailure(
    error: unknown,
    where: RequestFailure['where'],
    req: IncomingMessage | null,
    requestId?: string,
  ): void {
    if (!requestFailed.hasSubscribers) return;
    let id = requestId ?? '';
    if (id === '' && req !== null) {
      const incoming = req.headers['x-request-id'];
      id = typeof incoming === 'string' && incoming !== '' ? incoming : generateRequestId();
    }
    const failure: RequestFailure = {
      where,
      requestId: id,
      message: error instanceof Error ? error.message : String(error),
      stack: error instanceof Error ? (error.stack ?? '') : '',
    };
    requestFailed.publish(failure);
  }

  /** The response of an HTTP/1.1 request closed: the next pipelined request of its connection, if any, is served. */
  #nextPipelined(res: ServerResponse): void {
    const pipeline = (res as PipelinedResponse)[PIPELINE];
    if (pipeline === undefined || pipeline.current !== res) return;
    const socket = pipeline.socket;
    if (socket.destroyed || !res.shouldKeepAlive) {
      // the connection ends with this response: the requests after it are never answered (Node never
      // closes their responses), so none of them goes upstream
      socket[PIPELINE] = undefined;
      for (const dropped of pipeline.waiting) this.#requestClosed(dropped.res);
      return;
    }
    const next = pipeline.waiting.shift();
    if (next === undefined) {
      socket[PIPELINE] = undefined;
      return;
    }
    // the last request read so far: its body, and the requests after it, may be read again
    if (pipeline.waiting.length === 0) reading(socket, true);
    pipeline.current = next.res;
    // its own boundary: this runs in the close listener of the response before it
    try {
      this.#serve(next.req, next.res, next.https);
    } catch (error) {
      this.#failed(error, 'request', next.req, next.res);
    }
  }

  #serve(req: IncomingMessage, res: ServerResponse, https: boolean): void {
    if (this.#draining) res.shouldKeepAlive = false;
    if (this.#runtime !== null) {
      countRequest(req, res, this.#runtime.model.config);
      // too long a request line or header, or a body whose framing cannot be trusted: refused before
      // routing, and the connection closed after the answer
      const rejected = rejectedStatus(req, this.#runtime.model.config);
      if (rejected !== 0) {
        res.shouldKeepAlive = false;
        if (requestRefused.hasSubscribers) {
          const source = byteSourceOf(req);
          finishOnClose(refusedRecord(req, source, https), res, source, () => rejected, requestRefused);
        }
        sendErrorPage(res, rejected);
        return;
      }
    }
    if (req.url !== undefined && req.url.charCodeAt(0) !== 47 /* / */) toOriginForm(req);
    const decision = this.#route(req, https);
    let record: RequestRecord | null = null;
    if (requestLogged.hasSubscribers) {
      // published when the response closes (#requestClosed)
      const source = byteSourceOf(req);
      record = recordOf(req, source, decision, https, this.#clientAddress(req, decision));
      this.#inFlight.set(res, { record, source });
    }
    const auth = authOf(decision);
    if (auth === null) this.#respond(req, res, decision, record);
    else
      this.#settle(
        this.#authenticate(req, decision, auth, https),
        (error) => this.#failed(error, 'auth', req, res),
        (verdict) => {
          // the client left while the check ran: nothing to answer (an exchange started now would
          // find no 'close' to stop it, and hold its upstream request open), the slot given back
          if (!this.#inFlight.has(res)) {
            if (decision.kind === 'proxy') decision.release?.();
            return;
          }
          if (verdict.allowed) {
            if (decision.kind === 'proxy') decision.context.policy = verdict.policy;
            this.#respond(req, res, decision, record);
            return;
          }
          // the limit-connections slot taken in the access phase is given back with the answer
          if (decision.kind === 'proxy' && decision.release) res.once('close', decision.release);
          const runtime = this.#runtime;
          if (runtime !== null) {
            setOwnResponseHeaders(res, responsePolicy(req, routeResponseOf(decision), runtime.http));
          }
          for (const [name, value] of verdict.headers) res.setHeader(name, value);
          if (verdict.location !== null) sendRedirect(req, res, verdict.status, verdict.location);
          else sendErrorPage(res, verdict.status);
        },
      );
  }

  /** The access phase's authentication of a routed request (auth.ts). */
  #authenticate(
    req: IncomingMessage,
    decision: Decision,
    auth: RouteAuth,
    https: boolean,
  ): AuthVerdict | Promise<AuthVerdict> {
    const context = decision.kind === 'proxy' ? decision.context : null;
    const remoteAddress = context?.remoteAddress ?? this.#clientAddress(req, decision) ?? peerOf(req.socket);
    const requestId = context?.requestId || decision.requestId || generateRequestId();
    return authenticate(auth, req, this.#authClient, {
      req,
      uri: normalizePath(req.url ?? '/') ?? '/',
      host: decision.host,
      https,
      remoteAddress,
      requestId,
    });
  }

  /**
   * Runs `then` on the verdict, now or when it arrives; a failure of the check itself answers 500.
   * Later, the caller's boundary is gone: an exception in `then` goes to `failed`.
   */
  #settle(
    verdict: AuthVerdict | Promise<AuthVerdict>,
    failed: (error: unknown) => void,
    then: (verdict: AuthVerdict) => void,
  ): void {
    if (!(verdict instanceof Promise)) {
      then(verdict);
      return;
    }
    verdict
      .then(then, (error: unknown) => {
        dataplaneError.publish({
          message: `authentication: ${error instanceof Error ? error.message : String(error)}`,
        });
        then({ allowed: false, status: 500, headers: [], location: null });
      })
      .then(undefined, failed);
  }

  /** Carries out a decision: an error page, a redirect, the error backend or the proxy. */
  #respond(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Decision,
    record: RequestRecord | null,
  ): void {
    const runtime = this.#runtime;
    // the route's response headers (custom-headers, CORS) on every response, whoever answers
    const routeResponse = routeResponseOf(decision);
    if (
      decision.kind === 'error' ||
      decision.kind === 'redirect' ||
      decision.kind === 'preflight' ||
      decision.kind === 'clientAuth'
    ) {
      if (runtime !== null) setOwnResponseHeaders(res, responsePolicy(req, routeResponse, runtime.http));
    } else if (routeResponse !== null) {
      decision.context.policy = responsePolicy(
        req,
        routeResponse,
        decision.context.policy ?? DEFAULT_HTTP_POLICY,
      );
    }
    if (decision.kind === 'preflight') sendPreflight(res);
    else if (decision.kind === 'error') sendErrorPage(res, decision.status);
    else if (decision.kind === 'clientAuth') sendClientAuthRejection(req, res, decision.status);
    else if (decision.kind === 'redirect')
      sendRedirect(
        req,
        res,
        decision.code,
        decision.location ?? httpsLocation(req, false, this.#runtime?.http.useForwardedHeaders),
      );
    else if (decision.kind === 'customError')
      this.#proxy.customError(req, res, decision.errors, decision.code, decision.context, record);
    else {
      if (decision.release) res.once('close', decision.release);
      this.#proxy.web(req, res, decision.target, decision.context, record);
    }
  }

  /**
   * A CONNECT: ingress-ts is no forward proxy. NGINX answers 405 (400 for an authority-form target),
   * logged as a refusal, and the connection is closed after it (the bytes after the head are not read
   * as another request). On HTTP/2 the compatibility API hands over a request and its response.
   */
  #connect(
    req: IncomingMessage,
    socket: Duplex | ServerResponse,
    head: Buffer | undefined,
    https: boolean,
  ): void {
    this.#stats.requests++;
    if (head === undefined) {
      const res = socket as ServerResponse;
      if (requestRefused.hasSubscribers) {
        const source = byteSourceOf(req);
        finishOnClose(refusedRecord(req, source, https), res, source, () => 405, requestRefused);
      }
      sendErrorPage(res, 405);
      return;
    }
    const client = socket as Duplex;
    client.on('error', () => {});
    const status = connectRejectedStatus(req, this.#runtime?.model.config ?? null);
    if (requestRefused.hasSubscribers) {
      finishOnClose(refusedRecord(req, client, https), client, client, () => status, requestRefused);
    }
    answerClientError(client, status);
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, https: boolean): void {
    this.#stats.requests++;
    const before = socketBytes(socket);
    socket.on('error', (error) => dataplaneError.publish({ message: `client socket: ${error.message}` }));
    const rejected = this.#runtime === null ? 0 : upgradeRejectedStatus(req, this.#runtime.model.config);
    if (rejected !== 0) {
      if (requestRefused.hasSubscribers) {
        finishOnClose(refusedRecord(req, socket, https), socket, socket, () => rejected, requestRefused);
      }
      sendSocketErrorPage(socket, rejected);
      return;
    }
    if (req.url !== undefined && req.url.charCodeAt(0) !== 47 /* / */) toOriginForm(req);
    const decision = this.#route(req, https);
    let record: RequestRecord | null = null;
    if (requestLogged.hasSubscribers) {
      const started = recordOf(req, socket, decision, https, this.#clientAddress(req, decision));
      // the status is what went out on the socket: set below, or by the exchange
      finishOnClose(started, socket, socket, () => (started.status === 0 ? 499 : started.status));
      record = started;
    }
    const auth = authOf(decision);
    if (auth === null) this.#respondUpgrade(req, socket, head, decision, record);
    else
      this.#settle(
        this.#authenticate(req, decision, auth, https),
        (error) => this.#socketFailed(error, 'auth', req, socket, socketBytes(socket) === before),
        (verdict) => {
          if (socket.destroyed) {
            if (decision.kind === 'proxy') decision.release?.();
            return;
          }
          if (verdict.allowed) {
            if (decision.kind === 'proxy') decision.context.policy = verdict.policy;
            this.#respondUpgrade(req, socket, head, decision, record);
          } else {
            if (decision.kind === 'proxy' && decision.release) socket.once('close', decision.release);
            if (record !== null) record.status = verdict.status;
            sendSocketAuthDenial(socket, verdict);
          }
        },
      );
  }

  #respondUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    decision: Decision,
    record: RequestRecord | null,
  ): void {
    if (decision.kind === 'clientAuth') {
      const status = sendSocketClientAuthRejection(socket, decision.status);
      if (record !== null) record.status = status;
    } else if (decision.kind === 'preflight') {
      if (record !== null) record.status = 204;
      socket.end('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n');
    } else if (decision.kind === 'error' || decision.kind === 'customError') {
      // an upgrade is not sent to an error backend: the plain error page
      const status = decision.kind === 'error' ? decision.status : decision.code;
      if (record !== null) record.status = status;
      sendSocketErrorPage(socket, status);
    } else if (decision.kind === 'redirect') {
      const code = decision.code;
      if (record !== null) record.status = code;
      socket.end(
        `HTTP/1.1 ${code} ${REDIRECT_REASONS[code] ?? 'Redirect'}\r\nLocation: ${decision.location ?? httpsLocation(req)}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
      );
    } else {
      const routeResponse = routeResponseOf(decision);
      if (routeResponse !== null && this.#runtime !== null)
        decision.context.policy = responsePolicy(
          req,
          routeResponse,
          decision.context.policy ?? this.#runtime.http,
        );
      if (decision.release) socket.once('close', decision.release);
      this.#proxy.upgrade(req, socket, head, decision.target, decision.context, record);
    }
  }
}

/**
 * The authentication a decision goes through first: a proxied request's route, or a route that
 * answers by itself after the access phase (the built-in default backend's 404, FastCGI's 502); never
 * the 503 of a route without endpoints (the rewrite phase, before access), redirects or errors.
 */
function authOf(decision: Decision): RouteAuth | null {
  const action = decision.match?.value;
  if (action === undefined || action.type === 'redirect' || decision.allowlisted === true) return null;
  if (decision.kind === 'proxy') return action.auth ?? null;
  if (decision.kind === 'error' && action.type === 'status' && action.status === decision.status) {
    return action.auth ?? null;
  }
  return null;
}

/** A Content-Length over the target's proxy-body-size (0: unlimited). */
function tooLarge(contentLength: string, target: ProxyTarget): boolean {
  const limit = target.maxBodySize ?? 0;
  return limit > 0 && Number(contentLength) > limit;
}

/** The session key of an affinity cookie (`<session key>|<backend key>`) minted by `target`'s upstream. */
function sessionKeyOf(cookie: string | undefined, target: ProxyTarget): string | null {
  if (cookie === undefined || !(target.balancer instanceof StickyBalancer)) return null;
  const bar = cookie.indexOf('|');
  if (bar === -1 || cookie.slice(bar + 1) !== target.balancer.backendKey) return null;
  return cookie.slice(0, bar);
}

const affinitized = (cookie: string | undefined, target: ProxyTarget): boolean =>
  sessionKeyOf(cookie, target) !== null;

/** The affinity part of a request's context: its session, and how to bake a new session's cookie. */
function sessionOf(
  req: IncomingMessage,
  target: ProxyTarget,
  cookie: string | undefined,
  setsCookie: boolean,
  locationPath: string,
  https: boolean,
): SessionContext | null {
  const affinity = target.affinity;
  if (affinity === null || !(target.balancer instanceof StickyBalancer)) return null;
  return {
    key: sessionKeyOf(cookie, target),
    changeOnFailure: affinity.changeOnFailure,
    cookie: setsCookie
      ? (value) =>
          affinityCookie(affinity, value, {
            https,
            locationPath,
            userAgent: req.headers['user-agent'] ?? '',
            now: Date.now(),
          })
      : null,
  };
}

/** The record of a routed request: who it belongs to, and whether the route wants it logged. */
function recordOf(
  req: IncomingMessage,
  source: Duplex,
  decision: Decision,
  https: boolean,
  clientAddress: string | undefined,
): RequestRecord {
  const match = decision.match;
  const action = match?.value;
  return startRecord(req, source, {
    remoteAddress: clientAddress,
    host: decision.host,
    path: match === null ? '' : match.locationPath,
    route: action?.route ?? null,
    // $proxy_upstream_name is the route's own upstream even when its canary serves the request
    upstream: action?.type === 'proxy' ? action.target.upstream : '',
    canary: decision.kind === 'proxy' ? decision.canary : '',
    requestId: decision.requestId ?? generateRequestId(),
    https,
    // requests nothing routed (not ready, malformed) are logged
    accessLog: action?.accessLog ?? true,
  });
}

/**
 * An absolute-form request (`GET http://host/p HTTP/1.1`) becomes the origin-form request it stands
 * for: its target's authority replaces the Host header (HTTP/1.1 says a server must ignore the
 * received Host then: the target names the host; NGINX too takes $host from the request line), so routing, the upstream's Host
 * and X-Forwarded-Host all see one host, and `req.url` is the path and query. Any other target that
 * does not start with "/" is left alone: `*` was refused already (rejectedStatus), the rest are
 * refused with 400 where the path is normalised.
 */
function toOriginForm(req: IncomingMessage): void {
  const split = absoluteForm(req.url ?? '');
  if (split === null) return;
  req.url = split.target;
  const raw = req.rawHeaders;
  let at = -1;
  for (let i = 0; i < raw.length && at === -1; i += 2)
    if ((raw[i] as string).toLowerCase() === 'host') at = i;
  if (at === -1) raw.push('Host', split.authority);
  else raw[at + 1] = split.authority;
  req.headers.host = split.authority;
}

/**
 * The record of a request refused before routing (client-limits.ts): its Host, but no route, and the
 * socket's peer as the client (NGINX refuses these before real_ip runs).
 */
function refusedRecord(req: IncomingMessage, source: Duplex, https: boolean): RequestRecord {
  return startRecord(req, source, {
    host: normalizeHost(req.headers.host ?? (req.headers[':authority'] as string | undefined)),
    path: '',
    route: null,
    upstream: '',
    canary: '',
    requestId: generateRequestId(),
    https,
    accessLog: true,
  });
}

/**
 * ingress-nginx ssl-redirect: `https://<host without port><request URI minus one trailing slash>`
 * (the slash kept with preserve-trailing-slash); with use-port-in-redirects `https://<host>:443...`:
 * NGINX names its HTTPS listen port, which the Service maps from 443 (as X-Forwarded-Port says 443).
 */
function httpsLocation(
  req: IncomingMessage,
  preserveTrailingSlash = false,
  forwardedHost = false,
  withPort = false,
): string {
  const forwarded = forwardedHost ? req.headers['x-forwarded-host'] : undefined;
  const hostHeader = (typeof forwarded === 'string' && forwarded !== '' ? forwarded : req.headers.host) ?? '';
  const host = hostHeader.startsWith('[')
    ? hostHeader.slice(0, hostHeader.indexOf(']') + 1)
    : hostHeader.split(':')[0];
  let uri = req.url ?? '/';
  if (!preserveTrailingSlash && uri.endsWith('/')) uri = uri.slice(0, -1);
  return withPort ? `https://${host}:443${uri}` : `https://${host}${uri}`;
}

/** The custom-headers and CORS of the route a request matched, or null. */
function routeResponseOf(decision: Decision): RouteResponse | null {
  return (decision.match?.value as RoutedAction | undefined)?.response ?? null;
}

/** The answer to a CORS preflight (ingress-nginx: 204, this Content-Type as written, no body). */
function sendPreflight(res: ServerResponse): void {
  res.writeHead(204, { 'Content-Type': 'text/plain charset=UTF-8', 'Content-Length': '0' });
  res.end();
}

/** A redirect answered by the proxy itself, with NGINX's body. */
function sendRedirect(req: IncomingMessage, res: ServerResponse, code: number, location: string): void {
  const title = `${code} ${REDIRECT_REASONS[code] ?? 'Redirect'}`;
  const body = `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n</body>\r\n</html>\r\n`;
  res.writeHead(code, {
    Location: location,
    'Content-Type': 'text/html',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
