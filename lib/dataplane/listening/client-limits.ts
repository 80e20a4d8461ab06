// Client-facing limits of the listeners: the request head size
// (`large-client-header-buffers`), the URI length, the cap on concurrent client connections
// (`max-worker-connections`), the framing checks llhttp leaves to us, and the answer to a request
// Node's parser refused (`clientError`).
//
// What Node's parser (llhttp, strict mode: `insecureHTTPParser` stays off) already refuses, before any
// handler runs, so such a request never reaches a route or a backend: Content-Length together with
// Transfer-Encoding, two Content-Length headers (even equal ones) or a list, a negative one,
// obs-fold (a header line continued on the next line), `Transfer-Encoding: chunked, identity` (chunked
// not last), two Transfer-Encoding headers, whitespace before a header's colon, bare LF line ends,
// NUL and other control bytes in a header, a head over `maxHeaderSize`. What it lets through and
// `rejectedStatus` refuses: a Transfer-Encoding other than `chunked` (`identity`, `xchunked`: the
// body's length is unknowable, as NGINX also says with a 501), a Transfer-Encoding on an HTTP/1.0
// request, a request line or header line over the buffer size, an HTTP/1.1 or HTTP/2 request without Host
// (Node's server would refuse the first, but with a bare 400 of its own), a Host NGINX refuses.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GlobalConfig } from '../../model/index.ts';
import { HEADER_TOO_LARGE, rawErrorResponse } from '../responses/error-pages.ts';
import { absoluteForm, validAuthority, validHost } from '../routing/router.ts';

/** The server property Node reads for every new HTTP/1 connection (the HTTPS listener's too). */
export interface HeaderSizeLimited {
  maxHeaderSize?: number;
}

/**
 * Node's bound on the whole request head: what NGINX's buffers can hold at most, the first one
 * (`client-header-buffer-size`) plus the large ones (`large-client-header-buffers` count × size),
 * 33 KiB by default. Node counts the request target and header names and values, fewer bytes than
 * the head has, so what it refuses NGINX refuses too; `rejectedStatus` judges the rest exactly.
 */
export function maxHeaderSize(config: GlobalConfig): number {
  const { count, size } = config.largeClientHeaderBuffers;
  return config.clientHeaderBufferSize + count * size;
}

/** The longest request line NGINX reads: one that fits the first buffer, else one large buffer. */
export function maxRequestLine(config: GlobalConfig): number {
  return Math.max(config.clientHeaderBufferSize, config.largeClientHeaderBuffers.size);
}

/**
 * Applies the head size limit to connections accepted from now on (Node reads `server.maxHeaderSize`
 * when it sets up a connection's parser; open connections keep the limit they started with).
 */
export function applyHeaderSize(config: GlobalConfig, servers: readonly HeaderSizeLimited[]): void {
  const size = maxHeaderSize(config);
  for (const server of servers) server.maxHeaderSize = size;
}

/** `HTTP/1.1` plus the spaces of a request line, for its length: method SP target SP version CRLF. */
const REQUEST_LINE_EXTRA = 1 + 1 + 8 + 2;

/**
 * The status a request that passed Node's parser is refused with, or 0: 414 for a request line
 * longer than one buffer (NGINX: 414), HEADER_TOO_LARGE for a head NGINX's buffers cannot hold
 * (headSizeStatus), 400 for a Transfer-Encoding other than `chunked` (NGINX: 501)
 * or on HTTP/1.0, 400 for a request other than HTTP/1.0 without Host, or with a Host or an absolute-form
 * authority NGINX refuses (validHost; Node's own check, `requireHostHeader`, is off so that these get
 * NGINX's page and an access log line), 505 / 400 for an HTTP/1 request line claiming HTTP/2.0 or
 * HTTP/0.9, 405 for TRACE. A few string lengths per request and one pass over the Host.
 */
export function rejectedStatus(req: IncomingMessage, config: GlobalConfig): number {
  // llhttp takes `HTTP/2.0` and `HTTP/0.9` in an HTTP/1 request line; NGINX answers 505 and 400
  // (an HTTP/2 request of the HTTPS listener has its stream and is fine)
  if (req.httpVersionMajor !== 1 && (req as IncomingMessage & { stream?: unknown }).stream === undefined) {
    return req.httpVersionMajor > 1 ? 505 : 400;
  }
  const method = req.method ?? '';
  const url = req.url ?? '';
  const raw = req.rawHeaders;
  const tooLarge = headSizeStatus(req, method, url, raw, config);
  if (tooLarge !== 0) return tooLarge;
  // asterisk-form (`OPTIONS * HTTP/1.1`, `:path: *`): NGINX's request-line parser refuses it
  if (url.length === 1 && url.charCodeAt(0) === 42 /* * */) return 400;
  // NGINX: "client sent invalid host in request line" (the authority routes the request)
  if (url.charCodeAt(0) !== 47 /* / */) {
    const split = absoluteForm(url);
    if (split !== null && !validAuthority(split.authority)) return 400;
  }
  // rawHeaders, not `req.headers` (which would build an object per request); llhttp already refuses
  // a second Transfer-Encoding header
  let te: string | undefined;
  let host: string | undefined;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    if (name.length === 17) {
      if (te === undefined && name.toLowerCase() === 'transfer-encoding') te = value;
    } else if (name.length === 4) {
      if (name.toLowerCase() === 'host') {
        host ??= value;
        hosts++;
      }
    } else if (name.length === 10 && name === ':authority') {
      host ??= value;
      hosts++;
    }
  }
  if (te !== undefined && (req.httpVersion === '1.0' || te.trim().toLowerCase() !== 'chunked')) return 400;
  // NGINX: "client sent duplicate host header": two Host headers, or on HTTP/2 a Host header besides
  // :authority (which NGINX takes as the Host header), equal or not. One host per request, so routing,
  // auth-url's variables, the upstream's Host and the log can never each read a different one.
  if (hosts > 1) return 400;
  // NGINX: "client sent invalid host header" (validHost: the one judgement routing and the log use
  // too), "client sent HTTP/1.1 request without "Host" header" (an HTTP/2 request without
  // :authority or host included; only HTTP/1.0 may go without)
  if (host === undefined ? req.httpVersionMajor > 1 || req.httpVersionMinor > 0 : validHost(host) === null)
    return 400;
  // NGINX: "client sent TRACE method", 405 once the head is judged, before any location (a TRACE
  // would echo the request's headers, cookies and credentials included, back from a backend)
  if (method.length === 5 && method === 'TRACE') return 405;
  return 0;
}

/**
 * Whether NGINX's buffers hold the head: 0, or 414 / HEADER_TOO_LARGE as NGINX answers. HTTP/1: the
 * head is read into the first buffer (`client-header-buffer-size`); a line that does not fit in what
 * is left of the current buffer moves to a new large buffer (`large-client-header-buffers`), so it must
 * fit in one (else 414 for the request line, HEADER_TOO_LARGE for a header line), and there are only
 * `count` of them (HEADER_TOO_LARGE). HTTP/2 (NGINX ≥ 1.19.7): each header name and value fits in one
 * large buffer and all of them in `count` × `size`. Lengths only (a line is name ": " value CRLF, as
 * llhttp gave them), and one pass over the headers.
 */
export function headSizeStatus(
  req: IncomingMessage,
  method: string,
  url: string,
  raw: readonly string[],
  config: GlobalConfig,
): number {
  const { count, size } = config.largeClientHeaderBuffers;
  if (req.httpVersionMajor === 2) {
    let left = count * size;
    for (let i = 0; i < raw.length; i += 2) {
      const name = (raw[i] as string).length;
      const value = (raw[i + 1] as string).length;
      left -= name + value;
      if (name > size || value > size || left < 0) return HEADER_TOO_LARGE;
    }
    return 0;
  }
  let free = config.clientHeaderBufferSize;
  let used = 0;
  const requestLine = method.length + url.length + REQUEST_LINE_EXTRA;
  if (requestLine <= free) free -= requestLine;
  else if (requestLine > size) return 414;
  else {
    used = 1;
    free = size - requestLine;
  }
  for (let i = 0; i < raw.length; i += 2) {
    const line = (raw[i] as string).length + (raw[i + 1] as string).length + 4;
    if (line <= free) {
      free -= line;
      continue;
    }
    if (line > size || used === count) return HEADER_TOO_LARGE;
    used++;
    free = size - line;
  }
  // the empty line that ends the head needs room too
  return free < 2 && used === count ? HEADER_TOO_LARGE : 0;
}

/**
 * The answer to an HTTP/1.x CONNECT (Node's 'connect' event), as NGINX's: 405 once the request is
 * otherwise valid (it refuses the method after reading the head), but 400 for an authority-form
 * target (`CONNECT host:443`), which its request-line parser already refuses.
 */
export function connectRejectedStatus(req: IncomingMessage, config: GlobalConfig | null): number {
  const url = req.url ?? '';
  if (url.charCodeAt(0) !== 47 /* / */ && !/^https?:\/\//i.test(url)) return 400;
  const status = config === null ? 0 : rejectedStatus(req, config);
  return status === 0 ? 405 : status;
}

/**
 * An Upgrade request is refused (400) when it carries a body, besides `rejectedStatus`: Node hands
 * everything after its head to the tunnel unparsed, so a body (malformed or holding another request)
 * would reach the upstream as bytes no one checked, and an upstream that declines the upgrade would
 * read them as its next request. A WebSocket handshake is a GET, which carries no body; NGINX would parse
 * one and refuse a malformed one.
 */
export function upgradeRejectedStatus(req: IncomingMessage, config: GlobalConfig): number {
  const status = rejectedStatus(req, config);
  if (status !== 0) return status;
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) return 400;
  return 0;
}

/** A method token then a space: how a request line starts. */
const REQUEST_LINE_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ /;

/**
 * The status for a request Node's parser refused: HEADER_TOO_LARGE for a head over `maxHeaderSize`,
 * except 414 when the request line itself did not end within `size` (maxRequestLine: its first line,
 * in the bytes the parser failed on, is longer or has no end); 408 when the head did not arrive
 * within client-header-timeout; 400 for everything else (malformed, or the smuggling shapes above).
 */
export function clientErrorStatus(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  size: number,
): number {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (error.code !== 'HPE_HEADER_OVERFLOW') return 400;
  const packet = error.rawPacket;
  if (packet !== undefined) {
    const start = packet.subarray(0, Math.min(packet.length, 64)).toString('latin1');
    if (REQUEST_LINE_START.test(start)) {
      const end = packet.indexOf('\r\n');
      if (end === -1 || end > size) return 414;
    }
  }
  return HEADER_TOO_LARGE;
}

/**
 * The status to answer a request Node's parser refused with (clientErrorStatus), or 0 when nothing
 * can be answered: the socket is already gone (reset, or timed out mid-write), or a malformed body
 * came after the response head went out, where an answer written now would land inside that
 * response.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException, socket: Duplex, size: number): number {
  // Node's own check, on its internal field
  const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (
    error.code === 'ECONNRESET' ||
    error.code === 'EPIPE' ||
    !socket.writable ||
    socket.destroyed ||
    current?.headersSent === true
  ) {
    return 0;
  }
  return clientErrorStatus(error, size);
}

/**
 * Answers a request Node's parser refused with NGINX's error page for `status`, then closes the
 * connection once the answer is written (nothing after a malformed head can be trusted to be the
 * next request); status 0 (clientErrorAnswer): the socket is only destroyed.
 */
export function answerClientError(socket: Duplex, status: number): void {
  if (status === 0) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(status), () => socket.destroy());
  // a peer that does not read its answer does not keep the socket
  setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
}

/** How long a refused connection may take to read its error answer. */
const CLIENT_ERROR_LINGER_MS = 5_000;

/**
 * `max-worker-connections`: whether one more client connection may be accepted with `active` open
 * (NGINX's worker_connections for a single worker; it counts upstream connections too, ingress-ts
 * only client ones). 0: no cap.
 */
export function overConnectionCap(active: number, cap: number): boolean {
  return cap > 0 && active >= cap;
}
