// /debug/model for HTTPRoute routes: a compiled runtime of a model with an Ingress host that an
// HTTPRoute shares and a host only an HTTPRoute names, described. An HTTPRoute's route says its kind,
// rule, protocols and conditions (match values `***`), its weighted backends with their shares (a
// refused one as null) and its filters in words (header names only); an Ingress path's description
// is what it was (nothing added).
import t from 'tap';
import { createRuntimeCaches } from '../../lib/dataplane/caches.ts';
import { CertificateInfoCache } from '../../lib/dataplane/describe/certificates.ts';
import { describeRuntime } from '../../lib/dataplane/describe/describe-runtime.ts';
import { filtersInWords } from '../../lib/dataplane/describe/gateway-route.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import type { GatewayRouteMatch } from '../../lib/model/index.ts';
import { buildWithGraph, graphOf, listenerCertificate, plan } from '../model/gateway/helpers.ts';
import { ingress, path, pem, rule, tlsSecret } from '../model/helpers.ts';

const { model } = buildWithGraph(
  {
    ingresses: [ingress('shop', { rules: [rule('a.example.com', path('/cart', 'cart:80'))] })],
    secrets: [tlsSecret('gw-cert', pem('wildcard-example'), 'infra')],
  },
  graphOf(
    [
      plan('store', {
        created: 10,
        listeners: [
          { hostnames: ['a.example.com', 'gw.example.com'] },
          { protocol: 'HTTPS', hostnames: ['gw.example.com'] },
        ],
        rules: [
          {
            matches: [
              { path: '/api', method: 'POST', headers: ['x-beta=s3cr3t-h'], query: ['token=s3cr3t-q'] },
            ],
            backends: ['v1:80*3', 'v2:80*1', '!RefNotPermitted*4'],
            filters: [
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: {
                  set: [{ name: 'Authorization', value: 'Bearer s3cr3t-t' }],
                  remove: ['x-old'],
                },
              },
            ],
            mirrors: ['copy:80'],
          },
          {
            matches: [{ path: '/old', exact: true }],
            backends: [],
            filters: [
              { type: 'RequestRedirect', requestRedirect: { hostname: 'new.example.com', statusCode: 301 } },
            ],
          },
        ],
      }),
    ],
    [listenerCertificate('gw-cert', 'gw.example.com')],
  ),
);

const runtime = compileRuntime(model, null, {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { random: () => 0, now: () => 0 },
  ewmaStore: createEwmaStore(),
  caches: createRuntimeCaches(),
});
const description = describeRuntime(runtime, new CertificateInfoCache());
const host = (name: string) => description.hosts.find((h) => h.host === name);

t.test('an HTTPRoute route: kind, rule, conditions, weighted backends, filters in words', async (t) => {
  const route = host('a.example.com')?.routes.find((r) => r.path === '/api');
  t.match(route, {
    path: '/api',
    pathType: 'Prefix',
    ingress: 'default/store',
    kind: 'HTTPRoute',
    backend: 'weighted',
    canary: null,
    backends: [
      { backend: 'default-v1-80', weight: 3, share: 3 / 8 },
      { backend: 'default-v2-80', weight: 1, share: 1 / 8 },
      { backend: null, weight: 4, share: 4 / 8 },
    ],
    gateway: {
      rule: 0,
      protocols: 'http',
      listenerPorts: { http: 80, https: null },
      method: 'POST',
      headers: [{ name: 'x-beta', value: '***' }],
      queryParams: [{ name: 'token', value: '***' }],
      filters: ['request headers: set authorization, remove x-old', 'mirror 100% to default-copy-80'],
    },
  });
  t.notMatch(JSON.stringify(description), /s3cr3t/, 'no match value and no header value is shown');
  const redirect = host('gw.example.com')?.routes.find((r) => r.path === '/old');
  t.match(redirect, {
    pathType: 'Exact',
    backend: 'weighted',
    backends: [],
    gateway: { rule: 1, protocols: 'both', filters: ['redirect 301: hostname new.example.com'] },
  });
});

t.test('the host an HTTPRoute owns and its listener certificate; an Ingress path unchanged', async (t) => {
  const gw = host('gw.example.com');
  t.equal(gw?.ingress, 'default/store');
  t.equal(gw?.ingressKind, 'HTTPRoute');
  t.match(gw?.tls, { secret: 'infra/gw-cert', ingress: 'infra/gw', kind: 'Gateway' });
  t.match(gw?.defaultRoute, { ingress: null, backend: 'default-backend' });
  const shared = host('a.example.com');
  t.equal(shared?.ingress, 'default/shop');
  t.equal(shared?.ingressKind, undefined);
  const cart = shared?.routes.find((r) => r.path === '/cart');
  t.equal(cart?.backend, 'default-cart-80');
  for (const key of ['kind', 'backends', 'gateway']) t.notOk(cart !== undefined && key in cart, `no ${key}`);
});

t.test('filters in words', async (t) => {
  const none: GatewayRouteMatch = {
    rule: 0,
    protocols: 'both',
    listenerPorts: { http: 80, https: 443 },
    method: null,
    headers: [],
    queryParams: [],
    requestHeaders: null,
    responseHeaders: null,
    redirect: null,
    rewrite: null,
    mirrors: [],
  };
  const table: Array<[Partial<GatewayRouteMatch>, string[]]> = [
    [{}, []],
    [
      {
        redirect: {
          scheme: 'https',
          hostname: null,
          port: 8443,
          path: { type: 'ReplacePrefixMatch', value: '/v2' },
          statusCode: 302,
        },
      },
      ['redirect 302: scheme https, port 8443, matched prefix replaced by /v2'],
    ],
    [
      { rewrite: { hostname: 'in.example.com', path: { type: 'ReplaceFullPath', value: '/x' } } },
      ['rewrite: hostname in.example.com, path replaced by /x'],
    ],
    [
      {
        requestHeaders: { set: [], add: [{ name: 'x-a', value: 'v' }], remove: [] },
        responseHeaders: { set: [{ name: 'x-s', value: 'v' }], add: [], remove: ['server'] },
        mirrors: [{ upstream: 'm-80', percent: 10 }],
      },
      ['request headers: add x-a', 'mirror 10% to m-80', 'response headers: set x-s, remove server'],
    ],
  ];
  for (const [fields, words] of table) t.strictSame(filtersInWords({ ...none, ...fields }), words);
});
