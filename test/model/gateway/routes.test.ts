// addGatewayRoutes: hand-made GatewayGraphs (as resolveGateways would give them) and Ingresses in,
// servers and routes out. Route lines: `host Type path -> backends (object) [#rule protocols
// conditions]`, weighted backends as `upstream*weight`, a refused one as `500*weight`.
import t, { type Test } from 'tap';
import {
  type BuildResult,
  DEFAULT_MODEL_OPTIONS,
  ingressVerdicts,
  type ModelOptions,
} from '../../../lib/model/index.ts';
import { defaultLines, diagnosticLines, ingress, ingressClass, path, routeLines, rule } from '../helpers.ts';
import { buildWithGraph, type GatewayWorld, graphOf, type PlanSpec, plan } from './helpers.ts';

interface Case extends GatewayWorld {
  name: string;
  plans: Array<[string, PlanSpec]>;
  /** Services the plans name that do not exist */
  missing?: string[];
  routes: string[];
  defaults?: string[];
  diagnostics?: string[];
  options?: Partial<ModelOptions>;
  check?: (t: Test, result: BuildResult) => void;
}

const a = (hostnames: string[], extra: Partial<NonNullable<PlanSpec['listeners']>[number]> = {}) => ({
  hostnames,
  ...extra,
});

const cases: Case[] = [
  {
    name: 'a host only an HTTPRoute names: its server, the default backend for what no rule matches',
    ingresses: [],
    plans: [['r1', { listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/app' }] }] }]],
    routes: ['a.com Prefix /app -> default-web-80*1 (HTTPRoute:r1) [#0 http]'],
    defaults: ['a.com -> default (-)', '_ -> default (-)'],
    check: (t, { model }) => {
      t.strictSame(model.servers[0]?.ingress, { namespace: 'default', name: 'r1', kind: 'HTTPRoute' });
      t.equal(
        model.upstreams['default-web-80']?.endpoints.length,
        1,
        'the Service resolved as for an Ingress',
      );
    },
  },
  {
    name: 'no hostname on either side: the catch-all server',
    ingresses: [],
    plans: [['r1', { rules: [{ matches: [{ path: '/x', exact: true }] }] }]],
    routes: ['_ Exact /x -> default-web-80*1 (HTTPRoute:r1) [#0 http]'],
  },
  {
    name: 'each match of each rule is a route; the first HTTPRoute naming a host owns its server',
    ingresses: [],
    plans: [
      [
        'r1',
        {
          created: 0,
          listeners: [a(['a.com', 'b.com'])],
          rules: [{ matches: [{ path: '/one' }, { path: '/two', exact: true }] }, { backends: ['api:8080'] }],
        },
      ],
      ['r2', { created: 1, listeners: [a(['b.com'])], rules: [{ matches: [{ path: '/zero' }] }] }],
    ],
    routes: [
      'a.com Exact /two -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
      'a.com Prefix /one -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
      'a.com Prefix / -> default-api-8080*1 (HTTPRoute:r1) [#1 http]',
      'b.com Prefix /zero -> default-web-80*1 (HTTPRoute:r2) [#0 http]',
      'b.com Exact /two -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
      'b.com Prefix /one -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
      'b.com Prefix / -> default-api-8080*1 (HTTPRoute:r1) [#1 http]',
    ],
    check: (t, { model }) => {
      t.equal(
        model.servers[1]?.ingress?.name,
        'r1',
        'the graph lists plans oldest first: r1 came first here',
      );
    },
  },
  {
    name: 'a host of an Ingress and an HTTPRoute: one server, the Ingress keeps it and its default route',
    ingresses: [
      ingress('ing', {
        created: 1,
        defaultBackend: 'fallback:80',
        rules: [rule('a.com', path('/app', 'app:80'))],
      }),
    ],
    plans: [['r1', { created: 2, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/api' }] }] }]],
    routes: [
      'a.com Prefix /app -> default-app-80 (ing)',
      'a.com Prefix /api -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
    ],
    defaults: ['a.com -> default-fallback-80 (ing)', '_ -> default (-)'],
    check: (t, { model }) => t.equal(model.servers[0]?.ingress?.name, 'ing'),
  },
  {
    name: 'one rule on one host through an HTTP and an HTTPS listener (two Gateways): one route, both',
    ingresses: [],
    plans: [
      [
        'r1',
        {
          listeners: [
            a(['a.com']),
            a(['a.com'], { gateway: 'gw2', protocol: 'HTTPS', port: 8443 }),
            a(['b.com'], { protocol: 'HTTPS' }),
            a(['a.com'], { gateway: 'gw3', port: 8080 }),
          ],
        },
      ],
    ],
    routes: [
      'a.com Prefix / -> default-web-80*1 (HTTPRoute:r1) [#0 both]',
      'b.com Prefix / -> default-web-80*1 (HTTPRoute:r1) [#0 https]',
    ],
    check: (t, { model }) => {
      t.strictSame(
        model.servers[0]?.routes[0]?.gateway?.listenerPorts,
        { http: 80, https: 8443 },
        'first port',
      );
      t.strictSame(model.servers[1]?.routes[0]?.gateway?.listenerPorts, { http: null, https: 443 });
    },
  },
  // precedence: routes matching the same requests by path are tried in this order
  {
    name: 'Exact and Prefix, longest first; the same path with 2, 1 and 0 header matches, most first',
    ingresses: [],
    plans: [
      ['none', { created: 1, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }],
      [
        'one',
        { created: 2, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p', headers: ['x-a=1'] }] }] },
      ],
      [
        'two',
        {
          created: 3,
          listeners: [a(['a.com'])],
          rules: [
            {
              matches: [
                { path: '/p', headers: ['x-a=1', 'x-b=2'] },
                { path: '/p/q', exact: true },
              ],
            },
          ],
        },
      ],
    ],
    routes: [
      'a.com Exact /p/q -> default-web-80*1 (HTTPRoute:two) [#0 http]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:two) [#0 http h:x-a=1 h:x-b=2]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:one) [#0 http h:x-a=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:none) [#0 http]',
    ],
  },
  {
    name: 'a method match before header matches; header matches before query matches',
    ingresses: [],
    plans: [
      [
        'r',
        {
          listeners: [a(['a.com'])],
          rules: [
            { matches: [{ path: '/p', query: ['q=1', 'r=2', 's=3'] }] },
            { matches: [{ path: '/p', headers: ['x-a=1'] }] },
            { matches: [{ path: '/p', method: 'get' }] },
          ],
        },
      ],
    ],
    routes: [
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:r) [#2 http GET]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:r) [#1 http h:x-a=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:r) [#0 http q:q=1 q:r=2 q:s=3]',
    ],
  },
  {
    name: 'an older Ingress path wins its path: a newer HTTPRoute match there is left out, with or without conditions',
    ingresses: [ingress('ing', { created: 1, rules: [rule('a.com', path('/p', 'app:80'))] })],
    plans: [
      [
        'r',
        {
          created: 2,
          listeners: [a(['a.com'])],
          rules: [{ matches: [{ path: '/p' }, { path: '/p/', method: 'GET' }, { path: '/p', exact: true }] }],
        },
      ],
    ],
    routes: [
      'a.com Exact /p -> default-web-80*1 (HTTPRoute:r) [#0 http]',
      'a.com Prefix /p -> default-app-80 (ing)',
    ],
    // one per match left out: /p and /p/
    diagnostics: ['HTTPROUTE_PATH_TAKEN HTTPRoute:default/r', 'HTTPROUTE_PATH_TAKEN HTTPRoute:default/r'],
  },
  {
    name: 'older HTTPRoutes before a newer Ingress path, conditions first among them; a newer one is left out',
    ingresses: [ingress('ing', { created: 5, rules: [rule('a.com', path('/p', 'app:80'))] })],
    plans: [
      ['old', { created: 2, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }],
      [
        'cond',
        { created: 3, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p', headers: ['x=1'] }] }] },
      ],
      [
        'new',
        { created: 9, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p', method: 'GET' }] }] },
      ],
    ],
    routes: [
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:cond) [#0 http h:x=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:old) [#0 http]',
      'a.com Prefix /p -> default-app-80 (ing)',
    ],
    diagnostics: ['HTTPROUTE_PATH_TAKEN HTTPRoute:default/new'],
  },
  {
    name: 'the same second: namespace/name; in one HTTPRoute: rule order, then match order',
    ingresses: [],
    plans: [
      [
        'c',
        {
          created: 0,
          listeners: [a(['a.com'])],
          rules: [
            {
              matches: [
                { path: '/p', headers: ['x=1'] },
                { path: '/p', headers: ['y=1'] },
              ],
            },
            { matches: [{ path: '/p', headers: ['x=2'] }] },
          ],
        },
      ],
      ['a', { created: 1, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }],
      ['b', { created: 1, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }],
    ],
    routes: [
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:c) [#0 http h:x=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:c) [#0 http h:y=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:c) [#1 http h:x=2]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:a) [#0 http]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:b) [#0 http]',
    ],
  },
  {
    name: 'a trailing slash matches the same requests: /p/ and /p are ordered as one path',
    ingresses: [ingress('ing', { created: 3, rules: [rule('a.com', path('/p/', 'app:80'))] })],
    plans: [
      ['r1', { created: 1, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }],
      [
        'r2',
        { created: 2, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p/', headers: ['x=1'] }] }] },
      ],
    ],
    routes: [
      'a.com Prefix /p/ -> default-web-80*1 (HTTPRoute:r2) [#0 http h:x=1]',
      'a.com Prefix /p -> default-web-80*1 (HTTPRoute:r1) [#0 http]',
      'a.com Prefix /p/ -> default-app-80 (ing)',
    ],
  },
  {
    name: 'two Ingresses with one host and path stay a conflict beside an HTTPRoute',
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.com', path('/p', 'app:80'))] }),
      ingress('young', { created: 3, rules: [rule('a.com', path('/p', 'other:80'))] }),
    ],
    plans: [['r', { created: 2, listeners: [a(['a.com'])], rules: [{ matches: [{ path: '/p' }] }] }]],
    routes: ['a.com Prefix /p -> default-app-80 (old)'],
    diagnostics: ['HTTPROUTE_PATH_TAKEN HTTPRoute:default/r', 'PATH_CONFLICT young'],
  },
  {
    name: 'regex mode (an Ingress of the host uses use-regex): the Ingress regex routes first, then HTTPRoute routes as written',
    ingresses: [
      ingress('ing', {
        created: 0,
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.com', path('/v[0-9]+', 'app:80', 'ImplementationSpecific'), path('/a', 'app:80'))],
      }),
    ],
    plans: [
      [
        'r',
        {
          created: 1,
          listeners: [a(['a.com'])],
          rules: [{ matches: [{ path: '/(' }, { path: '/v1', headers: ['x=1'] }] }],
        },
      ],
    ],
    routes: [
      'a.com Prefix /v[0-9]+ -> default-app-80 (ing)',
      'a.com Prefix /a -> default-app-80 (ing)',
      'a.com Prefix /v1 -> default-web-80*1 (HTTPRoute:r) [#0 http h:x=1]',
      'a.com Prefix /( -> default-web-80*1 (HTTPRoute:r) [#0 http]',
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, true),
  },
  {
    name: "an HTTPRoute's / does not replace the root location, never makes a host regex",
    ingresses: [
      ingress('ing', {
        created: 0,
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.com', path('/x', 'app:80', 'Exact'))],
      }),
    ],
    plans: [['r', { created: 1, listeners: [a(['a.com', 'b.com'])] }]],
    routes: [
      'a.com Exact /x -> default-app-80 (ing)',
      'a.com Prefix / -> default-web-80*1 (HTTPRoute:r) [#0 http]',
      'b.com Prefix / -> default-web-80*1 (HTTPRoute:r) [#0 http]',
    ],
    check: (t, { model }) => {
      t.equal(model.servers[0]?.regex, true, 'the Ingress root placeholder still counts');
      t.equal(model.servers[1]?.regex, false);
    },
  },
  // backends and filters
  {
    name: 'weighted backends: refused refs answer 500 for their share; none: every request 500',
    ingresses: [],
    plans: [
      [
        'r',
        {
          listeners: [a(['a.com'])],
          rules: [
            { matches: [{ path: '/w' }], backends: ['web:80*3', '!BackendNotFound*1', 'api:8080*0'] },
            { matches: [{ path: '/none' }], backends: [] },
            { matches: [{ path: '/gone' }], backends: ['gone:80'] },
          ],
        },
      ],
    ],
    missing: ['gone'],
    routes: [
      'a.com Prefix /none -> 500 (HTTPRoute:r) [#1 http]',
      'a.com Prefix /gone -> default-gone-80*1 (HTTPRoute:r) [#2 http]',
      'a.com Prefix /w -> default-web-80*3|500*1|default-api-8080*0 (HTTPRoute:r) [#0 http]',
    ],
    diagnostics: ['SERVICE_NOT_FOUND HTTPRoute:default/r'],
  },
  {
    name: 'a canary Ingress never attaches to an HTTPRoute route',
    ingresses: [
      ingress('canary', {
        created: 2,
        nginx: { canary: 'true', 'canary-weight': '50' },
        rules: [rule('a.com', path('/', 'next:80'))],
      }),
    ],
    plans: [['r', { created: 1, listeners: [a(['a.com'])] }]],
    routes: ['a.com Prefix / -> default-web-80*1 (HTTPRoute:r) [#0 http]'],
    diagnostics: ['CANARY_NO_MAIN canary'],
  },
  {
    name: 'a server-alias naming an HTTPRoute host is dropped; an HTTPRoute host gets no alias',
    ingresses: [
      ingress('ing', {
        created: 0,
        nginx: { 'server-alias': 'b.com' },
        rules: [rule('a.com', path('/', 'app:80'))],
      }),
    ],
    plans: [['r', { created: 1, listeners: [a(['b.com'])] }]],
    routes: [
      'a.com Prefix / -> default-app-80 (ing)',
      'b.com Prefix / -> default-web-80*1 (HTTPRoute:r) [#0 http]',
    ],
    diagnostics: ['ALIAS_CONFLICT ing'],
  },
  {
    name: 'ssl-passthrough on a host with an HTTPRoute /: TLS goes to the default route',
    options: { enableSslPassthrough: true },
    ingresses: [
      ingress('ing', {
        created: 0,
        nginx: { 'ssl-passthrough': 'true' },
        rules: [rule('a.com', path('/x', 'app:80'))],
      }),
    ],
    plans: [['r', { created: 1, listeners: [a(['a.com'])] }]],
    routes: [
      'a.com Prefix /x -> default-app-80 (ing)',
      'a.com Prefix / -> default-web-80*1 (HTTPRoute:r) [#0 http]',
    ],
    check: (t, { model }) => t.strictSame(model.servers[0]?.passthrough?.backend, { type: 'default' }),
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const graph = graphOf(c.plans.map(([name, spec]) => plan(name, spec)));
    const result = buildWithGraph(c, graph, c.options, c.missing);
    t.strictSame(routeLines(result.model), c.routes, 'routes');
    if (c.defaults !== undefined) t.strictSame(defaultLines(result.model), c.defaults, 'default routes');
    t.strictSame(diagnosticLines(result), [...(c.diagnostics ?? [])].sort(), 'diagnostics');
    c.check?.(t, result);
  });
}

t.test('what every HTTPRoute route carries: no canary, no affinity, ssl-redirect off', async (t) => {
  const graph = graphOf([plan('r', { listeners: [a(['a.com'])] })]);
  const { model } = buildWithGraph({ ingresses: [] }, graph);
  const route = model.servers[0]?.routes[0];
  t.equal(route?.canary, null);
  t.equal(route?.setsAffinityCookie, false);
  t.equal(route?.pathTypeAsWritten, 'Prefix');
  t.match(route?.annotations.sslRedirect, { sslRedirect: false, forceSslRedirect: false });
  t.match(model.servers[0]?.defaultRoute.annotations.sslRedirect, {
    sslRedirect: false,
    forceSslRedirect: false,
  });
});

t.test(
  'filters: header edits lower-cased, the redirect with its default 302, rewrite, mirrors',
  async (t) => {
    const graph = graphOf([
      plan('r', {
        listeners: [a(['a.com'])],
        rules: [
          {
            matches: [{ path: '/r' }],
            backends: [],
            filters: [
              {
                type: 'RequestRedirect',
                requestRedirect: {
                  hostname: 'b.com',
                  path: { type: 'ReplaceFullPath', replaceFullPath: '/x' },
                },
              },
            ],
          },
          {
            filters: [
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: {
                  set: [{ name: 'X-Set', value: 'v' }],
                  add: [{ name: 'X-Add', value: 'w' }],
                  remove: ['X-Gone'],
                },
              },
              {
                type: 'ResponseHeaderModifier',
                responseHeaderModifier: { add: [{ name: 'X-Out', value: 'o' }] },
              },
              {
                type: 'URLRewrite',
                urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' } },
              },
              { type: 'RequestMirror', requestMirror: { backendRef: { name: 'copy', port: 9090 } } },
            ],
            mirrors: ['copy:9090'],
          },
        ],
      }),
    ]);
    const { model } = buildWithGraph({ ingresses: [] }, graph);
    const [redirect, edits] = [model.servers[0]?.routes[0]?.gateway, model.servers[0]?.routes[1]?.gateway];
    t.strictSame(redirect?.redirect, {
      scheme: null,
      hostname: 'b.com',
      port: null,
      path: { type: 'ReplaceFullPath', value: '/x' },
      statusCode: 302,
    });
    t.strictSame(edits?.requestHeaders, {
      set: [{ name: 'x-set', value: 'v' }],
      add: [{ name: 'x-add', value: 'w' }],
      remove: ['x-gone'],
    });
    t.strictSame(edits?.responseHeaders, { set: [], add: [{ name: 'x-out', value: 'o' }], remove: [] });
    t.strictSame(edits?.rewrite, { hostname: null, path: { type: 'ReplacePrefixMatch', value: '/new' } });
    t.strictSame(edits?.mirrors, [{ upstream: 'default-copy-9090', percent: 100 }]);
    t.ok(model.upstreams['default-copy-9090'], 'the mirror is an upstream of the model');
    t.equal(redirect?.requestHeaders, null);
  },
);

t.test('Ingress paths only: the order and the routes are what they were', async (t) => {
  const world = {
    ingresses: [
      ingress('ing', {
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.com', path('/a/', 'app:80'), path('/a', 'app:80'), path('/b', 'app:80', 'Exact'))],
      }),
    ],
  };
  const plain = buildWithGraph(world, graphOf([]));
  const withOther = buildWithGraph(world, graphOf([plan('r', { listeners: [a(['b.com'])] })]));
  t.strictSame(routeLines(plain.model).slice(0, 3), routeLines(withOther.model).slice(0, 3));
  t.strictSame(routeLines(plain.model), [
    'a.com Prefix /a/ -> default-app-80 (ing)',
    'a.com Exact /b -> default-app-80 (ing)',
    'a.com Prefix /a -> default-app-80 (ing)',
  ]);
});

t.test("an HTTPRoute change changes its hosts' content hashes only", async (t) => {
  const world = { ingresses: [ingress('ing', { rules: [rule('i.com', path('/', 'app:80'))] })] };
  const graph = (header: string, weight: number) =>
    graphOf([
      plan('r1', { listeners: [a(['a.com'])], rules: [{ matches: [{ headers: [`x=${header}`] }] }] }),
      plan('r2', { listeners: [a(['b.com'])], rules: [{ backends: [`web:80*${weight}`] }] }),
    ]);
  const hashes = (result: BuildResult): Record<string, string | undefined> => {
    const { servers, catchAll } = result.model.contentHashes!;
    return {
      ...Object.fromEntries(result.model.servers.map((s, i) => [s.hostname, servers[i]])),
      _: catchAll,
    };
  };
  const base = buildWithGraph(world, graph('1', 1));
  const header = buildWithGraph(world, graph('2', 1));
  const weight = buildWithGraph(world, graph('1', 2));
  const before = hashes(base);
  t.not(hashes(header)['a.com'], before['a.com'], 'a header value: its host');
  t.strictSame({ ...hashes(header), 'a.com': '' }, { ...before, 'a.com': '' }, 'no other host');
  t.not(hashes(weight)['b.com'], before['b.com'], 'a weight: its host');
  t.strictSame({ ...hashes(weight), 'b.com': '' }, { ...before, 'b.com': '' }, 'no other host');
  t.not(header.model.routesHash, base.model.routesHash, 'routesHash');
  t.strictSame(
    buildWithGraph(world, graph('1', 1)).model.hash,
    base.model.hash,
    'the same graph, the same hash',
  );
});

t.test("`ingress-ts check`: an HTTPRoute's routes never count for an Ingress of the same name", async (t) => {
  const ingresses = [
    ingress('old', { created: 0, rules: [rule('a.com', path('/p', 'app:80'))] }),
    ingress('store', { created: 1, rules: [rule('a.com', path('/p', 'other:80'))] }),
  ];
  const result = buildWithGraph({ ingresses }, graphOf([plan('store', { listeners: [a(['b.com'])] })]));
  const verdicts = ingressVerdicts({
    ingresses,
    ingressClasses: [ingressClass('ingress-ts')],
    result,
    options: DEFAULT_MODEL_OPTIONS,
  });
  t.equal(verdicts.find((v) => v.name === 'store')?.verdict, 'not-served');
});
