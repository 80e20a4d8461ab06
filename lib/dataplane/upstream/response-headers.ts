// The response headers the client gets: the upstream's without the hop-by-hop ones, hide-headers and
// add-headers applied, Set-Cookie Domain/Path and Location/Refresh rewritten (proxy-cookie-*,
// proxy-redirect-*); the same add-headers on the proxy's own answers; a raw HTTP/1.1 head for upgrades.

import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { FRAMING_RESPONSE_HEADERS } from '../../model/annotations/validators.ts';
import type { Rewrite } from '../../model/index.ts';
import { ADD_HEADER_STATUS, type HttpPolicy } from '../http-policy.ts';
import { CONNECTION_OPTIONS } from './request-headers.ts';
import type { ResponseRewrite } from './target.ts';

/** The headers a response's Connection header names as hop-by-hop (never Set-Cookie), or null. */
function connectionNamed(connection: string | string[] | undefined): Set<string> | null {
  if (connection === undefined) return null;
  // what a keep-alive upstream sends on nearly every response: nothing to split, trim or lower-case
  if (connection === 'keep-alive' || connection === 'close') return null;
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
 * Connection header names, `Server` (unless allow-backend-server-header passes it), hide-headers and those add-headers replaces (`drop`), followed
 * by the add-headers. One pass, no `delete` (which would turn undici's header object into a slow
 * dictionary).
 */
export function responseHeaders(
  headers: IncomingHttpHeaders,
  policy: HttpPolicy,
  status: number,
): Array<string | string[]> {
  const named = connectionNamed(headers.connection);
  const drop = policy.responseDrop;
  const out: Array<string | string[]> = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || drop.has(name)) continue;
    if (named?.has(name)) continue;
    out.push(name, value);
  }
  // a snippet's `more_clear_headers X-*`: a second pass only on the routes that have one
  const prefixes = policy.responseDropPrefixes;
  if (prefixes !== null) dropByPrefix(out, prefixes);
  const extra = policy.responseHeaders;
  for (let i = 0; i < extra.length; i++) out.push(extra[i] as string);
  const fallback = policy.serverFallback;
  if (fallback !== null && headers.server === undefined) out.push('server', fallback);
  const onStatus = policy.statusHeaders;
  if (onStatus.length !== 0 && ADD_HEADER_STATUS[status] === true) {
    for (let i = 0; i < onStatus.length; i++) out.push(onStatus[i] as string);
  }
  return out;
}

/** Removes a header (lower-case name) from a flat [name, value, ...] list. */
export function withoutHeader(out: Array<string | string[]>, name: string): void {
  let w = 0;
  for (let r = 0; r < out.length; r += 2) {
    if (out[r] === name) continue;
    out[w++] = out[r] as string;
    out[w++] = out[r + 1] as string | string[];
  }
  out.length = w;
}

function dropByPrefix(out: Array<string | string[]>, prefixes: readonly string[]): void {
  let kept = 0;
  for (let i = 0; i < out.length; i += 2) {
    const name = out[i] as string;
    if (prefixes.some((prefix) => name.startsWith(prefix))) continue;
    out[kept] = name;
    out[kept + 1] = out[i + 1] as string | string[];
    kept += 2;
  }
  out.length = kept;
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
export function rewriteHeaders(out: Array<string | string[]>, rewrite: ResponseRewrite): void {
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

/**
 * add-headers and Server on a response the proxy answers itself (error page, redirect); `status`
 * (absent: an error) decides whether a snippet's add_header without `always` goes too.
 */
export function setOwnResponseHeaders(res: ServerResponse, policy: HttpPolicy, status?: number): void {
  const extra = policy.responseHeaders;
  for (let i = 0; i < extra.length; i += 2) res.setHeader(extra[i] as string, extra[i + 1] as string);
  if (policy.serverFallback !== null) res.setHeader('server', policy.serverFallback);
  const onStatus = policy.statusHeaders;
  if (onStatus.length !== 0 && status !== undefined && ADD_HEADER_STATUS[status] === true) {
    for (let i = 0; i < onStatus.length; i += 2)
      res.appendHeader(onStatus[i] as string, onStatus[i + 1] as string);
  }
}

/**
 * The headers setOwnResponseHeaders sets for `status`, as the header lines of a head written by hand
 * (what the proxy answers on an upgrade request's socket): a name set twice keeps its last value, as
 * setHeader does; the status's add_header ones are appended. A framing or hop-by-hop name is skipped
 * whatever configuration let through: these lines sit beside the head's own Connection, Upgrade or
 * Content-Length, and a second one would let the client and the proxy read the stream differently.
 */
export function ownResponseHeadLines(policy: HttpPolicy, status?: number): string {
  const extra = policy.responseHeaders;
  const set = new Map<string, string>();
  for (let i = 0; i < extra.length; i += 2) {
    const name = extra[i] as string;
    const lower = name.toLowerCase();
    if (FRAMING_RESPONSE_HEADERS.has(lower)) continue;
    set.set(lower, `${name}: ${extra[i + 1] as string}\r\n`);
  }
  if (policy.serverFallback !== null) set.set('server', `Server: ${policy.serverFallback}\r\n`);
  let lines = '';
  for (const line of set.values()) lines += line;
  const onStatus = policy.statusHeaders;
  if (onStatus.length !== 0 && status !== undefined && ADD_HEADER_STATUS[status] === true) {
    for (let i = 0; i < onStatus.length; i += 2) {
      const name = onStatus[i] as string;
      if (!FRAMING_RESPONSE_HEADERS.has(name.toLowerCase()))
        lines += `${name}: ${onStatus[i + 1] as string}\r\n`;
    }
  }
  return lines;
}

/** An HTTP/1.1 response head written straight to a socket (upgrade exchanges). */
export function rawHead(
  status: number,
  statusText: string,
  headers: ReadonlyArray<string | string[]>,
): string {
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
