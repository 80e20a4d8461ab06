// The data plane: HTTP and HTTPS listeners created once, a current Runtime swapped by one
// assignment. Every request and handshake reads the runtime once and keeps it to the end (its
// retries, its streamed body, its WebSocket tunnel). What a request goes through is the request
// pipeline (pipeline/requests.ts); this file owns the listeners, the swap and the drain.

import { createServer as createHttpServer, type Server } from 'node:http';
import type { Http2SecureServer } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { DEFAULT_GLOBAL_CONFIG } from '../model/configmap/global-config.ts';
import type { Model, PathRegexCache } from '../model/index.ts';
import { ExternalAuthClient } from './access/external-auth.ts';
import type { ZoneMemory } from './access/zone-memory.ts';
import { beforeCompile, createRuntimeCaches, type RuntimeCaches } from './caches.ts';
import { CertificateInfoCache } from './describe/certificates.ts';
import { describeRuntime } from './describe/describe-runtime.ts';
import type { RuntimeDescription } from './describe/types.ts';
import { runtimeSwapped } from './events.ts';
import {
  copyStats,
  type DataPlaneHandle,
  type DataPlaneStats,
  type ListenAddresses,
  type SwapKind,
  type SwapResult,
} from './handle.ts';
import { DEFAULT_HTTP_POLICY } from './http-policy.ts';
import { type IdleHeap, startIdleHeap } from './idle-heap.ts';
import {
  applyHeaderSize,
  type HeaderSizeLimited,
  maxHeaderSize,
  maxRequestLine,
  overConnectionCap,
} from './listening/client-limits.ts';
import {
  applyConnectionSettings,
  applyHttp2Settings,
  type Http1Timeouts,
} from './listening/connection-settings.ts';
import { createHttpsListener, type HttpsListener, IDLE_SESSION_MS } from './listening/https-listener.ts';
import { createPassthroughFront, type PassthroughFront } from './listening/passthrough.ts';
import {
  createProxyProtocolFront,
  frontHttpServer,
  type ProxyProtocolFront,
} from './listening/proxy-front.ts';
import { applyDefaultCertificate, type CertificatePair, initialSniStore } from './listening/sni.ts';
import { type SessionShare, TlsSessions } from './listening/tls-sessions.ts';
import { publishFailure } from './pipeline/failures.ts';
import { RequestPipeline } from './pipeline/requests.ts';
import { compileRuntime, type Runtime } from './routing/runtime.ts';
import { StreamListeners, type StreamPortDescription } from './streams/stream-listeners.ts';
import { sdkLoaded } from './tracing/sdk-loader.ts';
import { Tracing } from './tracing/tracing.ts';
import type { BalancerEnv } from './upstream/balancer.ts';
import { createEwmaStore } from './upstream/balancers/ewma.ts';
import { defaultBalancerEnv } from './upstream/balancers/index.ts';
import { listenForClose, UpstreamProxy } from './upstream/upstream-proxy.ts';

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
  /**
   * the rate-limit zones' memory. A data-plane worker passes one and `adopt`s the main thread's
   * buffers into it before each apply (access/zone-memory.ts). Default: this data plane's own.
   */
  zoneMemory?: ZoneMemory;
  /**
   * the HTTPS listener's TLS session-ticket keys (48 bytes). Data-plane threads share one set, so a
   * session issued by one thread resumes on another. Default: keys of this data plane's own.
   */
  ticketKeys?: Uint8Array;
  /**
   * how data planes (a pool's threads) share the TLS sessions they cache (listening/tls-sessions.ts).
   * Default: this data plane's cache is its own.
   */
  sessionShare?: SessionShare;
  /**
   * the memory of the client-certificate leaves verified in full handshakes, shared by data-plane
   * threads along with the ticket keys (access/verified-leaves.ts). Default: this data plane's own.
   */
  verifiedLeaves?: SharedArrayBuffer;
  /** listen with SO_REUSEPORT: several data-plane threads share the ports, the kernel spreads connections */
  reusePort?: boolean;
  /**
   * whether this data plane opens the UDP service ports [true]. A UDP session belongs to one client
   * address, so with several data-plane threads only one opens them (worker/pool.ts).
   */
  udpServices?: boolean;
  /** how long without a request or connection before the young generation is given back (idle-heap.ts); 0: never */
  idleHeapMs?: number;
}

export type { DataPlaneStats, ListenAddresses } from './handle.ts';

/** A model compiled by `DataPlane.prepare`, not served yet. */
export interface PreparedSwap {
  readonly kind: SwapKind;
  readonly model: Model;
  /** the runtime it was compiled over */
  readonly previous: Runtime | null;
  /** the compiled runtime; null until the commit for an endpoints-only change (and for none) */
  readonly next: Runtime | null;
}

export class DataPlane implements DataPlaneHandle {
  readonly #options: DataPlaneOptions;
  readonly #proxy = new UpstreamProxy();
  /** OpenTelemetry: this data plane's (this thread's) tracer provider and exporter */
  readonly #tracing = new Tracing();
  /** auth-url / global-auth-url requests */
  readonly #authClient = new ExternalAuthClient();
  readonly #ewmaStore = createEwmaStore();
  readonly #http: Server;
  readonly #https: Http2SecureServer;
  readonly #httpsListener: HttpsListener;
  /** the ticket keys and the session cache of the HTTPS listener, set at each swap */
  readonly #sessions: TlsSessions;
  /** ssl-passthrough's front of the HTTPS listener, or null without --enable-ssl-passthrough */
  readonly #passthrough: PassthroughFront | null = null;
  /** use-proxy-protocol: the PROXY header read in front of both listeners (a no-op while off) */
  readonly #proxyProtocol: ProxyProtocolFront;
  #runtime: Runtime | null = null;
  #draining: Promise<void> | null = null;
  #serversClosed: Promise<void> = Promise.resolve();
  /** what this data plane keeps across its runtimes (path regexes, bcrypt outcomes, verified leaves) */
  readonly #caches: RuntimeCaches;
  /** parsed certificates of /debug/model descriptions */
  readonly #certificateInfo = new CertificateInfoCache();
  readonly #stats: DataPlaneStats = {
    accepted: 0,
    active: 0,
    requests: 0,
    mirror: this.#proxy.mirrors.stats,
    spans: this.#tracing.stats,
  };
  readonly #requests: RequestPipeline;
  /** the TCP and UDP service ports (--tcp-services-configmap, --udp-services-configmap) */
  readonly #streams: StreamListeners;
  /** ConfigMap max-worker-connections and large-client-header-buffers, set at each swap */
  #maxConnections = DEFAULT_GLOBAL_CONFIG.maxWorkerConnections;
  #headerBufferSize = maxRequestLine(DEFAULT_GLOBAL_CONFIG);
  /** while listening: the young generation given back when idle */
  #idleHeap: IdleHeap | null = null;

  constructor(options: DataPlaneOptions) {
    this.#options = options;
    this.#caches = createRuntimeCaches(options.pathRegexes, options.zoneMemory, options.verifiedLeaves);
    this.#streams = new StreamListeners({
      bindAddress: options.bindAddress,
      reusePort: options.reusePort === true,
      udp: options.udpServices !== false,
    });
    const env = options.balancerEnv ?? defaultBalancerEnv;
    const requests = new RequestPipeline({
      runtime: () => this.#runtime,
      proxy: this.#proxy,
      authClient: this.#authClient,
      counters: this.#stats,
      closeIdle: () => this.#closeIdle(),
      // the canary weight draw: the balancers' random source (tests seed it)
      random: () => env.random(),
      headerBufferSize: () => this.#headerBufferSize,
      tracing: this.#tracing,
    });
    this.#requests = requests;
    // what fails in the proxy's deferred work (a next try, a buffered body's end) meets the same boundary
    this.#proxy.contain = (error, req, res) => requests.failed(error, 'proxy', req, res);
    this.#proxy.containSocket = (error) => publishFailure(error, 'upgrade', null);
    // a proxied response keeps one 'close' listener: the pipeline's tells the exchange
    this.#proxy.watchClose = (res, exchange) => {
      if (!requests.watch(res, exchange)) listenForClose(res, exchange);
    };
    // Node checks client-header-timeout every connectionsCheckingInterval (30 s by default): each
    // second keeps the limit within a second of NGINX's
    // requireHostHeader: rejectedStatus checks Host instead, answering with NGINX's page
    const http1 = {
      maxHeaderSize: maxHeaderSize(DEFAULT_GLOBAL_CONFIG),
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
    };
    this.#http = createHttpServer(http1, (req, res) => requests.handle(req, res, requests.http));
    // until the first swap, every handshake gets the generated default certificate
    const initialSni = initialSniStore(options.generatedDefaultCertificate);
    this.#httpsListener = createHttpsListener(
      () => this.#runtime?.sni ?? initialSni,
      (req, res) => requests.handle(req, res, requests.https),
      IDLE_SESSION_MS,
      options.ticketKeys,
    );
    this.#https = this.#httpsListener.server;
    this.#sessions = new TlsSessions(this.#https, options.ticketKeys, options.sessionShare);
    this.#sessions.apply(DEFAULT_GLOBAL_CONFIG.sslHandshake);
    // the PROXY header comes before anything else: the HTTP parser, the passthrough peek, TLS
    const proxyProtocol = createProxyProtocolFront(() => this.#runtime?.http ?? DEFAULT_HTTP_POLICY);
    this.#proxyProtocol = proxyProtocol;
    frontHttpServer(this.#http, (socket, handOver) => proxyProtocol.accept(socket, handOver));
    let afterHeader = (socket: Socket, handOver: (socket: Socket) => void): void => handOver(socket);
    if (options.sslPassthrough === true) {
      const front = createPassthroughFront({
        table: () => this.#runtime?.passthrough ?? null,
        helloTimeoutMs: () =>
          (this.#runtime?.model.config.client.headerTimeout ?? DEFAULT_GLOBAL_CONFIG.client.headerTimeout) *
          1000,
        tunnel: (client, upstream) => this.#proxy.tunnel(client, upstream),
      });
      afterHeader = front.accept;
      this.#passthrough = front;
    }
    this.#httpsListener.front((socket, handOver) =>
      proxyProtocol.accept(socket, (next) => afterHeader(next, handOver)),
    );
    applyHeaderSize(DEFAULT_GLOBAL_CONFIG, [this.#https as HeaderSizeLimited]);
    for (const [server, arrival] of [
      [this.#http, requests.http],
      [this.#https as unknown as Server, requests.https],
    ] as const) {
      // HTTPS counts TCP connections too ('connection'), before the handshake, as NGINX does
      server.on('connection', (socket: Duplex) => {
        // max-worker-connections: over the cap the connection is closed at once, as NGINX does
        if (overConnectionCap(this.#stats.active, this.#maxConnections)) {
          socket.destroy();
          return;
        }
        this.#stats.accepted++;
        this.#stats.active++;
        socket.once('close', () => this.#stats.active--);
      });
      requests.listenTo(server, arrival);
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
  swap(model: Model): SwapKind {
    return this.commit(this.prepare(model));
  }

  /**
   * The first half of a swap: compiles `model` without serving it. `commit` serves it; a prepared
   * swap that is dropped leaves the current runtime serving (data-plane threads swap all or none).
   * An endpoints-only change is only noted here: its balancers are updated in place, at the commit.
   */
  prepare(model: Model): PreparedSwap {
    const previous = this.#runtime;
    if (previous !== null && previous.hash === model.hash)
      return { kind: 'unchanged', model, previous, next: null };
    if (previous !== null && previous.routesHash === model.routesHash)
      return { kind: 'endpoints', model, previous, next: null };
    beforeCompile(this.#caches, previous, model);
    return { kind: 'full', model, previous, next: this.#compile(model, previous) };
  }

  /** Serves a prepared swap; throws if another swap came between (the compile used a runtime since replaced). */
  commit(prepared: PreparedSwap): SwapKind {
    const { kind, model, previous } = prepared;
    if (this.#runtime !== previous)
      throw new Error(`model ${model.hash} was prepared over a runtime since replaced`);
    if (kind === 'unchanged') return kind;
    const next = prepared.next ?? this.#compile(model, previous);
    this.#runtime = next;
    // handshakes without SNI use the server's own credentials, not the SNICallback; the server's
    // context also holds the handshake settings (server-tls.ts)
    applyDefaultCertificate(this.#https, next.sni);
    this.#sessions.apply(model.config.sslHandshake);
    applyConnectionSettings(model.config, [this.#http, this.#https as unknown as Http1Timeouts], this.#proxy);
    applyHeaderSize(model.config, [this.#http as HeaderSizeLimited, this.#https as HeaderSizeLimited]);
    this.#maxConnections = model.config.maxWorkerConnections;
    this.#headerBufferSize = maxRequestLine(model.config);
    this.#httpsListener.http2 = next.model.config.useHttp2;
    this.#streams.update(model.streams, model.config);
    this.#tracing.configure(model.config.tracing);
    applyHttp2Settings(model.config, this.#httpsListener);
    if (previous !== null) {
      // an incremental compile that changed no upstream keeps the very same set: no peer left
      if (next.peerKeys !== previous.peerKeys) {
        const gone =
          next.retiredPeers ?? [...previous.peerKeys.keys()].filter((key) => !next.peerKeys.has(key));
        if (gone.length > 0) this.#proxy.retire(gone);
      }
      if (next.backendTlsIds !== previous.backendTlsIds) this.#proxy.retireTls(next.backendTlsIds);
    }
    if (runtimeSwapped.hasSubscribers) runtimeSwapped.publish({ kind, hash: model.hash });
    return kind;
  }

  #compile(model: Model, previous: Runtime | null): Runtime {
    return compileRuntime(model, previous, {
      generatedDefaultCertificate: this.#options.generatedDefaultCertificate,
      balancerEnv: this.#options.balancerEnv ?? defaultBalancerEnv,
      ewmaStore: this.#ewmaStore,
      caches: this.#caches,
    });
  }

  // DataPlaneHandle: in this thread, a swap serves once swap() returns
  async apply(model: Model): Promise<SwapResult> {
    const prepared = this.prepare(model);
    // a compile with traced routes: served once the OpenTelemetry SDK is loaded (its first time)
    await sdkLoaded();
    const kind = this.#runtime === prepared.previous ? this.commit(prepared) : this.swap(model);
    await this.#streams.settled();
    return { kind, hash: model.hash };
  }

  /** Resolves once the TCP and UDP service ports follow the model served (they open asynchronously). */
  streamsSettled(): Promise<void> {
    return this.#streams.settled();
  }

  ready(): boolean {
    return this.#runtime !== null;
  }

  statsSnapshot(): DataPlaneStats {
    return copyStats(this.#stats);
  }

  async describe(): Promise<RuntimeDescription | null> {
    const runtime = this.#runtime;
    if (runtime === null) return null;
    const now = (this.#options.balancerEnv ?? defaultBalancerEnv).now();
    const description = describeRuntime(runtime, this.#certificateInfo, { store: this.#ewmaStore, now });
    const streams = this.#streams.describe();
    return streams.length === 0 ? description : { ...description, streams };
  }

  /** The TCP and UDP service ports open in this data plane, with its own counts. */
  describeStreams(): StreamPortDescription[] {
    return this.#streams.describe();
  }

  /** Listens on the configured ports, or on `ports` (a data-plane thread joining the ports another one bound). */
  async listen(ports?: { http: number; https: number }): Promise<ListenAddresses> {
    const host = this.#options.bindAddress === '' ? undefined : this.#options.bindAddress;
    const reusePort = this.#options.reusePort === true;
    const listen = (server: Server | Http2SecureServer, port: number) =>
      new Promise<AddressInfo>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host, reusePort }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    const http = await listen(this.#http, ports?.http ?? this.#options.httpPort);
    this.#requests.http.port = http.port;
    const https = await listen(this.#https, ports?.https ?? this.#options.httpsPort);
    await this.#streams.listen();
    if (this.#options.idleHeapMs !== 0) {
      const stats = this.#stats;
      this.#idleHeap ??= startIdleHeap({
        activity: () => stats.requests + stats.accepted,
        intervalMs: this.#options.idleHeapMs,
      });
    }
    return { http, https };
  }

  /**
   * Graceful stop (NGINX's `quit`): stop accepting, close idle keep-alive connections (GOAWAY on HTTP/2
   * sessions), let the requests in flight finish for up to `drainMs` (ConfigMap worker-shutdown-timeout),
   * closing each HTTP/1.1 connection as its last request ends; then cut what is left, WebSocket tunnels
   * last. Resolves once every listener is closed.
   */
  async close(drainMs = 0): Promise<void> {
    await this.drain(drainMs);
    await this.closeTunnels();
  }

  /**
   * The first half of close: stop accepting, let requests in flight finish for up to `drainMs`, then
   * close the HTTP connections left; tunnels stay open. Several threads all drain before any cuts its
   * tunnels, so a tunnel outlives every thread's requests, as with one thread. Once only: a second
   * call gets the first one's promise.
   */
  drain(drainMs = 0): Promise<void> {
    this.#draining ??= this.#drainOnce(drainMs);
    return this.#draining;
  }

  /** The second half of close, after drain: WebSocket and ssl-passthrough tunnels, then the listeners. */
  async closeTunnels(): Promise<void> {
    await this.drain();
    // closed before the thread's last records leave: their ends are among them
    await this.#streams.cut();
    await this.#proxy.close();
    // the spans of the last requests go to the collector before the thread ends
    await this.#tracing.close();
    await this.#authClient.close();
    await this.#serversClosed;
    this.#sessions.close();
  }

  async #drainOnce(drainMs: number): Promise<void> {
    this.#idleHeap?.stop();
    const servers = [this.#http, this.#https];
    this.#serversClosed = Promise.all(
      servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    ).then(() => undefined);
    // TCP streams drain as requests do: NGINX's worker waits for its stream connections too
    const drained = Promise.all([this.#requests.drain(), this.#streams.drain()]);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, drainMs);
    });
    await Promise.race([drained, deadline]);
    clearTimeout(timer);
    // the requests are done (or out of time): the connections; tunnels are closeTunnels' part
    this.#http.closeAllConnections();
    this.#httpsListener.destroyAll();
    this.#passthrough?.destroyPending();
    this.#proxyProtocol.destroyPending();
  }

  /** While draining: idle HTTP/1.1 connections closed, HTTP/2 sessions told GOAWAY. */
  #closeIdle(): void {
    this.#http.closeIdleConnections();
    this.#httpsListener.closeIdle();
  }
}
