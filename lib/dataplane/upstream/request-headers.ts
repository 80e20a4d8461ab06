// The request headers sent upstream, as ingress-nginx's template sets them: the proxy's own X-Forwarded-*
// and X-Real-IP, X-Original-URI (proxy-add-original-uri-header), proxy-set-headers, the client's headers without the hop-by-hop ones; and the request
// target in origin form. One pass over rawHeaders per request.

import type { IncomingMessage } from 'node:http';
import { DEFAULT_HTTP_POLICY } from '../http-policy.ts';
import type { RequestContext } from './target.ts';

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
const TRACE = 12;

/**
 * What happens to an incoming header, by lower-case name; absent = passed through. A Map, not an
 * object: the names are fresh strings from the parser, and a keyed read of a dictionary object
 * with such a key goes through V8's megamorphic stub and the string table on every header.
 */
const REQUEST_HEADER_ACTION: ReadonlyMap<string, number> = new Map(
  Object.entries({
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
    // OpenTelemetry: the span's context replaces the client's on a traced route
    traceparent: TRACE,
    tracestate: TRACE,
  }),
);

/** Connection tokens that name no header to strip. */
export const CONNECTION_OPTIONS = new Set(['close', 'keep-alive', 'upgrade', '']);

export interface Forward {
  headers: string[];
  hasBody: boolean;
  /** the request had a Content-Length */
  hasLength: boolean;
}

export function forwardHeaders(req: IncomingMessage, ctx: RequestContext, vhost?: string | null): Forward {
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
    ctx.serverPort !== undefined ? String(ctx.serverPort) : ctx.https ? '443' : String(ctx.listenPort),
    'x-forwarded-proto',
    scheme,
    'x-forwarded-scheme',
    scheme,
    'x-scheme',
    scheme,
  ];
  if (ctx.requestId !== '') out.push('x-request-id', ctx.requestId);
  // $request_uri: the target as the client sent it, before rewrite-target
  if (policy.originalUriHeader) out.push('x-original-uri', req.url ?? '/');
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
    const action = REQUEST_HEADER_ACTION.get(lower);
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
      case TRACE:
        if (ctx.traceHeaders === undefined) out.push(name, value);
        break;
      default:
        break;
    }
  }
  // only a route whose policy replaces headers can append to them (HTTPRoute RequestHeaderModifier)
  if (replaced !== null && policy.upstreamHeaderAppends != null) {
    appendJoined(out, raw, policy.upstreamHeaderAppends);
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
  if (ctx.traceHeaders !== undefined) for (const h of ctx.traceHeaders) out.push(h);
  if (crumbs !== undefined) out.push('cookie', crumbs);
  if (xff !== undefined) out.push('x-original-forwarded-for', xff);
  if (xfh !== undefined) out.push('x-original-forwarded-host', xfh);
  if (connection !== undefined) stripConnectionTokens(out, own, connection);
  return { headers: out, hasBody, hasLength };
}

/** Whether the proxy sets or strips this request header itself (lower-case name): no route may edit it. */
export function proxyOwnsRequestHeader(name: string): boolean {
  return REQUEST_HEADER_ACTION.has(name);
}

/** Each [name, value] of `appends` with the client's lines of that name before it, joined with `,`. */
function appendJoined(out: string[], raw: readonly string[], appends: readonly string[]): void {
  for (let a = 0; a < appends.length; a += 2) {
    const name = appends[a] as string;
    let joined: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const own = raw[i] as string;
      if (own.length !== name.length || own.toLowerCase() !== name) continue;
      joined = joined === undefined ? (raw[i + 1] as string) : `${joined},${raw[i + 1] as string}`;
    }
    const value = appends[a + 1] as string;
    out.push(name, joined === undefined ? value : `${joined},${value}`);
  }
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
    if (named.has(lower) && !REQUEST_HEADER_ACTION.has(lower)) continue;
    out[w++] = name;
    out[w++] = out[r + 1] as string;
  }
  out.length = w;
}

/** Origin-form path: an absolute-form request target (`GET http://host/p`) loses its scheme and authority. */
export function upstreamPath(url: string | undefined): string {
  if (url === undefined || url === '') return '/';
  if (url.charCodeAt(0) === 47 /* / */) return url;
  const m = /^https?:\/\/[^/?#]*/i.exec(url);
  if (m === null) return url;
  const rest = url.slice(m[0].length);
  return rest === '' ? '/' : rest.charCodeAt(0) === 47 ? rest : `/${rest}`;
}
