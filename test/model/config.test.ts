// The global ConfigMap and the load-balance annotation.
import t from 'tap';
import { CONFIG_KEY_TOPICS } from '../../lib/model/configmap/index.ts';
import { DEFAULT_LOG_FORMAT_UPSTREAM } from '../../lib/model/configmap/log-format.ts';
import { DEFAULT_GLOBAL_CONFIG, SUPPORTED_CONFIG_KEYS } from '../../lib/model/index.ts';
import { type Case, ingress, path, rule, runCases } from './helpers.ts';

const configMap = (data: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data: data as Record<string, string>,
});
const site = (name: string, nginx: Record<string, string> = {}, created = 0) =>
  ingress(name, { created, nginx, rules: [rule(`${name}.com`, path('/', 'web:80'))] });
const OPTIONS = { configMap: 'ingress/ingress-ts' };

runCases(t, [
  {
    name: 'config: without --configmap the ingress-nginx defaults apply',
    ingresses: [],
    check: (t, { model }) => t.strictSame(model.config, DEFAULT_GLOBAL_CONFIG),
  },
  {
    name: 'config: a missing ConfigMap is reported and the defaults apply',
    ingresses: [],
    options: OPTIONS,
    diagnostics: ['CONFIGMAP_NOT_FOUND ConfigMap:ingress/ingress-ts'],
    check: (t, { model }) => t.strictSame(model.config, DEFAULT_GLOBAL_CONFIG),
  },
  {
    name: 'config: every supported key is read',
    ingresses: [],
    configMaps: [
      configMap({
        'load-balance': 'ewma',
        'ssl-redirect': 'false',
        'force-ssl-redirect': 'true',
        'http-redirect-code': '301',
        'no-tls-redirect-locations': '/.well-known/acme-challenge, /health',
        hsts: 'true',
        'hsts-max-age': '600',
        'hsts-include-subdomains': 'false',
        'hsts-preload': 'true',
        'disable-access-log': 'true',
        'enable-access-log-for-default-backend': 'true',
        'skip-access-log-urls': '/healthz, /ping?x=1',
        'access-log-path': '/var/log/ingress/access.log',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
        'log-format-upstream': '$remote_addr "$request" ${status} $http_x_trace_id',
        'log-format-escape-json': 'true',
        'log-format-escape-none': 'true',
        'use-http2': 'false',
        'ssl-protocols': 'TLSv1.3',
        'ssl-ciphers': 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256',
      }),
    ],
    options: OPTIONS,
    check: (t, { model }) =>
      t.strictSame(model.config, {
        loadBalance: 'ewma',
        sslRedirect: false,
        forceSslRedirect: true,
        httpRedirectCode: 301,
        noTlsRedirectLocations: ['/.well-known/acme-challenge', '/health'],
        hsts: { enabled: true, maxAge: 600, includeSubdomains: false, preload: true },
        accessLog: {
          disabled: true,
          forDefaultBackend: true,
          skipUrls: ['/healthz', '/ping?x=1'],
          path: '/var/log/ingress/access.log',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
          format: '$remote_addr "$request" ${status} $http_x_trace_id',
          escapeJson: true,
          escapeNone: true,
        },
        // the upstream keys: test/model/proxy-settings.test.ts
        proxy: DEFAULT_GLOBAL_CONFIG.proxy,
        retryNonIdempotent: false,
        serviceUpstream: false,
        forwarding: DEFAULT_GLOBAL_CONFIG.forwarding,
        headers: DEFAULT_GLOBAL_CONFIG.headers,
        client: DEFAULT_GLOBAL_CONFIG.client,
        // the client limits: test/model/client-limits-config.test.ts
        largeClientHeaderBuffers: DEFAULT_GLOBAL_CONFIG.largeClientHeaderBuffers,
        clientHeaderBufferSize: DEFAULT_GLOBAL_CONFIG.clientHeaderBufferSize,
        http2MaxConcurrentStreams: DEFAULT_GLOBAL_CONFIG.http2MaxConcurrentStreams,
        headerNames: DEFAULT_GLOBAL_CONFIG.headerNames,
        maxWorkerConnections: DEFAULT_GLOBAL_CONFIG.maxWorkerConnections,
        upstreamKeepalive: DEFAULT_GLOBAL_CONFIG.upstreamKeepalive,
        customHttpErrors: DEFAULT_GLOBAL_CONFIG.customHttpErrors,
        allowSnippetAnnotations: DEFAULT_GLOBAL_CONFIG.allowSnippetAnnotations,
        globalAuth: DEFAULT_GLOBAL_CONFIG.globalAuth,
        globalAllowedResponseHeaders: DEFAULT_GLOBAL_CONFIG.globalAllowedResponseHeaders,
        allowCrossNamespaceResources: DEFAULT_GLOBAL_CONFIG.allowCrossNamespaceResources,
        annotationValueWordBlocklist: DEFAULT_GLOBAL_CONFIG.annotationValueWordBlocklist,
        annotationsRiskLevel: DEFAULT_GLOBAL_CONFIG.annotationsRiskLevel,
        access: DEFAULT_GLOBAL_CONFIG.access,
        workerShutdownTimeoutMs: DEFAULT_GLOBAL_CONFIG.workerShutdownTimeoutMs,
        workerProcesses: DEFAULT_GLOBAL_CONFIG.workerProcesses,
        useHttp2: false,
        ssl: {
          minVersion: 'TLSv1.3',
          maxVersion: 'TLSv1.3',
          ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256',
        },
        // the handshake keys: test/model/tls-session-keys.test.ts
        sslHandshake: DEFAULT_GLOBAL_CONFIG.sslHandshake,
        stream: DEFAULT_GLOBAL_CONFIG.stream,
        // the compression keys: test/model/config-compression-keys.test.ts
        compression: DEFAULT_GLOBAL_CONFIG.compression,
        // the OpenTelemetry keys: test/model/config-tracing-keys.test.ts
        tracing: DEFAULT_GLOBAL_CONFIG.tracing,
      }),
  },
  {
    name: 'config: invalid values keep the default, each reported on the ConfigMap',
    ingresses: [],
    configMaps: [
      configMap({
        'load-balance': 'random',
        'http-redirect-code': '303',
        hsts: 'yes',
        'hsts-max-age': '1y',
        'disable-access-log': 'off',
        'access-log-path': 'relative/access.log',
        'use-http2': 'maybe',
        'ssl-protocols': 'SSLv3 TLSv1.2',
        'ssl-ciphers': 'NO-SUCH-CIPHER',
      }),
    ],
    options: OPTIONS,
    diagnostics: Array.from({ length: 9 }, () => 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'),
    messages: ['ConfigMap key load-balance="random" is invalid', 'the default is used'],
    check: (t, { model }) => t.strictSame(model.config, DEFAULT_GLOBAL_CONFIG),
  },
  {
    name: 'ssl-protocols: Node takes a range, from the oldest version listed to the newest',
    ingresses: [],
    configMaps: [configMap({ 'ssl-protocols': 'TLSv1.3   TLSv1.1' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.equal(model.config.ssl.minVersion, 'TLSv1.1');
      t.equal(model.config.ssl.maxVersion, 'TLSv1.3');
    },
  },
  {
    name: 'config: NGINX tuning keys are reported once as info, keys ingress-nginx does not know as a warning',
    ingresses: [],
    configMaps: [configMap({ 'worker-cpu-affinity': 'auto', 'use-gzipp': 'true', 'ssl-redirect': '' })],
    options: OPTIONS,
    diagnostics: [
      'CONFIG_KEY_NOT_APPLICABLE ConfigMap:ingress/ingress-ts',
      'CONFIG_KEY_UNKNOWN ConfigMap:ingress/ingress-ts',
    ],
    check: (t, { model, diagnostics }) => {
      t.equal(diagnostics[0]?.severity, 'warning');
      t.equal(diagnostics[1]?.severity, 'info');
      t.equal(model.config.sslRedirect, true, 'an empty value is unset');
    },
  },
  {
    name: 'worker-shutdown-timeout: 240 s by default, NGINX time syntax',
    ingresses: [],
    check: (t, { model }) => t.equal(model.config.workerShutdownTimeoutMs, 240_000),
  },
  ...(
    [
      ['10s', 10_000],
      ['45', 45_000],
      ['4m', 240_000],
      ['1m30s', 90_000],
      ['500ms', 500],
      ['0', 0],
    ] as const
  ).map(
    ([value, ms]): Case => ({
      name: `worker-shutdown-timeout: ${value} is ${ms} ms`,
      ingresses: [],
      configMaps: [configMap({ 'worker-shutdown-timeout': value })],
      options: OPTIONS,
      check: (t, { model }) => t.equal(model.config.workerShutdownTimeoutMs, ms),
    }),
  ),
  {
    name: 'worker-shutdown-timeout: an invalid value keeps 240 s',
    ingresses: [],
    configMaps: [configMap({ 'worker-shutdown-timeout': '10 seconds' })],
    options: OPTIONS,
    diagnostics: ['CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'],
    check: (t, { model }) => t.equal(model.config.workerShutdownTimeoutMs, 240_000),
  },
  {
    name: 'worker-processes: auto by default, as in ingress-nginx',
    ingresses: [],
    check: (t, { model, diagnostics }) => {
      t.equal(model.config.workerProcesses, 'auto');
      t.strictSame(diagnostics, [], 'a key of ingress-ts, not NGINX tuning');
    },
  },
  ...(
    [
      ['auto', 'auto'],
      ['1', 1],
      ['4', 4],
      [' 16 ', 16],
      ['1024', 1024],
    ] as const
  ).map(
    ([value, parsed]): Case => ({
      name: `worker-processes: ${JSON.stringify(value)} is ${parsed}`,
      ingresses: [],
      configMaps: [configMap({ 'worker-processes': value })],
      options: OPTIONS,
      check: (t, { model }) => t.equal(model.config.workerProcesses, parsed),
    }),
  ),
  ...['0', '-2', '1.5', 'Auto', 'two', '1025', '4 auto'].map(
    (value): Case => ({
      name: `worker-processes: ${JSON.stringify(value)} is invalid and keeps the default`,
      ingresses: [],
      configMaps: [configMap({ 'worker-processes': value })],
      options: OPTIONS,
      diagnostics: ['CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'],
      messages: ['expected "auto" or an integer from 1 to 1024'],
      check: (t, { model }) => t.equal(model.config.workerProcesses, 'auto'),
    }),
  ),
  {
    name: "log-format-upstream: ingress-nginx's default text format unless set",
    ingresses: [],
    check: (t, { model }) => {
      t.equal(model.config.accessLog.format, DEFAULT_LOG_FORMAT_UPSTREAM);
      t.equal(model.config.accessLog.escapeJson, false);
      t.equal(model.config.accessLog.escapeNone, false);
    },
  },
  ...(
    [
      ['$remote_addr $geoip_country_code', 'unknown variable "$geoip_country_code"'],
      ['$request $', 'a "$" without a variable name'],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
      ['${status', 'a "${" without its "}"'],
      ["$request 'quoted'", "a ' must be written \\'"],
    ] as const
  ).map(
    ([value, message]): Case => ({
      name: `log-format-upstream: ${JSON.stringify(value)} is refused as NGINX refuses it; the default stays`,
      ingresses: [],
      configMaps: [configMap({ 'log-format-upstream': value, 'log-format-escape-json': 'true' })],
      options: OPTIONS,
      diagnostics: ['CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'],
      messages: [message],
      check: (t, { model }) => {
        t.equal(model.config.accessLog.format, DEFAULT_LOG_FORMAT_UPSTREAM);
        t.equal(model.config.accessLog.escapeJson, true, 'the other keys still apply');
      },
    }),
  ),
  {
    name: 'config: a ConfigMap in another namespace or with another name is not used',
    ingresses: [],
    configMaps: [
      { ...configMap({ 'load-balance': 'ewma' }), metadata: { name: 'ingress-ts', namespace: 'other' } },
    ],
    options: OPTIONS,
    diagnostics: ['CONFIGMAP_NOT_FOUND ConfigMap:ingress/ingress-ts'],
  },
  {
    name: 'load-balance: upstreams use the ConfigMap algorithm unless their Ingress chooses one',
    ingresses: [
      site('plain', {}, 1),
      ingress('fast', {
        created: 2,
        nginx: { 'load-balance': 'ewma' },
        rules: [rule('fast.com', path('/', 'api:80'))],
      }),
    ],
    configMaps: [configMap({ 'load-balance': 'round_robin' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.equal(model.upstreams['default-web-80']?.loadBalance, 'round_robin');
      t.equal(model.upstreams['default-api-80']?.loadBalance, 'ewma');
    },
  },
  {
    name: 'load-balance: the first Ingress to use an upstream decides its algorithm',
    ingresses: [
      site('first', { 'load-balance': 'ewma' }, 1),
      site('second', { 'load-balance': 'round_robin' }, 2),
    ],
    check: (t, { model }) => t.equal(model.upstreams['default-web-80']?.loadBalance, 'ewma'),
  },
  {
    name: 'load-balance: an invalid algorithm drops the Ingress (ingress-nginx propagates this error)',
    ingresses: [site('bad', { 'load-balance': 'fastest' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    check: (t, { diagnostics }) => t.equal(diagnostics[0]?.severity, 'error'),
  },
]);

t.test('config: the supported keys are listed', async (t) => {
  t.ok(SUPPORTED_CONFIG_KEYS.includes('load-balance') && SUPPORTED_CONFIG_KEYS.includes('hsts-max-age'));
});

t.test(
  'config: each key is parsed by one topic table, so none is silently replaced by another',
  async (t) => {
    const keys = CONFIG_KEY_TOPICS.flatMap((topic) => Object.keys(topic));
    t.equal(keys.length, SUPPORTED_CONFIG_KEYS.length);
    t.strictSame([...new Set(keys)].sort(), SUPPORTED_CONFIG_KEYS);
  },
);
