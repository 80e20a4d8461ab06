// gzip and brotli of proxied responses (use-gzip, gzip-*, enable-brotli, brotli-*), as NGINX's gzip
// filter and ngx_brotli decide it: compiled once per runtime into type sets, levels and the
// gzip-disable matcher; per response, one decision from the request and the upstream's head, the
// head's edits (Content-Encoding, Vary, no Content-Length or Accept-Ranges, a weak ETag), and a
// node:zlib stream between the exchange and the client that keeps the body's backpressure.
//
// Where ingress-ts differs from NGINX, on purpose:
// - `Cache-Control: no-transform`, server-sent events, gRPC and `Content-Range` replies are never
//   compressed (NGINX with gzip_proxied any compresses them when the type is listed);
// - `Accept-Encoding: *` accepts both codings (NGINX reads the gzip and br tokens only);
// - HTTP/1.0 clients get neither coding (NGINX's gzip_http_version 1.1 holds for gzip; ngx_brotli
//   does not look at the version);
// - only proxied responses are compressed, not the proxy's own error pages.

import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  type BrotliCompress,
  type BrotliOptions,
  brotliCompressSync,
  constants,
  createBrotliCompress,
  createGzip,
  type Gzip,
  gzipSync,
  type ZlibOptions,
} from 'node:zlib';
import { RE2JS } from 're2js';
import type { CodingConfig, CompressionConfig } from '../../model/configmap/compression-keys.ts';

/** Where the exchange writes a response body: the client's response, or a compressor in front of it. */
export interface BodySink {
  write(chunk: Buffer): boolean;
  end(chunk?: Buffer): unknown;
  on(event: 'drain', listener: () => void): unknown;
}

interface Coding {
  readonly level: number;
  readonly minLength: number;
  /** `*` in the list */
  readonly all: boolean;
  readonly types: ReadonlySet<string>;
}

export interface Compression {
  readonly gzip: Coding | null;
  readonly brotli: Coding | null;
  /** gzip-disable: true for a User-Agent that gets no gzip */
  readonly gzipDisabled: ((userAgent: string) => boolean) | null;
}

function compileCoding(config: CodingConfig): Coding | null {
  if (!config.enabled) return null;
  // NGINX compresses text/html whatever the list says
  const types = new Set(config.types);
  types.add('text/html');
  return { level: config.level, minLength: config.minLength, all: types.has('*'), types };
}

/** NGINX's msie6: MSIE 4 and 5, and 6 before SP2 (no "SV1"), never Opera pretending to be one. */
function isMsie6(userAgent: string): boolean {
  const at = userAgent.indexOf('MSIE ');
  if (at === -1 || at + 7 >= userAgent.length || userAgent.includes('Opera')) return false;
  if (userAgent[at + 6] !== '.') return false;
  const major = userAgent[at + 5];
  return major === '4' || major === '5' || (major === '6' && !userAgent.includes('SV1', at + 8));
}

/** The runtime's compression, or null when both codings are off (the hot path then checks one null). */
export function compileCompression(config: CompressionConfig | undefined): Compression | null {
  if (config === undefined) return null;
  const gzip = compileCoding(config.gzip);
  const brotli = compileCoding(config.brotli);
  if (gzip === null && brotli === null) return null;
  let gzipDisabled: ((userAgent: string) => boolean) | null = null;
  const disable = config.gzip.disable;
  if (disable === 'msie6') gzipDisabled = isMsie6;
  else if (disable !== '') {
    const re = RE2JS.compile(disable, RE2JS.CASE_INSENSITIVE);
    gzipDisabled = (userAgent) => re.test(userAgent);
  }
  return { gzip, brotli, gzipDisabled };
}

export type CodingName = 'gzip' | 'br';

/** What a response gets: the coding (or none), and whether it varies with Accept-Encoding. */
export interface Negotiated {
  readonly coding: CodingName | null;
  readonly vary: boolean;
}

const AS_IS: Negotiated = { coding: null, vary: false };
const VARY_ONLY: Negotiated = { coding: null, vary: true };
const GZIP: Negotiated = { coding: 'gzip', vary: true };
const BROTLI: Negotiated = { coding: 'br', vary: true };

/** The request as the decision reads it. */
export interface RequestFacts {
  readonly method: string;
  /** 10 for HTTP/1.0, 11, 20 */
  readonly version: number;
  readonly acceptEncoding: string | undefined;
  readonly userAgent: string | undefined;
}

/** NGINX's q-value rule: `0`, `0.`, `0.0`... refuse; anything else that is a number up to 1 accepts. */
function qAccepts(params: string): boolean {
  const m = /(?:^|;)\s*q\s*=\s*([^;\s]*)/i.exec(params);
  if (m === null) return true;
  const q = m[1] as string;
  if (!/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(q)) return false;
  return Number(q) > 0;
}

/** Whether Accept-Encoding accepts `name`: its own entry decides, else `*`. */
export function accepts(acceptEncoding: string | undefined, name: CodingName): boolean {
  if (acceptEncoding === undefined || acceptEncoding === '') return false;
  let star: boolean | null = null;
  for (const entry of acceptEncoding.split(',')) {
    const semi = entry.indexOf(';');
    const token = (semi === -1 ? entry : entry.slice(0, semi)).trim().toLowerCase();
    if (token === name) return semi === -1 || qAccepts(entry.slice(semi + 1));
    if (token === '*') star = semi === -1 || qAccepts(entry.slice(semi + 1));
  }
  return star === true;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The media type of a Content-Type, lower-case, without parameters ('' when none). */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

function fits(coding: Coding | null, type: string, length: number): coding is Coding {
  if (coding === null || (length >= 0 && length < coding.minLength)) return false;
  return coding.all || coding.types.has(type);
}

/**
 * The decision for one response (pure, so a table tests it). As NGINX: only 200, 403 and 404, never a
 * head-only answer or an encoded body; a response of a listed type and long enough varies with
 * Accept-Encoding even when this client gets it as it is.
 */
export function negotiate(
  compression: Compression,
  request: RequestFacts,
  status: number,
  headers: IncomingHttpHeaders,
): Negotiated {
  if (status !== 200 && status !== 403 && status !== 404) return AS_IS;
  if (request.method === 'HEAD') return AS_IS;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding !== '') return AS_IS;
  if (headers['content-range'] !== undefined) return AS_IS;
  const cacheControl = single(headers['cache-control']);
  if (cacheControl !== undefined && /(?:^|[\s,])no-transform(?:$|[\s,;])/i.test(cacheControl)) return AS_IS;
  const type = mediaType(single(headers['content-type']));
  if (type === 'text/event-stream' || type.startsWith('application/grpc')) return AS_IS;
  const declared = headers['content-length'];
  const length = typeof declared === 'string' && /^\d+$/.test(declared) ? Number(declared) : -1;
  const brotli = fits(compression.brotli, type, length);
  const gzip = fits(compression.gzip, type, length);
  if (!brotli && !gzip) return AS_IS;
  if (request.version < 11) return VARY_ONLY;
  if (brotli && accepts(request.acceptEncoding, 'br')) return BROTLI;
  if (!gzip || !accepts(request.acceptEncoding, 'gzip')) return VARY_ONLY;
  const disabled = compression.gzipDisabled;
  if (disabled !== null && request.userAgent !== undefined && disabled(request.userAgent)) return VARY_ONLY;
  return GZIP;
}

const hasAcceptEncoding = (value: string) => /(?:^|,)\s*(?:accept-encoding|\*)\s*(?:,|$)/i.test(value);

/**
 * The client's head for a negotiated response (a flat [name, value, ...] list, edited in place):
 * `Vary: Accept-Encoding` merged into the Vary there is; when compressed, `Content-Encoding`, no
 * `Content-Length` or `Accept-Ranges`, and the ETag weak (W/), or gone when it is not a quoted one
 * (NGINX's ngx_http_weak_etag).
 */
export function editHead(out: Array<string | string[]>, negotiated: Negotiated): void {
  const coding = negotiated.coding;
  let varied = false;
  for (let i = out.length - 2; i >= 0; i -= 2) {
    const name = (out[i] as string).toLowerCase();
    const value = out[i + 1] as string | string[];
    if (name === 'vary') {
      const joined = Array.isArray(value) ? value.join(', ') : value;
      if (!varied && !hasAcceptEncoding(joined)) out[i + 1] = `${joined}, Accept-Encoding`;
      varied = true;
    } else if (coding !== null && (name === 'content-length' || name === 'accept-ranges')) {
      out.splice(i, 2);
    } else if (coding !== null && name === 'etag') {
      const etag = Array.isArray(value) ? (value[0] ?? '') : value;
      if (etag.startsWith('"')) out[i + 1] = `W/${etag}`;
      else if (!etag.startsWith('W/')) out.splice(i, 2);
    }
  }
  if (!varied) out.push('vary', 'Accept-Encoding');
  if (coding !== null) out.push('content-encoding', coding);
}

// NGINX's gzip_window and ngx_brotli's brotli_window defaults, shrunk for a body of known length
const GZIP_WINDOW_BITS = 15;
const GZIP_MEM_LEVEL = 8;
const BROTLI_WINDOW_BITS = 19;

type Encoder = Gzip | BrotliCompress;

/** zlib's options for a body of `length` bytes (-1: unknown), sized as NGINX and ngx_brotli size them. */
function gzipOptions(level: number, length: number): ZlibOptions {
  let windowBits = GZIP_WINDOW_BITS;
  let memLevel = GZIP_MEM_LEVEL;
  // a window no larger than the body needs (zlib's gzip takes 9 at least)
  if (length > 0) {
    while (windowBits > 9 && length < (1 << (windowBits - 1)) - 262) {
      windowBits--;
      memLevel--;
    }
    if (memLevel < 1) memLevel = 1;
  }
  return { level, windowBits, memLevel };
}

function brotliOptions(level: number, length: number): BrotliOptions {
  let windowBits = BROTLI_WINDOW_BITS;
  if (length > 0) while (windowBits > 10 && length <= 1 << (windowBits - 1)) windowBits--;
  const params: Record<number, number> = {
    [constants.BROTLI_PARAM_QUALITY]: level,
    [constants.BROTLI_PARAM_LGWIN]: windowBits,
  };
  if (length > 0) params[constants.BROTLI_PARAM_SIZE_HINT] = length;
  return { params };
}

/**
 * The body's way to the client through the compressor. A body that comes whole in one upstream chunk
 * (most small responses: `end(chunk)` with nothing written before) is compressed at once, in this
 * thread, as NGINX does in its worker: no stream, no trip to libuv's pool. Otherwise a zlib stream
 * is started at the first write; it writes to the client with the client's backpressure (paused while
 * the response is full, so its own writes refuse and the exchange pauses the upstream), ends the
 * response once flushed, and dies with the response: an error in it destroys that response only, a
 * client gone destroys it.
 */
export class CompressingSink implements BodySink {
  /** the zlib stream, once a body did not come in one piece */
  stream: Encoder | null = null;
  private readonly res: ServerResponse;
  private readonly coding: CodingName;
  private readonly options: ZlibOptions | BrotliOptions;
  /** 'drain' listeners given before the stream started */
  private readonly drainListeners: Array<() => void> = [];

  constructor(res: ServerResponse, coding: CodingName, level: number, length: number) {
    this.res = res;
    this.coding = coding;
    this.options = coding === 'gzip' ? gzipOptions(level, length) : brotliOptions(level, length);
  }

  private start(): Encoder {
    const res = this.res;
    // every upstream chunk goes out flushed: with proxy-buffering off NGINX flushes each one too
    const encoder =
      this.coding === 'gzip'
        ? createGzip({ ...this.options, flush: constants.Z_SYNC_FLUSH })
        : createBrotliCompress({ ...this.options, flush: constants.BROTLI_OPERATION_FLUSH });
    encoder.on('data', (chunk: Buffer) => {
      if (!res.write(chunk)) encoder.pause();
    });
    res.on('drain', () => encoder.resume());
    encoder.on('end', () => res.end());
    encoder.on('error', () => res.destroy());
    res.on('close', () => encoder.destroy());
    if (this.drainListeners !== null)
      for (const listener of this.drainListeners) encoder.on('drain', listener);
    this.stream = encoder;
    return encoder;
  }

  write(chunk: Buffer): boolean {
    return (this.stream ?? this.start()).write(chunk);
  }

  end(chunk?: Buffer): void {
    if (this.stream !== null || chunk === undefined) {
      (this.stream ?? this.start()).end(chunk);
      return;
    }
    let compressed: Buffer;
    try {
      compressed =
        this.coding === 'gzip' ? gzipSync(chunk, this.options) : brotliCompressSync(chunk, this.options);
    } catch {
      this.res.destroy();
      return;
    }
    this.res.end(compressed);
  }

  on(_event: 'drain', listener: () => void): this {
    if (this.stream !== null) this.stream.on('drain', listener);
    else this.drainListeners.push(listener);
    return this;
  }
}

/**
 * The hook of the response path, called with the head about to be written (compression on): edits
 * the head and returns the sink the body goes to, or null when the body goes out as it is.
 */
export function compressResponse(
  compression: Compression,
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: IncomingHttpHeaders,
  out: Array<string | string[]>,
): BodySink | null {
  const request: RequestFacts = {
    method: req.method ?? 'GET',
    version: req.httpVersionMajor * 10 + req.httpVersionMinor,
    acceptEncoding: single(req.headers['accept-encoding']),
    userAgent: req.headers['user-agent'],
  };
  const negotiated = negotiate(compression, request, status, headers);
  if (!negotiated.vary) return null;
  editHead(out, negotiated);
  const coding = negotiated.coding;
  if (coding === null) return null;
  const settings = (coding === 'br' ? compression.brotli : compression.gzip) as Coding;
  const declared = headers['content-length'];
  const length = typeof declared === 'string' && /^\d+$/.test(declared) ? Number(declared) : -1;
  return new CompressingSink(res, coding, settings.level, length);
}
