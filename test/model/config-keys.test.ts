// The global ConfigMap's request/response keys: client address and forwarded
// headers, request ids, Server, header ConfigMaps, connection settings, custom-http-errors, snippets
// and NGINX-internal keys.
import t from 'tap';
import { DEFAULT_GLOBAL_CONFIG } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases, service, slice } from './helpers.ts';

const configMap = (data: Record<string, unknown>, name = 'ingress-ts', namespace = 'ingress') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: data as Record<string, string>,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const INVALID = 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts';

runCases(t, [
  {
    name: 'request/response keys: ingress-nginx defaults',
    ingresses: [],
    check: (t, { model }) => {
      t.strictSame(model.config.forwarding, {
        useForwardedHeaders: false,
        computeFullForwardedFor: false,
        forwardedForHeader: 'x-forwarded-for',
        enableRealIp: false,
        realIpCidrs: ['0.0.0.0/0'],
        useProxyProtocol: false,
        proxyProtocolHeaderTimeoutMs: 5000,
      });
      t.strictSame(model.config.headers, {
        generateRequestId: true,
        serverTokens: false,
        proxySetHeaders: { source: '', headers: [] },
        addHeaders: { source: '', headers: [] },
        hideHeaders: [],
        allowBackendServerHeader: false,
        proxyAddOriginalUriHeader: false,
        defaultType: 'text/html',
      });
      t.strictSame(model.config.client, {
        keepAlive: 75,
        keepAliveRequests: 1000,
        headerTimeout: 60,
        bodyTimeout: 60,
      });
      t.strictSame(model.config.upstreamKeepalive, { connections: 320, timeout: 60, requests: 10000 });
      t.strictSame(model.config.customHttpErrors, []);
      t.equal(model.config.allowSnippetAnnotations, false);
    },
  },
  {
    name: 'request/response keys: every key is read',
    ingresses: [],
    configMaps: [
      configMap({
        'use-forwarded-headers': 'true',
        'compute-full-forwarded-for': 'true',
        'forwarded-for-header': 'X-Client-Chain',
        'enable-real-ip': 'true',
        'proxy-real-ip-cidr': '10.0.0.0/8, 192.168.1.1, fd00::/8',
        'use-proxy-protocol': 'true',
        'proxy-protocol-header-timeout': '1m2.5s',
        'generate-request-id': 'false',
        'server-tokens': 'true',
        'proxy-set-headers': 'ingress/up',
        'add-headers': 'ingress/down',
        'hide-headers': 'X-Powered-By, x-internal',
        'allow-backend-server-header': 'true',
        'proxy-add-original-uri-header': 'true',
        'default-type': 'application/octet-stream',
        'keep-alive': '10',
        'keep-alive-requests': '5',
        'client-header-timeout': '7s',
        'client-body-timeout': '9',
        'upstream-keepalive-connections': '16',
        'upstream-keepalive-timeout': '30',
        'upstream-keepalive-requests': '100',
        'custom-http-errors': '503, 404,404',
        'allow-snippet-annotations': 'true',
      }),
      configMap({ 'X-Env': 'prod', 'X-Team': 'edge' }, 'up'),
      configMap({ 'X-Frame-Options': 'DENY' }, 'down'),
    ],
    options: OPTIONS,
    check: (t, { model, references }) => {
      t.strictSame(model.config.forwarding, {
        useForwardedHeaders: true,
        computeFullForwardedFor: true,
        forwardedForHeader: 'x-client-chain',
        enableRealIp: true,
        realIpCidrs: ['10.0.0.0/8', '192.168.1.1/32', 'fd00::/8'],
        useProxyProtocol: true,
        proxyProtocolHeaderTimeoutMs: 62_500,
      });
      t.strictSame(model.config.headers, {
        generateRequestId: false,
        serverTokens: true,
        proxySetHeaders: {
          source: 'ingress/up',
          headers: [
            ['X-Env', 'prod'],
            ['X-Team', 'edge'],
          ],
        },
        addHeaders: { source: 'ingress/down', headers: [['X-Frame-Options', 'DENY']] },
        hideHeaders: ['x-powered-by', 'x-internal'],
        allowBackendServerHeader: true,
        proxyAddOriginalUriHeader: true,
        defaultType: 'application/octet-stream',
      });
      t.strictSame(model.config.client, {
        keepAlive: 10,
        keepAliveRequests: 5,
        headerTimeout: 7,
        bodyTimeout: 9,
      });
      t.strictSame(model.config.upstreamKeepalive, { connections: 16, timeout: 30, requests: 100 });
      t.strictSame(model.config.customHttpErrors, [404, 503]);
      t.equal(model.config.allowSnippetAnnotations, true);
      t.strictSame(references.configMaps, ['ingress/down', 'ingress/up'], 'header ConfigMaps are references');
    },
  },
  {
    name: 'request/response keys: invalid values keep the default, each reported on the ConfigMap',
    ingresses: [],
    configMaps: [
      configMap({
        'use-forwarded-headers': 'yes',
        'forwarded-for-header': 'X Forwarded',
        'proxy-real-ip-cidr': '10.0.0.0/8, 10.0.0.0/33',
        'generate-request-id': 'maybe',
        'proxy-set-headers': 'not-a-ref',
        'add-headers': 'ingress/missing',
        'hide-headers': 'bad header',
        'allow-backend-server-header': 'yes',
        'proxy-add-original-uri-header': '1x',
        'default-type': 'text/html; charset=utf-8',
        'keep-alive': '-1',
        'keep-alive-requests': '0',
        'client-header-timeout': '0',
        'client-body-timeout': '1m',
        'upstream-keepalive-connections': 'many',
        'custom-http-errors': '404,302',
        'use-proxy-protocol': 'on',
        // Go durations need a unit, and the header needs some time
        'proxy-protocol-header-timeout': '5',
      }),
    ],
    options: OPTIONS,
    diagnostics: Array.from({ length: 18 }, () => INVALID),
    messages: ['the ConfigMap ingress/missing does not exist', '"10.0.0.0/33" is not an IPv4 or IPv6'],
    check: (t, { model }) => t.strictSame(model.config, DEFAULT_GLOBAL_CONFIG),
  },
  {
    name: 'request/response keys: a header ConfigMap with an entry that is not a header is not used',
    ingresses: [],
    configMaps: [
      configMap({ 'proxy-set-headers': 'ingress/up' }),
      configMap({ 'X-Ok': 'yes', 'bad name': 'x' }, 'up'),
    ],
    options: OPTIONS,
    diagnostics: [INVALID],
    messages: ['entries that are not valid headers: bad name'],
    check: (t, { model, references }) => {
      t.strictSame(model.config.headers.proxySetHeaders, { source: '', headers: [] });
      t.strictSame(references.configMaps, ['ingress/up'], 'still a reference: fixing it rebuilds');
    },
  },
  {
    name: 'request/response keys: add-headers refuses a header that frames the response',
    ingresses: [],
    configMaps: [
      configMap({ 'add-headers': 'ingress/down' }),
      configMap({ 'X-Ok': 'yes', 'Keep-Alive': 'timeout=5' }, 'down'),
    ],
    options: OPTIONS,
    diagnostics: [INVALID],
    messages: ['entries that are not valid headers: Keep-Alive'],
    check: (t, { model }) => t.strictSame(model.config.headers.addHeaders, { source: '', headers: [] }),
  },
  {
    name: 'request/response keys: NGINX-internal keys are told apart from keys not supported yet',
    ingresses: [],
    configMaps: [
      configMap({
        'worker-cpu-affinity': 'auto',
        'server-names-hash-bucket-size': '128',
        'lua-shared-dicts': 'a: 1',
        'variables-hash-max-size': '2048',
        'enable-syslog': 'true',
      }),
    ],
    options: OPTIONS,
    diagnostics: [
      ...Array.from({ length: 4 }, () => 'CONFIG_KEY_NOT_APPLICABLE ConfigMap:ingress/ingress-ts'),
      'CONFIG_KEY_UNSUPPORTED ConfigMap:ingress/ingress-ts',
    ],
    check: (t, { diagnostics }) => {
      const say = (key: string) => diagnostics.find((d) => d.message.includes(`key ${key} `))?.message ?? '';
      for (const key of [
        'worker-cpu-affinity',
        'server-names-hash-bucket-size',
        'lua-shared-dicts',
        'variables-hash-max-size',
      ])
        t.match(say(key), 'tunes NGINX itself; it does not apply to ingress-ts', key);
      t.match(say('enable-syslog'), 'not supported by ingress-ts yet', 'enable-syslog');
    },
  },
  {
    name: 'allow-snippet-annotations: true alone (risk level High) keeps snippets refused and the diagnostic says why',
    ingresses: [
      ingress('snip', {
        nginx: { 'configuration-snippet': 'more_set_headers "X: y";' },
        rules: [rule('snip.com', path('/', 'web:80'))],
      }),
    ],
    configMaps: [configMap({ 'allow-snippet-annotations': 'true' })],
    options: OPTIONS,
    routes: [],
    diagnostics: ['SNIPPET_REFUSED snip'],
    messages: [
      'allow-snippet-annotations is true in the ConfigMap, but as in ingress-nginx a snippet is only read with annotations-risk-level Critical, not High',
    ],
  },
  {
    name: 'allow-snippet-annotations: false (default) keeps the plain refusal',
    ingresses: [
      ingress('snip', {
        nginx: { 'server-snippet': 'return 200;' },
        rules: [rule('snip.com', path('/', 'web:80'))],
      }),
    ],
    routes: [],
    diagnostics: ['SNIPPET_REFUSED snip'],
    check: (t, { diagnostics }) => t.notMatch(diagnostics[0]?.message ?? '', 'allow-snippet-annotations'),
  },
]);

const errorsSite = (name: string, nginx: Record<string, string>) =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'))] });

runCases(t, [
  {
    name: 'custom-http-errors / default-backend annotations: codes and the error backend upstream',
    ingresses: [errorsSite('site', { 'custom-http-errors': '503,404, 404', 'default-backend': 'errors' })],
    services: [service('errors', [{ port: 8080, targetPort: 8080 }]), service('other', [{ port: 81 }])],
    slices: [slice('errors', [{ addresses: ['10.1.0.1'] }], [{ port: 8080 }])],
    check: (t, { model, references }) => {
      const route = model.servers[0]?.routes[0];
      const expected = { codes: [404, 503], backend: 'errors', disableIntercept: false };
      t.strictSame(route?.annotations.customErrors, expected);
      t.strictSame(
        model.servers[0]?.defaultRoute.annotations.customErrors,
        expected,
        'the host default route inherits them',
      );
      const upstream = model.upstreams['custom-default-backend-default-errors'];
      t.strictSame(upstream?.service, { namespace: 'default', name: 'errors', port: '8080' }, 'first port');
      t.strictSame(upstream?.endpoints, [{ address: '10.1.0.1', port: 8080 }]);
      t.ok(references.services.includes('default/errors'), 'the Service is a reference');
    },
  },
  {
    name: 'custom-http-errors: without the annotation the route has none (the ConfigMap list applies)',
    ingresses: [errorsSite('site', {})],
    check: (t, { model }) =>
      t.strictSame(model.servers[0]?.routes[0]?.annotations.customErrors, {
        codes: null,
        backend: null,
        disableIntercept: false,
      }),
  },
  {
    name: 'disable-proxy-intercept-errors: read as a bool; an invalid value keeps the default',
    ingresses: [
      errorsSite('on', { 'custom-http-errors': '404', 'disable-proxy-intercept-errors': 'true' }),
      errorsSite('bad', { 'disable-proxy-intercept-errors': 'sometimes' }),
    ],
    diagnostics: ['ANNOTATION_INVALID bad'],
    check: (t, { model }) => {
      const of = (host: string) =>
        model.servers.find((s) => s.hostname === host)?.routes[0]?.annotations.customErrors;
      t.match(of('on.com'), { codes: [404], disableIntercept: true });
      t.equal(of('bad.com')?.disableIntercept, false);
    },
  },
  {
    name: 'custom-http-errors: a code outside 400-599 drops the Ingress',
    ingresses: [errorsSite('site', { 'custom-http-errors': '404,302' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID site'],
    check: (t, { diagnostics }) => t.equal(diagnostics[0]?.severity, 'error'),
  },
  {
    name: 'default-backend: a value that is no Service name drops the Ingress',
    ingresses: [errorsSite('site', { 'default-backend': 'ns/errors' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID site'],
  },
  {
    name: 'default-backend: a missing Service is reported, the route still works',
    ingresses: [errorsSite('site', { 'default-backend': 'missing' })],
    routes: ['site.com Prefix / -> default-web-80 (site)'],
    diagnostics: ['ANNOTATION_INVALID site'],
    messages: ['names Service default/missing, which does not exist'],
    check: (t, { model, diagnostics }) => {
      t.equal(diagnostics[0]?.severity, 'warning');
      t.equal(model.upstreams['custom-default-backend-default-missing'], undefined);
    },
  },
]);
