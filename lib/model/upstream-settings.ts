// A location's upstream behaviour, resolved: its proxy annotations over the ConfigMap's values, in
// units the data plane uses. Pure; the data plane compiles it once per route, /debug/model shows it.

import type { LocationAnnotations } from './annotations/index.ts';
import type { GlobalConfig } from './configmap/global-config.ts';

/** A `<from> <to>` rewrite of a response header part. */
export interface Rewrite {
  from: string;
  to: string;
}

export interface UpstreamSettings {
  /** seconds */
  connectTimeout: number;
  sendTimeout: number;
  readTimeout: number;
  /** proxy-next-upstream (+ retry-non-idempotent); `off` clears every condition */
  nextUpstream: {
    error: boolean;
    timeout: boolean;
    invalidHeader: boolean;
    nonIdempotent: boolean;
    /** http_500... as status codes, ascending */
    statuses: number[];
  };
  /** total tries, the first included; 0: one per endpoint */
  nextUpstreamTries: number;
  /** seconds after the first try during which another may start; 0: no limit */
  nextUpstreamTimeout: number;
  /** bytes; 0: unlimited */
  bodySize: number;
  /** proxy-buffer-size in bytes: the largest upstream response head */
  bufferSize: number;
  requestBuffering: boolean;
  buffering: boolean;
  httpVersion: '1.0' | '1.1';
  /** upstream-vhost, or null: the request's Host */
  upstreamVhost: string | null;
  cookieDomain: Rewrite | null;
  cookiePath: Rewrite | null;
  /** proxy-redirect-from / -to; null: off (or default) */
  redirect: Rewrite | null;
  /** connection-proxy-header: close, so every request gets a new upstream connection */
  connectionClose: boolean;
  /** limit-rate in bytes per second of a response body; 0: unlimited (and always without buffering) */
  limitRate: number;
  /** limit-rate-after in bytes */
  limitRateAfter: number;
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 * 1024, g: 1024 * 1024 * 1024 };

/** An NGINX size (`1m`, `512k`, `100`) in bytes; the caller validated it. */
export function parseSize(size: string): number {
  const m = /^(\d+)([bkmg]?)$/i.exec(size.replaceAll(' ', ''));
  if (m === null) return 0;
  return Number(m[1]) * (UNITS[(m[2] ?? '').toLowerCase()] ?? 1);
}

/** `proxy_next_upstream` tokens (and ConfigMap retry-non-idempotent, which adds non_idempotent). */
export function parseNextUpstream(
  value: string,
  retryNonIdempotent: boolean,
): UpstreamSettings['nextUpstream'] {
  const tokens = new Set(value.split(/\s+/).filter((t) => t !== ''));
  if (tokens.has('off')) {
    return { error: false, timeout: false, invalidHeader: false, nonIdempotent: false, statuses: [] };
  }
  const statuses: number[] = [];
  for (const token of tokens) if (token.startsWith('http_')) statuses.push(Number(token.slice(5)));
  statuses.sort((a, b) => a - b);
  return {
    error: tokens.has('error'),
    timeout: tokens.has('timeout'),
    invalidHeader: tokens.has('invalid_header'),
    nonIdempotent: retryNonIdempotent || tokens.has('non_idempotent'),
    statuses,
  };
}

/** `off`, or `<from> <to>` (NGINX's two-argument form); anything else: off. */
function rewriteOf(value: string): Rewrite | null {
  const parts = value.trim().split(/\s+/);
  if (parts.length !== 2) return null;
  const [from, to] = parts as [string, string];
  return { from, to };
}

/** proxy_redirect: `off` and `default` (the proxy_pass URL, which no backend sends) change nothing. */
function redirectOf(from: string, to: string): Rewrite | null {
  const f = from.trim();
  const t = to.trim();
  if (f === '' || f === 'off' || f === 'default' || t === 'off') return null;
  return { from: f, to: t };
}

export function upstreamSettings(
  annotations: LocationAnnotations | null,
  config: GlobalConfig,
): UpstreamSettings {
  const base = config.proxy;
  const own = annotations?.proxy;
  const rate = annotations?.rateLimit;
  const pick = <K extends keyof GlobalConfig['proxy']>(key: K): GlobalConfig['proxy'][K] =>
    (own?.[key] ?? base[key]) as GlobalConfig['proxy'][K];
  return {
    connectTimeout: pick('connectTimeout'),
    sendTimeout: pick('sendTimeout'),
    readTimeout: pick('readTimeout'),
    nextUpstream: parseNextUpstream(pick('nextUpstream'), config.retryNonIdempotent),
    nextUpstreamTries: pick('nextUpstreamTries'),
    nextUpstreamTimeout: pick('nextUpstreamTimeout'),
    bodySize: parseSize(pick('bodySize')),
    bufferSize: parseSize(pick('bufferSize')),
    requestBuffering: pick('requestBuffering') === 'on',
    buffering: pick('buffering') === 'on',
    httpVersion: pick('httpVersion'),
    upstreamVhost: annotations?.upstreamVhost.host ?? null,
    cookieDomain: rewriteOf(pick('cookieDomain')),
    cookiePath: rewriteOf(pick('cookiePath')),
    redirect: redirectOf(pick('redirectFrom'), pick('redirectTo')),
    connectionClose: own?.connectionHeader === 'close',
    // ingress-nginx: limit_rate needs proxy-buffering on (the unbuffered path is not throttled)
    limitRate: pick('buffering') === 'on' ? 1024 * (rate?.rate ?? config.access.limitRate) : 0,
    limitRateAfter: 1024 * (rate?.rateAfter ?? config.access.limitRateAfter),
  };
}
