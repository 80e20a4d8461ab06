// Route plans: where an accepted HTTPRoute is served (listeners, protocol, spec port, effective
// hostnames) and what each rule does (matches with defaults, filters checked, backends and mirrors
// resolved, weights), only on listeners that are served. Also the listener certificates.

import t from 'tap';
import type { HTTPRouteRule, RoutePlan } from '../../../lib/model/index.ts';
import {
  APP,
  baseWorld,
  gateway,
  http,
  httpRoute,
  https,
  INFRA,
  resolveWorld,
  routeLines,
  serviceGrant,
  toBackend,
  WEB,
  worldWith,
} from './fixtures.ts';

const SAME = { name: 'same-namespace' };

function planOf(
  rules: HTTPRouteRule[] | undefined,
  extra: Parameters<typeof worldWith>[0] = {},
  hostnames?: string[],
) {
  const route = httpRoute('r', [SAME], rules, {
    created: 10,
    ...(hostnames === undefined ? {} : { hostnames }),
  });
  const resolved = resolveWorld(worldWith({ ...extra, httpRoutes: [...(extra.httpRoutes ?? []), route] }));
  return { ...resolved, plan: resolved.graph.routes.find((p) => p.route.name === 'r') };
}

/** `listener@gateway PROTOCOL:port hosts` per listener */
const listenerLines = (plan: RoutePlan | undefined): string[] =>
  (plan?.listeners ?? []).map(
    (l) => `${l.listener}@${l.gateway.name} ${l.protocol}:${l.specPort} [${l.hostnames.join(',')}]`,
  );

t.test('a route without rules gets the CRD default: PathPrefix / with no backends (500)', async (t) => {
  const { plan } = planOf(undefined);
  t.strictSame(plan?.rules, [
    {
      index: 0,
      matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [], queryParams: [], method: null }],
      filters: [],
      backends: [],
      mirrors: [],
    },
  ]);
  t.strictSame(plan?.route, { namespace: INFRA, name: 'r', kind: 'HTTPRoute' });
  t.equal(plan?.created, '2026-01-01T00:00:10Z');
  t.strictSame(listenerLines(plan), ['http@same-namespace HTTP:80 []']);
});

t.test(
  'matches with defaults: path, header names lower-cased and first of a name only, method upper-case',
  async (t) => {
    const { plan } = planOf([
      {
        matches: [
          { path: { value: '/a' } },
          { path: { type: 'Exact' } },
          {
            headers: [
              { name: 'Version', value: 'one' },
              { name: 'version', value: 'two' },
              { type: 'Exact', name: 'Color', value: 'Blue' },
            ],
            queryParams: [
              { name: 'Q', value: '1' },
              { name: 'q', value: '2' },
              { name: 'Q', value: '3' },
            ],
            method: 'get',
          },
        ],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
    ]);
    t.strictSame(plan?.rules[0]?.matches, [
      { path: { type: 'PathPrefix', value: '/a' }, headers: [], queryParams: [], method: null },
      { path: { type: 'Exact', value: '/' }, headers: [], queryParams: [], method: null },
      {
        path: { type: 'PathPrefix', value: '/' },
        headers: [
          { name: 'version', value: 'one' },
          { name: 'color', value: 'Blue' },
        ],
        queryParams: [
          { name: 'Q', value: '1' },
          { name: 'q', value: '2' },
        ],
        method: 'GET',
      },
    ]);
  },
);

t.test('backends: weights (default 1, 0 kept), invalid refs keep their weight with the reason', async (t) => {
  const { plan, graph } = planOf([
    {
      backendRefs: [
        { name: 'infra-backend-v1', port: 8080, weight: 70 },
        { name: 'infra-backend-v2', port: 8080, weight: 30 },
        { name: 'infra-backend-v3', port: 8080, weight: 0 },
        { name: 'infra-backend-v1', port: 8081 },
        { name: 'nonexistent', port: 8080, weight: 5 },
        { name: 'infra-backend-v1', port: 9999 },
        { name: 'infra-backend-v1' },
        { group: 'example.com', kind: 'Thing', name: 'infra-backend-v1', port: 8080 },
        { kind: 'Service', name: 'web-backend', namespace: WEB, port: 8080, weight: 2 },
      ],
    },
  ]);
  t.strictSame(plan?.rules[0]?.backends, [
    { kind: 'service', namespace: INFRA, name: 'infra-backend-v1', port: 8080, weight: 70 },
    { kind: 'service', namespace: INFRA, name: 'infra-backend-v2', port: 8080, weight: 30 },
    { kind: 'service', namespace: INFRA, name: 'infra-backend-v3', port: 8080, weight: 0 },
    { kind: 'service', namespace: INFRA, name: 'infra-backend-v1', port: 8081, weight: 1 },
    { kind: 'invalid', weight: 5, reason: 'BackendNotFound' },
    { kind: 'invalid', weight: 1, reason: 'BackendNotFound' },
    { kind: 'invalid', weight: 1, reason: 'BackendNotFound' },
    { kind: 'invalid', weight: 1, reason: 'InvalidKind' },
    { kind: 'invalid', weight: 2, reason: 'RefNotPermitted' },
  ]);
  // the first refused ref decides the reason; the message names them all
  const parent = graph.status.httpRoutes[0]?.parents[0];
  const resolvedRefs = parent?.conditions.find((c) => c.type === 'ResolvedRefs');
  t.equal(resolvedRefs?.reason, 'BackendNotFound');
  t.match(
    resolvedRefs?.message,
    /nonexistent does not exist.*has no port 9999.*needs a port.*core Services only.*ReferenceGrant/,
  );
});

t.test(
  'a ReferenceGrant makes a cross-namespace backend valid; only the rule with the refused one answers 500',
  async (t) => {
    const granted = planOf([toBackend('web-backend', undefined, WEB)], { referenceGrants: [serviceGrant()] });
    t.strictSame(granted.plan?.rules[0]?.backends, [
      { kind: 'service', namespace: WEB, name: 'web-backend', port: 8080, weight: 1 },
    ]);
    const partly = planOf(
      [toBackend('app-backend-v2', '/v2', APP), toBackend('app-backend-v1', undefined, APP)],
      {
        referenceGrants: [serviceGrant(APP, 'app-backend-v1')],
      },
    );
    t.strictSame(
      partly.plan?.rules.map((r) => r.backends.map((b) => (b.kind === 'service' ? b.name : b.reason))),
      [['RefNotPermitted'], ['app-backend-v1']],
    );
  },
);

t.test('rules: [] (no CRD default then): accepted, nothing served', async (t) => {
  const { plan, graph } = planOf([]);
  t.strictSame(plan?.rules, []);
  t.strictSame(routeLines(graph, 'r'), [
    'gen=1',
    '-/same-namespace: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs',
  ]);
});

t.test('omitted and empty backendRefs: no backends, not a ResolvedRefs failure', async (t) => {
  const { plan, graph } = planOf([
    { matches: [{ path: { type: 'Exact', value: '/a' } }] },
    { backendRefs: [] },
  ]);
  t.strictSame(
    plan?.rules.map((r) => r.backends),
    [[], []],
  );
  t.strictSame(routeLines(graph, 'r'), [
    'gen=1',
    '-/same-namespace: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs',
  ]);
});

t.test('filters: defaults applied, mirrors resolved, the spec filters kept in order', async (t) => {
  const { plan, diagnostics } = planOf([
    {
      filters: [
        { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-A', value: '1' }] } },
        { type: 'RequestRedirect', requestRedirect: { hostname: 'example.org' } },
      ],
    },
    {
      filters: [
        { type: 'RequestMirror', requestMirror: { backendRef: { name: 'infra-backend-v2', port: 8080 } } },
        {
          type: 'RequestMirror',
          requestMirror: { backendRef: { name: 'infra-backend-v3', port: 8080 }, percent: 25 },
        },
        {
          type: 'RequestMirror',
          requestMirror: { backendRef: { name: 'app-backend-v1', namespace: APP, port: 8080 } },
        },
        {
          type: 'RequestMirror',
          requestMirror: {
            backendRef: { name: 'infra-backend-v1', port: 8080 },
            fraction: { numerator: 1, denominator: 4 },
          },
        },
        {
          type: 'URLRewrite',
          urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/x' } },
        },
        { type: 'ResponseHeaderModifier', responseHeaderModifier: { remove: ['Server'] } },
      ],
      backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
    },
  ]);
  t.strictSame(plan?.rules[0]?.filters, [
    { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-A', value: '1' }] } },
    { type: 'RequestRedirect', requestRedirect: { hostname: 'example.org', statusCode: 302 } },
  ]);
  t.strictSame(plan?.rules[1]?.mirrors, [
    { namespace: INFRA, name: 'infra-backend-v2', port: 8080, percent: 100 },
    { namespace: INFRA, name: 'infra-backend-v3', port: 8080, percent: 25 },
    { namespace: INFRA, name: 'infra-backend-v1', port: 8080, percent: 25 },
  ]);
  t.equal(plan?.rules[1]?.filters.length, 6);
  t.strictSame(
    diagnostics.map((d) => `${d.code} ${d.message}`),
    [
      `HTTPROUTE_BACKEND_INVALID rule 1: mirror: Service ${APP}/app-backend-v1 is in another namespace and no ReferenceGrant there lets HTTPRoutes of ${INFRA} refer to it; not mirrored`,
    ],
  );
});

// [rule, why it is dropped]
const DROPPED: Array<[HTTPRouteRule, RegExp]> = [
  [
    { matches: [{ path: { type: 'RegularExpression', value: '/a.*' } }] },
    /path match type RegularExpression/,
  ],
  [{ matches: [{ path: { value: 'a' } }] }, /must start with \//],
  [{ matches: [{ path: { value: '/a//b' } }] }, /must start with \//],
  [
    { matches: [{ headers: [{ type: 'RegularExpression', name: 'a', value: '.*' }] }] },
    /header match type RegularExpression/,
  ],
  [{ matches: [{ method: 'FETCH' }] }, /method FETCH/],
  [{ filters: [{ type: 'CORS' }] }, /filter type CORS is not supported/],
  [{ filters: [{ type: 'Bogus' }] }, /filter type Bogus/],
  [
    {
      filters: [
        { type: 'RequestRedirect', requestRedirect: {} },
        { type: 'URLRewrite', urlRewrite: {} },
      ],
    },
    /cannot be combined/,
  ],
  [
    {
      filters: [
        { type: 'RequestHeaderModifier', requestHeaderModifier: {} },
        { type: 'RequestHeaderModifier', requestHeaderModifier: {} },
      ],
    },
    /appears twice/,
  ],
  [{ filters: [{ type: 'RequestRedirect', requestRedirect: { statusCode: 304 } }] }, /statusCode 304/],
  [{ filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'ftp' } }] }, /scheme ftp/],
  [{ filters: [{ type: 'RequestRedirect' }] }, /has no settings/],
  [
    {
      matches: [{ path: { type: 'Exact', value: '/a' } }],
      filters: [
        {
          type: 'URLRewrite',
          urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/b' } },
        },
      ],
    },
    /ReplacePrefixMatch needs every match/,
  ],
  [
    {
      filters: [
        { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X A', value: 'v' }] } },
      ],
    },
    /"X A" is not a header name/,
  ],
  [
    {
      filters: [
        {
          type: 'ResponseHeaderModifier',
          responseHeaderModifier: { add: [{ name: 'X-A', value: 'v\r\nSet-Cookie: x' }] },
        },
      ],
    },
    /value of X-A must be an HTTP field value/,
  ],
  // values Node refuses to write (a control character, DEL, a character above U+00FF)
  ...['a\x01b', 'a\x7fb', 'price \u20ac', '\u20ac'].map((value): [HTTPRouteRule, RegExp] => [
    {
      filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { add: [{ name: 'X-B', value }] } }],
    },
    /value of X-B must be an HTTP field value/,
  ]),
  ...['a\x01b', '\u20ac'].map((value): [HTTPRouteRule, RegExp] => [
    {
      filters: [
        { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'X-C', value }] } },
      ],
    },
    /value of X-C must be an HTTP field value/,
  ]),
  [
    { filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { remove: ['Bad:Name'] } }] },
    /remove "Bad:Name"/,
  ],
  [
    { filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'evil.com\r\nX: y' } }] },
    /redirect hostname/,
  ],
  [
    { filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: '*.example.com' } }] },
    /a wildcard is no host/,
  ],
  [{ filters: [{ type: 'RequestRedirect', requestRedirect: { port: 70000 } }] }, /redirect port 70000/],
  [{ filters: [{ type: 'URLRewrite', urlRewrite: { hostname: '10.0.0.1' } }] }, /URLRewrite hostname/],
  [
    {
      filters: [
        {
          type: 'URLRewrite',
          urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: 'no-slash' } },
        },
      ],
    },
    /ReplaceFullPath needs a path/,
  ],
  [{ backendRefs: [{ name: 'infra-backend-v1', port: 8080, weight: -1 }] }, /weight -1/],
  [
    { backendRefs: [{ name: 'infra-backend-v1', port: 8080, filters: [{ type: 'RequestHeaderModifier' }] }] },
    /backendRef filters/,
  ],
];

t.test(
  'a rule ingress-ts cannot serve is dropped: PartiallyInvalid beside a good rule, not accepted alone',
  async (t) => {
    const good = toBackend('infra-backend-v1', '/good');
    for (const [rule, why] of DROPPED) {
      const partly = planOf([rule, good]);
      t.strictSame(
        partly.plan?.rules.map((r) => r.index),
        [1],
        `${why}: the other rule is served`,
      );
      const conditions = partly.graph.status.httpRoutes[0]?.parents[0]?.conditions ?? [];
      t.strictSame(
        conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
        [
          'Accepted=True/Accepted',
          'ResolvedRefs=True/ResolvedRefs',
          'PartiallyInvalid=True/UnsupportedValue',
        ],
      );
      t.match(conditions[2]?.message, /^Dropped Rule: rule 0: /);
      t.match(conditions[2]?.message, why);
      t.match(
        partly.diagnostics.map((d) => `${d.code} ${d.message}`),
        [/^HTTPROUTE_INVALID rule 0: .*; the rule is not served$/],
      );

      const alone = planOf([rule]);
      t.equal(alone.plan, undefined, `${why}: nothing served`);
      t.strictSame(routeLines(alone.graph, 'r'), [
        'gen=1',
        '-/same-namespace: Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs',
      ]);
      // an unaccepted route is not counted on the listener
      t.match(alone.graph.status.gateways.find((g) => g.name === 'same-namespace')?.listeners[0], {
        attachedRoutes: 0,
      });
    }
  },
);

t.test(
  'an ExtensionRef filter is never skipped: its rule answers 500 with ResolvedRefs=False/InvalidKind',
  async (t) => {
    const { plan, graph } = planOf([
      {
        filters: [
          { type: 'ExtensionRef', extensionRef: { group: 'example.com', kind: 'Auth', name: 'strict' } },
        ],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
    ]);
    t.strictSame(plan?.rules[0]?.backends, [{ kind: 'invalid', weight: 1, reason: 'InvalidKind' }]);
    t.strictSame(plan?.rules[0]?.filters, []);
    t.strictSame(routeLines(graph, 'r'), [
      'gen=1',
      '-/same-namespace: Accepted=True/Accepted ResolvedRefs=False/InvalidKind',
    ]);
  },
);

t.test('listeners of a plan: effective hostnames, protocol, spec port; only served listeners', async (t) => {
  const world = worldWith({
    gateways: [
      gateway(
        'hosts',
        [
          http('one', { hostname: 'very.specific.com' }),
          http('wild', { hostname: '*.wildcard.io' }),
          http('other', { hostname: 'x.example.com' }),
        ],
        {
          created: 10,
        },
      ),
    ],
    httpRoutes: [
      httpRoute('a', [{ name: 'hosts' }], [toBackend('infra-backend-v1')], {
        created: 20,
        hostnames: ['*.specific.com', 'foo.wildcard.io', 'FOO.bar.wildcard.io'],
      }),
      httpRoute('b', [{ name: 'same-namespace-with-https-listener' }], [toBackend('infra-backend-v1')], {
        created: 20,
      }),
      httpRoute(
        'c',
        [{ name: 'same-namespace-with-https-listener', sectionName: 'https-with-wildcard-hostname' }],
        [toBackend('infra-backend-v1')],
        {
          created: 20,
          hostnames: ['a.wildcard.org', 'b.example.org'],
        },
      ),
    ],
  });
  const { graph } = resolveWorld(world);
  const plan = (name: string) => graph.routes.find((p) => p.route.name === name);
  t.strictSame(listenerLines(plan('a')), [
    'one@hosts HTTP:80 [very.specific.com]',
    'wild@hosts HTTP:80 [foo.wildcard.io,foo.bar.wildcard.io]',
  ]);
  t.strictSame(listenerLines(plan('b')), [
    'https@same-namespace-with-https-listener HTTPS:443 []',
    'https-with-hostname@same-namespace-with-https-listener HTTPS:443 [second-example.org]',
    'https-with-wildcard-hostname@same-namespace-with-https-listener HTTPS:443 [*.wildcard.org]',
    'https-with-hostname-matching-wildcard@same-namespace-with-https-listener HTTPS:443 [fourth-example.wildcard.org]',
  ]);
  t.strictSame(listenerLines(plan('c')), [
    'https-with-wildcard-hostname@same-namespace-with-https-listener HTTPS:443 [a.wildcard.org]',
  ]);
  t.strictSame(
    graph.routes.map((p) => p.route.name),
    ['a', 'b', 'c'],
    'oldest first, then namespace/name',
  );
});

t.test('a route on a listener that is not served is accepted and counted, with no plan', async (t) => {
  const { graph } = resolveWorld(
    worldWith({
      gateways: [
        gateway(
          'broken',
          [https('tls', { certificate: { group: '', kind: 'Secret', name: 'does-not-exist' } })],
          { created: 10 },
        ),
      ],
      httpRoutes: [httpRoute('r', [{ name: 'broken' }], [toBackend('infra-backend-v1')], { created: 10 })],
    }),
  );
  t.equal(graph.routes.length, 0);
  t.strictSame(routeLines(graph, 'r'), [
    'gen=1',
    '-/broken: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs',
  ]);
  t.match(graph.status.gateways.find((g) => g.name === 'broken')?.listeners[0], { attachedRoutes: 1 });
});

t.test(
  'routes: parentRefs to other Gateways or kinds give no entry; a route with none of ours has no status',
  async (t) => {
    const { graph } = resolveWorld(
      worldWith({
        gateways: [
          {
            ...gateway('theirs', [http('http')], { created: 10 }),
            spec: { gatewayClassName: 'other', listeners: [http('http')] },
          },
        ],
        httpRoutes: [
          httpRoute(
            'mixed',
            [
              SAME,
              { name: 'theirs' },
              { name: 'missing' },
              { kind: 'Service', name: 'same-namespace' },
              { group: 'example.com', name: 'same-namespace' },
            ],
            [toBackend('infra-backend-v1')],
            {
              created: 10,
            },
          ),
          httpRoute('not-ours', [{ name: 'theirs' }], [toBackend('infra-backend-v1')], { created: 10 }),
        ],
      }),
    );
    t.strictSame(routeLines(graph, 'mixed'), [
      'gen=1',
      '-/same-namespace: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs',
    ]);
    t.strictSame(graph.status.httpRoutes[0]?.parents[0]?.parentRef, {
      name: 'same-namespace',
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
    });
    t.strictSame(routeLines(graph, 'not-ours'), ['(no parents of ours)']);
    t.equal(
      graph.status.gateways.find((g) => g.name === 'theirs'),
      undefined,
    );
  },
);

t.test('a route counts once per listener, whatever the number of parentRefs naming it', async (t) => {
  const { graph } = resolveWorld(
    worldWith({
      httpRoutes: [
        httpRoute(
          'twice',
          [SAME, { name: 'same-namespace', sectionName: 'http' }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
      ],
    }),
  );
  t.match(graph.status.gateways.find((g) => g.name === 'same-namespace')?.listeners[0], {
    attachedRoutes: 1,
  });
  t.equal(graph.routes[0]?.listeners.length, 1);
});

t.test(
  'references: Services looked up are recorded, missing ones too; refused ones are not looked up',
  async (t) => {
    const { services, secrets } = planOf([
      {
        backendRefs: [
          { name: 'infra-backend-v1', port: 8080 },
          { name: 'nonexistent', port: 8080 },
          { name: 'web-backend', namespace: WEB, port: 8080 },
        ],
      },
    ]);
    t.strictSame(services, [`${INFRA}/infra-backend-v1`, `${INFRA}/nonexistent`]);
    t.strictSame(secrets, [`${INFRA}/tls-validity-checks-certificate`]);
  },
);

t.test('certificates: one per served HTTPS listener, oldest Gateway first', async (t) => {
  const { graph } = resolveWorld(baseWorld());
  t.strictSame(
    graph.certificates.map((c) => `${c.gateway.name}/${c.listener} ${c.hostname ?? '*'} ${c.secret}`),
    [
      `same-namespace-with-https-listener/https * ${INFRA}/tls-validity-checks-certificate`,
      `same-namespace-with-https-listener/https-with-hostname second-example.org ${INFRA}/tls-validity-checks-certificate`,
      `same-namespace-with-https-listener/https-with-wildcard-hostname *.wildcard.org ${INFRA}/tls-validity-checks-certificate`,
      `same-namespace-with-https-listener/https-with-hostname-matching-wildcard fourth-example.wildcard.org ${INFRA}/tls-validity-checks-certificate`,
    ],
  );
});

t.test('a header edit value Node writes is kept: tab, printable ASCII, 0x80-0xFF', async (t) => {
  const value = 'a\tb ~ caf\u00e9 \u00ff';
  const { plan } = planOf([
    {
      ...toBackend('infra-backend-v1', '/ok'),
      filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Ok', value }] } }],
    },
  ]);
  t.strictSame(
    plan?.rules.map((r) => r.index),
    [0],
  );
});
