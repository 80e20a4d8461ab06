// Service backends: port resolution, EndpointSlices, ExternalName, upstream sharing.
import t from 'tap';
import {
  externalNameService,
  ingress,
  path,
  rawPath,
  rawPaths,
  rule,
  runCases,
  service,
  slice,
} from './helpers.ts';

const one = (backend: string) => ingress('a', { rules: [rule('a.com', path('/', backend))] });
runCases(t, [
  {
    name: 'backends: a port number selects the Service port and its endpoints',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80, targetPort: 8080 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 8080 }])],
    routes: ['a.com Prefix / -> default-web-80 (a)'],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.0.0.1', port: 8080 }]),
  },
  {
    name: 'backends: a port name selects the Service port of that name',
    ingresses: [one('web:http')],
    services: [
      service('web', [
        { port: 9000, name: 'admin' },
        { port: 80, name: 'http', targetPort: 8080 },
      ]),
    ],
    slices: [
      slice(
        'web',
        [{ addresses: ['10.0.0.1'] }],
        [
          { port: 9000, name: 'admin' },
          { port: 8080, name: 'http' },
        ],
      ),
    ],
    routes: ['a.com Prefix / -> default-web-http (a)'],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-http']?.endpoints, [{ address: '10.0.0.1', port: 8080 }]),
  },
  {
    name: 'backends: a backend port equal to the targetPort matches too (ingress-nginx rule)',
    ingresses: [one('web:8080')],
    services: [service('web', [{ port: 80, targetPort: 8080 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 8080 }])],
    routes: ['a.com Prefix / -> default-web-8080 (a)'],
    check: (t, { model }) => t.equal(model.upstreams['default-web-8080']?.endpoints.length, 1),
  },
  {
    name: 'backends: a missing Service keeps the route with no endpoints',
    ingresses: [one('gone:80')],
    autoBackends: false,
    routes: ['a.com Prefix / -> default-gone-80 (a)'],
    diagnostics: ['SERVICE_NOT_FOUND a'],
    messages: ['Service default/gone not found'],
    check: (t, { model }) => t.strictSame(model.upstreams['default-gone-80']?.endpoints, []),
  },
  {
    name: 'backends: a Service without the port keeps the route with no endpoints',
    ingresses: [one('web:81')],
    services: [service('web', [{ port: 80 }])],
    routes: ['a.com Prefix / -> default-web-81 (a)'],
    diagnostics: ['SERVICE_PORT_NOT_FOUND a'],
  },
  {
    name: 'backends: a Service with no EndpointSlice has no endpoints',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    diagnostics: ['ENDPOINTS_NONE a'],
    check: (t, { model }) => t.strictSame(model.upstreams['default-web-80']?.endpoints, []),
  },
  {
    name: 'backends: endpoints with ready=false are skipped; ready unset counts as ready',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [
      slice(
        'web',
        [
          { addresses: ['10.0.0.3'], ready: false },
          { addresses: ['10.0.0.2'] },
          { addresses: ['10.0.0.1'], ready: true },
        ],
        [{ port: 80 }],
      ),
    ],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [
        { address: '10.0.0.1', port: 80 },
        { address: '10.0.0.2', port: 80 },
      ]),
  },
  {
    name: 'backends: endpoints of several slices are merged, deduplicated and sorted',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [
      slice('web', [{ addresses: ['10.0.0.9', '10.0.0.2'] }], [{ port: 80 }], { name: 'web-1' }),
      slice('web', [{ addresses: ['10.0.0.2'] }, { addresses: ['10.0.0.1'] }], [{ port: 80 }], {
        name: 'web-2',
      }),
    ],
    check: (t, { model }) =>
      t.strictSame(
        model.upstreams['default-web-80']?.endpoints.map((e) => e.address),
        ['10.0.0.1', '10.0.0.2', '10.0.0.9'],
      ),
  },
  {
    name: 'backends: a named Service port whose name no slice port has falls back to an integer targetPort',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80, name: 'http', targetPort: 8081 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 9999, name: 'other' }])],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.0.0.1', port: 8081 }]),
  },
  {
    name: 'backends: an unnamed Service port takes every TCP slice port, never UDP ones',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [
      slice(
        'web',
        [{ addresses: ['10.0.0.1'] }],
        [{ port: 53, protocol: 'UDP' }, { port: 8080 }, { port: 8443 }],
      ),
    ],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [
        { address: '10.0.0.1', port: 8080 },
        { address: '10.0.0.1', port: 8443 },
      ]),
  },
  {
    name: 'backends: a slice without ports uses an integer targetPort',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80, targetPort: 3000 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [])],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.0.0.1', port: 3000 }]),
  },
  {
    name: 'backends: slices of another Service or namespace are not used',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [
      slice('webber', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }]),
      slice('web', [{ addresses: ['10.0.0.2'] }], [{ port: 80 }], { namespace: 'other' }),
    ],
    diagnostics: ['ENDPOINTS_NONE a'],
  },
  {
    name: 'backends: IPv6 endpoint addresses are kept as written',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [slice('web', [{ addresses: ['fd00::1'] }], [{ port: 80 }])],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: 'fd00::1', port: 80 }]),
  },
  {
    name: 'backends: an ExternalName Service becomes one DNS endpoint',
    ingresses: [one('ext:443')],
    services: [externalNameService('ext', 'api.example.org', { ports: [{ port: 443 }] })],
    check: (t, { model }) => {
      t.equal(model.upstreams['default-ext-443']?.externalName, true);
      t.strictSame(model.upstreams['default-ext-443']?.endpoints, [
        { address: 'api.example.org', port: 443 },
      ]);
    },
  },
  {
    name: 'backends: an ExternalName Service without ports uses the backend port number',
    ingresses: [one('ext:8443')],
    services: [externalNameService('ext', 'api.example.org.')],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-ext-8443']?.endpoints, [
        { address: 'api.example.org.', port: 8443 },
      ]),
  },
  {
    name: 'backends: an ExternalName pointing at localhost is refused',
    ingresses: [one('ext:80')],
    services: [externalNameService('ext', 'localhost', { ports: [{ port: 80 }] })],
    diagnostics: ['EXTERNAL_NAME_INVALID a'],
  },
  {
    name: 'backends: an ExternalName pointing at a loopback IP or a bad name is refused',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/1', 'loop:80'), path('/2', 'bad:80'))] })],
    services: [
      externalNameService('loop', '127.0.0.5', { ports: [{ port: 80 }] }),
      externalNameService('bad', 'not a host', { ports: [{ port: 80 }] }),
    ],
    diagnostics: ['EXTERNAL_NAME_INVALID a', 'EXTERNAL_NAME_INVALID a'],
  },
  {
    name: 'backends: --disable-svc-external-name leaves ExternalName upstreams empty',
    ingresses: [one('ext:80')],
    services: [externalNameService('ext', 'api.example.org', { ports: [{ port: 80 }] })],
    options: { disableSvcExternalName: true },
    diagnostics: ['EXTERNAL_NAME_DISABLED a'],
  },
  {
    name: 'backends: a resource backend is refused, the other paths stay',
    ingresses: [
      rawPaths('a', 'a.com', [
        rawPath('/bucket', { resource: { kind: 'StorageBucket', name: 'b' } }),
        rawPath('/'),
      ]),
    ],
    routes: ['a.com Prefix / -> default-web-80 (a)'],
    diagnostics: ['BACKEND_INVALID a'],
    messages: ['resource backend'],
  },
  {
    name: 'backends: a backend port outside 1-65535 or missing is refused',
    ingresses: [
      rawPaths('a', 'a.com', [
        rawPath('/zero', { service: { name: 'web', port: { number: 0 } } }),
        rawPath('/none', { service: { name: 'web' } }),
        rawPath('/nosvc', {}),
      ]),
    ],
    routes: [],
    diagnostics: ['BACKEND_INVALID a', 'BACKEND_INVALID a', 'BACKEND_INVALID a'],
  },
  {
    name: 'backends: Ingresses naming the same Service and port share one upstream',
    ingresses: [
      ingress('a', { created: 1, rules: [rule('a.com', path('/', 'web:80'))] }),
      ingress('b', { created: 2, rules: [rule('b.com', path('/', 'web:80'))] }),
    ],
    check: (t, { model }) => t.strictSame(Object.keys(model.upstreams), ['default-web-80']),
  },
  {
    // ingress-nginx sorts its backends by name too; first-use order would shift when one path moves
    name: 'backends: upstreams are keyed in name order, not in the order paths first use them',
    ingresses: [
      ingress('a', { created: 1, rules: [rule('a.com', path('/', 'zeta:80'), path('/b', 'alpha:80'))] }),
      ingress('b', { created: 2, rules: [rule('b.com', path('/', 'mid:80'))] }),
    ],
    check: (t, { model }) =>
      t.strictSame(Object.keys(model.upstreams), ['default-alpha-80', 'default-mid-80', 'default-zeta-80']),
  },
  {
    name: 'backends: the same Service by number and by name gives two upstreams',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/n', 'web:80'), path('/s', 'web:http'))] })],
    services: [service('web', [{ port: 80, name: 'http' }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 80, name: 'http' }])],
    check: (t, { model }) =>
      t.strictSame(Object.keys(model.upstreams), ['default-web-80', 'default-web-http']),
  },
  {
    name: 'backends: upstreams of paths that lost a conflict are not built',
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.com', path('/', 'old:80'))] }),
      ingress('new', { created: 2, rules: [rule('a.com', path('/', 'missing:80'))] }),
    ],
    services: [service('old', [{ port: 80 }])],
    slices: [slice('old', [{ addresses: ['10.0.0.1'] }], [{ port: 80 }])],
    autoBackends: false,
    diagnostics: ['PATH_CONFLICT new'],
    check: (t, { model }) => t.strictSame(Object.keys(model.upstreams), ['default-old-80']),
  },

  {
    name: 'backends: the first Service port that matches wins (targetPort of the first over port of the second)',
    ingresses: [one('web:8080')],
    services: [
      service('web', [
        { port: 80, targetPort: 8080, name: 'http' },
        { port: 8080, targetPort: 9090, name: 'admin' },
      ]),
    ],
    slices: [
      slice(
        'web',
        [{ addresses: ['10.0.0.1'] }],
        [
          { port: 8080, name: 'http' },
          { port: 9090, name: 'admin' },
        ],
      ),
    ],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-8080']?.endpoints, [{ address: '10.0.0.1', port: 8080 }]),
  },
  {
    name: 'backends: an unnamed Service port takes a named slice port too',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [slice('web', [{ addresses: ['10.0.0.1'] }], [{ port: 8080, name: 'http' }])],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [{ address: '10.0.0.1', port: 8080 }]),
  },
  {
    name: 'backends: each slice port whose name differs falls back to an integer targetPort',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80, name: 'http', targetPort: 8080 }])],
    slices: [
      slice(
        'web',
        [{ addresses: ['10.0.0.1'] }],
        [
          { port: 9000, name: 'admin' },
          { port: 8081, name: 'http' },
        ],
      ),
    ],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-web-80']?.endpoints, [
        { address: '10.0.0.1', port: 8080 },
        { address: '10.0.0.1', port: 8081 },
      ]),
  },
  {
    name: 'backends: only TCP slice ports are used, whatever the Service port protocol says',
    ingresses: [one('dns:53')],
    services: [service('dns', [{ port: 53, protocol: 'UDP' }])],
    slices: [slice('dns', [{ addresses: ['10.0.0.1'] }], [{ port: 5353, protocol: 'UDP' }, { port: 8053 }])],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-dns-53']?.endpoints, [{ address: '10.0.0.1', port: 8053 }]),
  },
  {
    name: 'backends: every spelling of a local address is refused as ExternalName',
    ingresses: [
      ingress('a', {
        rules: [
          rule(
            'a.com',
            ...['v6', 'short', 'mapped', 'any4', 'any6', 'dot', 'sub'].map((name) =>
              path(`/${name}`, `${name}:80`),
            ),
          ),
        ],
      }),
    ],
    services: [
      externalNameService('v6', '::1', { ports: [{ port: 80 }] }),
      externalNameService('short', '0::1', { ports: [{ port: 80 }] }),
      externalNameService('mapped', '::ffff:127.0.0.1', { ports: [{ port: 80 }] }),
      externalNameService('any4', '0.0.0.0', { ports: [{ port: 80 }] }),
      externalNameService('any6', '::', { ports: [{ port: 80 }] }),
      externalNameService('dot', 'localhost.', { ports: [{ port: 80 }] }),
      externalNameService('sub', 'api.localhost', { ports: [{ port: 80 }] }),
    ],
    diagnostics: Array.from({ length: 7 }, () => 'EXTERNAL_NAME_INVALID a'),
  },
  {
    name: 'backends: an ExternalName may be a remote IP address',
    ingresses: [one('ext:80')],
    services: [externalNameService('ext', '192.0.2.10', { ports: [{ port: 80 }] })],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-ext-80']?.endpoints, [{ address: '192.0.2.10', port: 80 }]),
  },
  {
    name: 'backends: an ExternalName Service port with a targetPort sends to the targetPort',
    ingresses: [one('ext:80')],
    services: [externalNameService('ext', 'api.example.org', { ports: [{ port: 80, targetPort: 8080 }] })],
    check: (t, { model }) =>
      t.strictSame(model.upstreams['default-ext-80']?.endpoints, [
        { address: 'api.example.org', port: 8080 },
      ]),
  },
  {
    name: 'backends: two paths to the same missing Service report it once',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/1', 'gone:80'), path('/2', 'gone:80'))] })],
    autoBackends: false,
    diagnostics: ['SERVICE_NOT_FOUND a'],
  },

  {
    name: 'backends: an ExternalName Service without ports cannot resolve a named backend port',
    ingresses: [one('ext:https')],
    services: [externalNameService('ext', 'api.example.org')],
    diagnostics: ['SERVICE_PORT_NOT_FOUND a'],
    check: (t, { model }) => t.strictSame(model.upstreams['default-ext-https']?.endpoints, []),
  },

  {
    name: 'backends: more than 16 endpoints are sorted and deduplicated too',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [
      slice(
        'web',
        [{ addresses: Array.from({ length: 17 }, (_, i) => `10.0.0.${26 - i}`) }],
        [{ port: 80 }],
        { name: 'web-a' },
      ),
      slice('web', [{ addresses: ['10.0.0.26'] }], [{ port: 80 }], { name: 'web-b' }),
    ],
    check: (t, { model }) =>
      t.strictSame(
        model.upstreams['default-web-80']?.endpoints,
        Array.from({ length: 17 }, (_, i) => ({ address: `10.0.0.${10 + i}`, port: 80 })),
      ),
  },
  {
    name: 'backends: a slice port without a port number gives no endpoint',
    ingresses: [one('web:80')],
    services: [service('web', [{ port: 80 }])],
    slices: [{ ...slice('web', [{ addresses: ['10.0.0.1'] }], []), ports: [{ protocol: 'TCP' }] }],
    diagnostics: ['ENDPOINTS_NONE a'],
    check: (t, { model }) => t.strictSame(model.upstreams['default-web-80']?.endpoints, []),
  },
]);
