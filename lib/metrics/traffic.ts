// /debug/traffic: each route's request rate, error rate and p99 over the last minute, from the
// per-request metrics this process already keeps (requests.ts; with data-plane threads the main
// thread's series already sum theirs). Nothing is added per request: a timer takes the routes' totals
// every 5 seconds into a small ring, and an answer subtracts the oldest totals of the window from
// the current ones, as Prometheus' rate() and histogram_quantile() would over the scraped series.
// While no request finishes, a tick keeps the previous totals (no walk over the series).
// version() names the tick: /debug/traffic keeps one answer per tick (debug-routes.ts), so asking
// more often than every 5 seconds costs nothing more.

import { performance } from 'node:perf_hooks';
import type { RouteTotal } from './requests.ts';

/** seconds covered by an answer, at most */
export const TRAFFIC_WINDOW_SECONDS = 60;
/** milliseconds between two samples of the totals */
export const TRAFFIC_SAMPLE_MS = 5000;

/** One route of /debug/traffic, labelled as the metrics are (`ingress` as `namespace/name`). */
export interface RouteTraffic {
  /** present with --metrics-per-host */
  host?: string;
  /** `namespace/name`; '' for requests no Ingress routed */
  ingress: string;
  path: string;
  service: string;
  canary: string;
  /** requests finished within the window */
  requests: number;
  /** requests per second over the window */
  rate: number;
  /** the share of them answered 5xx, 0 to 1 (0 without requests) */
  errorRate: number;
  /** seconds: the 99th percentile of request_duration_seconds, interpolated in its bucket; null
   * without requests or without the histogram */
  p99: number | null;
}

export interface TrafficDescription {
  /** seconds the counts cover: up to 60, less in the first minute */
  windowSeconds: number;
  /** ISO 8601: when the answer was made */
  sampledAt: string;
  /** false: --enable-metrics=false, nothing is counted and `routes` is empty */
  metricsEnabled: boolean;
  routes: RouteTraffic[];
}

/** What the window reads: the routes' totals now, and a number that changes when a request is counted. */
export interface TrafficSource {
  routeTotals(): Map<string, RouteTotal>;
  /** requests counted so far (equal twice: the totals did not change) */
  counted(): number;
  /** the request_duration_seconds bucket bounds */
  timeBuckets: readonly number[];
}

export interface TrafficWindow {
  /** The window's traffic now, for the routes that have series. */
  describe(): TrafficDescription;
  /** Takes a sample now (the timer's work; tests call it with their clock). */
  tick(): void;
  /** Changes with each tick (and names this window: another process's answer has another). */
  version(): string;
  /** Stops the timer. */
  close(): void;
}

interface Sample {
  /** performance.now() */
  at: number;
  counted: number;
  totals: Map<string, RouteTotal>;
}

/**
 * The `q` quantile of a histogram given as per-bucket counts with the total last, as Prometheus'
 * histogram_quantile: linear within the bucket the rank falls in, the first bucket starting at 0, and
 * the highest finite bound when the rank falls in +Inf. null without observations.
 */
export function histogramQuantile(
  q: number,
  bounds: readonly number[],
  counts: ArrayLike<number>,
): number | null {
  const total = counts[bounds.length] as number;
  if (!(total > 0) || bounds.length === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let b = 0; b < bounds.length; b++) {
    const inBucket = counts[b] as number;
    if (below + inBucket >= rank && inBucket > 0) {
      const start = b === 0 ? 0 : (bounds[b - 1] as number);
      const end = bounds[b] as number;
      if (b === 0 && end <= 0) return end;
      return start + (end - start) * ((rank - below) / inBucket);
    }
    below += inBucket;
  }
  return bounds[bounds.length - 1] as number;
}

/** `now - then`, with a counter that went down (series removed and made again) read from 0 as Prometheus does. */
const increase = (now: number, then: number): number => (now >= then ? now - then : now);

function routeTraffic(
  now: RouteTotal,
  then: RouteTotal | undefined,
  seconds: number,
  bounds: readonly number[],
): RouteTraffic {
  const reset = then !== undefined && now.requests < then.requests;
  const base = reset ? undefined : then;
  const requests = increase(now.requests, base?.requests ?? 0);
  const errors = increase(now.errors, base?.errors ?? 0);
  let p99: number | null = null;
  if (now.durations !== null && requests > 0) {
    const counts = new Float64Array(now.durations.length);
    const old = base?.durations ?? null;
    for (let b = 0; b < counts.length; b++) {
      counts[b] = increase(now.durations[b] as number, (old?.[b] as number | undefined) ?? 0);
    }
    p99 = histogramQuantile(0.99, bounds, counts);
  }
  const ingress = now.ingress === '' ? '' : `${now.namespace}/${now.ingress}`;
  return {
    ...(now.host === undefined ? {} : { host: now.host }),
    ingress,
    path: now.path,
    service: now.service,
    canary: now.canary,
    requests,
    rate: seconds > 0 ? requests / seconds : 0,
    errorRate: requests > 0 ? Math.min(1, errors / requests) : 0,
    p99,
  };
}

const compareRoutes = (a: RouteTraffic, b: RouteTraffic): number => {
  const ka = [a.host ?? '', a.ingress, a.path, a.service, a.canary];
  const kb = [b.host ?? '', b.ingress, b.path, b.service, b.canary];
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i]) return (ka[i] as string) < (kb[i] as string) ? -1 : 1;
  }
  return 0;
};

/** A window over `source`, sampled every TRAFFIC_SAMPLE_MS by an unref'd timer; null source: metrics are off. */
export function createTrafficWindow(
  source: TrafficSource | null,
  clock: { now(): number } = performance,
): TrafficWindow {
  const id = Date.now().toString(36);
  if (source === null) {
    return {
      // nothing is sampled: a new version every sample period all the same, for `sampledAt`
      version: () => `${id}.${Math.floor(clock.now() / TRAFFIC_SAMPLE_MS)}`,
      describe: () => ({
        windowSeconds: 0,
        sampledAt: new Date().toISOString(),
        metricsEnabled: false,
        routes: [],
      }),
      tick() {},
      close() {},
    };
  }
  // the counts before the first request are zero: the first minute is measured from here
  const ring: Sample[] = [{ at: clock.now(), counted: 0, totals: new Map() }];
  const keep = Math.ceil((TRAFFIC_WINDOW_SECONDS * 1000) / TRAFFIC_SAMPLE_MS) + 1;
  const sample = (): Sample => {
    const last = ring[ring.length - 1] as Sample;
    const counted = source.counted();
    const totals = counted === last.counted ? last.totals : source.routeTotals();
    return { at: clock.now(), counted, totals };
  };
  let ticks = 0;
  const tick = () => {
    ticks++;
    ring.push(sample());
    if (ring.length > keep) ring.shift();
  };
  const timer = setInterval(tick, TRAFFIC_SAMPLE_MS);
  timer.unref();
  return {
    tick,
    version: () => `${id}.${ticks}`,
    describe() {
      const current = sample();
      // the oldest sample within the window
      const limit = current.at - TRAFFIC_WINDOW_SECONDS * 1000;
      const base = ring.find((s) => s.at >= limit) ?? current;
      // rates are per the seconds shown
      const seconds = Math.round(current.at - base.at) / 1000;
      const routes: RouteTraffic[] = [];
      for (const [key, total] of current.totals) {
        routes.push(routeTraffic(total, base.totals.get(key), seconds, source.timeBuckets));
      }
      return {
        windowSeconds: seconds,
        sampledAt: new Date().toISOString(),
        metricsEnabled: true,
        routes: routes.sort(compareRoutes),
      };
    },
    close() {
      clearInterval(timer);
    },
  };
}
