// enable-cors and the cors-* annotations (ingress scope in ingress-nginx; copied onto every route of
// the Ingress). ingress-nginx's CORS parser never rejects an Ingress: an invalid value falls back to
// its default (reported as a warning), and an origin of cors-allow-origin that is not an origin is
// skipped. The data plane decides per request whether the Origin matches (lib/dataplane/cors.ts).

import type { AnnotationGroup } from './group.ts';

export interface CorsAnnotations {
  enabled: boolean;
  /**
   * `['*']`: every request matches and Access-Control-Allow-Origin is `*`; otherwise origins as
   * written (`scheme://host[:port]`, `scheme://*.host[:port]` for one label, or `null`), matched
   * case-insensitively; empty: no origin matches (every entry was invalid)
   */
  allowOrigin: string[];
  allowMethods: string;
  allowHeaders: string;
  /** '' : no Access-Control-Expose-Headers */
  exposeHeaders: string;
  allowCredentials: boolean;
  maxAge: number;
}

export const DEFAULT_CORS_METHODS = 'GET, PUT, POST, DELETE, PATCH, OPTIONS';
export const DEFAULT_CORS_HEADERS =
  'DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization';
export const DEFAULT_CORS_MAX_AGE = 1728000;

/** One allowed origin: a scheme, a host (optionally `*.` for one label) and a port, or `null`. */
const ORIGIN = /^(?:[a-z][a-z0-9+.-]*:\/\/(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?(?::\d{1,5})?|null)$/i;
const METHODS = /^(?:[A-Za-z]+,?\s?)+$/;
const HEADERS = /^(?:[A-Za-z0-9_-]+,?\s?)+$/;
const EXPOSE_HEADERS = /^(?:(?:[A-Za-z0-9_-]+|\*),?\s?)+$/;

export const cors: AnnotationGroup<CorsAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'enable-cors',
      default: 'false',
      doc: 'Answer CORS preflights (204) and add the CORS headers to every response of a matching Origin.',
    },
    {
      name: 'cors-allow-origin',
      default: '*',
      doc: 'Comma list of allowed origins (`https://a.com`, `https://*.a.com:8443`, `null`) or `*`.',
    },
    { name: 'cors-allow-methods', default: DEFAULT_CORS_METHODS, doc: 'Access-Control-Allow-Methods.' },
    { name: 'cors-allow-headers', default: DEFAULT_CORS_HEADERS, doc: 'Access-Control-Allow-Headers.' },
    { name: 'cors-expose-headers', default: '', doc: 'Access-Control-Expose-Headers (none by default).' },
    {
      name: 'cors-allow-credentials',
      default: 'true',
      doc: 'Send Access-Control-Allow-Credentials: true.',
    },
    { name: 'cors-max-age', default: String(DEFAULT_CORS_MAX_AGE), doc: 'Access-Control-Max-Age, seconds.' },
  ],
  defaults: {
    enabled: false,
    allowOrigin: ['*'],
    allowMethods: DEFAULT_CORS_METHODS,
    allowHeaders: DEFAULT_CORS_HEADERS,
    exposeHeaders: '',
    allowCredentials: true,
    maxAge: DEFAULT_CORS_MAX_AGE,
  },
  parse(read) {
    const enabled = read.bool('enable-cors', false, 'default');
    let allowOrigin = ['*'];
    const origins = read.string('cors-allow-origin');
    if (origins !== undefined) {
      allowOrigin = [];
      for (const entry of origins.split(',')) {
        const origin = entry.trim();
        if (origin === '') continue;
        if (origin === '*') {
          allowOrigin = ['*'];
          break;
        }
        if (ORIGIN.test(origin)) allowOrigin.push(origin);
        else
          read.invalid(
            'cors-allow-origin',
            origin,
            'not an origin (scheme://host[:port], scheme://*.host, null or *); this entry is skipped',
            'default',
          );
      }
    }
    const text = (name: string, pattern: RegExp, fallback: string, expected: string): string => {
      const value = read.string(name);
      if (value === undefined) return fallback;
      if (pattern.test(value)) return value;
      read.invalid(name, value, expected, 'default');
      return fallback;
    };
    const allowMethods = text(
      'cors-allow-methods',
      METHODS,
      DEFAULT_CORS_METHODS,
      'expected a comma list of methods',
    );
    const allowHeaders = text(
      'cors-allow-headers',
      HEADERS,
      DEFAULT_CORS_HEADERS,
      'expected a comma list of header names',
    );
    const exposeHeaders = text(
      'cors-expose-headers',
      EXPOSE_HEADERS,
      '',
      'expected a comma list of header names or *',
    );
    const allowCredentials = read.bool('cors-allow-credentials', true, 'default');
    let maxAge = DEFAULT_CORS_MAX_AGE;
    const age = read.string('cors-max-age');
    if (age !== undefined) {
      if (/^\d{1,10}$/.test(age)) maxAge = Number(age);
      else read.invalid('cors-max-age', age, 'expected a number of seconds', 'default');
    }
    return { enabled, allowOrigin, allowMethods, allowHeaders, exposeHeaders, allowCredentials, maxAge };
  },
};
