// External authentication (auth-url, global-auth-url): NGINX's auth_request. Before a request is
// proxied, a request without body goes to the auth URL with the client's headers and those
// ingress-nginx adds (X-Original-URI, X-Original-URL, X-Original-Method, X-Scheme, X-Sent-From,
// X-Real-IP, X-Forwarded-For, X-Auth-Request-Redirect, X-Request-ID, Host = the auth host;
// X-Forwarded-Proto and Content-Length cleared). 2xx allows (auth-response-headers are copied into
// the upstream request, Set-Cookie onto the response); 401 and 403 deny with that status (401 with
// the service's WWW-Authenticate, or a 302 to auth-signin with rd=); anything else, an unreachable
// service or a timeout, is 500.
//
// URLs may hold NGINX variables, compiled once per runtime: those of upstream-hash-by (hash-key.ts)
// plus $escaped_request_uri, $http_host, $best_http_host and $pass_access_scheme.

import { LRUCache } from 'lru-cache';
import { Agent } from 'undici';
import type { CacheDuration, ExternalAuth } from '../../model/annotations/external-auth.ts';
import { headerValue } from '../request-values.ts';
import { compileHashKey, type KeyInput } from '../upstream/hash-key.ts';

type Template = (input: KeyInput) => string;

export interface ExternalAuthCheck {
  url: Template;
  /** null: the request's own method */
  method: string | null;
  /** the sign-in redirect (rd= appended), or null */
  signin: Template | null;
  /** auth-response-headers, lower-case */
  responseHeaders: readonly string[];
  /** X-Auth-Request-Redirect; null: the request URI */
  requestRedirect: Template | null;
  /** auth-proxy-set-headers as a flat [name, value, ...] list */
  proxyHeaders: readonly string[];
  /** lower-case names of the client headers not forwarded (NOT_FORWARDED and the proxyHeaders) */
  skip: ReadonlySet<string>;
  alwaysSetCookie: boolean;
  /** auth-cache-key: responses cached per expanded key, for auth-cache-duration; null: no cache */
  cache: AuthCache | null;
  /**
   * The largest response head taken from the auth service, bytes: the location's proxy-buffer-size,
   * as NGINX's auth location sets `proxy_buffer_size` from it; a larger head fails the check (500).
   * 0: undici's default.
   */
  maxResponseHead: number;
}

/** What is kept of an auth response. */
interface AuthResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
}

interface AuthCache {
  key: Template;
  /** ms to keep a response of this status; 0: not cached */
  ttl: (status: number) => number;
  entries: LRUCache<string, AuthResponse>;
}

/** NGINX's proxy_cache_valid: the first entry naming the status (or `any`); no codes means 200, 301, 302. */
function cacheTtl(durations: readonly CacheDuration[]): (status: number) => number {
  return (status) => {
    for (const { codes, seconds } of durations) {
      const listed = codes.length === 0 ? [200, 301, 302] : codes;
      if (listed.includes(status) || listed.includes('any')) return seconds * 1000;
    }
    return 0;
  };
}

export type ExternalAuthResult =
  /** `upstream`: [name, value, ...] for the upstream request; `cookies`: the auth Set-Cookie values */
  | { allowed: true; upstream: string[]; cookies: string[] }
  /** `headers`: for the client (WWW-Authenticate, Set-Cookie); `location`: the sign-in redirect */
  | { allowed: false; status: number; headers: Array<[string, string | string[]]>; location: string | null };

/** set-misc's set_escape_uri: everything but unreserved characters percent-encoded. */
export function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

const SPECIAL = /\$\{?(escaped_request_uri|best_http_host|pass_access_scheme)\}?(?![A-Za-z0-9_])/g;

function specialVariable(name: string): Template {
  switch (name) {
    case 'escaped_request_uri':
      return ({ req }) => escapeUri(req.url ?? '/');
    case 'pass_access_scheme':
      return ({ https }) => (https ? 'https' : 'http');
    default:
      // $best_http_host: the Host header as sent (with its port)
      return ({ req, host }) => headerValue(req, 'host') ?? headerValue(req, ':authority') ?? host;
  }
}

/** An NGINX variable template compiled once. */
export function compileTemplate(template: string): Template {
  const parts: Template[] = [];
  let last = 0;
  for (const match of template.matchAll(SPECIAL)) {
    if (match.index > last) parts.push(compileHashKey(template.slice(last, match.index)));
    parts.push(specialVariable(match[1] as string));
    last = match.index + match[0].length;
  }
  if (last < template.length || parts.length === 0) parts.push(compileHashKey(template.slice(last)));
  if (parts.length === 1) return parts[0] as Template;
  return (input) => {
    let out = '';
    for (const part of parts) out += part(input);
    return out;
  };
}

/** ingress-nginx's buildAuthSignURL: rd=<scheme>://<Host><escaped request URI>, unless already there. */
export function signinTemplate(signin: string, param: string): string {
  let query: URLSearchParams;
  try {
    query = new URL(signin).searchParams;
  } catch {
    query = new URLSearchParams();
  }
  const rd = `${param}=$pass_access_scheme://$http_host$escaped_request_uri`;
  if (query.size === 0) return `${signin}?${rd}`;
  if ((query.get(param) ?? '') !== '') return signin;
  return `${signin}&${rd}`;
}

export function compileExternalAuth(auth: ExternalAuth, maxResponseHead = 0): ExternalAuthCheck {
  const proxyHeaders: string[] = [];
  for (const [name, value] of auth.proxyHeaders) proxyHeaders.push(name, value);
  return {
    url: compileTemplate(auth.url),
    method: auth.method,
    signin:
      auth.signin === null ? null : compileTemplate(signinTemplate(auth.signin, auth.signinRedirectParam)),
    responseHeaders: auth.responseHeaders.map((name) => name.toLowerCase()),
    requestRedirect: auth.requestRedirect === '' ? null : compileTemplate(auth.requestRedirect),
    proxyHeaders,
    skip: new Set([...NOT_FORWARDED, ...auth.proxyHeaders.map(([name]) => name.toLowerCase())]),
    alwaysSetCookie: auth.alwaysSetCookie,
    cache:
      auth.cacheKey === ''
        ? null
        : {
            key: compileTemplate(auth.cacheKey),
            ttl: cacheTtl(auth.cacheDuration),
            entries: new LRUCache<string, AuthResponse>({ max: 10_000, ttl: 1, ttlAutopurge: false }),
          },
    maxResponseHead,
  };
}

/** Client headers never sent to the auth service: hop-by-hop, the body's, and those set below. */
const NOT_FORWARDED = new Set([
  'host',
  ':authority',
  ':method',
  ':path',
  ':scheme',
  ':protocol',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
  'content-length',
  'expect',
  'x-forwarded-proto',
  'x-request-id',
  'x-original-uri',
  'x-scheme',
  'x-original-url',
  'x-original-method',
  'x-sent-from',
  'x-real-ip',
  'x-forwarded-for',
  'x-auth-request-redirect',
]);

export interface AuthRequestInput extends KeyInput {
  remoteAddress: string;
  requestId: string;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Sends auth requests: an undici Agent (a connection pool per auth origin) per response-head limit in
 * use (proxy-buffer-size: one or a few values), closed with the data plane.
 */
export class ExternalAuthClient {
  readonly #agents = new Map<number, Agent>();

  #agentFor(maxResponseHead: number): Agent {
    let agent = this.#agents.get(maxResponseHead);
    if (agent === undefined) {
      agent = new Agent({
        connect: { timeout: 5_000, rejectUnauthorized: false },
        headersTimeout: 60_000,
        bodyTimeout: 60_000,
        keepAliveTimeout: 60_000,
        ...(maxResponseHead > 0 ? { maxHeaderSize: maxResponseHead } : {}),
      });
      this.#agents.set(maxResponseHead, agent);
    }
    return agent;
  }

  async check(check: ExternalAuthCheck, input: AuthRequestInput): Promise<ExternalAuthResult> {
    const { req } = input;
    const scheme = input.https ? 'https' : 'http';
    let url: URL;
    try {
      url = new URL(check.url(input));
    } catch {
      return { allowed: false, status: 500, headers: [], location: null };
    }
    const requestUri = req.url ?? '/';
    const headers: string[] = [];
    const skip = check.skip;
    const raw = req.rawHeaders;
    let cookies: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const lower = name.toLowerCase();
      if (skip.has(lower)) continue;
      // HTTP/2 cookie crumbs become one Cookie header
      if (lower === 'cookie' && req.httpVersionMajor === 2) {
        cookies = cookies === undefined ? (raw[i + 1] as string) : `${cookies}; ${raw[i + 1]}`;
        continue;
      }
      headers.push(name, raw[i + 1] as string);
    }
    if (cookies !== undefined) headers.push('cookie', cookies);
    const httpHost = headerValue(req, 'host') ?? headerValue(req, ':authority') ?? input.host;
    headers.push(
      'host',
      url.host,
      'x-request-id',
      input.requestId,
      'x-original-uri',
      requestUri,
      'x-scheme',
      scheme,
      'x-original-url',
      `${scheme}://${httpHost}${requestUri}`,
      'x-original-method',
      req.method ?? 'GET',
      'x-sent-from',
      'nginx-ingress-controller',
      'x-real-ip',
      input.remoteAddress,
      'x-forwarded-for',
      input.remoteAddress,
      'x-auth-request-redirect',
      check.requestRedirect === null ? requestUri : check.requestRedirect(input),
      ...check.proxyHeaders,
    );
    const cache = check.cache;
    const cacheKey = cache === null ? '' : cache.key(input);
    let response = cache?.entries.get(cacheKey);
    if (response === undefined) {
      try {
        const answer = await this.#agentFor(check.maxResponseHead).request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: (check.method ?? req.method ?? 'GET') as 'GET',
          headers,
        });
        await answer.body.dump();
        response = { statusCode: answer.statusCode, headers: answer.headers };
      } catch {
        return { allowed: false, status: 500, headers: [], location: null };
      }
      // NGINX's proxy_cache never stores a response that sets a cookie
      const ttl = cache?.ttl(response.statusCode) ?? 0;
      if (cache !== null && ttl > 0 && response.headers['set-cookie'] === undefined) {
        cache.entries.set(cacheKey, response, { ttl });
      }
    }
    const status = response.statusCode;
    const setCookie = response.headers['set-cookie'];
    const authCookies = setCookie === undefined ? [] : Array.isArray(setCookie) ? setCookie : [setCookie];
    if (status >= 200 && status < 300) {
      const upstream: string[] = [];
      for (const name of check.responseHeaders) {
        const value = joined(response.headers[name]);
        // an empty value is not sent (NGINX's proxy_set_header with an empty variable)
        if (value !== undefined && value !== '') upstream.push(name, value);
      }
      return { allowed: true, upstream, cookies: authCookies };
    }
    if (status !== 401 && status !== 403) return { allowed: false, status: 500, headers: [], location: null };
    const out: Array<[string, string | string[]]> = [];
    if (check.alwaysSetCookie && authCookies.length > 0) out.push(['set-cookie', authCookies]);
    if (status === 401 && check.signin !== null) {
      return { allowed: false, status: 302, headers: out, location: check.signin(input) };
    }
    const challenge = response.headers['www-authenticate'];
    if (status === 401 && challenge !== undefined) out.push(['www-authenticate', challenge]);
    return { allowed: false, status, headers: out, location: null };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#agents.values()].map((agent) => agent.close()));
    this.#agents.clear();
  }
}
