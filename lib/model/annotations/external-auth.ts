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
  /** why the route answers 503 instead, or null */
  denied: string | null;
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
        denied: authUrl(url) === null ? `auth-url ${JSON.stringify(url)} is not an http or https URL` : null,
      },
      enableGlobalAuth,
    };
  },
};
