// External authentication (NGINX auth_request): auth-url and its companions, and enable-global-auth
// (opting a location out of the ConfigMap's global-auth-url). The group validates what is written;
// the build resolves auth-proxy-set-headers (a ConfigMap) into `proxyHeaders`. As ingress-nginx: a
// value its validator refuses skips the Ingress; an auth-url that is not an http(s) URL, or an
// unusable auth-proxy-set-headers ConfigMap, denies the location (503).

import type { AnnotationGroup, AnnotationReader } from './group.ts';

export interface ExternalAuth {
  /** as written; NGINX variables ($host, $request_uri, $escaped_request_uri…) expanded per request */
  url: string;
  /** auth-method, or null: the request's own method */
  method: string | null;
  /** auth-signin: a 401 from the auth service becomes a 302 to this URL, or null */
  signin: string | null;
  /** auth-signin-redirect-param (`rd`) */
  signinRedirectParam: string;
  /** auth-response-headers: copied from the auth response into the upstream request */
  responseHeaders: string[];
  /** auth-request-redirect: the X-Auth-Request-Redirect value, '' for the request URI */
  requestRedirect: string;
  /** auth-proxy-set-headers as written (`name` or `namespace/name`), '' for none */
  proxySetHeaders: string;
  /** that ConfigMap's entries, sent to the auth service (filled by the build) */
  proxyHeaders: Array<[string, string]>;
  /** auth-always-set-cookie: the auth response's Set-Cookie goes on every status, not only 2xx/3xx */
  alwaysSetCookie: boolean;
  /** auth-cache-key (NGINX variables): auth responses are cached per expanded key; '' for no cache */
  cacheKey: string;
  /** auth-cache-duration: how long responses of each status are cached ('any': every status) */
  cacheDuration: CacheDuration[];
  /** why the route answers 503 instead, or null */
  denied: string | null;
}

export interface CacheDuration {
  /** empty: NGINX's default for proxy_cache_valid without codes (200, 301, 302) */
  codes: Array<number | 'any'>;
  seconds: number;
}

export interface ExternalAuthAnnotations {
  /** null: no auth-url on this location (the global one may apply) */
  auth: ExternalAuth | null;
  /** enable-global-auth: the ConfigMap's global-auth-url applies here */
  enableGlobalAuth: boolean;
}

export const AUTH_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE'];
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PARAM = /^[A-Za-z0-9_.~-]+$/;

const UNIT_SECONDS: Record<string, number> = {
  '': 1,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
  w: 604800,
  M: 2592000,
  y: 31536000,
};

/** ingress-nginx's auth-cache-duration default */
export const DEFAULT_CACHE_DURATION: CacheDuration[] = [{ codes: [200, 202, 401], seconds: 300 }];

/** `200 202 401 5m, 403 1h30m`: per comma entry, status codes (or `any`) then an NGINX time; null if invalid. */
export function cacheDurations(value: string): CacheDuration[] | null {
  const out: CacheDuration[] = [];
  for (const entry of value.split(',')) {
    const words = entry
      .trim()
      .split(/\s+/)
      .filter((w) => w !== '');
    if (words.length === 0) continue;
    const time = words.pop() as string;
    if (!/^(\d+[smhdwMy]?)+$/.test(time)) return null;
    let seconds = 0;
    for (const m of time.matchAll(/(\d+)([smhdwMy]?)/g))
      seconds += Number(m[1]) * (UNIT_SECONDS[m[2] ?? ''] ?? 1);
    const codes: Array<number | 'any'> = [];
    for (const word of words) {
      if (word === 'any') codes.push('any');
      else if (/^[1-5]\d\d$/.test(word)) codes.push(Number(word));
      else return null;
    }
    out.push({ codes, seconds });
  }
  return out.length === 0 ? null : out;
}

/** An http(s) URL (NGINX variables may appear in it), or null. */
export function authUrl(value: string): URL | null {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '' ? url : null;
  } catch {
    return null;
  }
}

/** A comma list of header names, or null when one is not a header name. */
export function headerList(value: string): string[] | null {
  const names: string[] = [];
  for (const entry of value.split(',')) {
    const name = entry.trim();
    if (name === '') continue;
    if (!HEADER_NAME.test(name)) return null;
    names.push(name);
  }
  return names;
}

function optionalUrl(read: AnnotationReader, name: string): string | null {
  const value = read.string(name);
  if (value === undefined) return null;
  if (authUrl(value) === null) {
    read.invalid(name, value, 'expected an http or https URL', 'drop');
    return null;
  }
  return value;
}

export const externalAuth: AnnotationGroup<ExternalAuthAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'auth-url',
      default: '',
      doc: 'External authentication: each request is first sent (without body) to this URL; 2xx allows, 401/403 deny, anything else is 500.',
    },
    { name: 'auth-method', default: '', doc: 'Method of the auth request (default: the request method).' },
    {
      name: 'auth-signin',
      default: '',
      doc: 'On 401 from the auth service, redirect (302) to this URL with rd=.',
    },
    { name: 'auth-signin-redirect-param', default: 'rd', doc: 'Name of the sign-in redirect parameter.' },
    {
      name: 'auth-response-headers',
      default: '',
      doc: 'Comma list of auth response headers copied into the upstream request.',
    },
    { name: 'auth-request-redirect', default: '', doc: 'X-Auth-Request-Redirect sent to the auth service.' },
    {
      name: 'auth-proxy-set-headers',
      default: '',
      doc: 'A ConfigMap (`name` or `namespace/name`) of extra headers for the auth service.',
    },
    {
      name: 'auth-always-set-cookie',
      default: 'false',
      doc: "Pass the auth response's Set-Cookie on every status, not only on success.",
    },
    {
      name: 'auth-cache-key',
      default: '',
      doc: 'Cache auth responses per this key (NGINX variables, e.g. $http_authorization); unset: no cache.',
    },
    {
      name: 'auth-cache-duration',
      default: '200 202 401 5m',
      doc: 'How long auth responses are cached per status: `codes time[, codes time]`.',
    },
    {
      name: 'enable-global-auth',
      default: 'true',
      doc: 'false: the ConfigMap global-auth-url does not apply to these paths.',
    },
  ],
  defaults: { auth: null, enableGlobalAuth: true },
  parse(read) {
    const enableGlobalAuth = read.bool('enable-global-auth', true, 'default');
    const alwaysSetCookie = read.bool('auth-always-set-cookie', false, 'default');
    let method: string | null = read.string('auth-method') ?? null;
    if (method !== null && !AUTH_METHODS.includes(method)) {
      read.invalid('auth-method', method, `expected one of ${AUTH_METHODS.join(', ')}`, 'drop');
      method = null;
    }
    const signin = optionalUrl(read, 'auth-signin');
    let signinRedirectParam = read.string('auth-signin-redirect-param') ?? 'rd';
    if (!PARAM.test(signinRedirectParam)) {
      read.invalid(
        'auth-signin-redirect-param',
        signinRedirectParam,
        'expected a query parameter name',
        'drop',
      );
      signinRedirectParam = 'rd';
    }
    let responseHeaders: string[] = [];
    const headers = read.string('auth-response-headers');
    if (headers !== undefined) {
      const list = headerList(headers);
      if (list === null) read.invalid('auth-response-headers', headers, 'expected header names', 'drop');
      else responseHeaders = list;
    }
    const requestRedirect = read.string('auth-request-redirect') ?? '';
    if (/[\r\n]/.test(requestRedirect)) {
      read.invalid('auth-request-redirect', requestRedirect, 'line breaks are not allowed', 'drop');
    }
    const proxySetHeaders = read.string('auth-proxy-set-headers') ?? '';
    const cacheKey = read.string('auth-cache-key') ?? '';
    let cacheDuration = DEFAULT_CACHE_DURATION;
    const duration = read.string('auth-cache-duration');
    if (duration !== undefined) {
      const parsed = cacheDurations(duration);
      if (parsed === null)
        read.invalid('auth-cache-duration', duration, 'expected "codes time[, codes time]"', 'default');
      else cacheDuration = parsed;
    }
    const url = read.string('auth-url');
    if (url === undefined) return { auth: null, enableGlobalAuth };
    return {
      auth: {
        url,
        method,
        signin,
        signinRedirectParam,
        responseHeaders,
        requestRedirect,
        proxySetHeaders,
        proxyHeaders: [],
        alwaysSetCookie,
        cacheKey,
        cacheDuration,
        denied: authUrl(url) === null ? `auth-url ${JSON.stringify(url)} is not an http or https URL` : null,
      },
      enableGlobalAuth,
    };
  },
};
