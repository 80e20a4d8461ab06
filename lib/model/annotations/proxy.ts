// The upstream behaviour of a location (ingress-nginx's `proxy` parser): timeouts, retries, the body
// size limit, request/response buffering, the upstream HTTP version and the Set-Cookie / Location
// rewrites. Every field left unset (null) takes the ConfigMap's value (settings.ts resolves both).
// As in ingress-nginx, an invalid value never drops the Ingress: that field takes the ConfigMap's
// value. Validators are ingress-nginx's: ints for the timeouts and tries, `^\d+[bkmg]?$` for sizes
// (spaces removed), the next-upstream token list, on/off, 1.0/1.1, and URL characters for the
// rewrites.

import type { AnnotationGroup, AnnotationReader } from './group.ts';

export interface ProxyAnnotations {
  /** `proxy-connect-timeout`, seconds */
  connectTimeout: number | null;
  /** `proxy-send-timeout`, seconds */
  sendTimeout: number | null;
  /** `proxy-read-timeout`, seconds */
  readTimeout: number | null;
  /** `proxy-next-upstream`: the token list as written */
  nextUpstream: string | null;
  /** `proxy-next-upstream-tries`: 0 = one try per endpoint */
  nextUpstreamTries: number | null;
  /** `proxy-next-upstream-timeout`, seconds: 0 = no limit */
  nextUpstreamTimeout: number | null;
  /** `proxy-body-size`: an NGINX size (`8m`, `0` = unlimited) */
  bodySize: string | null;
  /** `proxy-buffer-size`: an NGINX size, the largest upstream response head (`4k`) */
  bufferSize: string | null;
  /** `proxy-request-buffering` */
  requestBuffering: 'on' | 'off' | null;
  /** `proxy-buffering` */
  buffering: 'on' | 'off' | null;
  /** `proxy-http-version` */
  httpVersion: '1.0' | '1.1' | null;
  /** `proxy-cookie-domain`: `off` or `<from> <to>` */
  cookieDomain: string | null;
  /** `proxy-cookie-path`: `off` or `<from> <to>` */
  cookiePath: string | null;
  /** `proxy-redirect-from`: `off`, `default` or a prefix */
  redirectFrom: string | null;
  /** `proxy-redirect-to` */
  redirectTo: string | null;
  /** `connection-proxy-header`: the Connection header sent upstream (no ConfigMap default) */
  connectionHeader: 'close' | 'keep-alive' | null;
}

/** ingress-nginx's validUpstreamAnnotation */
export const NEXT_UPSTREAM =
  /^((error|timeout|invalid_header|http_500|http_502|http_503|http_504|http_403|http_404|http_429|non_idempotent|off)\s?)+$/;
/** ingress-nginx's SizeRegex (after removing spaces) */
export const SIZE = /^\d+[bkmg]?$/i;
/** strconv.Atoi */
const INT = /^[+-]?\d+$/;
/** ingress-nginx's URLIsValidRegex (after removing spaces) */
const URL_CHARS = /^[-._~a-zA-Z0-9/:,?&=]*$/;
/** ingress-nginx's BasicCharsRegex (after removing spaces) */

const NONE: ProxyAnnotations = {
  connectTimeout: null,
  sendTimeout: null,
  readTimeout: null,
  nextUpstream: null,
  nextUpstreamTries: null,
  nextUpstreamTimeout: null,
  bodySize: null,
  bufferSize: null,
  requestBuffering: null,
  buffering: null,
  httpVersion: null,
  cookieDomain: null,
  cookiePath: null,
  redirectFrom: null,
  redirectTo: null,
  connectionHeader: null,
};

/** A non-negative integer (negative values pass ingress-nginx's validator but break NGINX's config). */
function int(read: AnnotationReader, name: string): number | null {
  const value = read.string(name);
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (INT.test(trimmed) && Number(trimmed) >= 0) return Number(trimmed);
  read.invalid(name, value, 'expected a whole number of seconds or tries', 'default');
  return null;
}

function matching(read: AnnotationReader, name: string, pattern: RegExp, reason: string): string | null {
  const value = read.string(name);
  if (value === undefined) return null;
  if (pattern.test(value.replaceAll(' ', '')) && !/[\r\n]/.test(value)) return value.trim();
  read.invalid(name, value, reason, 'default');
  return null;
}

/** `off` or `<domain> <replacement>` (ingress-nginx checks it with its spaces; a line break is refused). */
const COOKIE_DOMAIN = /^(off|[-._~a-zA-Z0-9/:]+[\t\f ]+[-._~a-zA-Z0-9/:]+)$/;

function cookieDomain(read: AnnotationReader): string | null {
  const value = read.string('proxy-cookie-domain');
  if (value === undefined) return null;
  if (COOKIE_DOMAIN.test(value)) return value;
  read.invalid('proxy-cookie-domain', value, 'expected off or "<domain> <replacement>"', 'default');
  return null;
}

function option<T extends string>(read: AnnotationReader, name: string, options: readonly T[]): T | null {
  const value = read.string(name);
  if (value === undefined) return null;
  const trimmed = value.trim();
  if ((options as readonly string[]).includes(trimmed)) return trimmed as T;
  read.invalid(name, value, `expected ${options.join(' or ')}`, 'default');
  return null;
}

/**
 * `connection-proxy-header`, case-insensitive. NGINX would send any value as written; the upstream
 * connections here are undici's, which speak only these two (anything else would be a header the
 * connection handling contradicts), so another value is reported and the default kept.
 */
function connectionHeader(read: AnnotationReader): ProxyAnnotations['connectionHeader'] {
  const value = read.string('connection-proxy-header');
  if (value === undefined) return null;
  // ingress-nginx's connection parser returns its validator's error: the Ingress is skipped
  const compact = value.replaceAll(' ', '');
  if (compact === 'close' || compact === 'keep-alive') return compact;
  read.invalid('connection-proxy-header', value, 'expected close or keep-alive', 'drop');
  return null;
}

export const proxy: AnnotationGroup<ProxyAnnotations> = {
  scope: 'location',
  annotations: [
    { name: 'proxy-connect-timeout', default: '5', doc: 'Seconds to connect to an endpoint.' },
    {
      name: 'proxy-send-timeout',
      default: '60',
      doc: 'Seconds the endpoint may refuse request body bytes before the try times out.',
    },
    {
      name: 'proxy-read-timeout',
      default: '60',
      doc: 'Seconds to wait for the response head, and between two response body chunks.',
    },
    {
      name: 'proxy-next-upstream',
      default: 'error timeout',
      doc: 'When a try goes to another endpoint: error timeout invalid_header http_500 http_502 http_503 http_504 http_403 http_404 http_429 non_idempotent, or off.',
    },
    {
      name: 'proxy-next-upstream-tries',
      default: '3',
      doc: 'Most tries of a request, the first included; 0: one per endpoint.',
    },
    {
      name: 'proxy-next-upstream-timeout',
      default: '0',
      doc: 'Seconds after the first try during which another try may start; 0: no limit.',
    },
    {
      name: 'proxy-body-size',
      default: '1m',
      doc: 'Largest request body (NGINX size: 512k, 8m, 1g); larger gets 413; 0: unlimited.',
    },
    {
      name: 'proxy-buffer-size',
      default: '4k',
      doc: 'Largest upstream response head (status line and headers; NGINX size: 8k, 32k); a larger one is an invalid header: 502 unless proxy-next-upstream has invalid_header.',
    },
    {
      name: 'proxy-request-buffering',
      default: 'on',
      doc: 'on: the whole request body is read (in memory, up to proxy-body-size) before the upstream is contacted; off: streamed.',
    },
    {
      name: 'proxy-buffering',
      default: 'off',
      doc: 'Accepted; responses are always streamed with backpressure (no disk spooling).',
    },
    {
      name: 'proxy-http-version',
      default: '1.1',
      doc: 'Accepted (1.0 or 1.1); requests are always sent as HTTP/1.1.',
    },
    {
      name: 'proxy-cookie-domain',
      default: 'off',
      doc: 'off, or "<from> <to>": a Set-Cookie Domain equal to <from> (case-insensitive) becomes <to>.',
    },
    {
      name: 'proxy-cookie-path',
      default: 'off',
      doc: 'off, or "<from> <to>": a Set-Cookie Path starting with <from> gets <to> instead of that prefix.',
    },
    {
      name: 'proxy-redirect-from',
      default: 'off',
      doc: 'A Location / Refresh URL prefix to replace with proxy-redirect-to; off and default: unchanged.',
    },
    { name: 'proxy-redirect-to', default: 'off', doc: 'The replacement of proxy-redirect-from.' },
    {
      name: 'connection-proxy-header',
      default: '',
      doc: 'The Connection header sent upstream: close (a new upstream connection per request) or keep-alive (the default behaviour); WebSocket upgrades keep theirs.',
    },
  ],
  defaults: NONE,
  parse(read) {
    return {
      connectTimeout: int(read, 'proxy-connect-timeout'),
      sendTimeout: int(read, 'proxy-send-timeout'),
      readTimeout: int(read, 'proxy-read-timeout'),
      nextUpstream: (() => {
        const value = read.string('proxy-next-upstream');
        if (value === undefined) return null;
        if (NEXT_UPSTREAM.test(value)) return value.trim();
        read.invalid(
          'proxy-next-upstream',
          value,
          'expected tokens among error timeout invalid_header http_500 http_502 http_503 http_504 http_403 http_404 http_429 non_idempotent off',
          'default',
        );
        return null;
      })(),
      nextUpstreamTries: int(read, 'proxy-next-upstream-tries'),
      nextUpstreamTimeout: int(read, 'proxy-next-upstream-timeout'),
      bodySize: matching(read, 'proxy-body-size', SIZE, 'expected a size such as 1m, 512k or 0'),
      bufferSize: matching(read, 'proxy-buffer-size', SIZE, 'expected a size such as 8k or 1m'),
      requestBuffering: option(read, 'proxy-request-buffering', ['on', 'off']),
      buffering: option(read, 'proxy-buffering', ['on', 'off']),
      httpVersion: option(read, 'proxy-http-version', ['1.0', '1.1']),
      cookieDomain: cookieDomain(read),
      cookiePath: matching(read, 'proxy-cookie-path', URL_CHARS, 'only URL characters are allowed'),
      redirectFrom: matching(read, 'proxy-redirect-from', URL_CHARS, 'only URL characters are allowed'),
      redirectTo: matching(read, 'proxy-redirect-to', URL_CHARS, 'only URL characters are allowed'),
      connectionHeader: connectionHeader(read),
    };
  },
};

/** upstream-vhost: the Host header sent upstream. */
export interface UpstreamVhostAnnotations {
  /** null: the request's Host */
  host: string | null;
}

/** ingress-nginx's IsValidRegex, used for upstream-vhost (ValidateServerName) */
const SERVER_NAME = /^[/\-._~a-zA-Z0-9:^$[\](){}*+?|&=\\]*$/;

export const upstreamVhost: AnnotationGroup<UpstreamVhostAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'upstream-vhost',
      default: '',
      doc: 'The Host header sent upstream; NGINX variables ($host, $best_http_host, $http_x...) are expanded per request; X-Forwarded-Host keeps the request Host.',
    },
  ],
  defaults: { host: null },
  parse(read) {
    const value = read.string('upstream-vhost');
    if (value === undefined) return { host: null };
    const host = value.trim();
    // ingress-nginx's parser returns the validation error: the Ingress is skipped
    if (!SERVER_NAME.test(host) || host === '') {
      read.invalid('upstream-vhost', value, 'expected a host name', 'drop');
      return { host: null };
    }
    return { host };
  },
};

/** service-upstream: the upstreams this Ingress creates go to the Service's ClusterIP. */
export interface ServiceUpstreamAnnotations {
  /** null: the ConfigMap's service-upstream */
  enabled: boolean | null;
}

export const serviceUpstream: AnnotationGroup<ServiceUpstreamAnnotations> = {
  scope: 'ingress',
  annotations: [
    {
      name: 'service-upstream',
      default: 'false',
      doc: "Proxy to the Service's ClusterIP:port instead of its endpoints (one peer: no balancing across pods, no retry on another pod).",
    },
  ],
  defaults: { enabled: null },
  parse(read) {
    const value = read.string('service-upstream');
    if (value === undefined) return { enabled: null };
    // ingress-nginx returns the failed parse's `false` without an error (not the ConfigMap's value)
    return { enabled: read.bool('service-upstream', false, 'default') };
  },
};
