// What /debug/model reads of the objects of the last build, as tables: annotation values as shown
// (a credential never: snippets, URL userinfo and query values, names that say so), the Ingresses
// of this controller's classes, and the not-ready endpoints of each backend's Service.
import t from 'tap';
import { describeIngresses, notReadyEndpoints, redactAnnotation } from '../lib/debug-objects.ts';
import { buildModel, DEFAULT_MODEL_OPTIONS } from '../lib/model/index.ts';
import { ingress, path, rule, snapshotOf } from './model/helpers.ts';

const TOKEN = 'tok-3f9a1c';

t.test('annotation values that may carry a credential are redacted', async (t) => {
  const table: Array<[name: string, value: string, shown: string]> = [
    ['configuration-snippet', `more_set_input_headers "Authorization: Bearer ${TOKEN}";`, '***'],
    ['server-snippet', `add_header X-Key ${TOKEN};`, '***'],
    ['auth-snippet', `proxy_set_header X-Token ${TOKEN};`, '***'],
    ['stream-snippet', 'x', '***'],
    ['auth-url', `https://user:${TOKEN}@auth.test/check?key=${TOKEN}`, 'https://***@auth.test/check?key=***'],
    [
      'auth-url',
      'http://auth.svc/verify?rd=$escaped_request_uri',
      'http://auth.svc/verify?rd=$escaped_request_uri',
    ],
    ['auth-signin', `https://login.test/start?token=${TOKEN}`, 'https://login.test/start?token=***'],
    ['auth-request-redirect', `https://u:${TOKEN}@x.test/`, 'https://***@x.test/'],
    ['mirror-target', `https://m.test/$request_uri?k=${TOKEN}`, 'https://m.test/$request_uri?k=***'],
    ['permanent-redirect', `https://${TOKEN}@n.test/`, 'https://***@n.test/'],
    ['upstream-api-token', TOKEN, '***'],
    ['x-password', TOKEN, '***'],
    ['my-apikey', TOKEN, '***'],
    ['client-credentials', TOKEN, '***'],
    // a canary header's value is a shared secret for beta access; a pattern spells the values out
    ['canary-by-header-value', TOKEN, '***'],
    ['canary-by-header-pattern', `^(${TOKEN}|other)$`, '***'],
    ['canary-by-header', 'X-Beta', 'X-Beta'],
    // any other value: its URL-looking words
    ['upstream-vhost', `user:${TOKEN}@backend.test`, '***@backend.test'],
    [
      'custom-note',
      `see https://wiki.test/page?session=${TOKEN} please`,
      'see https://wiki.test/page?session=*** please',
    ],
    // what is no credential stays as written
    ['load-balance', 'ewma', 'ewma'],
    ['auth-secret', 'ns/basic-users', 'ns/basic-users'],
    ['auth-tls-secret', 'ns/ca', 'ns/ca'],
    ['canary-weight', '20', '20'],
    ['rewrite-target', '/$2', '/$2'],
    ['configuration-snippet', '', ''],
  ];
  for (const [name, value, shown] of table) {
    const got = redactAnnotation(name, value);
    t.equal(got, shown, `${name}: ${value}`);
    t.notOk(got.includes(TOKEN), `${name}: no token`);
  }
});

t.test('the Ingresses of this controller, with their prefixed annotations, creation and class', async (t) => {
  const ours = ingress('site', {
    namespace: 'ns',
    annotations: {
      'nginx.ingress.kubernetes.io/ssl-redirect': 'false',
      'nginx.ingress.kubernetes.io/server-snippet': `return 200 ${TOKEN};`,
      'example.com/team': 'web',
    },
    rules: [rule('a.test', path('/', 'web'))],
  });
  const legacy = ingress('legacy', {
    namespace: 'ns',
    className: null,
    annotations: { 'kubernetes.io/ingress.class': 'ingress-ts', 'custom.io/rewrite-target': '/' },
    rules: [rule('b.test', path('/', 'web'))],
  });
  const theirs = ingress('theirs', {
    namespace: 'ns',
    className: 'nginx',
    rules: [rule('c.test', path('/', 'web'))],
  });
  const objects = snapshotOf({ ingresses: [ours, legacy, theirs] });
  const described = describeIngresses(objects, DEFAULT_MODEL_OPTIONS);
  t.strictSame(Object.keys(described), ['ns/legacy', 'ns/site'], 'sorted; another class is left out');
  t.strictSame(described['ns/site']?.annotations, {
    'nginx.ingress.kubernetes.io/server-snippet': '***',
    'nginx.ingress.kubernetes.io/ssl-redirect': 'false',
  });
  t.equal(described['ns/site']?.class, 'ingress-ts');
  t.equal(described['ns/legacy']?.class, 'ingress-ts', 'the legacy annotation names it');
  t.strictSame(described['ns/legacy']?.annotations, {});
  t.equal(typeof described['ns/site']?.created, 'string');

  const custom = describeIngresses(objects, { ...DEFAULT_MODEL_OPTIONS, annotationsPrefix: 'custom.io' });
  t.strictSame(custom['ns/legacy']?.annotations, { 'custom.io/rewrite-target': '/' }, '--annotations-prefix');
});

t.test('not-ready endpoints: the slices of the Service port, less those served', async (t) => {
  const objects = snapshotOf({
    autoBackends: false,
    ingresses: [
      ingress('site', { namespace: 'ns', rules: [rule('a.test', path('/', 'web'), path('/x', 'named'))] }),
    ],
    services: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'ns' },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    ],
    slices: [
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'web-a', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [
          { addresses: ['10.0.0.1'], conditions: { ready: true } },
          { addresses: ['10.0.0.3'], conditions: { ready: false } },
          { addresses: ['10.0.0.2'], conditions: { ready: false, terminating: true } },
          { addresses: ['10.0.0.4'], conditions: { ready: false } },
        ],
      },
      {
        // the same address ready in another slice: served, not listed
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'web-b', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.4'] }, { addresses: ['fd00::5'], conditions: { ready: false } }],
      },
    ],
  });
  const { model } = buildModel(objects, {});
  t.strictSame(
    model.upstreams['ns-web-80']?.endpoints.map((e) => e.address),
    ['10.0.0.1', '10.0.0.4'],
  );
  const notReady = notReadyEndpoints(objects, model);
  t.strictSame([...notReady], [['ns-web-80', ['10.0.0.2:8080', '10.0.0.3:8080', '[fd00::5]:8080']]]);
  t.notOk(notReady.has('ns-named-80'), 'a Service that does not exist has nothing to list');
});
