// One request as the data plane saw it: NGINX's log variables ($remote_addr, $request_time,
// $upstream_addr, $location_path, ...) gathered while serving, then published once on the
// `requestLogged` channel when the response is over. Metrics and the access log read the same
// record. Plain data (numbers and strings), so a batch of them could cross a thread boundary.
//
// A request refused before routing (client-limits.ts) gets a record too, published on the
// `requestRefused` channel instead (the access log reads it, the metrics do not).
//
// Built only while somebody subscribes; otherwise the hot path does none of this.

import type { Channel } from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
// the module's binding, not the global: `globalThis.performance` is an accessor, read through a
// global IC on every call (~180 instructions)
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { peerOf } from './access/access.ts';
import { requestLogged } from './events.ts';
import { requestsOn } from './listening/connection-settings.ts';
import type { RouteInfo } from './routing/runtime.ts';

export interface RequestRecord {
  /** performance.now() at the start */
  start: number;
  remoteAddress: string;
  method: string;
  /** the request target as received ($request_uri) */
  uri: string;
  /** HTTP/1.1 ($server_protocol) */
  protocol: string;
  /** the Host header, lower-case, without port ($host); '' when absent */
  host: string;
  /** the rule path that matched ($location_path); '' when no Ingress path did */
  path: string;
  https: boolean;
  userAgent: string;
  referer: string;
  requestId: string;
  /** request line + headers + body, bytes ($request_length) */
  requestLength: number;
  /** the status sent to the client; 499 when the client left before a response head went out */
  status: number;
  /** bytes sent to the client, head included ($bytes_sent; HTTP/2: see countStreamWrites); not
   * final until the record is finished (HTTP/1.x: negative) */
  bytesSent: number;
  /** seconds from the first byte read to the last byte sent ($request_time) */
  requestTime: number;
  /** the Ingress route ($namespace, $ingress_name, $service_name, $service_port); '' when none */
  namespace: string;
  ingress: string;
  service: string;
  servicePort: string;
  /** $proxy_upstream_name; '' when nothing was proxied */
  upstream: string;
  /** $proxy_alternative_upstream_name: the canary upstream when the canary served it, else '' */
  canary: string;
  /** the last try: peer, status (0 = none), seconds (-1 = not observed), body bytes (-1) */
  upstreamAddr: string;
  upstreamStatus: number;
  connectTime: number;
  headerTime: number;
  responseTime: number;
  upstreamResponseLength: number;
  /** earlier tries, NGINX-style lists with a trailing ", " ('' with a single try) */
  previousAddrs: string;
  previousStatuses: string;
  previousTimes: string;
  previousConnectTimes: string;
  previousHeaderTimes: string;
  previousLengths: string;
  /** the request's headers as received, name and value in turn ($http_*, $cookie_*, $remote_user):
   * Node's own array, not a copy; empty for a head the parser refused. Credentials are in it: it is
   * read by the log encoder of this thread only, never sent (a thread sends measures, not records) */
  headers: readonly string[];
  /** the socket's peer ($realip_remote_addr) */
  peer: string;
  /** bytes of the response head, for $body_bytes_sent (-1: not known, the whole count is the body's) */
  headBytes: number;
  /** refused before routing: NGINX's server-level variables ($proxy_upstream_name's "-") were never set */
  refused: boolean;
  /** $connection (a serial per connection, per data-plane thread), $connection_requests */
  connection: number;
  connectionRequests: number;
  /** $server_port, $ssl_protocol, $ssl_cipher: read only while a log format names one
   * (`recordConnectionDetails`): 0 and '' otherwise */
  serverPort: number;
  sslProtocol: string;
  sslCipher: string;
  /** the route wants an access log line (enable-access-log, the default backend's setting) */
  accessLog: boolean;
  /** OpenTelemetry: the context sent upstream ($opentelemetry_context_traceparent, _tracestate);
   * '' (or absent) when the route is not traced */
  traceparent?: string;
  tracestate?: string;
}

/** What the router knows when a request starts. */
export interface RecordStart {
  /** the client address ($remote_addr: the real IP when enabled); default: the socket peer */
  remoteAddress?: string;
  host: string;
  path: string;
  route: RouteInfo | null;
  upstream: string;
  /** the canary upstream when the canary serves the request, else '' */
  canary: string;
  requestId: string;
  https: boolean;
  accessLog: boolean;
  /** refused before routing (client-limits.ts, the parser) */
  refused?: boolean;
}

let connectionDetails = false;

/** Whether records read the connection's port and TLS parameters (a log format names them). */
export function recordConnectionDetails(on: boolean): void {
  connectionDetails = on;
}

const CONNECTION = Symbol('connection serial');
let connections = 0;

/** $server_protocol, without making the common ones again per request. */
function protocolOf(version: string): string {
  if (version === '1.1') return 'HTTP/1.1';
  if (version === '2.0') return 'HTTP/2.0';
  if (version === '1.0') return 'HTTP/1.0';
  return `HTTP/${version}`;
}

/**
 * What a request's bytes sent are counted on, to be kept from its start to its finish (`req.socket`
 * is null once Node detaches a finished response from its connection): its connection for HTTP/1.x,
 * its own stream for HTTP/2 (the session's connection carries every stream at once).
 */
export function byteSourceOf(req: IncomingMessage): Duplex {
  // the stream, not the version: an HTTP/1 request line may claim HTTP/2.0 (refused with 505 then)
  return (req as IncomingMessage & { stream?: ServerHttp2Stream }).stream ?? req.socket;
}

/**
 * Starts the record of a request: reads the head once more for the log-only headers and the
 * request length. Call only when `requestLogged.hasSubscribers`. `source` is `byteSourceOf(req)`,
 * passed again to `finishRecord`.
 */
export function startRecord(req: IncomingMessage, source: Duplex, at: RecordStart): RequestRecord {
  const raw = req.rawHeaders;
  const method = req.method ?? 'GET';
  const uri = req.url ?? '/';
  // "GET /uri HTTP/1.1\r\n", then "name: value\r\n" per header, then "\r\n"
  let length = method.length + uri.length + 14;
  let userAgent = '';
  let referer = '';
  let contentLength = -1;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    length += name.length + value.length + 4;
    // the first letter (either case) before a lower-cased copy: `connection` is as long as
    // `user-agent`, and a keep-alive client sends it on every request
    const first = name.charCodeAt(0) | 0x20;
    if (name.length === 10) {
      if (userAgent === '' && first === 117 /* u */ && name.toLowerCase() === 'user-agent') userAgent = value;
    } else if (name.length === 7) {
      if (referer === '' && first === 114 /* r */ && name.toLowerCase() === 'referer') referer = value;
    } else if (name.length === 14) {
      if (contentLength === -1 && first === 99 /* c */ && name.toLowerCase() === 'content-length') {
        const n = Number(value);
        if (Number.isSafeInteger(n) && n >= 0) contentLength = n;
      }
    }
  }
  const http2 = source !== req.socket;
  const record = newRecord(
    req.socket,
    http2 ? 0 : socketBytes(source),
    method,
    uri,
    protocolOf(req.httpVersion),
    length + (contentLength > 0 ? contentLength : 0),
    userAgent,
    referer,
    at,
    raw,
  );
  if (http2) countStreamWrites(source, record);
  return record;
}

/** A request line as NGINX logs it in $request: method, target, protocol. */
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) (HTTP\/\d\.\d)\r?$/;
/** The most of an unparsable first line that goes into the record. */
const MAX_UNPARSED_LINE = 8192;

/**
 * The record of a request Node's parser refused (nothing routed it, no header was read): the
 * method, target and protocol of its first line when that line is a request line, else the line
 * itself as the target (NGINX logs it raw as $request, e.g. a TLS handshake sent to the HTTP port);
 * the bytes the parser failed on as its length.
 */
export function unparsedRecord(
  socket: ClientSocket,
  packet: Buffer | undefined,
  https: boolean,
  requestId: string,
): RequestRecord {
  let method = '';
  let uri = '';
  let protocol = '';
  if (packet !== undefined && packet.length > 0) {
    const newline = packet.indexOf(0x0a);
    const end = Math.min(newline === -1 ? packet.length : newline, MAX_UNPARSED_LINE);
    const line = packet.toString('latin1', 0, end);
    const m = REQUEST_LINE.exec(line);
    if (m === null) uri = line.endsWith('\r') ? line.slice(0, -1) : line;
    else [, method = '', uri = '', protocol = ''] = m;
  }
  return newRecord(
    socket,
    socketBytes(socket),
    method,
    uri,
    protocol,
    packet?.length ?? 0,
    '',
    '',
    {
      host: '',
      path: '',
      route: null,
      upstream: '',
      canary: '',
      requestId,
      https,
      accessLog: true,
      refused: true,
    },
    NO_HEADERS,
  );
}

/** A client connection: a TCP or TLS socket (the remote address is theirs). */
type ClientSocket = Duplex & {
  remoteAddress?: string;
  localPort?: number;
  [CONNECTION]?: number;
  getProtocol?: () => string | null;
  getCipher?: () => { standardName?: string; name: string } | undefined;
};

const NO_HEADERS: readonly string[] = [];

/** One record, every field in one order (one object shape for all of them). */
function newRecord(
  socket: ClientSocket,
  bytesBefore: number,
  method: string,
  uri: string,
  protocol: string,
  requestLength: number,
  userAgent: string,
  referer: string,
  at: RecordStart,
  headers: readonly string[],
): RequestRecord {
  const route = at.route;
  const peer = peerOf(socket);
  let connection = socket[CONNECTION];
  if (connection === undefined) {
    connection = ++connections;
    socket[CONNECTION] = connection;
  }
  const record: RequestRecord = {
    start: performance.now(),
    remoteAddress: at.remoteAddress ?? peer,
    method,
    uri,
    protocol,
    host: at.host,
    path: at.path,
    https: at.https,
    userAgent,
    referer,
    requestId: at.requestId,
    requestLength,
    status: 0,
    // HTTP/1.x: minus the socket's count before this request, finishRecord adds the count after it
    bytesSent: -bytesBefore,
    requestTime: 0,
    namespace: route?.namespace ?? '',
    ingress: route?.ingress ?? '',
    service: route?.service ?? '',
    servicePort: route?.servicePort ?? '',
    upstream: at.upstream,
    canary: at.canary,
    upstreamAddr: '',
    upstreamStatus: 0,
    connectTime: -1,
    headerTime: -1,
    responseTime: -1,
    upstreamResponseLength: -1,
    previousAddrs: '',
    previousStatuses: '',
    previousTimes: '',
    previousConnectTimes: '',
    previousHeaderTimes: '',
    previousLengths: '',
    accessLog: at.accessLog,
    traceparent: '',
    tracestate: '',
    headers,
    peer,
    headBytes: -1,
    refused: at.refused === true,
    connection,
    connectionRequests: requestsOn(socket),
    serverPort: 0,
    sslProtocol: '',
    sslCipher: '',
  };
  if (connectionDetails) readConnectionDetails(socket, record);
  return record;
}

function readConnectionDetails(socket: ClientSocket, record: RequestRecord): void {
  record.serverPort = socket.localPort ?? 0;
  if (typeof socket.getProtocol === 'function') record.sslProtocol = socket.getProtocol() ?? '';
  const cipher = typeof socket.getCipher === 'function' ? socket.getCipher() : undefined;
  if (cipher !== undefined) record.sslCipher = cipher.name;
}

/** Bytes the socket has been handed so far (keep-alive: the requests before this one too). */
export function socketBytes(socket: Duplex): number {
  return (socket as Duplex & { bytesWritten?: number }).bytesWritten ?? 0;
}

// An HTTP/2 request's bytes sent. NGINX's $bytes_sent on HTTP/2 counts the stream's frames: its
// HPACK-compressed HEADERS and its DATA with their 9-byte frame headers. Node counts nothing per
// stream (its session socket's bytesWritten mixes every concurrent stream, and the stream reads 0
// once closed), and the HPACK size of a head is not exposed. So: the body is counted exactly, as
// the DATA payload this stream was handed (what the response panels mostly measure), and the head
// as the HTTP/1.1 text of the same fields ("name: value\r\n" each, and the blank line). That head
// is an upper bound of its HPACK form, and the same response then weighs the same on HTTP/1.1 and
// HTTP/2 in the dashboards; the frame headers and trailers are left out.

type StreamWrite = (
  chunk: Buffer | string,
  encoding: BufferEncoding,
  callback: (error?: Error | null) => void,
) => void;
type StreamWritev = (
  chunks: Array<{ chunk: Buffer | string; encoding: BufferEncoding }>,
  callback: (error?: Error | null) => void,
) => void;

/** Adds every body byte written to an HTTP/2 stream (HEAD responses write none) to `record.bytesSent`. */
function countStreamWrites(stream: Duplex, record: RequestRecord): void {
  const writable = stream as Duplex & { _write: StreamWrite; _writev?: StreamWritev | null };
  const write = writable._write;
  writable._write = function (this: Duplex, chunk, encoding, callback) {
    record.bytesSent += typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding) : chunk.length;
    write.call(this, chunk, encoding, callback);
  };
  const writev = writable._writev;
  if (typeof writev === 'function') {
    writable._writev = function (this: Duplex, chunks, callback) {
      for (const { chunk, encoding } of chunks)
        record.bytesSent += typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding) : chunk.length;
      writev.call(this, chunks, callback);
    };
  }
}

/** The HTTP/1.1 size of the head an HTTP/2 stream sent (0 when it sent none, e.g. reset first). */
function streamHeadBytes(stream: Duplex): number {
  const sent = (stream as Partial<ServerHttp2Stream>).sentHeaders;
  if (sent == null) return 0;
  let size = 2;
  for (const name in sent) {
    const value = sent[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) size += name.length + String(v).length + 4;
    else size += name.length + String(value).length + 4;
  }
  return size;
}

/**
 * Publishes the record on `to` once the exchange is over (the client stream closed), with the status
 * sent and the bytes and time it took. `source` is the one the record was started with: HTTP/1.x's
 * socket, whose count now (minus the count at the start, already in `bytesSent`) is this request's
 * bytes; HTTP/2's stream, whose body bytes are already counted and whose head is added now.
 */
export function finishRecord(
  record: RequestRecord,
  source: Duplex,
  status: number,
  to: Channel = requestLogged,
): void {
  record.status = status;
  // a stream has its head sent (`sentHeaders`); an HTTP/1 socket only claiming HTTP/2.0 does not
  if (record.protocol === 'HTTP/2.0' && 'sentHeaders' in source) {
    record.headBytes = streamHeadBytes(source);
    record.bytesSent += record.headBytes;
  } else record.bytesSent += socketBytes(source);
  record.requestTime = (performance.now() - record.start) / 1000;
  to.publish(record);
}

/**
 * `finishRecord` for a request's response, with the status it sent, or 499 when none of it reached
 * the connection. Node marks a head sent once `writeHead` ran, also when the client's connection
 * broke before it could be written (a close the event loop had not seen yet): the client got
 * nothing, which is the 499 of a client that left first. An HTTP/2 head is refused on a closed
 * stream, so only HTTP/1.x can get here with nothing written. The connection's byte count is read
 * once for both (Node's getter copies the socket's write queue on each read).
 */
export function finishResponse(
  record: RequestRecord,
  source: Duplex,
  headersSent: boolean,
  statusCode: number,
  headLength = -1,
): void {
  const stream = record.protocol === 'HTTP/2.0' && 'sentHeaders' in source;
  const bytes = stream ? streamHeadBytes(source) : socketBytes(source);
  const wentOut = headersSent && (stream || record.bytesSent + bytes > 0);
  record.status = wentOut ? statusCode : 499;
  record.bytesSent += bytes;
  record.headBytes = stream ? bytes : wentOut ? headLength : 0;
  record.requestTime = (performance.now() - record.start) / 1000;
  requestLogged.publish(record);
}

/**
 * The bytes of the head an HTTP/1.x response wrote, as Node keeps it (`_header`, the text it wrote,
 * which is also what `headersSent` reads); -1 when not known (a head written on the socket by hand).
 */
export function responseHeadLength(res: object): number {
  const head = (res as { _header?: unknown })._header;
  return typeof head === 'string' ? head.length : -1;
}

/** `finishRecord` when `emitter` closes, with the status `status()` says then. */
export function finishOnClose(
  record: RequestRecord,
  emitter: { on(event: 'close', listener: () => void): unknown },
  source: Duplex,
  status: () => number,
  to: Channel = requestLogged,
): void {
  // `on`, not `once`: 'close' comes once, and the emitter is dropped after it
  emitter.on('close', () => {
    if (record.protocol !== 'HTTP/2.0') record.headBytes = responseHeadLength(emitter);
    finishRecord(record, source, status(), to);
  });
}

/** The exchange moves to another peer: the try that failed goes to the NGINX-style lists. */
export function recordRetry(record: RequestRecord): void {
  if (record.upstreamAddr === '') return;
  record.previousAddrs += `${record.upstreamAddr}, `;
  record.previousStatuses += `${record.upstreamStatus === 0 ? '-' : record.upstreamStatus}, `;
  record.previousTimes += `${record.responseTime < 0 ? '-' : record.responseTime.toFixed(3)}, `;
  record.previousConnectTimes += `${record.connectTime < 0 ? '-' : record.connectTime.toFixed(3)}, `;
  record.previousHeaderTimes += `${record.headerTime < 0 ? '-' : record.headerTime.toFixed(3)}, `;
  record.previousLengths += `${record.upstreamResponseLength < 0 ? '-' : record.upstreamResponseLength}, `;
  record.upstreamAddr = '';
  record.upstreamStatus = 0;
  record.connectTime = -1;
  record.headerTime = -1;
  record.responseTime = -1;
  record.upstreamResponseLength = -1;
}
