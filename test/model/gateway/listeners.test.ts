// Classes, Gateways and listeners beyond the conformance rows: ports against ingress-ts's own,
// conflicts inside a Gateway and across Gateways (certificates on the one HTTPS port), TLS modes,
// parametersRef on a class, listeners without a name or with a repeated one, allowedRoutes selectors
// on namespaces without a Namespace object.

import t from 'tap';
import { buildModel } from '../../../lib/model/index.ts';
import {
  CLASS,
  classLines,
  FEATURES,
  GATEWAY_OK,
  type GatewayWorld,
  gateway,
  gatewayClass,
  gatewayLines,
  http,
  httpRoute,
  https,
  INFRA,
  OK_HTTP,
  resolveWorld,
  routeLines,
  snapshotOfWorld,
  tlsSecret,
  toBackend,
  WEB,
  worldWith,
} from './fixtures.ts';

const lines = (world: GatewayWorld, name: string, options = {}) =>
  gatewayLines(resolveWorld(world, options).graph, name);
const NOT_SERVED = 'Programmed=False/Invalid';
const listenerLine = (
  name: string,
  accepted: string,
  refs = 'ResolvedRefs=True/ResolvedRefs',
  conflicted = 'Conflicted=False/NoConflicts',
  routes = 0,
) => `${name}: ${accepted} ${refs} ${NOT_SERVED} ${conflicted} kinds=[HTTPRoute] routes=${routes}`;

t.test(
  'ports: 80/443 or ingress-ts own HTTP and HTTPS ports; any other is PortUnavailable naming them',
  async (t) => {
    const world = worldWith({
      gateways: [
        gateway(
          'ports',
          [
            http('p80'),
            http('p8080', { port: 8080 }),
            http('p443', { port: 443 }),
            https('s443', { hostname: 'a.example.com' }),
            https('s8443', { port: 8443, hostname: 'b.example.com' }),
          ],
          {
            created: 10,
          },
        ),
      ],
    });
    t.strictSame(lines(world, 'ports', { httpPort: 8080, httpsPort: 8443 }), [
      'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
      OK_HTTP('p80'),
      OK_HTTP('p8080'),
      listenerLine('p443', 'Accepted=False/PortUnavailable'),
      OK_HTTP('s443'),
      OK_HTTP('s8443'),
    ]);
    const { graph } = resolveWorld(world, { httpPort: 8080, httpsPort: 8443 });
    const p443 = graph.status.gateways.find((g) => g.name === 'ports')?.listeners[2]?.conditions[0];
    t.equal(
      p443?.message,
      'port 443: ingress-ts serves HTTP listeners on port 80 or 8080 (--http-port) and HTTPS listeners on port 443 or 8443 (--https-port)',
    );
    // with the default ports, 8080 and 8443 are unavailable
    t.strictSame(lines(world, 'ports').slice(2, 3), [
      listenerLine('p8080', 'Accepted=False/PortUnavailable'),
    ]);
  },
);

t.test('the protocol is checked before the port', async (t) => {
  const world = worldWith({
    gateways: [gateway('g', [http('tcp', { protocol: 'TCP', port: 1111 }), http('ok')], { created: 10 })],
  });
  t.strictSame(lines(world, 'g'), [
    'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
    `tcp: Accepted=False/UnsupportedProtocol ResolvedRefs=True/ResolvedRefs ${NOT_SERVED} Conflicted=False/NoConflicts kinds=[] routes=0`,
    OK_HTTP('ok'),
  ]);
});

t.test('listener hostname: an IP or a bad name is UnsupportedValue', async (t) => {
  const world = worldWith({
    gateways: [
      gateway(
        'g',
        [
          http('ip', { hostname: '10.0.0.1' }),
          http('mid', { hostname: 'a.*.com' }),
          http('ok', { hostname: 'A.Example.com' }),
        ],
        { created: 10 },
      ),
    ],
  });
  t.strictSame(lines(world, 'g'), [
    'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
    listenerLine('ip', 'Accepted=False/UnsupportedValue'),
    listenerLine('mid', 'Accepted=False/UnsupportedValue'),
    OK_HTTP('ok'),
  ]);
});

t.test(
  'inside one Gateway, listeners with the same port, protocol and hostname are all Conflicted',
  async (t) => {
    const world = worldWith({
      gateways: [
        gateway(
          'g',
          [
            http('a', { hostname: 'x.com' }),
            http('b', { hostname: 'X.com' }),
            http('c', { hostname: 'y.com' }),
            http('d'),
            http('e'),
          ],
          { created: 10 },
        ),
      ],
    });
    const conflicted = 'Conflicted=True/HostnameConflict';
    t.strictSame(lines(world, 'g'), [
      'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
      listenerLine('a', 'Accepted=True/Accepted', undefined, conflicted),
      listenerLine('b', 'Accepted=True/Accepted', undefined, conflicted),
      OK_HTTP('c'),
      listenerLine('d', 'Accepted=True/Accepted', undefined, conflicted),
      listenerLine('e', 'Accepted=True/Accepted', undefined, conflicted),
    ]);
  },
);

t.test(
  'across Gateways: the same HTTPS hostname with another Secret makes the newer Conflicted',
  async (t) => {
    const other = { group: '', kind: 'Secret', name: 'other', namespace: INFRA };
    const world = worldWith({
      secrets: [tlsSecret('other', INFRA, 'other')],
      gateways: [
        gateway(
          'newer',
          [
            https('https', { hostname: 'shop.example.com', certificate: other }),
            https('any', { certificate: other }),
          ],
          { created: 30 },
        ),
        gateway('older', [https('https', { hostname: 'shop.example.com' })], { created: 20 }),
        gateway('same-secret', [https('https', { hostname: 'shop.example.com' })], { created: 40 }),
      ],
    });
    const { graph } = resolveWorld(world);
    t.strictSame(gatewayLines(graph, 'older'), [GATEWAY_OK(), OK_HTTP('https')]);
    t.strictSame(gatewayLines(graph, 'newer'), [
      'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
      listenerLine('https', 'Accepted=True/Accepted', undefined, 'Conflicted=True/HostnameConflict'),
      // without a hostname an HTTPS listener never conflicts: the base Gateway's answers unclaimed names
      OK_HTTP('any'),
    ]);
    t.match(
      graph.status.gateways.find((g) => g.name === 'newer')?.listeners[0]?.conditions[3]?.message,
      /older Gateway gateway-conformance-infra\/older/,
    );
    t.strictSame(
      gatewayLines(graph, 'same-secret'),
      [GATEWAY_OK(), OK_HTTP('https')],
      'the same Secret: no conflict',
    );
    t.strictSame(
      graph.certificates
        .map((c) => `${c.gateway.name}/${c.listener} ${c.hostname ?? '*'}`)
        .filter((c) => !c.startsWith('same-namespace-with')),
      ['older/https shop.example.com', 'newer/any *', 'same-secret/https shop.example.com'],
    );
  },
);

t.test(
  'tls.mode Passthrough on an HTTPS listener is UnsupportedValue; no certificateRefs is InvalidCertificateRef',
  async (t) => {
    const world = worldWith({
      gateways: [
        gateway(
          'g',
          [
            https('pass', { tls: { mode: 'Passthrough' } }),
            https('none', { hostname: 'n.example.com', tls: {} }),
            https('ok', { hostname: 'o.example.com' }),
          ],
          { created: 10 },
        ),
      ],
    });
    t.strictSame(lines(world, 'g'), [
      'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
      listenerLine('pass', 'Accepted=False/UnsupportedValue'),
      listenerLine('none', 'Accepted=True/Accepted', 'ResolvedRefs=False/InvalidCertificateRef'),
      OK_HTTP('ok'),
    ]);
  },
);

t.test(
  'a certificate Secret in another namespace needs a grant even when it exists; a cross-namespace Secret that was refused is not looked up',
  async (t) => {
    const { secrets } = resolveWorld(
      worldWith({
        gateways: [
          gateway(
            'g',
            [
              https('https', {
                certificate: { group: '', kind: 'Secret', name: 'certificate', namespace: WEB },
              }),
            ],
            { created: 10 },
          ),
        ],
      }),
    );
    t.notOk(secrets.includes(`${WEB}/certificate`));
  },
);

t.test(
  'listeners without a name or with a repeated name are left out of status, with a diagnostic',
  async (t) => {
    const { graph, diagnostics } = resolveWorld(
      worldWith({
        gateways: [
          gateway('g', [http('a'), http('a', { hostname: 'x.com' }), { port: 80, protocol: 'HTTP' }], {
            created: 10,
          }),
        ],
      }),
    );
    t.strictSame(gatewayLines(graph, 'g'), [GATEWAY_OK(), OK_HTTP('a')]);
    t.strictSame(
      diagnostics.map((d) => `${d.kind} ${d.name} ${d.code} ${d.message}`),
      [
        'Gateway g GATEWAY_INVALID listener #1 repeats the name a; it is ignored',
        'Gateway g GATEWAY_INVALID listener #2 has no name; it is ignored',
      ],
    );
  },
);

t.test(
  'GatewayClass: ours by controllerName; a parametersRef is not accepted and its Gateways are not ours',
  async (t) => {
    const world = worldWith({
      gatewayClasses: [
        gatewayClass('with-parameters', {
          parametersRef: { group: 'example.com', kind: 'Config', name: 'x' },
        }),
        gatewayClass('someone-else', { controllerName: 'example.com/gateway' }),
      ],
      gateways: [
        {
          ...gateway('on-parameters', [http('http')], { created: 10 }),
          spec: { gatewayClassName: 'with-parameters', listeners: [http('http')] },
        },
        {
          ...gateway('on-someone-else', [http('http')], { created: 10 }),
          spec: { gatewayClassName: 'someone-else', listeners: [http('http')] },
        },
      ],
    });
    const { graph, diagnostics } = resolveWorld(world);
    t.strictSame(classLines(graph, 'with-parameters'), [
      `gen=1 Accepted=False/InvalidParameters features=${FEATURES}`,
    ]);
    t.strictSame(classLines(graph, 'someone-else'), ['(not ours)']);
    t.strictSame(classLines(graph, CLASS), [`gen=1 Accepted=True/Accepted features=${FEATURES}`]);
    t.strictSame(gatewayLines(graph, 'on-parameters'), ['(not ours)']);
    t.strictSame(gatewayLines(graph, 'on-someone-else'), ['(not ours)']);
    t.strictSame(
      diagnostics.map((d) => `${d.kind} ${d.name} ${d.code}`),
      ['GatewayClass with-parameters GATEWAY_INVALID'],
    );
  },
);

t.test('Gateways: oldest first, then namespace/name; no generation is observedGeneration 0', async (t) => {
  const world = worldWith({
    gateways: [
      gateway('b', [http('http')], { created: 5 }),
      gateway('a', [http('http')], { created: 5 }),
      gateway('z', [http('http')], { created: 0, namespace: 'aaa' }),
    ],
  });
  const noGeneration = { ...gateway('nogen', [http('http')], { created: 6 }) };
  delete noGeneration.metadata?.generation;
  world.gateways.push(noGeneration);
  const { graph } = resolveWorld(world);
  t.strictSame(
    graph.status.gateways.map((g) => `${g.namespace}/${g.name}`),
    [
      'aaa/z',
      `${INFRA}/all-namespaces`,
      `${INFRA}/backend-namespaces`,
      `${INFRA}/same-namespace`,
      `${INFRA}/same-namespace-with-https-listener`,
      `${INFRA}/a`,
      `${INFRA}/b`,
      `${INFRA}/nogen`,
    ],
  );
  t.strictSame(gatewayLines(graph, 'nogen')[0], 'gen=0 Accepted=True/Accepted Programmed=True/Programmed');
  t.equal(graph.status.gateways.at(-1)?.conditions[0]?.observedGeneration, 0);
});

t.test(
  'allowedRoutes Selector: a namespace without a Namespace object has only its name label',
  async (t) => {
    const selector = (matchLabels: Record<string, string>) =>
      http('http', { allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels } } } });
    const world = worldWith({
      gateways: [
        gateway('by-name', [selector({ 'kubernetes.io/metadata.name': 'loose' })], { created: 10 }),
        gateway('by-label', [selector({ team: 'a' })], { created: 10 }),
        gateway('no-selector', [http('http', { allowedRoutes: { namespaces: { from: 'Selector' } } })], {
          created: 10,
        }),
        gateway('unknown-from', [http('http', { from: 'Nobody' })], { created: 10 }),
      ],
      httpRoutes: [
        httpRoute(
          'r',
          [
            { name: 'by-name', namespace: INFRA },
            { name: 'by-label', namespace: INFRA },
            { name: 'no-selector', namespace: INFRA },
            { name: 'unknown-from', namespace: INFRA },
          ],
          [toBackend('svc')],
          {
            namespace: 'loose',
            created: 10,
          },
        ),
      ],
    });
    const { graph, diagnostics } = resolveWorld(world);
    t.strictSame(
      diagnostics.filter((d) => d.code === 'GATEWAY_INVALID').map((d) => `${d.name} ${d.message}`),
      [
        'no-selector listener http: allowedRoutes.namespaces.from Selector has no selector; it admits no routes',
        'unknown-from listener http: allowedRoutes.namespaces.from Nobody is not All, Same or Selector; it admits no routes',
      ],
    );
    t.strictSame(routeLines(graph, 'r', 'loose'), [
      'gen=1',
      `${INFRA}/by-name: Accepted=True/Accepted ResolvedRefs=False/BackendNotFound`,
      `${INFRA}/by-label: Accepted=False/NotAllowedByListeners ResolvedRefs=False/BackendNotFound`,
      `${INFRA}/no-selector: Accepted=False/NotAllowedByListeners ResolvedRefs=False/BackendNotFound`,
      `${INFRA}/unknown-from: Accepted=False/NotAllowedByListeners ResolvedRefs=False/BackendNotFound`,
    ]);
  },
);

t.test('parentRef port selects listeners by their spec port', async (t) => {
  const world = worldWith({
    gateways: [gateway('g', [http('http'), https('https', { hostname: 'a.example.com' })], { created: 10 })],
    httpRoutes: [
      httpRoute('on-443', [{ name: 'g', port: 443 }], [toBackend('infra-backend-v1')], { created: 10 }),
      httpRoute('on-8080', [{ name: 'g', port: 8080 }], [toBackend('infra-backend-v1')], { created: 10 }),
    ],
  });
  const { graph } = resolveWorld(world, { httpPort: 8080 });
  t.strictSame(
    graph.routes.find((p) => p.route.name === 'on-443')?.listeners.map((l) => l.listener),
    ['https'],
  );
  t.strictSame(routeLines(graph, 'on-8080'), [
    'gen=1',
    '-/g:8080: Accepted=False/NoMatchingParent ResolvedRefs=True/ResolvedRefs',
  ]);
});

t.test(
  'buildModel: the status reaches BuildResult.gatewayStatus; routes only, empty lists; no Gateway API objects, none',
  async (t) => {
    const result = buildModel(snapshotOfWorld(baseWorld()));
    t.strictSame(
      result.gatewayStatus?.gateways.map((g) => g.name),
      ['all-namespaces', 'backend-namespaces', 'same-namespace', 'same-namespace-with-https-listener'],
    );
    const routesOnly = {
      ...snapshotOfWorld(baseWorld()),
      gateways: [],
      gatewayClasses: [],
      httpRoutes: [{ metadata: { name: 'r', namespace: 'n' }, spec: { parentRefs: [{ name: 'gone' }] } }],
    };
    t.strictSame(
      buildModel(routesOnly).gatewayStatus,
      { gatewayClasses: [], gateways: [], httpRoutes: [] },
      'HTTPRoutes without any Gateway: an empty status (the writer removes our stale entries)',
    );
    t.equal(buildModel({ ...routesOnly, httpRoutes: [] }).gatewayStatus, undefined);
    // plain data (it crosses to the status writer and /debug), and the same for the same objects
    t.strictSame(structuredClone(result.gatewayStatus), result.gatewayStatus);
    t.strictSame(buildModel(snapshotOfWorld(baseWorld())).gatewayStatus, result.gatewayStatus);
  },
);

function baseWorld() {
  return worldWith({});
}
