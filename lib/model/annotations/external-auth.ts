// External authentication (NGINX auth_request): auth-url and its companions, and enable-global-auth
// (opting a location out of the ConfigMap's global-auth-url). The group validates what is written;
// the build resolves auth-proxy-set-headers (a ConfigMap) into `proxyHeaders`. Each value goes
// through ingress-nginx's validator with its outcome there: auth-url skips the Ingress; auth-method
// and auth-response-headers deny the location (503); auth-signin, its redirect param, auth-cache-key
// and auth-proxy-set-headers are ignored. Where ingress-nginx silently drops the whole auth
// configuration (auth-request-redirect, auth-always-set-cookie, auth-cache-duration), ingress-ts
// denies the location rather than serve it unauthenticated.

import { redactUrl } from '../redact.ts';
import { type AnnotationGroup, parseGoBool } from './group.ts';
import {
  BASIC_CHARS,
  EXTENDED_CHARS,
  HEADER_NAME,
  HEADERS_VARIABLE,
  matches,
  NGINX_VARIABLE,
  URL_CHARS,
  URL_WITH_VARIABLES,
} from './validators.ts';

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
    // without auth-url ingress-nginx never reads the other auth-* annotations
    const url = read.string('auth-url');
    if (url === undefined) return { auth: null, enableGlobalAuth };
    if (!matches(URL_WITH_VARIABLES, url, true)) {
      read.invalid(
        'auth-url',
        redactUrl(url),
        'only letters, digits, NGINX variables and -._~/:,?&= are allowed',
        'drop',
      );
      return { auth: null, enableGlobalAuth };
    }
    // ingress-nginx drops the whole auth-url configuration on some invalid values, serving the paths
    // unauthenticated; ingress-ts denies them instead (503), as for any auth it cannot apply
    let denied: string | null =
      authUrl(url) === null ? `auth-url ${JSON.stringify(redactUrl(url))} is not an http or https URL` : null;
    const deny = (name: string, value: string, reason: string) => {
      denied ??= `${name} ${JSON.stringify(value)} is invalid (${reason})`;
    };
    const ignore = (name: string, value: string, reason: string) =>
      read.invalid(name, value, reason, 'default');

    let method: string | null = read.string('auth-method') ?? null;
    if (method !== null && !AUTH_METHODS.includes(method.replaceAll(' ', ''))) {
      deny('auth-method', method, `expected one of ${AUTH_METHODS.join(', ')}`);
      method = null;
    }
    if (method !== null) method = method.replaceAll(' ', '');
    let signin = read.string('auth-signin') ?? null;
    if (signin !== null && !matches(URL_WITH_VARIABLES, signin, true)) {
      ignore(
        'auth-signin',
        redactUrl(signin),
        'only letters, digits, NGINX variables and -._~/:,?&= are allowed',
      );
      signin = null;
    } else if (signin !== null && authUrl(signin) === null) {
      // stricter than ingress-nginx: the sign-in redirect is always an absolute http(s) URL
      ignore('auth-signin', redactUrl(signin), 'expected an http or https URL');
      signin = null;
    }
    let signinRedirectParam = read.string('auth-signin-redirect-param') ?? 'rd';
    if (!PARAM.test(signinRedirectParam)) {
      ignore('auth-signin-redirect-param', signinRedirectParam, 'expected a query parameter name');
      signinRedirectParam = 'rd';
    }
    let responseHeaders: string[] = [];
    const headers = read.string('auth-response-headers');
    if (headers !== undefined) {
      const list = headerList(headers);
      if (list === null || !matches(HEADERS_VARIABLE, headers, true)) {
        deny('auth-response-headers', headers, 'expected a comma list of header names');
      } else responseHeaders = list;
    }
    const requestRedirect = read.string('auth-request-redirect') ?? '';
    if (!matches(URL_CHARS, requestRedirect, true)) {
      deny(
        'auth-request-redirect',
        redactUrl(requestRedirect),
        'only letters, digits and -._~/:,?&= are allowed',
      );
    }
    let proxySetHeaders = read.string('auth-proxy-set-headers') ?? '';
    if (!matches(BASIC_CHARS, proxySetHeaders, true)) {
      ignore('auth-proxy-set-headers', proxySetHeaders, 'expected a ConfigMap name or namespace/name');
      proxySetHeaders = '';
    }
    let cacheKey = read.string('auth-cache-key') ?? '';
    if (!matches(NGINX_VARIABLE, cacheKey, true)) {
      ignore(
        'auth-cache-key',
        cacheKey,
        'only letters, digits, -, _, $, { and } are allowed; nothing is cached',
      );
      cacheKey = '';
    }
    let cacheDuration = DEFAULT_CACHE_DURATION;
    const duration = read.string('auth-cache-duration');
    if (duration !== undefined) {
      const parsed = matches(EXTENDED_CHARS, duration, false) ? cacheDurations(duration) : null;
      if (parsed === null) deny('auth-cache-duration', duration, 'expected "codes time[, codes time]"');
      else cacheDuration = parsed;
    }
    let alwaysSetCookie = false;
    const cookie = read.string('auth-always-set-cookie');
    if (cookie !== undefined) {
      const parsed = parseGoBool(cookie);
      if (parsed === undefined) deny('auth-always-set-cookie', cookie, 'expected "true" or "false"');
      else alwaysSetCookie = parsed;
    }
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
        denied,
      },
      enableGlobalAuth,
    };
  },
};
