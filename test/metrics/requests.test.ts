// Per-request metrics as a table: options and request records in, exposition out (checked by the
// strict text-format reader).
import { Registry } from 'prom-client';
import t from 'tap';
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';
import {
  createRequestMetrics,
  DEFAULT_REQUEST_METRICS_OPTIONS,
  excludedSocketMetrics,
  type RequestMetricsOptions,
} from '../../lib/metrics/requests.ts';
import { build, ingress, path, rule } from '../model/helpers.ts';
import { type Family, parseExposition, samplesOf, sampleValue } from '../support/prometheus.ts';
import { record } from '../support/request-record.ts';

/** A model whose only host is a.test, served by Ingress ns/site (and ns/other when asked). */
function model(withOther = true) {
  const ingresses = [ingress('site', { namespace: 'ns', rules: [rule('a.test', path('/app', 'web'))] })];
  if (withOther)
    ingresses.push(ingress('other', { namespace: 'ns', rules: [rule('b.test', path('/', 'web'))] }));
  return build({ ingresses }).model;
}

async function exposition(
  options: Partial<RequestMetricsOptions>,
  records: RequestRecord[],
): Promise<Map<string, Family>> {
  const registry = new Registry();
  const metrics = createRequestMetrics(registry, { ...DEFAULT_REQUEST_METRICS_OPTIONS, ...options });
  metrics.setModel(model());
  for (const r of records) metrics.observe(r);
  return parseExposition(await registry.metrics());
}

const SITE = {
  status: '200',
  method: 'GET',
  path: '/app',
  namespace: 'ns',
  ingress: 'site',
  service: 'web',
  canary: '',
};

t.test('defaults: labels, buckets, values', async (t) => {
  const m = await exposition({}, [record(), record({ requestTime: 0.005 }), record({ requestTime: 0.0051 })]);
  const labels = { ...SITE, host: 'a.test' };
  t.equal(sampleValue(m, 'nginx_ingress_controller_requests', labels), 3);
  const bucket = (le: string) =>
    sampleValue(m, 'nginx_ingress_controller_request_duration_seconds_bucket', { ...labels, le });
  t.equal(bucket('0.005'), 2, 'le is inclusive');
  t.equal(bucket('0.01'), 3, 'cumulative');
  t.equal(bucket('+Inf'), 3);
  t.equal(
    sampleValue(m, 'nginx_ingress_controller_request_duration_seconds_sum', labels),
    0.004 + 0.005 + 0.0051,
  );
  t.equal(sampleValue(m, 'nginx_ingress_controller_connect_duration_seconds_sum', labels), 0.003);
  t.equal(sampleValue(m, 'nginx_ingress_controller_header_duration_seconds_count', labels), 3);
  t.equal(sampleValue(m, 'nginx_ingress_controller_response_duration_seconds_sum', labels), 0.0105);
  t.equal(sampleValue(m, 'nginx_ingress_controller_request_size_sum', labels), 150);
  t.equal(sampleValue(m, 'nginx_ingress_controller_request_size_bucket', { ...labels, le: '50' }), 3);
  t.equal(sampleValue(m, 'nginx_ingress_controller_request_size_bucket', { ...labels, le: '40' }), 0);
  t.equal(sampleValue(m, 'nginx_ingress_controller_response_size_sum', labels), 360);
  t.equal(sampleValue(m, 'nginx_ingress_controller_bytes_sent_bucket', { ...labels, le: '1000' }), 3);
  t.equal(sampleValue(m, 'nginx_ingress_controller_bytes_sent_bucket', { ...labels, le: '100' }), 0);
  t.equal(m.get('nginx_ingress_controller_requests')?.type, 'counter');
  t.equal(m.get('nginx_ingress_controller_request_duration_seconds')?.type, 'histogram');
  t.equal(
    samplesOf(m, 'nginx_ingress_controller_request_duration_seconds_bucket').length,
    12,
    'DefBuckets (11) and +Inf',
  );
});

const cases: Array<{
  name: string;
  options: Partial<RequestMetricsOptions>;
  records: RequestRecord[];
  /** label sets of nginx_ingress_controller_requests with their values */
  requests: Array<[Record<string, string>, number]>;
  absent?: string[];
}> = [
  {
    name: 'a host no Ingress names is dropped',
    options: {},
    records: [record({ host: 'unknown.test' }), record()],
    requests: [[{ ...SITE, host: 'a.test' }, 1]],
  },
  {
    name: '--metrics-per-undefined-host keeps it',
    options: { perUndefinedHost: true },
    records: [record({ host: 'unknown.test' }), record()],
    requests: [
      [{ ...SITE, host: 'unknown.test' }, 1],
      [{ ...SITE, host: 'a.test' }, 1],
    ],
  },
  {
    name: '--metrics-per-host=false: no host label, every host counted together',
    options: { perHost: false },
    records: [record({ host: 'unknown.test' }), record()],
    requests: [[SITE, 2]],
  },
  {
    name: '--report-status-classes',
    options: { statusClasses: true },
    records: [record({ status: 201 }), record({ status: 204 }), record({ status: 503 })],
    requests: [
      [{ ...SITE, status: '2xx', host: 'a.test' }, 2],
      [{ ...SITE, status: '5xx', host: 'a.test' }, 1],
    ],
  },
  {
    name: 'methods, statuses and paths are separate series',
    options: {},
    records: [record(), record({ method: 'POST' }), record({ status: 404 }), record({ path: '/' })],
    requests: [
      [{ ...SITE, host: 'a.test' }, 1],
      [{ ...SITE, method: 'POST', host: 'a.test' }, 1],
      [{ ...SITE, status: '404', host: 'a.test' }, 1],
      [{ ...SITE, path: '/', host: 'a.test' }, 1],
    ],
  },
  {
    name: '--exclude-socket-metrics, with and without the prefix',
    options: { exclude: ['bytes_sent', 'nginx_ingress_controller_connect_duration_seconds'] },
    records: [record()],
    requests: [[{ ...SITE, host: 'a.test' }, 1]],
    absent: [
      'nginx_ingress_controller_bytes_sent_count',
      'nginx_ingress_controller_connect_duration_seconds_count',
    ],
  },
  {
    name: 'requests itself can be excluded',
    options: { exclude: ['requests'] },
    records: [record()],
    requests: [],
    absent: ['nginx_ingress_controller_requests'],
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const m = await exposition(c.options, c.records);
    const got = samplesOf(m, 'nginx_ingress_controller_requests').map((s) => [s.labels, s.value]);
    t.strictSame(got, c.requests);
    for (const name of c.absent ?? []) t.equal(samplesOf(m, name).length, 0, `${name} absent`);
  });
}

t.test('values not observed (-1) are not recorded: a request without upstream', async (t) => {
  const m = await exposition({}, [
    record({ connectTime: -1, headerTime: -1, responseTime: -1, upstreamAddr: '' }),
  ]);
  const labels = { ...SITE, host: 'a.test' };
  t.equal(sampleValue(m, 'nginx_ingress_controller_request_duration_seconds_count', labels), 1);
  t.equal(sampleValue(m, 'nginx_ingress_controller_connect_duration_seconds_count', labels), undefined);
  t.equal(sampleValue(m, 'nginx_ingress_controller_response_duration_seconds_count', labels), undefined);
});

t.test('custom buckets', async (t) => {
  const m = await exposition({ timeBuckets: [0.1, 1], lengthBuckets: [100, 1000], sizeBuckets: [1] }, [
    record(),
  ]);
  const les = samplesOf(m, 'nginx_ingress_controller_request_duration_seconds_bucket').map(
    (s) => s.labels.le,
  );
  t.strictSame(les, ['0.1', '1', '+Inf']);
  t.strictSame(
    samplesOf(m, 'nginx_ingress_controller_response_size_bucket').map((s) => [s.labels.le, s.value]),
    [
      ['100', 0],
      ['1000', 1],
      ['+Inf', 1],
    ],
  );
});

t.test('the series of an Ingress that left the model are removed', async (t) => {
  const registry = new Registry();
  const metrics = createRequestMetrics(registry, DEFAULT_REQUEST_METRICS_OPTIONS);
  metrics.setModel(model(true));
  metrics.observe(record());
  metrics.observe(record({ host: 'b.test', ingress: 'other', path: '/' }));
  metrics.observe(record({ host: 'b.test', ingress: '', namespace: '', service: '', path: '/' }));
  t.equal(metrics.seriesCount, 3);
  metrics.setModel(model(false));
  t.equal(metrics.seriesCount, 2, 'ns/other gone; the site and the series without Ingress stay');
  const m = parseExposition(await registry.metrics());
  t.notOk(samplesOf(m, 'nginx_ingress_controller_requests').some((s) => s.labels.ingress === 'other'));
  metrics.observe(record({ host: 'b.test', ingress: 'other', path: '/' }));
  t.equal(metrics.seriesCount, 2, 'b.test is no longer a defined host');

  // the Ingress comes back: its requests count from zero in a series that is exported again
  metrics.setModel(model(true));
  metrics.observe(record({ host: 'b.test', ingress: 'other', path: '/' }));
  const back = parseExposition(await registry.metrics());
  t.equal(
    sampleValue(back, 'nginx_ingress_controller_requests', { ingress: 'other', host: 'b.test' }),
    1,
    'a new series, not the removed one',
  );
  // the site's series was kept and is still the one counted
  metrics.observe(record());
  const site = parseExposition(await registry.metrics());
  t.equal(sampleValue(site, 'nginx_ingress_controller_requests', { ingress: 'site' }), 2);
});

t.test('consecutive requests of one series, and of series that differ in one label each', async (t) => {
  const registry = new Registry();
  const metrics = createRequestMetrics(registry, DEFAULT_REQUEST_METRICS_OPTIONS);
  metrics.setModel(model(true));
  const variants: Array<[Partial<RequestRecord>, Record<string, string>]> = [
    [{}, {}],
    [{ status: 404 }, { status: '404' }],
    [{ method: 'POST' }, { method: 'POST' }],
    [{ path: '/' }, { path: '/' }],
    [
      { host: 'b.test', ingress: 'other' },
      { host: 'b.test', ingress: 'other' },
    ],
    [{ canary: 'ns-canary-80' }, { canary: 'ns-canary-80' }],
    [{ service: 'api' }, { service: 'api' }],
  ];
  // each variant twice in a row, then all of them again interleaved with the first
  for (const [overrides] of variants) {
    metrics.observe(record(overrides));
    metrics.observe(record(overrides));
  }
  for (const [overrides] of variants) {
    metrics.observe(record(overrides));
    metrics.observe(record());
  }
  t.equal(metrics.seriesCount, variants.length);
  const m = parseExposition(await registry.metrics());
  for (const [, labels] of variants.slice(1)) {
    t.equal(sampleValue(m, 'nginx_ingress_controller_requests', { ...SITE, host: 'a.test', ...labels }), 3);
  }
  t.equal(sampleValue(m, 'nginx_ingress_controller_requests', { ...SITE, host: 'a.test' }), 2 + 1 + 7);
});

t.test('the series observed last is not counted again after its Ingress left the model', async (t) => {
  const registry = new Registry();
  const metrics = createRequestMetrics(registry, DEFAULT_REQUEST_METRICS_OPTIONS);
  const other = () => record({ host: 'b.test', ingress: 'other', path: '/' });
  metrics.setModel(model(true));
  metrics.observe(other());
  metrics.setModel(model(false));
  metrics.setModel(model(true));
  metrics.observe(other());
  const m = parseExposition(await registry.metrics());
  t.equal(sampleValue(m, 'nginx_ingress_controller_requests', { ingress: 'other', host: 'b.test' }), 1);
  t.equal(metrics.seriesCount, 1);
});

t.test('a host no longer defined is not counted, also when its series was observed last', async (t) => {
  const registry = new Registry();
  const metrics = createRequestMetrics(registry, DEFAULT_REQUEST_METRICS_OPTIONS);
  const site = (hosts: string[]) =>
    build({
      ingresses: [
        ingress('site', { namespace: 'ns', rules: hosts.map((h) => rule(h, path('/app', 'web'))) }),
      ],
    }).model;
  const c = () => record({ host: 'c.test' });
  metrics.setModel(site(['a.test', 'c.test']));
  metrics.observe(c());
  // the Ingress stays (its series too), the rule for c.test is gone
  metrics.setModel(site(['a.test']));
  metrics.observe(c());
  metrics.observe(c());
  const m = parseExposition(await registry.metrics());
  t.equal(sampleValue(m, 'nginx_ingress_controller_requests', { ...SITE, host: 'c.test' }), 1);
});

t.test('excludedSocketMetrics', async (t) => {
  const { names, unknown } = excludedSocketMetrics([
    'requests',
    'nginx_ingress_controller_response_size',
    'nope',
  ]);
  t.strictSame([...names], ['requests', 'response_size']);
  t.strictSame(unknown, ['nope']);
});
