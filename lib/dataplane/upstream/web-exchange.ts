// A proxied HTTP request whose response goes to a ServerResponse (HTTP/1.x or HTTP/2 client): the
// response head with its rewrites, the body with backpressure or limit-rate, trailers, gRPC
// trailers-only answers, the send and client-body timeouts, and the hand-off to custom-http-errors.

import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
// the module's binding, not the global: `globalThis.performance` is an accessor, read through a
// global IC on every call (~180 instructions)
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { RequestRecord } from '../request-record.ts';
import { type BodySink, compressResponse } from '../responses/compression.ts';
import { type CustomErrors, intercepts, interceptsResponse } from '../responses/custom-errors.ts';
import { sendErrorPage } from '../responses/error-pages.ts';
import { Exchange } from './exchange.ts';
import { CLIENT_ABORTED, NEXT_STATUS, noop, ProxyError, SEND_TIMEOUT } from './failures.ts';
import { type PaceLimit, Pacer } from './pacer.ts';
import { responseHeaders, rewriteHeaders, setOwnResponseHeaders, withoutHeader } from './response-headers.ts';
import type { ProxyTarget, RequestContext } from './target.ts';
import type { UpstreamProxy } from './upstream-proxy.ts';

/** A plain HTTP request: response to a ServerResponse. */
export class WebExchange extends Exchange {
  private readonly req: IncomingMessage;
  private readonly res: ServerResponse;
  /** custom-http-errors of the route (null on the error backend's own exchange) */
  errors: CustomErrors | null = null;
  /** the request's context, for a request to the error backend */
  context: RequestContext | null = null;
  private readonly hsts: string | null;
  private sendTimer: NodeJS.Timeout | undefined = undefined;
  private drainHooked = false;
  /** limit-rate: the response body's pace (pacer.ts), from its first byte */
  private pacer: Pacer | null = null;
  /** the client speaks HTTP/2 (its response is an Http2ServerResponse) */
  private readonly h2: boolean;
  /**
   * A gRPC trailers-only response (grpc-status in the head) to an HTTP/2 client, held until the
   * upstream says whether a body follows: if none does, it goes out as one HEADERS frame ending
   * the stream, as the gRPC protocol requires.
   */
  private held: { status: number; headers: Array<string | string[]> } | null = null;
  /**
   * Body bytes of a Content-Length response still to come (-1: no length, or paced by limit-rate).
   * The chunk that completes the body is kept for `res.end(chunk)`: one call instead of a write and
   * an end, and no cork-and-flush tick of Node's for that write.
   */
  private bodyLeft = -1;
  private lastChunk: Buffer | null = null;
  /** where the body goes: the response, or a compressor in front of it (responses/compression.ts) */
  private body: BodySink;

  constructor(
    proxy: UpstreamProxy,
    req: IncomingMessage,
    res: ServerResponse,
    target: ProxyTarget,
    opts: Dispatcher.DispatchOptions,
    hasBody: boolean,
    hsts: string | null,
    record: RequestRecord | null,
  ) {
    super(proxy, target, opts, hasBody, record);
    this.req = req;
    this.res = res;
    this.body = res;
    this.hsts = hsts;
    this.h2 = req.httpVersionMajor === 2;
    if (hasBody) {
      // undici pauses the request body while the upstream socket is full: that wait is the send timeout
      req.on('error', noop);
      req.on('pause', () => {
        if (this.sendTimer === undefined && !this.done && target.sendTimeoutMs > 0) {
          this.sendTimer = setTimeout(() => this.onSendTimeout(), target.sendTimeoutMs);
        }
      });
      req.on('resume', () => this.clearSendTimer());
    }
  }

  /**
   * The client's response closed (UpstreamProxy.watchClose says how this is heard: normally from
   * the pipeline's own listener, so a response has one 'close' listener, not two).
   */
  responseClosed(): void {
    // an Http2ServerResponse reads as finished once its stream closed, reset or not: `done` tells
    if (!this.res.writableFinished || this.h2) this.clientGone();
  }

  /** A method, its closure made only when a body makes the timer start: none per exchange. */
  private onSendTimeout(): void {
    this.sendTimer = undefined;
    this.controller?.abort(new ProxyError(SEND_TIMEOUT, 'upstream timed out while sending the request'));
  }

  private clearSendTimer(): void {
    if (this.sendTimer !== undefined) {
      clearTimeout(this.sendTimer);
      this.sendTimer = undefined;
    }
  }

  protected override requestSettled(): void {
    this.clearSendTimer();
  }

  protected override clientGone(): void {
    this.clearSendTimer();
    this.pacer?.stop();
    super.clientGone();
  }

  /** The error backend answers instead (custom-http-errors); this exchange goes quiet. */
  private handOff(
    errors: CustomErrors,
    status: number,
    controller: Dispatcher.DispatchController | null,
  ): void {
    this.done = true;
    this.handedOff = true;
    this.clearSendTimer();
    controller?.abort(new ProxyError(CLIENT_ABORTED, 'response replaced by the error backend'));
    const ctx = this.context;
    if (ctx === null) return;
    this.proxy.customError(
      this.req,
      this.res,
      errors,
      status,
      ctx,
      this.record,
      this.opts.headers as string[],
    );
  }

  protected unexpected(error: unknown): void {
    // what was under way ends with it: the pace, the send timer and the upstream request
    this.clientGone();
    this.done = true;
    this.proxy.contain(error, this.req, this.res);
  }

  protected fail(status: number): void {
    if (intercepts(this.errors, status) && this.context !== null && !this.res.headersSent) {
      this.handOff(this.errors, status, null);
      return;
    }
    if (this.hsts !== null) this.res.setHeader('Strict-Transport-Security', this.hsts);
    if (!this.res.headersSent) setOwnResponseHeaders(this.res, this.policy);
    sendErrorPage(this.res, status);
  }

  /**
   * client-body-timeout: the request body may stay idle this long (NGINX's client_body_timeout);
   * then the client gets 408 and the upstream request is abandoned.
   */
  watchBody(req: IncomingMessage, ms: number): void {
    if (ms <= 0 || req.complete) return;
    req.setTimeout(ms, () => {
      if (req.complete || this.done) return;
      this.done = true;
      // a timer's callback is outside every request boundary: an exception is contained here
      try {
        this.clearSendTimer();
        this.controller?.abort(new ProxyError(CLIENT_ABORTED, 'client body timed out'));
        if (this.res.headersSent) {
          this.res.destroy();
          return;
        }
        if (this.record !== null) this.record.status = 408;
        this.res.setHeader('connection', 'close');
        setOwnResponseHeaders(this.res, this.policy);
        // Connection: close set by hand: Node closes the connection once the page is out
        sendErrorPage(this.res, 408);
      } catch (error) {
        this.unexpected(error);
      }
    });
    req.once('end', () => req.socket?.setTimeout(0));
  }

  protected cut(): void {
    this.res.destroy();
  }

  protected responseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // 1xx (103 Early Hints...) are not forwarded, like NGINX
    if (this.retriesStatus(statusCode)) {
      this.headReceived(statusCode);
      controller.abort(new ProxyError(NEXT_STATUS, `upstream answered ${statusCode}`));
      return;
    }
    this.responded = true;
    this.headReceived(statusCode);
    if (this.done) {
      controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
      return;
    }
    if (interceptsResponse(this.errors, statusCode)) {
      this.handOff(this.errors, statusCode, controller);
      return;
    }
    const out = responseHeaders(headers, this.policy, statusCode);
    if (this.target.rewrite != null) rewriteHeaders(out, this.target.rewrite);
    if (this.hsts !== null) {
      // ingress-nginx's Lua sets the header: the upstream's own value is replaced, not doubled
      if (headers['strict-transport-security'] !== undefined) withoutHeader(out, 'strict-transport-security');
      out.push('strict-transport-security', this.hsts);
    }
    if (this.newCookie !== null) out.push('set-cookie', this.newCookie);
    if (this.h2 && headers['grpc-status'] !== undefined) {
      this.held = { status: statusCode, headers: out };
      return;
    }
    const length = headers['content-length'];
    // undici has checked the length against the body it parses; NaN never matches a chunk
    if (typeof length === 'string' && this.target.limitRate == null) this.bodyLeft = Number(length);
    const compression = this.policy.compression;
    if (compression !== null)
      this.body = compressResponse(compression, this.req, this.res, statusCode, headers, out) ?? this.res;
    this.writeHead(controller, statusCode, out);
  }

  private writeHead(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    out: Array<string | string[]>,
  ): void {
    try {
      this.res.writeHead(statusCode, out);
    } catch (err) {
      // a header Node refuses to write: an invalid upstream response
      controller.abort(err instanceof Error ? err : new Error(String(err)));
    }
  }

  protected responseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.noteData(chunk.length);
    const held = this.held;
    if (held !== null) {
      this.held = null;
      this.writeHead(controller, held.status, held.headers);
    }
    const limit = this.target.limitRate;
    if (limit != null) {
      this.pacer ??= this.newPacer(limit);
      if (!this.pacer.push(chunk)) controller.pause();
      return;
    }
    // the body's last chunk: undici ends the response right after it, and it goes out with the end
    if (chunk.length === this.bodyLeft) {
      this.bodyLeft = 0;
      this.lastChunk = chunk;
      return;
    }
    if (this.bodyLeft > 0) this.bodyLeft -= chunk.length;
    if (!this.body.write(chunk)) {
      controller.pause();
      if (!this.drainHooked) {
        this.drainHooked = true;
        this.body.on('drain', () => this.controller?.resume());
      }
    }
  }

  /** limit-rate: writes go through a Pacer, which pauses and resumes the upstream itself. */
  private newPacer(limit: PaceLimit): Pacer {
    const pacer = new Pacer(limit, {
      write: (bytes) => this.body.write(bytes),
      resume: () => this.controller?.resume(),
      now: () => performance.now(),
      // the pace's timer runs outside every boundary of the request: an exception there is contained
      setTimer: (callback, ms) =>
        setTimeout(() => {
          try {
            callback();
          } catch (error) {
            this.unexpected(error);
          }
        }, ms),
      clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
    });
    // the client's drain event is outside every boundary of the request too
    this.body.on('drain', () => {
      try {
        pacer.drained();
      } catch (error) {
        this.unexpected(error);
      }
    });
    return pacer;
  }

  protected responseEnd(_controller: Dispatcher.DispatchController, trailers?: IncomingHttpHeaders): void {
    this.clearSendTimer();
    this.noteEnd();
    if (this.done) return;
    this.done = true;
    // limit-rate: the end goes out after the body still waiting for its pace
    if (this.pacer !== null) this.pacer.finish(() => this.endResponse(trailers));
    else this.endResponse(trailers);
  }

  private endResponse(trailers: IncomingHttpHeaders | undefined): void {
    const held = this.held;
    if (held !== null) {
      this.held = null;
      if (trailersOnly(this.res, held.status, held.headers)) return;
      this.res.writeHead(held.status, held.headers);
    }
    // the upstream's trailers (gRPC's grpc-status, grpc-message, custom metadata) go on to the client
    if (trailers !== undefined) {
      let hasTrailers = false;
      for (const _ in trailers) {
        hasTrailers = true;
        break;
      }
      if (hasTrailers) this.res.addTrailers(trailers as Record<string, string | string[]>);
    }
    const last = this.lastChunk;
    if (last === null) this.body.end();
    else {
      this.lastChunk = null;
      this.body.end(last);
    }
  }
}

/**
 * Sends a whole response as one HEADERS frame with END_STREAM on an HTTP/2 client's stream (the
 * compatibility API always sends the head and the end of the stream apart). False when the stream
 * cannot take it; the caller then answers the ordinary way.
 */
function trailersOnly(
  res: ServerResponse,
  status: number,
  headers: ReadonlyArray<string | string[]>,
): boolean {
  const stream = (res as ServerResponse & { stream?: ServerHttp2Stream }).stream;
  if (stream === undefined || stream.headersSent || stream.destroyed) return false;
  const out: OutgoingHttpHeaders = { ':status': status };
  for (let i = 0; i < headers.length; i += 2) out[headers[i] as string] = headers[i + 1];
  try {
    stream.respond(out, { endStream: true });
  } catch {
    return false;
  }
  return true;
}
