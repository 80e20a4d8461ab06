// The proxy hop: one request (or one WebSocket handshake) to a balancer-chosen peer, through one undici
// Pool per peer, with ingress-nginx's upstream headers and its retry rules (proxy-next-upstream).
//
// Hot path: one header pass over rawHeaders, one pick, one dispatch; the handler object is the request's
// only allocation of note and serves every try. Bodies stream both ways with backpressure: undici pauses
// the client request when the upstream socket is full, the handler pauses undici when the client response
// is full. Nothing here throws to the caller: failures become an error page, a cut connection, and an
// event on `dataplaneError`.

import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import { type Duplex, Transform } from 'node:stream';
import { buildConnector, type Dispatcher, Pool } from 'undici';
import type { ErrorCode, ProxyErrorCode } from '../../errors.ts';
import type { Affinity, Rewrite } from '../../model/index.ts';
import { dataplaneError } from '../events.ts';
import { DEFAULT_HTTP_POLICY, type HttpPolicy } from '../http-policy.ts';
import { type RequestRecord, recordRetry } from '../request-record.ts';
import {
  type CustomErrors,
  errorRequestHeaders,
  intercepts,
  interceptsResponse,
} from '../responses/custom-errors.ts';
import { sendErrorPage, sendSocketErrorPage } from '../responses/error-pages.ts';
import type { BackendTls } from './backend-tls.ts';
import type { Balancer, Peer } from './balancer.ts';
import { StickyBalancer } from './balancers/sticky.ts';
import { MirrorClient, type MirrorRequest } from './mirror.ts';
import { type PaceLimit, Pacer } from './pacer.ts';

export interface ProxyTarget {
  /** upstream name, for error events */
  upstream: string;
  balancer: Balancer;
  /** proxy-connect-timeout, default 5000 */
  connectTimeoutMs: number;
  /** proxy-send-timeout, default 60000: the longest the upstream may refuse request body bytes */
  sendTimeoutMs: number;
  /** proxy-read-timeout, default 60000: waiting for the response head, and between body chunks */
  readTimeoutMs: number;
  /** proxy-next-upstream-tries, default 3: total attempts; 0 = one per peer */
  tries: number;
  /**
   * proxy-next-upstream, default "error timeout" (+ non_idempotent); `invalidHeader`: an unparsable
   * response head; `statuses`: http_500... (a try answered with one of them goes to another peer)
   */
  retryOn: {
    error: boolean;
    timeout: boolean;
    nonIdempotent: boolean;
    invalidHeader?: boolean;
    statuses?: ReadonlySet<number> | null;
  };
  /** proxy-next-upstream-timeout: no try starts this long after the first one; 0/absent: no limit */
  nextUpstreamTimeoutMs?: number;
  /** proxy-body-size in bytes: a larger request body gets 413; 0/absent: unlimited */
  maxBodySize?: number;
  /** proxy-request-buffering on: a body (with a finite maxBodySize) is read whole before the first try */
  bufferRequest?: boolean;
  /** upstream-vhost without variables: the Host header sent upstream; null/absent: the request's */
  upstreamHost?: string | null;
  /** upstream-vhost with NGINX variables ($host, $http_x...), evaluated per request by the router */
  upstreamHostOf?:
    | ((input: { req: IncomingMessage; uri: string; host: string; https: boolean }) => string)
    | null;
  /** proxy-cookie-domain, proxy-cookie-path, proxy-redirect-*: null/absent when all are off */
  rewrite?: ResponseRewrite | null;
  /** affinity: cookie of the upstream (its balancer is then a StickyBalancer), or null */
  affinity: Affinity | null;
  /** upstream-hash-by: computes a request's key (hash-key.ts), or null */
  hashKey:
    | ((input: {
        req: IncomingMessage;
        uri: string;
        host: string;
        https: boolean;
        remoteAddress?: string;
      }) => string)
    | null;
  /** backend-protocol (FCGI never reaches the proxy); absent: HTTP */
  protocol?: TargetProtocol;
  /** connection-proxy-header: close: `Connection: close` upstream, the connection not reused (HTTP/1.1) */
  closeConnection?: boolean;
  /** limit-rate / limit-rate-after: the pace of a response body after its first `after` bytes */
  limitRate?: { bytesPerSecond: number; after: number } | null;
  /** proxy-ssl-*: the TLS of HTTPS/GRPCS connections; absent or null: not verified, Host as SNI */
  backendTls?: BackendTls | null;
}

/** backend-protocol values the proxy speaks. */
export type TargetProtocol = 'HTTP' | 'HTTPS' | 'AUTO_HTTP' | 'GRPC' | 'GRPCS';
/** How one pool talks to its peer: HTTP/1.1, HTTP/1.1 over TLS, h2 cleartext (prior knowledge), h2 over TLS. */
export type PoolProtocol = 'HTTP' | 'HTTPS' | 'GRPC' | 'GRPCS';

/** The pool protocol of a request: AUTO_HTTP follows the client's scheme (ingress-nginx's `$scheme://`). */
function poolProtocol(protocol: TargetProtocol | undefined, https: boolean): PoolProtocol {
  if (protocol === undefined) return 'HTTP';
  if (protocol === 'AUTO_HTTP') return https ? 'HTTPS' : 'HTTP';
  return protocol;
}

/** Response header rewrites (NGINX proxy_cookie_domain, proxy_cookie_path, proxy_redirect). */
export interface ResponseRewrite {
  /** a Set-Cookie Domain equal to `from` (case-insensitive, leading dots ignored) becomes `to` */
  cookieDomain: Rewrite | null;
  /** a Set-Cookie Path starting with `from` gets `to` instead of that prefix */
  cookiePath: Rewrite | null;
  /** a Location (or a Refresh url=) starting with `from` gets `to` instead of that prefix */
  redirect: Rewrite | null;
}

export interface RequestContext {
  /** the connection came in on the HTTPS listener */
  https: boolean;
  /** the port the request came in on */
  listenPort: number;
  /** client address: the socket peer, or the real IP the trusted forwarded-for chain names */
  remoteAddress: string;
  /** the socket peer ($realip_remote_addr); default remoteAddress */
  peerAddress?: string;
  /** X-Request-ID to send (the incoming one or a generated one); '' for none (generate-request-id off) */
  requestId: string;
  /** the ConfigMap's request/response settings of the runtime; default: ingress-nginx's defaults */
  policy?: HttpPolicy;
  /** custom-http-errors / default-backend of the route (plain HTTP requests only) */
  errors?: CustomErrors | null;
  /** Strict-Transport-Security for the response (HTTPS, host with TLS, hsts on), or null */
  hsts: string | null;
  /** upstream-hash-by: this request's key (the same for every try), else '' */
  hashKey: string;
  /** affinity: cookie on the target upstream, else null */
  session: SessionContext | null;
  /** upstream-vhost evaluated for this request (ProxyTarget.upstreamHostOf), when it has variables */
  upstreamHost?: string | null;
  /** rewrite-target: the upstream request target (path and query) instead of the client's */
  path?: string;
  /** x-forwarded-prefix (only with rewrite-target): replaces any X-Forwarded-Prefix of the client */
  forwardedPrefix?: string | undefined;
  /** auth-tls: the ssl-client-* headers for the upstream (name, value pairs), replacing the client's */
  clientCertHeaders?: readonly string[];
  /** mirror-target: where this request's copy goes (mirror.ts), or null/absent: not mirrored */
  mirror?: MirrorRequest | null;
}

export interface SessionContext {
  /** the session key of the request's affinity cookie for this upstream, or null; a new session's
   * key replaces it */
  key: string | null;
  changeOnFailure: boolean;
  /** the Set-Cookie for a new session's cookie value; null: this route does not set the cookie */
  cookie: ((value: string) => string) | null;
}

export interface ProxyOptions {
  /** idle upstream keep-alive connections close after this long (undici default 4000) */
  keepAliveTimeoutMs?: number;
  /** most connections per peer (default: no limit, like NGINX) */
  connections?: number;
  /** requests per upstream connection before it is closed (upstream-keepalive-requests) */
  maxRequestsPerClient?: number;
}

// ---------------------------------------------------------------------------------------------------
// Request ids

let idBytes = Buffer.alloc(0);
let idOffset = 0;

/** 32 lower-case hex characters, like NGINX's `$request_id`; random bytes are drawn 4 KiB at a time. */
export function generateRequestId(): string {
  if (idOffset >= idBytes.length) {
    idBytes = randomBytes(4096);
    idOffset = 0;
  }
  const id = idBytes.toString('hex', idOffset, idOffset + 16);
  idOffset += 16;
  return id;
}

// ---------------------------------------------------------------------------------------------------
// Upstream request headers, as ingress-nginx's template sets them

const DROP = 1;
const HOST = 2;
const XFF = 3;
const XFH = 4;
const CONNECTION = 5;
const CONTENT_LENGTH = 6;
const TRANSFER_ENCODING = 7;
const XFP = 8;
const XF_PROTO = 9;
const XF_PORT = 10;
const COOKIE = 11;

/** What happens to an incoming header, by lower-case name; absent = passed through. */
const REQUEST_HEADER_ACTION: Record<string, number> = Object.assign(Object.create(null) as object, {
  host: HOST,
  // HTTP/2 clients: the authority is the Host; the other pseudo-headers become the request line
  ':authority': HOST,
  ':method': DROP,
  ':path': DROP,
  ':scheme': DROP,
  ':protocol': DROP,
  'x-forwarded-for': XFF,
  'x-forwarded-host': XFH,
  'x-forwarded-prefix': XFP,
  connection: CONNECTION,
  'content-length': CONTENT_LENGTH,
  'transfer-encoding': TRANSFER_ENCODING,
  cookie: COOKIE,
  // hop-by-hop
  'keep-alive': DROP,
  'proxy-connection': DROP,
  te: DROP,
  trailer: DROP,
  upgrade: DROP,
  // `Proxy: ""` (httpoxy); `Expect` is answered by Node's server (100 Continue), never forwarded
  proxy: DROP,
  expect: DROP,
  // set by the proxy from the connection, whatever the client says
  'x-request-id': DROP,
  'x-real-ip': DROP,
  'x-forwarded-port': XF_PORT,
  'x-forwarded-proto': XF_PROTO,
  'x-forwarded-scheme': DROP,
  'x-scheme': DROP,
  'x-original-forwarded-for': DROP,
  'x-original-forwarded-host': DROP,
  // auth-tls: set by the proxy from the client certificate, never taken from the client
  'ssl-client-verify': DROP,
  'ssl-client-subject-dn': DROP,
  'ssl-client-issuer-dn': DROP,
  'ssl-client-cert': DROP,
});

/** Connection tokens that name no header to strip. */
const CONNECTION_OPTIONS = new Set(['close', 'keep-alive', 'upgrade', '']);

/** NGINX's `ngx_http_upstream_non_idempotent`: never resent once the request went out. */
const NON_IDEMPOTENT = new Set(['POST', 'LOCK', 'PATCH']);

interface Forward {
  headers: string[];
  hasBody: boolean;
  /** the request had a Content-Length */
  hasLength: boolean;
}

function forwardHeaders(req: IncomingMessage, ctx: RequestContext, vhost?: string | null): Forward {
  const raw = req.rawHeaders;
  const policy = ctx.policy ?? DEFAULT_HTTP_POLICY;
  const scheme = ctx.https ? 'https' : 'http';
  // the proxy's own headers first (fixed slots, filled once the client's headers are read)
  const out: string[] = [
    'x-real-ip',
    ctx.remoteAddress,
    'x-forwarded-for',
    ctx.remoteAddress,
    'x-forwarded-port',
    ctx.https ? '443' : String(ctx.listenPort),
    'x-forwarded-proto',
    scheme,
    'x-forwarded-scheme',
    scheme,
    'x-scheme',
    scheme,
  ];
  if (ctx.requestId !== '') out.push('x-request-id', ctx.requestId);
  // proxy-set-headers replace the client's headers of the same names
  const replaced = policy.upstreamHeaderNames;
  if (replaced !== null) for (const h of policy.upstreamHeaders) out.push(h);
  const own = out.length;
  let host: string | undefined;
  let xff: string | undefined;
  let xfh: string | undefined;
  let firstXfh: string | undefined;
  let xfProto: string | undefined;
  let xfPort: string | undefined;
  let connection: string | undefined;
  /** HTTP/2 cookie crumbs, joined into one Cookie header as NGINX does (HTTP/1.1 ones pass as sent) */
  let crumbs: string | undefined;
  const h2 = req.httpVersionMajor === 2;
  let hasBody = false;
  let hasLength = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    const action = REQUEST_HEADER_ACTION[lower];
    if (action === undefined) {
      if (replaced === null || replaced[lower] !== true) out.push(name, value);
      continue;
    }
    switch (action) {
      case HOST:
        host ??= value;
        break;
      case XFF:
        xff = xff === undefined ? value : `${xff}, ${value}`;
        break;
      case XFH:
        firstXfh ??= value;
        xfh = xfh === undefined ? value : `${xfh}, ${value}`;
        break;
      case XF_PROTO:
        xfProto ??= value;
        break;
      case XF_PORT:
        xfPort ??= value;
        break;
      case CONNECTION:
        connection = connection === undefined ? value : `${connection}, ${value}`;
        break;
      case CONTENT_LENGTH:
        if (!hasLength) {
          hasLength = true;
          if (value !== '0') hasBody = true;
          out.push(name, value);
        }
        break;
      case COOKIE:
        if (h2) crumbs = crumbs === undefined ? value : `${crumbs}; ${value}`;
        else out.push(name, value);
        break;
      case TRANSFER_ENCODING:
        hasBody = true;
        break;
      case XFP:
        if (ctx.forwardedPrefix === undefined) out.push(name, value);
        break;
      default:
        break;
    }
  }
  // $full_x_forwarded_for: the incoming chain plus the socket peer
  if (policy.computeFullForwardedFor) {
    const peer = ctx.peerAddress ?? ctx.remoteAddress;
    out[3] = xff === undefined ? peer : `${xff}, ${peer}`;
  }
  // use-forwarded-headers: $pass_access_scheme, $pass_port and $best_http_host from the request
  if (policy.useForwardedHeaders) {
    if (xfPort !== undefined && xfPort !== '') out[5] = xfPort;
    if (xfProto !== undefined && xfProto !== '') out[7] = out[9] = out[11] = xfProto;
    if (firstXfh !== undefined && firstXfh !== '') host = firstXfh;
  }
  if (host !== undefined) out.push('host', vhost ?? host, 'x-forwarded-host', host);
  else if (vhost != null) out.push('host', vhost);
  if (ctx.forwardedPrefix !== undefined) out.push('x-forwarded-prefix', ctx.forwardedPrefix);
  if (ctx.clientCertHeaders !== undefined) for (const h of ctx.clientCertHeaders) out.push(h);
  if (crumbs !== undefined) out.push('cookie', crumbs);
  if (xff !== undefined) out.push('x-original-forwarded-for', xff);
  if (xfh !== undefined) out.push('x-original-forwarded-host', xfh);
  if (connection !== undefined) stripConnectionTokens(out, own, connection);
  return { headers: out, hasBody, hasLength };
}

/** Removes the client headers (from index `from`) that the Connection header names as hop-by-hop. */
function stripConnectionTokens(out: string[], from: number, connection: string): void {
  let named: Set<string> | undefined;
  for (const token of connection.split(',')) {
    const t = token.trim().toLowerCase();
    if (CONNECTION_OPTIONS.has(t)) continue;
    named ??= new Set();
    named.add(t);
  }
  if (named === undefined) return;
  let w = from;
  for (let r = from; r < out.length; r += 2) {
    const name = out[r] as string;
    const lower = name.toLowerCase();
    // the proxy's own headers (host, x-original-*) are not the client's to remove
    if (named.has(lower) && REQUEST_HEADER_ACTION[lower] === undefined) continue;
    out[w++] = name;
    out[w++] = out[r + 1] as string;
  }
  out.length = w;
}

/** Origin-form path: an absolute-form request target (`GET http://host/p`) loses its scheme and authority. */
function upstreamPath(url: string | undefined): string {
  if (url === undefined || url === '') return '/';
  if (url.charCodeAt(0) === 47 /* / */) return url;
  const m = /^https?:\/\/[^/?#]*/i.exec(url);
  if (m === null) return url;
  const rest = url.slice(m[0].length);
  return rest === '' ? '/' : rest.charCodeAt(0) === 47 ? rest : `/${rest}`;
}

// ---------------------------------------------------------------------------------------------------
// Response headers

/** The headers a response's Connection header names as hop-by-hop (never Set-Cookie), or null. */
function connectionNamed(connection: string | string[] | undefined): Set<string> | null {
  if (connection === undefined) return null;
  let named: Set<string> | null = null;
  for (const token of (Array.isArray(connection) ? connection.join(',') : connection).split(',')) {
    const t = token.trim().toLowerCase();
    if (CONNECTION_OPTIONS.has(t) || t === 'set-cookie') continue;
    named ??= new Set();
    named.add(t);
  }
  return named;
}

/**
 * The upstream response's headers for the client as a flat [name, value, ...] list (what
 * `writeHead` takes without building another object): without the hop-by-hop headers, those its
 * Connection header names, `Server`, hide-headers and those add-headers replaces (`drop`), followed
 * by the add-headers. One pass, no `delete` (which would turn undici's header object into a slow
 * dictionary).
 */
function responseHeaders(headers: IncomingHttpHeaders, policy: HttpPolicy): Array<string | string[]> {
  const named = connectionNamed(headers.connection);
  const drop = policy.responseDrop;
  const out: Array<string | string[]> = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || drop[name] === true) continue;
    if (named?.has(name)) continue;
    out.push(name, value);
  }
  const extra = policy.responseHeaders;
  for (let i = 0; i < extra.length; i++) out.push(extra[i] as string);
  return out;
}

/** A `;`-separated cookie attribute whose value a rewrite may change: `; Domain=x`, `; Path=/x`. */
const COOKIE_DOMAIN = /(;\s*domain\s*=\s*)([^;]*)/gi;
const COOKIE_PATH = /(;\s*path\s*=\s*)([^;]*)/gi;

function rewriteCookie(cookie: string, rewrite: ResponseRewrite): string {
  let out = cookie;
  const domain = rewrite.cookieDomain;
  if (domain !== null) {
    const from = (domain.from.startsWith('.') ? domain.from.slice(1) : domain.from).toLowerCase();
    out = out.replace(COOKIE_DOMAIN, (all: string, lead: string, value: string) => {
      const v = value.trim();
      const dot = v.startsWith('.') ? '.' : '';
      return v.slice(dot.length).toLowerCase() === from ? `${lead}${dot}${domain.to}` : all;
    });
  }
  const path = rewrite.cookiePath;
  if (path !== null) {
    out = out.replace(COOKIE_PATH, (all: string, lead: string, value: string) =>
      value.startsWith(path.from) ? `${lead}${path.to}${value.slice(path.from.length)}` : all,
    );
  }
  return out;
}

function rewriteLocation(value: string, redirect: Rewrite): string {
  return value.startsWith(redirect.from) ? redirect.to + value.slice(redirect.from.length) : value;
}

/** `Refresh: 5; url=<URL>`: the URL part is rewritten like a Location. */
function rewriteRefresh(value: string, redirect: Rewrite): string {
  const m = /url\s*=\s*/i.exec(value);
  if (m === null) return value;
  const at = m.index + m[0].length;
  return value.slice(0, at) + rewriteLocation(value.slice(at), redirect);
}

/** Applies a route's response rewrites to a flat header list (names are lower-case, from undici). */
function rewriteHeaders(out: Array<string | string[]>, rewrite: ResponseRewrite): void {
  const cookies = rewrite.cookieDomain !== null || rewrite.cookiePath !== null;
  const redirect = rewrite.redirect;
  for (let i = 0; i < out.length; i += 2) {
    const name = out[i] as string;
    const value = out[i + 1] as string | string[];
    if (name === 'set-cookie' && cookies) {
      out[i + 1] = Array.isArray(value)
        ? value.map((c) => rewriteCookie(c, rewrite))
        : rewriteCookie(value, rewrite);
    } else if (redirect !== null && (name === 'location' || name === 'refresh')) {
      const one = (v: string) =>
        name === 'location' ? rewriteLocation(v, redirect) : rewriteRefresh(v, redirect);
      out[i + 1] = Array.isArray(value) ? value.map(one) : one(value);
    }
  }
}

/** add-headers and Server on a response the proxy answers itself (error page, redirect). */
export function setOwnResponseHeaders(res: ServerResponse, policy: HttpPolicy): void {
  const extra = policy.responseHeaders;
  for (let i = 0; i < extra.length; i += 2) res.setHeader(extra[i] as string, extra[i + 1] as string);
}

/** An HTTP/1.1 response head written straight to a socket (upgrade exchanges). */
function rawHead(status: number, statusText: string, headers: ReadonlyArray<string | string[]>): string {
  let head = `HTTP/1.1 ${status} ${statusText}\r\n`;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string | string[];
    if (Array.isArray(value)) {
      for (const v of value) head += `${name}: ${v}\r\n`;
    } else {
      head += `${name}: ${value}\r\n`;
    }
  }
  return `${head}\r\n`;
}

// ---------------------------------------------------------------------------------------------------
// Failures

const ERROR = 0; // connect refused/reset, upstream closed before a full head: proxy_next_upstream error
const TIMEOUT = 1; // connect timeout, read timeout before the head, send timeout: proxy_next_upstream timeout
const FATAL = 2; // bad request for undici, client gone: 502, never retried
const INVALID = 3; // unparsable response head: proxy_next_upstream invalid_header, else 502
const TOO_LARGE = 4; // the request body grew past proxy-body-size: 413, never retried
type FailureKind = typeof ERROR | typeof TIMEOUT | typeof FATAL | typeof INVALID | typeof TOO_LARGE;

class ProxyError extends Error {
  readonly code: ProxyErrorCode;
  constructor(code: ProxyErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

const SEND_TIMEOUT = 'PROXY_SEND_TIMEOUT';
const CLIENT_ABORTED = 'PROXY_CLIENT_ABORTED';
const BODY_TOO_LARGE = 'PROXY_BODY_TOO_LARGE';
/** the try's response status is one of proxy-next-upstream's http_xxx: discarded, next try */
const NEXT_STATUS = 'PROXY_NEXT_UPSTREAM_STATUS';

function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // llhttp's errors without a code (a response that is not HTTP at all)
  return (err.name === 'HTTPParserError' ? 'HPE_INVALID' : 'UNKNOWN') satisfies ErrorCode;
}

function classify(code: string): FailureKind {
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case SEND_TIMEOUT:
    case 'ETIMEDOUT':
      return TIMEOUT;
    case 'UND_ERR_HEADERS_OVERFLOW':
      return INVALID;
    case BODY_TOO_LARGE:
      return TOO_LARGE;
    case 'UND_ERR_INVALID_ARG':
    case 'UND_ERR_NOT_SUPPORTED':
    case 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_ABORTED':
    case CLIENT_ABORTED:
      return FATAL;
    default:
      return code.startsWith('HPE_') ? INVALID : ERROR;
  }
}

function noop(): void {}

/** The client's response is gone: a closed HTTP/1.x response, or an HTTP/2 one whose stream closed. */
function responseClosed(res: ServerResponse): boolean {
  return res.destroyed || (res as ServerResponse & { stream?: Duplex }).stream?.destroyed === true;
}

/**
 * Reads a whole request body; `done(null)` as soon as it grows past `limit` bytes (the rest is read
 * and discarded, so the connection can carry the 413 and stay usable). Nothing happens if the client
 * goes away meanwhile.
 */
function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > limit) {
      req.off('data', onData);
      req.off('end', onEnd);
      req.resume();
      done(null);
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    // an HTTP/2 request whose client reset its stream ends too, marked aborted: a cut body
    if ((req as IncomingMessage & { aborted?: boolean }).aborted === true) return;
    done(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  };
  req.on('error', noop);
  req.on('data', onData);
  req.on('end', onEnd);
}

/** A streamed chunked body that fails the try (413, or a cut once answered) past `limit` bytes. */
function limitBody(req: IncomingMessage, limit: number): Transform {
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limit) {
        // the rest of the client's body is discarded: the 413 (or the cut) answers it
        req.unpipe(counted);
        req.resume();
        callback(new ProxyError(BODY_TOO_LARGE, 'request body larger than proxy-body-size'));
      } else {
        callback(null, chunk);
      }
    },
  });
  req.on('error', (err) => counted.destroy(err));
  // the send timeout watches the client request: pass the counter's backpressure on to it
  req.pipe(counted);
  return counted;
}

/** Ends a socket once its buffered writes are out, then destroys it (net.Socket#destroySoon). */
function finish(socket: Duplex): void {
  if (socket.destroyed) return;
  const soon = (socket as Duplex & { destroySoon?: () => void }).destroySoon;
  if (typeof soon === 'function') soon.call(socket);
  else socket.destroy();
}

// ---------------------------------------------------------------------------------------------------
// One proxied exchange: the tries, the retry rule, the failure answer

abstract class Exchange implements Dispatcher.DispatchHandler {
  protected readonly proxy: Proxy;
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

  constructor(
    proxy: Proxy,
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

  /** Starts the next try, or answers when there is no peer to try. */
  readonly next = (): void => {
    if (this.done) return;
    const peer = this.pickPeer();
    if (peer === undefined) {
      this.done = true;
      this.fail(this.attempts === 0 ? 503 : this.lastKind === TIMEOUT ? 504 : 502);
      return;
    }
    this.peer = peer;
    if (this.attempts === 0) this.tFirst = performance.now();
    this.attempts++;
    this.started = false;
    this.controller = null;
    this.t0 = performance.now();
    const record = this.record;
    if (record !== null) {
      if (record.upstreamAddr !== '') recordRetry(record);
      record.upstreamAddr = peer.key;
    }
    // a dispatch error (closed pool, invalid argument) comes back through onResponseError
    this.proxy
      .pool(peer.key, this.target.connectTimeoutMs, this.protocol, this.target.backendTls ?? null)
      .dispatch(this.opts, this);
  };

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

  protected observe(): void {
    const peer = this.peer;
    if (peer !== undefined) this.target.balancer.observe(peer, (performance.now() - this.t0) / 1000);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    this.started = true;
    // connected (or a kept-alive connection taken): NGINX's $upstream_connect_time
    if (this.record !== null) this.record.connectTime = this.elapsed();
    if (this.gone) controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
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

  /** A response head came from the upstream: $upstream_header_time and $upstream_status. */
  protected noteHead(statusCode: number): void {
    const record = this.record;
    if (record === null) return;
    record.headerTime = this.elapsed();
    record.upstreamStatus = statusCode;
    record.upstreamResponseLength = 0;
  }

  /** Body bytes came from the upstream: $upstream_response_length. */
  protected noteData(bytes: number): void {
    if (this.record !== null) this.record.upstreamResponseLength += bytes;
  }

  /** The upstream's response is complete: $upstream_response_time. */
  protected noteEnd(): void {
    if (this.record !== null) this.record.responseTime = this.elapsed();
  }
}

/** A plain HTTP request: response to a ServerResponse. */
class WebExchange extends Exchange {
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

  constructor(
    proxy: Proxy,
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
    this.hsts = hsts;
    this.h2 = req.httpVersionMajor === 2;
    res.on('close', () => {
      // an Http2ServerResponse reads as finished once its stream closed, reset or not: `done` tells
      if (!res.writableFinished || this.h2) this.clientGone();
    });
    if (hasBody) {
      // undici pauses the request body while the upstream socket is full: that wait is the send timeout
      req.on('error', noop);
      req.on('pause', () => {
        if (this.sendTimer === undefined && !this.done && target.sendTimeoutMs > 0) {
          this.sendTimer = setTimeout(this.onSendTimeout, target.sendTimeoutMs);
        }
      });
      req.on('resume', () => this.clearSendTimer());
    }
  }

  private readonly onSendTimeout = (): void => {
    this.sendTimer = undefined;
    this.controller?.abort(new ProxyError(SEND_TIMEOUT, 'upstream timed out while sending the request'));
  };

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
    });
    req.once('end', () => req.socket?.setTimeout(0));
  }

  protected cut(): void {
    this.res.destroy();
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    if (statusCode < 200) return; // 1xx (103 Early Hints...) are not forwarded, like NGINX
    if (this.retriesStatus(statusCode)) {
      this.observe();
      this.noteHead(statusCode);
      controller.abort(new ProxyError(NEXT_STATUS, `upstream answered ${statusCode}`));
      return;
    }
    this.responded = true;
    this.observe();
    this.noteHead(statusCode);
    if (this.done) {
      controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
      return;
    }
    if (interceptsResponse(this.errors, statusCode)) {
      this.handOff(this.errors, statusCode, controller);
      return;
    }
    const out = responseHeaders(headers, this.policy);
    if (this.target.rewrite != null) rewriteHeaders(out, this.target.rewrite);
    if (this.hsts !== null) out.push('strict-transport-security', this.hsts);
    if (this.newCookie !== null) out.push('set-cookie', this.newCookie);
    if (this.h2 && headers['grpc-status'] !== undefined) {
      this.held = { status: statusCode, headers: out };
      return;
    }
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

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
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
    if (!this.res.write(chunk)) {
      controller.pause();
      if (!this.drainHooked) {
        this.drainHooked = true;
        this.res.on('drain', () => this.controller?.resume());
      }
    }
  }

  /** limit-rate: writes go through a Pacer, which pauses and resumes the upstream itself. */
  private newPacer(limit: PaceLimit): Pacer {
    const pacer = new Pacer(limit, {
      write: (bytes) => this.res.write(bytes),
      resume: () => this.controller?.resume(),
      now: () => performance.now(),
      setTimer: (callback, ms) => setTimeout(callback, ms),
      clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
    });
    this.res.on('drain', () => pacer.drained());
    return pacer;
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, trailers?: IncomingHttpHeaders): void {
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
      let any = false;
      for (const _ in trailers) {
        any = true;
        break;
      }
      if (any) this.res.addTrailers(trailers as Record<string, string | string[]>);
    }
    this.res.end();
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

/** An HTTP/1.1 Upgrade (WebSocket): on 101 the two sockets are piped together. */
class UpgradeExchange extends Exchange {
  private readonly socket: Duplex;
  private readonly head: Buffer;
  private paused = false;

  constructor(
    proxy: Proxy,
    socket: Duplex,
    head: Buffer,
    target: ProxyTarget,
    opts: Dispatcher.DispatchOptions,
    record: RequestRecord | null,
  ) {
    super(proxy, target, opts, false, record);
    this.socket = socket;
    this.head = head;
    socket.on('error', noop);
    socket.on('close', () => this.clientGone());
  }

  protected fail(status: number): void {
    if (this.record !== null) this.record.status = status;
    sendSocketErrorPage(this.socket, status);
  }

  protected unexpected(error: unknown): void {
    this.done = true;
    this.socket.destroy();
    this.proxy.containSocket(error);
  }

  protected cut(): void {
    this.socket.destroy();
  }

  onRequestUpgrade(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    upstream: Duplex,
  ): void {
    this.observe();
    this.noteHead(statusCode);
    if (this.record !== null) this.record.status = statusCode;
    if (this.done) {
      upstream.destroy();
      return;
    }
    this.done = true;
    this.responded = true;
    const client = this.socket;
    const out: Array<string | string[]> = [];
    for (const name in headers) {
      const value = headers[name];
      if (value !== undefined && name !== 'server') out.push(name, value);
    }
    client.write(rawHead(statusCode, 'Switching Protocols', out));
    if (this.head.length > 0) upstream.write(this.head);
    this.proxy.tunnel(client, upstream);
  }

  /** The upstream refused the upgrade with an ordinary response: pass it on, then close. */
  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusText?: string,
  ): void {
    if (statusCode < 200) return;
    this.responded = true;
    this.observe();
    this.noteHead(statusCode);
    if (this.done) {
      controller.abort(new ProxyError(CLIENT_ABORTED, 'client closed the connection'));
      return;
    }
    if (this.record !== null) this.record.status = statusCode;
    const out = responseHeaders(headers, this.policy);
    out.push('connection', 'close');
    this.socket.write(rawHead(statusCode, statusText || 'Unknown', out));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return;
    this.noteData(chunk.length);
    if (!this.socket.write(chunk) && !this.paused) {
      this.paused = true;
      controller.pause();
      this.socket.once('drain', () => {
        this.paused = false;
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    this.noteEnd();
    if (this.done) return;
    this.done = true;
    this.socket.end();
  }
}

// ---------------------------------------------------------------------------------------------------
// The proxy

interface PeerPool {
  connectTimeoutMs: number;
  protocol: PoolProtocol;
  /** BackendTls.id of a TLS pool with proxy-ssl settings, else '' */
  tls: string;
  pool: Pool;
}

const isTls = (protocol: PoolProtocol): boolean => protocol === 'HTTPS' || protocol === 'GRPCS';

/**
 * undici options per backend protocol. HTTPS stays on HTTP/1.1 like proxy_pass https://; GRPC is h2
 * with prior knowledge; GRPCS offers h2 by ALPN. Without proxy-ssl settings (a route with no usable
 * proxy-ssl-secret), TLS peers are not verified (ingress-nginx's `proxy_ssl_verify off`) and get the
 * request's Host as SNI (undici's rule; NGINX sends none by default), so a peer serving several Hosts
 * reconnects when the Host changes. With them, the pool connects with their compiled TLS
 * (backend-tls.ts) and a fixed SNI (or none).
 */
// `useH2c` at the top: the Pool's own connector reads it there (undici's types only list h2Options')
const POOL_OPTIONS: Record<PoolProtocol, { origin: string; options: Pool.Options & { useH2c?: boolean } }> = {
  HTTP: { origin: 'http', options: {} },
  HTTPS: { origin: 'https', options: { allowH2: false, connect: { rejectUnauthorized: false } } },
  GRPC: { origin: 'http', options: { allowH2: true, useH2c: true, h2Options: { useH2c: true } } },
  // h2 offered first (a peer speaking both must not pick HTTP/1.1 for gRPC)
  GRPCS: {
    origin: 'https',
    options: {
      allowH2: true,
      connect: { rejectUnauthorized: false, preferH2: true } as Pool.Options['connect'],
    },
  },
};

/** proxy-ssl: every request of a TLS pool with settings carries their constant servername (BackendTls). */
function withServername(opts: Dispatcher.DispatchOptions, protocol: PoolProtocol, target: ProxyTarget): void {
  const tls = target.backendTls;
  if (tls == null || !isTls(protocol)) return;
  (opts as Dispatcher.DispatchOptions & { servername?: string }).servername = tls.requestServername;
}

/** undici's connector with the settings' TLS; the SNI is theirs, never the request's Host. */
function tlsConnector(
  tls: BackendTls,
  timeout: number,
  allowH2: boolean,
  preferH2: boolean,
): buildConnector.connector {
  const connect = buildConnector({ ...tls.options, timeout, allowH2, preferH2 });
  const servername = tls.servername ?? undefined;
  // host '' with no servername: undici derives none (it would take a DNS peer's name otherwise)
  return (options, callback) => connect({ ...options, host: '', servername }, callback);
}

/** Http2ServerRequest: whether the client's HEADERS frame carried END_STREAM (no body). */
function endedAfterHeaders(req: IncomingMessage): boolean {
  return (
    (req as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream?.endAfterHeaders === true
  );
}

// biome-ignore lint/suspicious/noShadowRestrictedNames: the data plane's public name; the global Proxy is not used here
export class Proxy {
  private keepAliveTimeoutMs: number | undefined;
  private connections: number | undefined;
  private maxRequestsPerClient: number | undefined;
  /** by peer key; one Pool per connect timeout in use for that peer (normally exactly one) */
  private readonly pools = new Map<string, PeerPool[]>();
  private readonly tunnels = new Set<Duplex>();
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

  constructor(options: ProxyOptions = {}) {
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
    const opts: Dispatcher.DispatchOptions = {
      path: ctx.path ?? upstreamPath(req.url),
      method,
      headers,
      body: null,
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
    };
    // undici then writes `connection: close` and does not reuse the connection (h2 has no such header)
    if (target.closeConnection === true && !grpc) opts.reset = true;
    withServername(opts, protocol, target);
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
    protocol: ReturnType<typeof poolProtocol>,
    streamed: boolean,
    record: RequestRecord | null,
  ): void {
    // the client left before the exchange began (while its body was read, or an auth-url check
    // ran): an exchange now would hear no 'close' and could hold its upstream request open
    if (responseClosed(res)) return;
    const exchange = new WebExchange(this, req, res, target, opts, streamed, ctx.hsts, record);
    exchange.hashKey = ctx.hashKey;
    exchange.session = ctx.session;
    exchange.protocol = protocol;
    if (ctx.policy !== undefined) exchange.policy = ctx.policy;
    if (streamed) exchange.watchBody(req, exchange.policy.clientBodyTimeoutMs);
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
    const opts: Dispatcher.DispatchOptions = {
      path: '/',
      method: req.method ?? 'GET',
      headers,
      body: null,
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
    };
    const exchange = new WebExchange(this, req, res, target, opts, false, ctx.hsts, record);
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
    const opts: Dispatcher.DispatchOptions = {
      path: ctx.path ?? upstreamPath(req.url),
      method: req.method ?? 'GET',
      headers,
      body: null,
      upgrade: req.headers.upgrade || 'websocket',
      headersTimeout: target.readTimeoutMs,
      bodyTimeout: target.readTimeoutMs,
    };
    const exchange = new UpgradeExchange(this, socket, head, target, opts, record);
    exchange.hashKey = ctx.hashKey;
    exchange.session = ctx.session;
    // a WebSocket tunnel is HTTP/1.1: TLS to HTTPS/GRPCS peers, cleartext otherwise
    const protocol = poolProtocol(target.protocol, ctx.https);
    exchange.protocol = protocol === 'GRPCS' ? 'HTTPS' : protocol === 'GRPC' ? 'HTTP' : protocol;
    withServername(opts, exchange.protocol, target);
    if (ctx.policy !== undefined) exchange.policy = ctx.policy;
    exchange.next();
  }

  /** The pool for a peer (created on first use, kept across runtime swaps until retired). */
  pool(
    key: string,
    connectTimeoutMs: number,
    protocol: PoolProtocol = 'HTTP',
    backendTls: BackendTls | null = null,
  ): Pool {
    const settings = backendTls !== null && isTls(protocol) ? backendTls : null;
    const tls = settings?.id ?? '';
    let list = this.pools.get(key);
    if (list !== undefined) {
      for (const p of list)
        if (p.connectTimeoutMs === connectTimeoutMs && p.protocol === protocol && p.tls === tls)
          return p.pool;
    } else {
      list = [];
      this.pools.set(key, list);
    }
    const { origin, options } = POOL_OPTIONS[protocol];
    const pool = new Pool(`${origin}://${key}`, {
      ...options,
      ...(settings === null
        ? {}
        : {
            connect: tlsConnector(settings, connectTimeoutMs, protocol === 'GRPCS', protocol === 'GRPCS'),
          }),
      connections: this.connections ?? null,
      keepAliveTimeout: this.keepAliveTimeoutMs,
      maxRequestsPerClient: this.maxRequestsPerClient,
      connectTimeout: connectTimeoutMs,
    });
    list.push({ connectTimeoutMs, protocol, tls, pool });
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
    await Promise.all(closing);
  }
}
