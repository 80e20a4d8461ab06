// The string variables of the access log, read from a request record: each returns the value, or
// undefined where NGINX's variable is "not found" (the log then writes `-`, or nothing with
// escape=json or escape=none). Only variables a format names are read, once per line.

import type { RequestRecord } from './request-record.ts';

type Getter = (r: RequestRecord) => string | undefined;

const orMissing = (value: string): string | undefined => (value === '' ? undefined : value);

/**
 * A request header's value ($http_<name>): `name` lower-case with `-`; repeated headers joined with
 * ", " ("; " for Cookie), as NGINX joins them; undefined when absent.
 */
export function headerValue(headers: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  const n = name.length;
  for (let i = 0; i < headers.length; i += 2) {
    const key = headers[i] as string;
    if (key.length !== n || key.toLowerCase() !== name) continue;
    const v = headers[i + 1] as string;
    value = value === undefined ? v : `${value}${name === 'cookie' ? '; ' : ', '}${v}`;
  }
  return value;
}

/** Where the query starts in a request target (-1: none). */
const queryAt = (uri: string): number => uri.indexOf('?');

/** $uri: the target's path with %XX decoded, byte for byte (NGINX also merges slashes and dot segments). */
function decodedPath(uri: string): string {
  const q = queryAt(uri);
  const path = q === -1 ? uri : uri.slice(0, q);
  if (!path.includes('%')) return path;
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

/** $remote_user: the user of Basic credentials (never the password); undefined without them. */
function basicUser(r: RequestRecord): string | undefined {
  const auth = headerValue(r.headers, 'authorization');
  if (auth === undefined || !/^basic /i.test(auth)) return undefined;
  const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('latin1');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(0, colon);
}

/** The scheme of a credentials header, never the credentials (they stay out of every log). */
function schemeOnly(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const space = value.indexOf(' ');
  return space === -1 ? '' : value.slice(0, space);
}

/** A URL's `user:password@` dropped (browsers never send one in a Referer; a crafted client might). */
function withoutUserinfo(url: string): string {
  return url.includes('@') ? url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/, '$1') : url;
}

/** A cookie's value ($cookie_<name>, the name compared without case, as NGINX does). */
function cookieValue(headers: readonly string[], name: string): string | undefined {
  const cookies = headerValue(headers, 'cookie');
  if (cookies === undefined) return undefined;
  for (const pair of cookies.split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    if (pair.slice(0, eq).trim().toLowerCase() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

/** A query argument's value ($arg_<name>), raw as NGINX logs it; only `name=value` counts. */
function argValue(uri: string, name: string): string | undefined {
  const q = queryAt(uri);
  if (q === -1) return undefined;
  for (const pair of uri.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && eq === name.length && pair.slice(0, eq).toLowerCase() === name)
      return pair.slice(eq + 1);
  }
  return undefined;
}

function args(r: RequestRecord): string | undefined {
  const q = queryAt(r.uri);
  return q === -1 ? undefined : r.uri.slice(q + 1);
}

const STRING_GETTERS: Record<string, Getter> = {
  remote_addr: (r) => orMissing(r.remoteAddress),
  realip_remote_addr: (r) => orMissing(r.peer),
  remote_user: basicUser,
  request_method: (r) => orMissing(r.method),
  request_uri: (r) => orMissing(r.uri),
  uri: (r) => orMissing(decodedPath(r.uri)),
  document_uri: (r) => orMissing(decodedPath(r.uri)),
  args,
  query_string: args,
  is_args: (r) => (queryAt(r.uri) === -1 ? '' : '?'),
  server_protocol: (r) => orMissing(r.protocol),
  // NGINX's server-level `set $proxy_upstream_name "-"` runs for every routed request
  proxy_upstream_name: (r) => (r.upstream !== '' ? r.upstream : r.refused ? '' : '-'),
  proxy_alternative_upstream_name: (r) => r.canary,
  req_id: (r) => r.requestId,
  // no Host: the name of the default server, `_` in ingress-nginx
  host: (r) => (r.host === '' ? '_' : r.host),
  server_name: (r) => (r.namespace !== '' && r.host !== '' ? r.host : '_'),
  server_port: (r) => (r.serverPort === 0 ? undefined : String(r.serverPort)),
  scheme: (r) => (r.https ? 'https' : 'http'),
  https: (r) => (r.https ? 'on' : ''),
  namespace: (r) => r.namespace,
  ingress_name: (r) => r.ingress,
  service_name: (r) => r.service,
  service_port: (r) => r.servicePort,
  location_path: (r) => r.path,
  // pipelined requests are not told apart in the record
  pipe: () => '.',
  proxy_add_x_forwarded_for: (r) => {
    const forwarded = headerValue(r.headers, 'x-forwarded-for');
    return forwarded === undefined ? r.remoteAddress : `${forwarded}, ${r.remoteAddress}`;
  },
  ssl_protocol: (r) => orMissing(r.sslProtocol),
  ssl_cipher: (r) => orMissing(r.sslCipher),
  // traceparent is 00-<trace id: 32 hex>-<span id: 16 hex>-<flags>
  opentelemetry_trace_id: (r) => (r.traceparent ? r.traceparent.slice(3, 35) : undefined),
  opentelemetry_span_id: (r) => (r.traceparent ? r.traceparent.slice(36, 52) : undefined),
  opentelemetry_context_traceparent: (r) => r.traceparent || undefined,
  opentelemetry_context_tracestate: (r) => r.tracestate || undefined,
};

/** Headers whose values are credentials: only their scheme is logged. */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization']);

/** The getter of a string variable, prefixes included (made once per format); undefined: none. */
export function getterOf(name: string): Getter | undefined {
  const exact = STRING_GETTERS[name];
  if (exact !== undefined) return exact;
  // read once already, for the record (request-record.ts)
  if (name === 'http_user_agent') return (r) => orMissing(r.userAgent);
  if (name === 'http_referer') return (r) => orMissing(withoutUserinfo(r.referer));
  if (name.startsWith('http_') && name.length > 5) {
    const header = name.slice(5).replaceAll('_', '-');
    if (CREDENTIAL_HEADERS.has(header)) return (r) => schemeOnly(headerValue(r.headers, header));
    return (r) => headerValue(r.headers, header);
  }
  if (name.startsWith('cookie_') && name.length > 7) {
    const cookie = name.slice(7);
    return (r) => cookieValue(r.headers, cookie);
  }
  if (name.startsWith('arg_') && name.length > 4) {
    const arg = name.slice(4);
    return (r) => argValue(r.uri, arg);
  }
  return undefined;
}
