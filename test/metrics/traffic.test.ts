// /debug/traffic's arithmetic as tables: the quantile of a histogram (Prometheus'
// histogram_quantile), the per-route totals summed over status and method, and the window over the
// samples taken every 5 seconds, driven by a test clock.
import { Registry } from 'prom-client';
import t from 'tap';
import {
  createRequestMetrics,
  DEFAULT_REQUEST_METRICS_OPTIONS,
  DEFAULT_TIME_BUCKETS,
  type RequestMetricsOptions,
} from '../../lib/metrics/requests.ts';
import { createTrafficWindow, histogramQuantile, type TrafficSource } from '../../lib/metrics/traffic.ts';
import { build, ingress, path, rule } from '../model/helpers.ts';
import { record } from '../support/request-record.ts';

const B = DEFAULT_TIME_BUCKETS; // 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10

/** Per-bucket counts (not cumulative) with the total last, from [bucket index, count] pairs. */
function counts(entries: Array<[index: number, count: number]>, overflow = 0): number[] {
  const out = new Array<number>(B.length + 1).fill(0);
  let total = overflow;
  for (const [index, count] of entries) {
    out[index] = count;
    total += count;
  }
  out[B.length] = total;
  return out;
}

t.test('histogramQuantile interpolates in the bucket the rank falls in, as Prometheus', async (t) => {
  const table: Array<[string, number, number[], number | null]> = [
    ['no observations', 0.99, counts([]), null],
    ['all in the first bucket: from 0', 0.99, counts([[0, 100]]), 0.005 * 0.99],
    ['one observation in (0.025, 0.05]', 0.99, counts([[3, 1]]), 0.025 + 0.025 * 0.99],
    [
      'half and half: the upper bucket',
      0.99,
      counts([
        [4, 50],
        [5, 50],
      ]),
      0.1 + 0.15 * (49 / 50),
    ],
    [
      'the median at a bucket edge',
      0.5,
      counts([
        [4, 50],
        [5, 50],
      ]),
      0.1,
    ],
    [
      'empty buckets between are skipped',
      0.99,
      counts([
        [0, 1],
        [9, 99],
      ]),
      2.5 + 2.5 * (98 / 99),
    ],
    ['past the last bound: the last bound', 0.99, counts([[0, 1]], 99), 10],
  ];
  for (const [name, q, histogram, expected] of table) {
    const got = histogramQuantile(q, B, histogram);
    if (expected === null) t.equal(got, null, name);
    else t.ok(got !== null && Math.abs(got - expected) < 1e-12, `${name}: ${got} ≈ ${expected}`);
  }
});

function metrics(options: Partial<RequestMetricsOptions> = {}) {
  const requests = createRequestMetrics(new Registry(), { ...DEFAULT_REQUEST_METRICS_OPTIONS, ...options });
  const model = (withSite: boolean) =>
    build({
      ingresses: [
        ingress(withSite ? 'site' : 'other', {
          namespace: 'ns',
          rules: [rule('a.test', path('/app', 'web'))],
        }),
      ],
    }).model;
  requests.setModel(model(true));
  let counted = 0;
  let totalsRead = 0;
  const source: TrafficSource = {
    routeTotals: () => {
      totalsRead++;
      return requests.routeTotals();
    },
    counted: () => counted,
    timeBuckets: requests.timeBuckets,
  };
  return {
    requests,
    source,
    observe(overrides: Parameters<typeof record>[0] = {}) {
      counted++;
      requests.observe(record(overrides));
    },
    dropSite: () => requests.setModel(model(false)),
    totalsRead: () => totalsRead,
  };
}

t.test('a route is its series summed over status and method', async (t) => {
  const m = metrics();
  m.observe({ status: 200, requestTime: 0.004 });
  m.observe({ status: 503, requestTime: 0.2 });
  m.observe({ status: 500, method: 'POST', requestTime: 20 });
  m.observe({ status: 200, path: '/other', requestTime: 0.004 });
  const totals = [...m.requests.routeTotals().values()];
  t.equal(totals.length, 2, 'two paths, two routes');
  const app = totals.find((r) => r.path === '/app');
  t.match(app, {
    host: 'a.test',
    namespace: 'ns',
    ingress: 'site',
    service: 'web',
    canary: '',
    requests: 3,
    errors: 2,
  });
  t.strictSame(
    [...(app?.durations ?? [])],
    counts(
      [
        [0, 1],
        [5, 1],
      ],
      1,
    ),
    'buckets, then the total',
  );

  const byClass = metrics({ statusClasses: true, perHost: false, exclude: ['request_duration_seconds'] });
  byClass.observe({ status: 502 });
  byClass.observe({ status: 201 });
  const [only] = [...byClass.requests.routeTotals().values()];
  t.equal(only?.errors, 1, '5xx counts as an error');
  t.notOk(only !== undefined && 'host' in only, 'no host label, no host');
  t.equal(only?.durations, null, 'the histogram excluded: no durations');
});

t.test('the window subtracts the oldest sample within the last minute', async (t) => {
  const clock = { ms: 1_000_000, now: () => clock.ms };
  const m = metrics();
  const window = createTrafficWindow(m.source, clock);
  t.teardown(() => window.close());
  const at = (seconds: number) => {
    clock.ms = 1_000_000 + seconds * 1000;
  };

  for (let i = 0; i < 10; i++) m.observe({ status: i < 2 ? 503 : 200, requestTime: 0.03 });
  at(5);
  window.tick();
  at(10);
  window.tick();
  at(30);
  let traffic = window.describe();
  t.equal(traffic.windowSeconds, 30, 'the first minute: measured from the start');
  t.equal(traffic.metricsEnabled, true);
  t.strictSame(traffic.routes, [
    {
      host: 'a.test',
      ingress: 'ns/site',
      path: '/app',
      service: 'web',
      canary: '',
      requests: 10,
      rate: 10 / 30,
      errorRate: 0.2,
      p99: 0.025 + 0.025 * ((0.99 * 10) / 10),
    },
  ]);

  const read = m.totalsRead();
  for (let s = 15; s <= 40; s += 5) {
    at(s);
    window.tick();
  }
  t.equal(m.totalsRead(), read, 'ticks without a request counted keep the last totals');
  m.observe({ requestTime: 0.003 });
  for (let s = 45; s <= 70; s += 5) {
    at(s);
    window.tick();
  }
  at(72);
  traffic = window.describe();
  t.equal(traffic.windowSeconds, 57, 'from the oldest sample within 60 s (at 15 s)');
  t.match(traffic.routes[0], { requests: 1, rate: 1 / 57, errorRate: 0, p99: 0.005 * 0.99 });

  at(200);
  traffic = window.describe();
  t.match(traffic.routes[0], { requests: 0, rate: 0, errorRate: 0, p99: null }, 'a quiet minute');
});

t.test('a route whose series were removed and made again counts from zero', async (t) => {
  const clock = { ms: 0, now: () => clock.ms };
  const m = metrics();
  const window = createTrafficWindow(m.source, clock);
  t.teardown(() => window.close());
  for (let i = 0; i < 5; i++) m.observe();
  clock.ms = 5000;
  window.tick();
  m.dropSite(); // the Ingress is gone: its series too
  m.observe({ ingress: 'other' });
  m.observe({ ingress: 'other' });
  clock.ms = 10_000;
  const traffic = window.describe();
  t.strictSame(
    traffic.routes.map((r) => [r.ingress, r.requests]),
    [['ns/other', 2]],
    'only the routes with series now',
  );
});

t.test('without metrics: no routes, and it says so', async (t) => {
  const window = createTrafficWindow(null);
  const traffic = window.describe();
  t.equal(traffic.metricsEnabled, false);
  t.strictSame(traffic.routes, []);
  window.close();
});

t.test('version: a new one with each tick, the same between two', async (t) => {
  const clock = { ms: 0, now: () => clock.ms };
  const m = metrics();
  const window = createTrafficWindow(m.source, clock);
  t.teardown(() => window.close());
  const first = window.version();
  m.observe();
  clock.ms = 4000;
  window.describe();
  t.equal(window.version(), first, 'requests and answers between two ticks: the same version');
  window.tick();
  const second = window.version();
  t.not(second, first, 'a tick: a new version');
  window.tick();
  t.not(window.version(), second);

  const off = createTrafficWindow(null, clock);
  clock.ms = 10_000;
  const offFirst = off.version();
  clock.ms = 14_999;
  t.equal(off.version(), offFirst, 'without metrics: one version per sample period');
  clock.ms = 15_000;
  t.not(off.version(), offFirst);
});
