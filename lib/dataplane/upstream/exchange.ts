// One proxied exchange: the tries, the retry rule (proxy-next-upstream), the failure answer, and the
// request record's upstream timings. WebExchange and UpgradeExchange say where the response goes.

// the module's binding, not the global: `globalThis.performance` is an accessor, read through a
// global IC on every call (~180 instructions)
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { type Dispatcher, errors } from 'undici';
import { dataplaneError } from '../events.ts';
import { DEFAULT_HTTP_POLICY, type HttpPolicy } from '../http-policy.ts';
import { type RequestRecord, recordRetry } from '../request-record.ts';
import type { Peer } from './balancer.ts';
import { StickyBalancer } from './balancers/sticky.ts';
import {
  CLIENT_ABORTED,
  classify,
  ERROR,
  errorCode,
  type FailureKind,
  INVALID,
  NEXT_STATUS,
  ProxyError,
  TIMEOUT,
  TOO_LARGE,
} from './failures.ts';
import type { PoolProtocol } from './pools.ts';
import type { ReadDeadlines, ReadWaiter } from './read-deadlines.ts';
import type { ProxyTarget, SessionContext } from './target.ts';
import type { UpstreamProxy } from './upstream-proxy.ts';

/** NGINX's `ngx_http_upstream_non_idempotent`: never resent once the request went out. */
const NON_IDEMPOTENT = new Set(['POST', 'LOCK', 'PATCH']);

export abstract class Exchange implements Dispatcher.DispatchHandler, ReadWaiter {
  protected readonly proxy: UpstreamProxy;
  protected readonly target: ProxyTarget;
  protected readonly opts: Dispatcher.DispatchOptions;
  protected readonly hasBody: boolean;
  protected readonly idempotent: boolean;
  protected tried: Set<string> | undefined = undefined;
  /** upstream-hash-by key (RequestContext.hashKey) */
  hashKey = '';
  /** affinity (RequestContext.session) */
  session: SessionContext | null = null;
  /** which pool of the peer the tries use (backend-protocol) */
  protocol: PoolProtocol = 'HTTP';
  /** the ConfigMap's header settings (RequestContext.policy) */
  policy: HttpPolicy = DEFAULT_HTTP_POLICY;
  /** the Set-Cookie of a session this exchange started, for the response head */
  protected newCookie: string | null = null;
  protected attempts = 0;
  protected peer: Peer | undefined = undefined;
  protected controller: Dispatcher.DispatchController | null = null;
  /** the current try began writing the request upstream */
  protected started = false;
  /** a response head went (or is going) to the client: no more retries */
  protected responded = false;
  /** the exchange is over (answered, cut or abandoned) */
  protected done = false;
  /** the response was handed to the error backend (custom-http-errors): this exchange is silent */
  protected handedOff = false;
  /** the client went away */
  protected gone = false;
  protected lastKind: FailureKind = ERROR;
  private t0 = 0;
  /** when the first try was dispatched (proxy-next-upstream-timeout) */
  private tFirst = 0;
  /** the request's log record (upstream address, status and timings per try), when kept */
  protected readonly record: RequestRecord | null;
  /**
   * Who keeps proxy-read-timeout for the tries (read-deadlines.ts: requests without a body, whose
   * undici timeouts are then 0); null: undici does.
   */
  readDeadlines: ReadDeadlines | null = null;
  readProgress = false;
  readIdleTicks = 0;
  readLink: unknown = undefined;

  constructor(
    proxy: UpstreamProxy,
    target: ProxyTarget,
    opts: Dispatcher.DispatchOptions,
    hasBody: boolean,
    record: RequestRecord | null,
  ) {
    this.proxy = proxy;
    this.target = target;
    this.opts = opts;
    this.hasBody = hasBody;
    this.idempotent = !NON_IDEMPOTENT.has(opts.method);
    this.record = record;
  }

  get readTimeoutMs(): number {
    return this.target.readTimeoutMs;
  }

  /** Reading is held on purpose: the response waits for its client or its pace (limit-rate). */
  readHeld(): boolean {
    return this.controller?.paused === true;
  }

  /**
   * proxy-read-timeout ran out (read-deadlines.ts): the try fails as undici's own timeouts would,
   * before the head (proxy-next-upstream timeout, else 504) or within the body (a cut response).
   * Called from the deadlines' timer, outside every boundary of the request.
   */
  readTimedOut(): void {
    try {
      this.controller?.abort(
        this.responded ? new errors.BodyTimeoutError() : new errors.HeadersTimeoutError(),
      );
    } catch (error) {
      this.unexpected(error);
    }
  }

  /** The peer of the current (or last) try, '' before the first: the span's upstream.address. */
  get peerKey(): string {
    return this.peer?.key ?? '';
  }

  /** Seconds since the current try was dispatched. */
  protected elapsed(): number {
    return (performance.now() - this.t0) / 1000;
  }

  /** The client is gone: stop the upstream side. */
  protected clientGone(): void {
    if (this.done) return;
    this.gone = true;
    this.done = true;
    this.controller?.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
  }

  /** Answers with an error status (no response head was sent yet). */
  protected abstract fail(status: number): void;

  /** An exception where no listener's boundary reaches (a deferred try): contained to this exchange. */
  protected abstract unexpected(error: unknown): void;
  /** Cuts the client connection (a response was under way). */
  protected abstract cut(): void;

  /** The peer for this try: the session's with affinity (a new session sets its cookie), else the balancer's. */
  private pickPeer(): Peer | undefined {
    const balancer = this.target.balancer;
    const session = this.session;
    if (session === null || !(balancer instanceof StickyBalancer))
      return balancer.pick(this.tried, this.hashKey);
    const chosen = balancer.session(session.key, this.tried, session.changeOnFailure);
    if (chosen?.newKey != null) {
      session.key = chosen.newKey;
      this.newCookie = session.cookie?.(`${chosen.newKey}|${balancer.backendKey}`) ?? null;
    }
    return chosen?.peer;
  }

  /** Starts the next try, or answers when there is no peer to try. A method, not a bound arrow: no
   * closure per exchange (it is only ever called on the exchange). */
  next(): void {
    if (this.done) return;
    const peer = this.pickPeer();
    if (peer === undefined) {
      this.done = true;
      this.fail(this.attempts === 0 ? 503 : this.lastKind === TIMEOUT ? 504 : 502);
      return;
    }
    this.peer = peer;
    const now = performance.now();
    if (this.attempts === 0) this.tFirst = now;
    this.attempts++;
    this.started = false;
    this.controller = null;
    this.t0 = now;
    const record = this.record;
    if (record !== null) {
      if (record.upstreamAddr !== '') recordRetry(record);
      record.upstreamAddr = peer.key;
    }
    // a dispatch error (closed pool, invalid argument) comes back through onResponseError
    const target = this.target;
    this.proxy
      .pool(
        peer.key,
        target.connectTimeoutMs,
        this.protocol,
        target.backendTls ?? null,
        target.maxResponseHead,
      )
      .dispatch(this.opts, this);
  }

  /** Another try is allowed: tries left (proxy-next-upstream-tries) and within -timeout. */
  protected triesLeft(): boolean {
    const target = this.target;
    const max = target.tries > 0 ? target.tries : Math.max(1, target.balancer.peers.length);
    if (this.attempts >= max) return false;
    const window = target.nextUpstreamTimeoutMs ?? 0;
    return window <= 0 || performance.now() - this.tFirst < window;
  }

  /** The request went out and may go out again: no streamed body, and idempotent unless non_idempotent. */
  protected resendable(): boolean {
    return !this.hasBody && (this.idempotent || this.target.retryOn.nonIdempotent);
  }

  /** The response head's status is one of proxy-next-upstream's http_xxx and another try may start. */
  protected retriesStatus(statusCode: number): boolean {
    return (
      this.target.retryOn.statuses?.has(statusCode) === true &&
      !this.done &&
      this.triesLeft() &&
      this.resendable()
    );
  }

  /** Moves on to the next try (the current peer is excluded), out of undici's callback. */
  protected retry(): void {
    const peer = this.peer;
    if (peer !== undefined) {
      this.tried ??= new Set();
      this.tried.add(peer.key);
    }
    // out of every listener's boundary: an exception of the next try is contained here
    queueMicrotask(() => {
      try {
        this.next();
      } catch (error) {
        this.unexpected(error);
      }
    });
  }

  /**
   * A response head came from the upstream: the balancer's latency observation, then
   * $upstream_header_time and $upstream_status, from one reading of the clock.
   */
  protected headReceived(statusCode: number): void {
    const seconds = this.elapsed();
    const peer = this.peer;
    if (peer !== undefined) this.target.balancer.observe(peer, seconds);
    const record = this.record;
    if (record === null) return;
    record.headerTime = seconds;
    record.upstreamStatus = statusCode;
    record.upstreamResponseLength = 0;
  }

  // undici catches what its callbacks throw and reports it as the upstream's failure (a 502 or a cut
  // response, counted against the upstream): an exception of ours is contained here instead, logged
  // and counted as one, as everywhere else in the request.
  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusText?: string,
  ): void {
    this.readProgress = true;
    try {
      this.responseStart(controller, statusCode, headers, statusText);
    } catch (error) {
      this.unexpected(error);
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.readProgress = true;
    try {
      this.responseData(controller, chunk);
    } catch (error) {
      this.unexpected(error);
    }
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers?: IncomingHttpHeaders): void {
    this.readDeadlines?.stop(this);
    try {
      this.responseEnd(controller, trailers);
    } catch (error) {
      this.unexpected(error);
    }
  }

  /** The upstream's response head (undici's onResponseStart, inside the boundary above). */
  protected abstract responseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusText?: string,
  ): void;
  /** A chunk of the upstream's response body. */
  protected abstract responseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  /** The upstream's response is complete. */
  protected abstract responseEnd(
    controller: Dispatcher.DispatchController,
    trailers?: IncomingHttpHeaders,
  ): void;

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.started = true;
    // connected (or a kept-alive connection taken): NGINX's $upstream_connect_time
    if (this.record !== null) this.record.connectTime = this.elapsed();
    this.readDeadlines?.start(this);
    if (this.gone) controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    this.readDeadlines?.stop(this);
    this.requestSettled();
    if (this.gone || this.handedOff) return;
    const code = errorCode(err);
    if (code === NEXT_STATUS) {
      // a discarded http_xxx answer (its status and timings are already on the record)
      if (this.record !== null) this.record.responseTime = this.elapsed();
      if (!this.done) this.retry();
      return;
    }
    const record = this.record;
    if (record !== null && !this.responded) {
      record.responseTime = this.elapsed();
      record.upstreamStatus = classify(code) === TIMEOUT ? 504 : 502;
    }
    const peer = this.peer;
    if (dataplaneError.hasSubscribers) {
      dataplaneError.publish({
        upstream: this.target.upstream,
        peer: peer?.key,
        code,
        message: err.message,
      });
    }
    if (this.done) return;
    if (this.responded) {
      this.done = true;
      this.cut();
      return;
    }
    const kind = classify(code);
    this.lastKind = kind;
    const retryOn = this.target.retryOn;
    const wanted =
      kind === TIMEOUT
        ? retryOn.timeout
        : kind === ERROR
          ? retryOn.error
          : kind === INVALID
            ? retryOn.invalidHeader === true
            : false;
    if (wanted && this.triesLeft() && (!this.started || this.resendable())) {
      // out of undici's error path before dispatching again (possibly to the same pool)
      this.retry();
      return;
    }
    this.done = true;
    this.fail(kind === TIMEOUT ? 504 : kind === TOO_LARGE ? 413 : 502);
  }

  /** Hook: the current try has ended (error or end). */
  protected requestSettled(): void {}

  /** Body bytes came from the upstream: $upstream_response_length. */
  protected noteData(bytes: number): void {
    if (this.record !== null) this.record.upstreamResponseLength += bytes;
  }

  /** The upstream's response is complete: $upstream_response_time. */
  protected noteEnd(): void {
    if (this.record !== null) this.record.responseTime = this.elapsed();
  }
}
