// The OpenTelemetry keys of the global ConfigMap: ingress-nginx's defaults (config.go), each key's
// valid values, the invalid ones that keep the default with CONFIG_VALUE_INVALID, opentelemetry-config
// (quiet at its default, a note otherwise), the otlp-* spellings of the issue (unknown to
// ingress-nginx too: a guess of the real name), and the route's tracing policy from the ConfigMap and
// the annotations, as ingress-nginx's template decides it. Tables: data in, config and diagnostics out.
import t from 'tap';
import type { OpenTelemetryAnnotations } from '../../lib/model/annotations/opentelemetry.ts';
import { DEFAULT_TRACING, type TracingConfig } from '../../lib/model/configmap/tracing-keys.ts';
import { routeTracing } from '../../lib/model/tracing.ts';
import { build, buildFromConfigMap, ingress, type KeyCase, path, rule, runKeyCases } from './helpers.ts';

function buildConfig(data: Record<string, string>) {
  const { model, diagnostics } = buildFromConfigMap(data);
  return { config: model.config.tracing, diagnostics };
}

t.test("defaults: ingress-nginx's, tracing off", async (t) => {
  const { config, diagnostics } = buildConfig({});
  t.strictSame(diagnostics, []);
  t.strictSame(config, {
    enabled: false,
    trustIncomingSpan: true,
    operationName: '',
    collectorHost: '',
    collectorPort: 4317,
    serviceName: 'nginx',
    sampler: 'AlwaysOn',
    samplerRatio: 0.01,
    samplerParentBased: true,
    maxQueueSize: 2048,
    scheduleDelayMillis: 5000,
    maxExportBatchSize: 512,
  });
});

const CASES: readonly KeyCase<TracingConfig>[] = [
  { key: 'enable-opentelemetry', value: 'true', read: (c) => c.enabled, want: true },
  { key: 'enable-opentelemetry', value: 'on', says: 'expected "true" or "false"' },
  { key: 'opentelemetry-trust-incoming-span', value: 'false', read: (c) => c.trustIncomingSpan, want: false },
  { key: 'opentelemetry-trust-incoming-span', value: 'no', says: 'expected "true" or "false"' },
  {
    key: 'opentelemetry-operation-name',
    value: 'HTTP $request_method $service_name $uri',
    read: (c) => c.operationName,
    want: 'HTTP $request_method $service_name $uri',
  },
  {
    key: 'opentelemetry-operation-name',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
    value: 'ingress-${host}',
    read: (c) => c.operationName,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
    want: 'ingress-${host}',
  },
  { key: 'opentelemetry-operation-name', value: 'HTTP $upstream_addr', says: '$upstream_addr is not one of' },
  { key: 'opentelemetry-operation-name', value: 'cost $ 5', says: 'a $ must be followed by a variable name' },
  {
    key: 'otlp-collector-host',
    value: 'otel-coll-collector.otel.svc',
    read: (c) => c.collectorHost,
    want: 'otel-coll-collector.otel.svc',
  },
  { key: 'otlp-collector-host', value: '10.0.0.7', read: (c) => c.collectorHost, want: '10.0.0.7' },
  { key: 'otlp-collector-host', value: 'fd00::7', read: (c) => c.collectorHost, want: 'fd00::7' },
  {
    key: 'otlp-collector-host',
    value: 'http://collector:4317',
    says: 'expected a host name or an IP address',
  },
  { key: 'otlp-collector-port', value: '55680', read: (c) => c.collectorPort, want: 55680 },
  { key: 'otlp-collector-port', value: '0', says: 'expected a port (1-65535)' },
  { key: 'otlp-collector-port', value: 'grpc', says: 'expected a port (1-65535)' },
  { key: 'otel-service-name', value: 'nginx-proxy', read: (c) => c.serviceName, want: 'nginx-proxy' },
  { key: 'otel-sampler', value: 'TraceIdRatioBased', read: (c) => c.sampler, want: 'TraceIdRatioBased' },
  { key: 'otel-sampler', value: 'AlwaysOff', read: (c) => c.sampler, want: 'AlwaysOff' },
  { key: 'otel-sampler', value: 'alwayson', says: 'expected one of AlwaysOn, AlwaysOff, TraceIdRatioBased' },
  { key: 'otel-sampler-ratio', value: '0.5', read: (c) => c.samplerRatio, want: 0.5 },
  { key: 'otel-sampler-ratio', value: '1', read: (c) => c.samplerRatio, want: 1 },
  { key: 'otel-sampler-ratio', value: '1.5', says: 'expected a number from 0 to 1' },
  { key: 'otel-sampler-ratio', value: 'half', says: 'expected a number from 0 to 1' },
  { key: 'otel-sampler-parent-based', value: 'false', read: (c) => c.samplerParentBased, want: false },
  { key: 'otel-sampler-parent-based', value: 'nope', says: 'expected "true" or "false"' },
  { key: 'otel-max-queuesize', value: '4096', read: (c) => c.maxQueueSize, want: 4096 },
  { key: 'otel-max-queuesize', value: '0', says: 'expected an integer >= 1' },
  { key: 'otel-schedule-delay-millis', value: '1000', read: (c) => c.scheduleDelayMillis, want: 1000 },
  { key: 'otel-schedule-delay-millis', value: '5s', says: 'expected an integer >= 1' },
  { key: 'otel-max-export-batch-size', value: '128', read: (c) => c.maxExportBatchSize, want: 128 },
  { key: 'otel-max-export-batch-size', value: '-1', says: 'expected an integer >= 1' },
];

runKeyCases(t, CASES, (model) => model.config.tracing);

t.test('opentelemetry-config: quiet at its default, a note for a file of its own', async (t) => {
  t.strictSame(
    buildConfig({ 'opentelemetry-config': '/etc/ingress-controller/telemetry/opentelemetry.toml' })
      .diagnostics,
    [],
  );
  const { diagnostics } = buildConfig({ 'opentelemetry-config': '/etc/otel/mine.toml' });
  t.equal(diagnostics.length, 1);
  t.equal(diagnostics[0]?.code, 'CONFIG_KEY_NOT_APPLICABLE');
  t.match(diagnostics[0]?.message, 'the otlp-* and otel-* keys set its exporter');
});

t.test("the issue's otlp-* spellings are not ingress-nginx's: unknown, with the real name", async (t) => {
  for (const [alias, real] of [
    ['otlp-max-queuesize', 'otel-max-queuesize'],
    ['otlp-schedule-delay-millis', 'otel-schedule-delay-millis'],
    ['otlp-max-export-batch-size', 'otel-max-export-batch-size'],
  ] as const) {
    const { config, diagnostics } = buildConfig({ [alias]: '7' });
    t.equal(diagnostics[0]?.code, 'CONFIG_KEY_UNKNOWN', alias);
    t.match(diagnostics[0]?.message, `did you mean ${real}?`, alias);
    t.strictSame(config, DEFAULT_TRACING, `${alias}: no effect`);
  }
});

const UNSET: OpenTelemetryAnnotations = {
  set: false,
  enabled: false,
  trustSet: false,
  trust: false,
  operationName: '',
};

// buildOpentelemetryForLocation, case by case: [ConfigMap, annotations, the route's policy]
const POLICIES: ReadonlyArray<[string, Partial<TracingConfig>, Partial<OpenTelemetryAnnotations>, unknown]> =
  [
    ['off everywhere', {}, {}, null],
    ['ConfigMap on', { enabled: true }, {}, { trustIncomingSpan: true, operationName: '' }],
    ['ConfigMap on, annotation off', { enabled: true }, { set: true, enabled: false }, null],
    [
      'ConfigMap off, annotation on',
      {},
      { set: true, enabled: true },
      { trustIncomingSpan: true, operationName: '' },
    ],
    [
      'ConfigMap trust off, name set',
      { enabled: true, trustIncomingSpan: false, operationName: 'HTTP $uri' },
      {},
      { trustIncomingSpan: false, operationName: 'HTTP $uri' },
    ],
    [
      'annotation trust and name over the ConfigMap',
      { enabled: true, trustIncomingSpan: false, operationName: 'HTTP $uri' },
      { set: true, enabled: true, trustSet: true, trust: true, operationName: 'checkout' },
      { trustIncomingSpan: true, operationName: 'checkout' },
    ],
    [
      'annotation trust off over the ConfigMap on',
      {},
      { set: true, enabled: true, trustSet: true, trust: false },
      { trustIncomingSpan: false, operationName: '' },
    ],
  ];

t.test("a route's tracing: the annotations over the ConfigMap", async (t) => {
  for (const [name, config, annotations, want] of POLICIES) {
    t.strictSame(routeTracing({ ...DEFAULT_TRACING, ...config }, { ...UNSET, ...annotations }), want, name);
  }
});

t.test('the annotations reach the route: trust and name only with enable-opentelemetry: true', async (t) => {
  const result = build({
    ingresses: [
      ingress('on', {
        nginx: {
          'enable-opentelemetry': 'true',
          'opentelemetry-trust-incoming-span': 'false',
          'opentelemetry-operation-name': 'checkout',
        },
        rules: [rule('on.test', path('/', 'web:80'))],
      }),
      ingress('unread', {
        nginx: { 'opentelemetry-trust-incoming-span': 'false', 'opentelemetry-operation-name': 'x' },
        rules: [rule('unread.test', path('/', 'web:80'))],
      }),
    ],
  });
  const routeOf = (host: string) =>
    result.model.servers.find((s) => s.hostname === host)?.routes[0]?.annotations.openTelemetry;
  t.strictSame(routeOf('on.test'), {
    set: true,
    enabled: true,
    trustSet: true,
    trust: false,
    operationName: 'checkout',
  });
  t.strictSame(routeOf('unread.test'), UNSET);
  t.strictSame(
    result.diagnostics.filter((d) => d.code.startsWith('ANNOTATION_')),
    [],
    'no annotation is reported unsupported',
  );
});
