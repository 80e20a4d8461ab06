// mirror-target: a fire-and-forget copy of a proxied request (NGINX's `mirror`). The copy leaves when
// the proxy starts the request upstream; nothing of the client's exchange ever waits for it: its answer
// is read and thrown away, its failure is counted, and a copy whose body falls behind is abandoned
// rather than slowing the upstream request.
//
// Bounds, so copies never pile up: at most `maxInFlight` copies at a time (more are dropped and
// counted), `connectTimeoutMs` to connect, `timeoutMs` for the whole copy, and at most
// `maxPendingBytes` of streamed body waiting for the mirror. Failures and drops are logged on
// `dataplaneError` at most once per `reportIntervalMs`, with the counts since the last line.
//
// The copy carries the client's headers without the hop-by-hop ones and `Host: mirror-host`; the
// proxy's own X-Forwarded-* / X-Request-ID are not added (ingress-nginx's mirror location only sets
// Host). One undici Agent (a pool per mirror origin, kept alive), TLS not verified like NGINX's
// default `proxy_ssl_verify off`.

import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { PassThrough, type Readable, Transform } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import type { MirrorErrorCode } from '../../errors.ts';
import type { MirrorAnnotations } from '../../model/annotations/mirror.ts';
import { dataplaneError } from '../events.ts';
import { compileHashKey, type HashKey, type KeyInput } from './hash-key.ts';

/** A route's mirror, compiled once per swap. */
export interface CompiledMirror {
  /** the copy's URL for a request (mirror-target with its variables) */
  readonly url: HashKey;
  /** the copy's Host header (mirror-host, else the target's host name) */
  readonly host: HashKey;
  /** mirror-request-body */
  readonly requestBody: boolean;
  /**
   * an HTTPRoute RequestMirror: the share of requests copied (0-100), drawn per request; a `url` of
   * '' then means no copy (the mirror's Service has no endpoints). Absent: every request, as
   * mirror-target
   */
  readonly percent?: number;
  /** an HTTPRoute rule's request header edits, made on the copy's headers as on the proxied request's */
  readonly edit?: HeaderEdit | undefined;
}

/** Edits a copy's header lines (name, value pairs) into the lines it is sent with. */
export type HeaderEdit = (lines: string[]) => string[];

export function compileMirror(value: MirrorAnnotations): CompiledMirror | null {
  if (value.target === null || value.host === null) return null;
  return {
    url: compileHashKey(value.target),
    host: compileHashKey(value.host),
    requestBody: value.requestBody,
  };
}

/** Where one request's copy goes, decided with the route. */
export interface MirrorRequest {
  url: string;
  host: string;
  requestBody: boolean;
  edit?: HeaderEdit | undefined;
}

export function mirrorRequestOf(mirror: CompiledMirror, input: KeyInput): MirrorRequest | null {
  const percent = mirror.percent;
  if (percent !== undefined) {
    if (percent < 100 && Math.random() * 100 >= percent) return null;
    const url = mirror.url(input);
    if (url === '') return null;
    return { url, host: mirror.host(input), requestBody: mirror.requestBody, edit: mirror.edit };
  }
  return { url: mirror.url(input), host: mirror.host(input), requestBody: mirror.requestBody };
}

/** Copies so far, by outcome (metrics read them live). */
export interface MirrorStats {
  /** the mirror answered (any status) */
  answered: number;
  /** refused, reset, timed out, unresolvable, or an unusable URL */
  failed: number;
  /** not sent (over the in-flight cap) or abandoned (its body fell too far behind, the request failed) */
  dropped: number;
}

export interface MirrorOptions {
  maxInFlight?: number;
  connectTimeoutMs?: number;
  timeoutMs?: number;
  maxPendingBytes?: number;
  reportIntervalMs?: number;
}

export const MIRROR_DEFAULTS: Required<MirrorOptions> = {
  maxInFlight: 1024,
  connectTimeoutMs: 5_000,
  timeoutMs: 60_000,
  maxPendingBytes: 1024 * 1024,
  reportIntervalMs: 60_000,
};

/** Request headers that never go to the mirror as the client sent them. */
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
  'content-length',
  'expect',
  'proxy',
]);

/** The client's headers for the copy: hop-by-hop ones (and those Connection names) removed, Host set. */
function mirrorHeaders(req: IncomingMessage, host: string, contentLength: string | null): string[] {
  const raw = req.rawHeaders;
  const out: string[] = ['host', host];
  const h2 = req.httpVersionMajor === 2;
  let connection: string | undefined;
  let cookies: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (lower.charCodeAt(0) === 58 /* : */) continue;
    if (HOP_BY_HOP.has(lower)) {
      if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
      continue;
    }
    // HTTP/2 cookie crumbs become one Cookie header
    if (h2 && lower === 'cookie') cookies = cookies === undefined ? value : `${cookies}; ${value}`;
    else out.push(name, value);
  }
  if (cookies !== undefined) out.push('cookie', cookies);
  if (connection !== undefined) {
    const named = new Set(connection.split(',').map((token) => token.trim().toLowerCase()));
    for (let i = 2; i < out.length; ) {
      if (named.has((out[i] as string).toLowerCase())) out.splice(i, 2);
      else i += 2;
    }
  }
  if (contentLength !== null) out.push('content-length', contentLength);
  return out;
}

/** `scheme://authority` and the request target of a copy's URL, as written (no normalisation). */
const URL_PARTS = /^(https?:\/\/[^/?#]+)([^#]*)/i;

class MirrorError extends Error {
  readonly code: MirrorErrorCode;
  constructor(code: MirrorErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

type Outcome = 'answered' | 'failed' | 'dropped';

/** One copy in flight: discards the answer, ends once, whatever ends it first. */
class MirrorExchange implements Dispatcher.DispatchHandler {
  readonly #client: MirrorClient;
  readonly #origin: string;
  #controller: Dispatcher.DispatchController | null = null;
  /** the body streamed to the mirror, if any */
  sink: PassThrough | null = null;
  settled = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(client: MirrorClient, origin: string, timeoutMs: number) {
    this.#client = client;
    this.#origin = origin;
    this.#timer = setTimeout(
      () =>
        this.abandon('failed', new MirrorError('MIRROR_TIMEOUT', `no complete answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    this.#timer.unref();
  }

  /** Ends the copy now (counted as `outcome`) and stops it. */
  abandon(outcome: Outcome, reason: Error): void {
    if (this.settled) return;
    this.#settle(outcome, reason);
    this.#controller?.abort(reason);
    this.sink?.destroy();
  }

  #settle(outcome: Outcome, error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.#timer);
    this.#client.settled(outcome, this.#origin, error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.settled) controller.abort(new MirrorError('MIRROR_ABANDONED', 'mirror request abandoned'));
  }

  onResponseStart(): void {}

  onResponseData(): void {}

  onResponseEnd(): void {
    this.#settle('answered', null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#settle('failed', error);
    this.sink?.destroy();
  }
}

export class MirrorClient {
  readonly stats: MirrorStats = { answered: 0, failed: 0, dropped: 0 };
  readonly #options: Required<MirrorOptions>;
  readonly #agent: Agent;
  #inFlight = 0;
  /** failures and drops not reported yet, and when the last report went out */
  #unreportedFailed = 0;
  #unreportedDropped = 0;
  #lastReport = Number.NEGATIVE_INFINITY;

  constructor(options: MirrorOptions = {}) {
    this.#options = { ...MIRROR_DEFAULTS, ...options };
    this.#agent = new Agent({
      connect: { timeout: this.#options.connectTimeoutMs, rejectUnauthorized: false },
      allowH2: false,
    });
  }

  /** Copies in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** A copy without a body (`body` null, or mirror-request-body off) or with the whole body read. */
  send(req: IncomingMessage, mirror: MirrorRequest, body: Buffer | null): void {
    const withBody = mirror.requestBody && body !== null;
    this.#start(
      req,
      mirror,
      withBody ? String(body.length) : null,
      withBody && body.length > 0 ? body : null,
    );
  }

  /**
   * A copy of a request whose body streams: returns the stream the upstream reads instead of `body`.
   * Chunks go on to the upstream at its own pace and are handed to the mirror as they pass; the
   * mirror's backlog is never waited for, and past `maxPendingBytes` the copy is abandoned.
   */
  tee(req: IncomingMessage, mirror: MirrorRequest, body: Readable): Readable {
    if (!mirror.requestBody) {
      this.send(req, mirror, null);
      return body;
    }
    const sink = new PassThrough();
    const length = req.headers['content-length'];
    const exchange = this.#start(req, mirror, length === undefined ? null : length, sink);
    if (exchange === null) return body;
    exchange.sink = sink;
    const maxPending = this.#options.maxPendingBytes;
    let flushed = false;
    const tee = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        if (!exchange.settled) {
          if (sink.writableLength + sink.readableLength + chunk.length > maxPending) {
            exchange.abandon(
              'dropped',
              new MirrorError('MIRROR_BACKLOG', `the mirror fell more than ${maxPending} body bytes behind`),
            );
          } else {
            sink.write(chunk);
          }
        }
        callback(null, chunk);
      },
      flush(callback) {
        flushed = true;
        if (!exchange.settled) sink.end();
        callback();
      },
    });
    // the upstream request fails with the body's own error (413 past proxy-body-size, a client gone)
    body.on('error', (error) => tee.destroy(error));
    tee.on('close', () => {
      if (!flushed)
        exchange.abandon(
          'dropped',
          new MirrorError('MIRROR_BODY_INCOMPLETE', 'the request body did not complete'),
        );
    });
    body.pipe(tee);
    return tee;
  }

  #start(
    req: IncomingMessage,
    mirror: MirrorRequest,
    contentLength: string | null,
    body: Buffer | Readable | null,
  ): MirrorExchange | null {
    if (this.#inFlight >= this.#options.maxInFlight) {
      this.stats.dropped++;
      this.#report(
        'dropped',
        mirror.url,
        new MirrorError('MIRROR_OVERLOADED', `${this.#inFlight} mirror requests in flight`),
      );
      return null;
    }
    const parts = URL_PARTS.exec(mirror.url);
    if (parts === null) {
      this.stats.failed++;
      this.#report('failed', mirror.url, new MirrorError('MIRROR_INVALID_URL', 'not an http(s) URL'));
      return null;
    }
    const origin = parts[1] as string;
    const rest = parts[2] as string;
    const path = rest === '' ? '/' : rest.charCodeAt(0) === 47 /* / */ ? rest : `/${rest}`;
    this.#inFlight++;
    const timeoutMs = this.#options.timeoutMs;
    const exchange = new MirrorExchange(this, origin, timeoutMs);
    try {
      this.#agent.dispatch(
        {
          origin,
          path,
          method: req.method ?? 'GET',
          headers:
            mirror.edit === undefined
              ? mirrorHeaders(req, mirror.host, contentLength)
              : mirror.edit(mirrorHeaders(req, mirror.host, contentLength)),
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        exchange,
      );
    } catch (error) {
      exchange.abandon('failed', error instanceof Error ? error : new Error(String(error)));
      return null;
    }
    return exchange;
  }

  /** A copy ended (MirrorExchange calls this exactly once). */
  settled(outcome: Outcome, origin: string, error: Error | null): void {
    this.#inFlight--;
    this.stats[outcome]++;
    if (outcome !== 'answered') this.#report(outcome, origin, error);
  }

  /** At most one log line per interval, with the counts since the last one. */
  #report(outcome: 'failed' | 'dropped', where: string, error: Error | null): void {
    if (outcome === 'failed') this.#unreportedFailed++;
    else this.#unreportedDropped++;
    const now = performance.now();
    if (now - this.#lastReport < this.#options.reportIntervalMs) return;
    this.#lastReport = now;
    const code = (error as { code?: unknown } | null)?.code;
    dataplaneError.publish({
      message: `mirror: ${this.#unreportedFailed} request copies failed and ${this.#unreportedDropped} were dropped since the last report; last: ${where}: ${error?.message ?? outcome}`,
      code: typeof code === 'string' ? code : undefined,
      mirror: where,
    });
    this.#unreportedFailed = 0;
    this.#unreportedDropped = 0;
  }

  /** Stops every copy in flight (they are best effort) and closes the connections. */
  async close(): Promise<void> {
    await this.#agent.destroy().catch(() => {});
  }
}
