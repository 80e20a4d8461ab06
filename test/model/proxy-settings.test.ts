// Upstream behaviour: proxy-* annotations over the ConfigMap keys of the same
// names, resolved per route (upstreamSettings); invalid values fall back to the ConfigMap's value
// (ingress-nginx's proxy parser), an invalid upstream-vhost drops the Ingress; service-upstream
// sends the upstream to the Service's ClusterIP.
import t from 'tap';
import { targetSettings } from '../../lib/dataplane/routing/runtime.ts';
import {
  DEFAULT_GLOBAL_CONFIG,
  type Model,
  type UpstreamSettings,
  upstreamSettings,
} from '../../lib/model/index.ts';
import { parseNextUpstream, parseSize } from '../../lib/model/upstream-settings.ts';
import { externalNameService, ingress, path, rule, runCases, service, slice } from './helpers.ts';

const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const site = (name: string, nginx: Record<string, string> = {}, backend = 'web:80') =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', backend))] });

/** The resolved settings of the first route of a host. */
function settingsOf(model: Model, host: string): UpstreamSettings {
  const server = model.servers.find((s) => s.hostname === host);
  const route = server?.routes[0];
  if (route === undefined) throw new Error(`no route on ${host}`);
  return upstreamSettings(route.annotations, model.config);
}

const DEFAULTS: UpstreamSettings = {
  connectTimeout: 5,
  sendTimeout: 60,
  readTimeout: 60,
  nextUpstream: { error: true, timeout: true, invalidHeader: false, nonIdempotent: false, statuses: [] },
  nextUpstreamTries: 3,
  nextUpstreamTimeout: 0,
  bodySize: 1024 * 1024,
  bufferSize: 4096,
  requestBuffering: true,
  buffering: false,
  httpVersion: '1.1',
  upstreamVhost: null,
  cookieDomain: null,
  cookiePath: null,
  redirect: null,
  connectionClose: false,
  limitRate: 0,
  limitRateAfter: 0,
};

t.test('sizes and next-upstream tokens', async (t) => {
  t.equal(parseSize('0'), 0);
  t.equal(parseSize('100'), 100);
  t.equal(parseSize('8k'), 8192);
  t.equal(parseSize('2M'), 2 * 1024 * 1024);
  t.equal(parseSize('1g'), 1024 ** 3);
  t.strictSame(parseNextUpstream('error http_503 http_429 non_idempotent', false), {
    error: true,
    timeout: false,
    invalidHeader: false,
    nonIdempotent: true,
    statuses: [429, 503],
  });
  t.strictSame(parseNextUpstream('error timeout off', true), {
    error: false,
    timeout: false,
    invalidHeader: false,
    nonIdempotent: false,
    statuses: [],
  });
  t.equal(parseNextUpstream('invalid_header', true).nonIdempotent, true, 'retry-non-idempotent adds it');
});

runCases(t, [
  {
    name: 'proxy: without annotations or ConfigMap, the ingress-nginx defaults',
    ingresses: [site('a')],
    check: (t, { model }) => {
      t.strictSame(settingsOf(model, 'a.com'), DEFAULTS);
      t.strictSame(upstreamSettings(null, DEFAULT_GLOBAL_CONFIG), DEFAULTS);
    },
  },
  {
    name: 'proxy: every annotation is read',
    ingresses: [
      site('a', {
        'proxy-connect-timeout': '2',
        'proxy-send-timeout': '30',
        'proxy-read-timeout': '1',
        'proxy-next-upstream': 'error http_503 non_idempotent',
        'proxy-next-upstream-tries': '0',
        'proxy-next-upstream-timeout': '10',
        'proxy-body-size': '8m',
        'proxy-request-buffering': 'off',
        'proxy-buffering': 'on',
        'proxy-http-version': '1.0',
        'upstream-vhost': 'internal.example',
        'proxy-cookie-domain': 'internal.example example.com',
        'proxy-cookie-path': '/app/ /',
        'proxy-redirect-from': 'http://internal.example/',
        'proxy-redirect-to': 'https://example.com/',
        'connection-proxy-header': 'close',
        'proxy-buffer-size': '16k',
      }),
    ],
    check: (t, { model }) => {
      t.strictSame(settingsOf(model, 'a.com'), {
        connectTimeout: 2,
        sendTimeout: 30,
        readTimeout: 1,
        nextUpstream: {
          error: true,
          timeout: false,
          invalidHeader: false,
          nonIdempotent: true,
          statuses: [503],
        },
        nextUpstreamTries: 0,
        nextUpstreamTimeout: 10,
        bodySize: 8 * 1024 * 1024,
        bufferSize: 16 * 1024,
        requestBuffering: false,
        buffering: true,
        httpVersion: '1.0',
        upstreamVhost: 'internal.example',
        cookieDomain: { from: 'internal.example', to: 'example.com' },
        cookiePath: { from: '/app/', to: '/' },
        redirect: { from: 'http://internal.example/', to: 'https://example.com/' },
        connectionClose: true,
        limitRate: 0,
        limitRateAfter: 0,
      });
    },
  },
  {
    name: 'proxy: the ConfigMap keys are the defaults; an annotation wins over its key',
    ingresses: [
      site('a'),
      site('b', { 'proxy-read-timeout': '5', 'proxy-body-size': '0', 'proxy-buffer-size': '8k' }),
    ],
    options: OPTIONS,
    configMaps: [
      configMap({
        'proxy-connect-timeout': '3',
        'proxy-read-timeout': '120',
        'proxy-send-timeout': '90',
        'proxy-next-upstream': 'error timeout http_502',
        'proxy-next-upstream-tries': '5',
        'proxy-next-upstream-timeout': '20',
        'retry-non-idempotent': 'true',
        'proxy-body-size': '10m',
        'proxy-buffer-size': '32k',
        'proxy-request-buffering': 'off',
        'proxy-buffering': 'on',
        'proxy-http-version': '1.0',
        'proxy-cookie-domain': 'a b',
        'proxy-cookie-path': '/x /y',
        'proxy-redirect-from': 'http://a/',
        'proxy-redirect-to': 'http://b/',
        'service-upstream': 'true',
      }),
    ],
    // the generated Services have no ClusterIP: their endpoints are used
    diagnostics: ['SERVICE_UPSTREAM_NO_CLUSTER_IP a', 'SERVICE_UPSTREAM_NO_CLUSTER_IP b'],
    check: (t, { model }) => {
      const a = settingsOf(model, 'a.com');
      t.match(a, {
        connectTimeout: 3,
        readTimeout: 120,
        sendTimeout: 90,
        nextUpstream: { error: true, timeout: true, nonIdempotent: true, statuses: [502] },
        nextUpstreamTries: 5,
        nextUpstreamTimeout: 20,
        bodySize: 10 * 1024 * 1024,
        bufferSize: 32 * 1024,
        requestBuffering: false,
        buffering: true,
        httpVersion: '1.0',
        cookieDomain: { from: 'a', to: 'b' },
        cookiePath: { from: '/x', to: '/y' },
        redirect: { from: 'http://a/', to: 'http://b/' },
      });
      t.equal(model.config.serviceUpstream, true);
      const b = settingsOf(model, 'b.com');
      t.equal(b.readTimeout, 5);
      t.equal(b.bodySize, 0, '0: unlimited');
      t.equal(b.bufferSize, 8 * 1024, 'the annotation wins over the key');
      t.equal(b.connectTimeout, 3);
    },
  },
  {
    name: 'proxy: invalid ConfigMap values keep the defaults',
    ingresses: [site('a')],
    options: OPTIONS,
    configMaps: [
      configMap({
        'proxy-read-timeout': '60s',
        'proxy-next-upstream': 'error sometimes',
        'proxy-body-size': '1 MB',
        'proxy-buffer-size': '4 kB',
        'proxy-request-buffering': 'yes',
        'proxy-http-version': '2',
        'retry-non-idempotent': 'maybe',
      }),
    ],
    diagnostics: Array.from({ length: 7 }, () => 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'),
    check: (t, { model }) => t.strictSame(settingsOf(model, 'a.com'), DEFAULTS),
  },
  {
    name: 'proxy: an invalid annotation takes the ConfigMap value and keeps the Ingress',
    ingresses: [
      site('a', {
        'proxy-read-timeout': '50k',
        'proxy-connect-timeout': '-1',
        'proxy-next-upstream': 'error always',
        'proxy-next-upstream-tries': 'three',
        'proxy-body-size': '1 0x',
        'proxy-request-buffering': 'ON',
        'proxy-http-version': '2.0',
        'proxy-cookie-domain': 'a.com; b.com',
        'proxy-redirect-to': 'http://x/<y>',
      }),
      site('b', { 'connection-proxy-header': 'keep-alive' }),
    ],
    options: OPTIONS,
    configMaps: [configMap({ 'proxy-read-timeout': '30' })],
    diagnostics: Array(9).fill('ANNOTATION_INVALID a'),
    messages: ['proxy-read-timeout="50k" is invalid', 'the default is used'],
    check: (t, { model }) => {
      t.equal(model.servers.length, 2, 'the Ingress is kept');
      t.strictSame(settingsOf(model, 'a.com'), { ...DEFAULTS, readTimeout: 30 });
      t.equal(settingsOf(model, 'b.com').connectionClose, false, 'keep-alive: as without it');
    },
  },
  {
    name: 'proxy: an invalid connection-proxy-header skips the Ingress (its parser returns the error)',
    ingresses: [
      site('a', { 'connection-proxy-header': 'upgrade' }),
      site('b', { 'connection-proxy-header': 'Close' }),
    ],
    diagnostics: ['ANNOTATION_INVALID a', 'ANNOTATION_INVALID b'],
    messages: ['the Ingress is ignored'],
    routes: [],
  },
  {
    name: 'limit-rate / limit-rate-after: KB of the route, else of the ConfigMap; only with proxy-buffering on',
    ingresses: [
      site('a', { 'limit-rate': '16', 'limit-rate-after': '32', 'proxy-buffering': 'on' }),
      site('b', { 'proxy-buffering': 'on' }),
      site('c', { 'limit-rate': '16' }),
      site('d', { 'limit-rate': '-1', 'limit-rate-after': '1k', 'proxy-buffering': 'on' }),
    ],
    options: OPTIONS,
    configMaps: [configMap({ 'limit-rate': '100', 'limit-rate-after': '10' })],
    diagnostics: ['ANNOTATION_INVALID d', 'ANNOTATION_INVALID d'],
    check: (t, { model }) => {
      const rate = (host: string) => {
        const s = settingsOf(model, host);
        return [s.limitRate, s.limitRateAfter];
      };
      t.strictSame(rate('a.com'), [16 * 1024, 32 * 1024], 'the annotations');
      t.strictSame(rate('b.com'), [100 * 1024, 10 * 1024], 'the ConfigMap keys');
      t.equal(rate('c.com')[0], 0, 'proxy-buffering off (the default): not throttled');
      t.strictSame(rate('d.com'), [100 * 1024, 10 * 1024], 'invalid values: the ConfigMap keys');
      t.equal(targetSettings(settingsOf(model, 'c.com')).limitRate, null, 'no pace in the data plane');
      t.strictSame(targetSettings(settingsOf(model, 'a.com')).limitRate, {
        bytesPerSecond: 16 * 1024,
        after: 32 * 1024,
      });
    },
  },
  {
    name: 'proxy: size spellings ingress-nginx accepts (spaces removed, case-insensitive)',
    ingresses: [site('a', { 'proxy-body-size': '16 K' }), site('b', { 'proxy-body-size': '2G' })],
    check: (t, { model }) => {
      t.equal(settingsOf(model, 'a.com').bodySize, 16 * 1024);
      t.equal(settingsOf(model, 'b.com').bodySize, 2 * 1024 ** 3);
    },
  },
  {
    name: 'proxy: redirect "default" and "off" change nothing; "off" cookie rewrites are off',
    ingresses: [
      site('a', { 'proxy-redirect-from': 'default', 'proxy-redirect-to': 'http://x/' }),
      site('b', {
        'proxy-redirect-from': 'http://x/',
        'proxy-redirect-to': 'off',
        'proxy-cookie-path': 'off',
      }),
    ],
    check: (t, { model }) => {
      t.equal(settingsOf(model, 'a.com').redirect, null);
      t.equal(settingsOf(model, 'b.com').redirect, null);
      t.equal(settingsOf(model, 'b.com').cookiePath, null);
    },
  },
  {
    name: "proxy: the host's default route inherits the creating Ingress's settings",
    ingresses: [site('a', { 'proxy-read-timeout': '7' })],
    check: (t, { model }) => {
      const server = model.servers[0];
      t.equal(server && upstreamSettings(server.defaultRoute.annotations, model.config).readTimeout, 7);
    },
  },
  {
    name: 'upstream-vhost: an invalid host name drops the Ingress',
    ingresses: [site('a', { 'upstream-vhost': 'bad host;' }), site('b', { 'upstream-vhost': 'svc.ns.svc' })],
    diagnostics: ['ANNOTATION_INVALID a'],
    routes: ['b.com Prefix / -> default-web-80 (b)'],
    check: (t, { model }) => t.equal(settingsOf(model, 'b.com').upstreamVhost, 'svc.ns.svc'),
  },
  {
    name: 'service-upstream: the upstream is the ClusterIP and the Service port',
    ingresses: [
      site('a', { 'service-upstream': 'true' }),
      site('b', {}, 'api:8080'),
      site('c', { 'service-upstream': 'true' }, 'headless:80'),
      site('d', { 'service-upstream': 'true' }, 'ext:443'),
    ],
    services: [
      {
        ...service('web', [{ port: 80, targetPort: 8080 }]),
        spec: { clusterIP: '10.96.0.10', ports: [{ port: 80, targetPort: 8080 }] },
      },
      { ...service('api', [{ port: 8080 }]), spec: { clusterIP: '10.96.0.11', ports: [{ port: 8080 }] } },
      { ...service('headless', [{ port: 80 }]), spec: { clusterIP: 'None', ports: [{ port: 80 }] } },
      externalNameService('ext', 'api.example.net'),
    ],
    slices: [
      slice('web', [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2'] }], [{ port: 8080 }]),
      slice('api', [{ addresses: ['10.0.1.1'] }], [{ port: 8080 }]),
      slice('headless', [{ addresses: ['10.0.2.1'] }], [{ port: 80 }]),
    ],
    diagnostics: ['SERVICE_UPSTREAM_NO_CLUSTER_IP c', 'SERVICE_UPSTREAM_NO_CLUSTER_IP d'],
    check: (t, { model }) => {
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.96.0.10', port: 80 }]);
      t.strictSame(
        model.upstreams['default-api-8080']?.endpoints,
        [{ address: '10.0.1.1', port: 8080 }],
        'without the annotation: the endpoints',
      );
      t.strictSame(model.upstreams['default-headless-80']?.endpoints, [{ address: '10.0.2.1', port: 80 }]);
      t.strictSame(model.upstreams['default-ext-443']?.endpoints, [
        { address: 'api.example.net', port: 443 },
      ]);
    },
  },
  {
    name: 'service-upstream: the ConfigMap key turns it on; the annotation can turn it off',
    ingresses: [site('a'), site('b', { 'service-upstream': 'false' }, 'api:80')],
    options: OPTIONS,
    configMaps: [configMap({ 'service-upstream': 'true' })],
    services: [
      { ...service('web', [{ port: 80 }]), spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] } },
      { ...service('api', [{ port: 80 }]), spec: { clusterIP: '10.96.0.11', ports: [{ port: 80 }] } },
    ],
    slices: [
      slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }]),
      slice('api', [{ addresses: ['10.0.1.1'] }], [{ port: 80 }]),
    ],
    check: (t, { model }) => {
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.96.0.10', port: 80 }]);
      t.strictSame(model.upstreams['default-api-80']?.endpoints, [{ address: '10.0.1.1', port: 80 }]);
    },
  },
  {
    name: 'service-upstream: an invalid value is false (not the ConfigMap value), with a warning',
    ingresses: [site('a', { 'service-upstream': 'yes' })],
    options: OPTIONS,
    configMaps: [configMap({ 'service-upstream': 'true' })],
    services: [
      { ...service('web', [{ port: 80 }]), spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] } },
    ],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }])],
    diagnostics: ['ANNOTATION_INVALID a'],
    check: (t, { model }) => {
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.0.0.1', port: 80 }]);
    },
  },
]);
