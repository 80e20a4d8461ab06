// The status expectations of every GATEWAY-HTTP core conformance test (gateway-api v1.6.1), one row
// per upstream test, named after it: the base manifests plus the test's objects in, the conditions
// (type=status/reason), supportedKinds and attachedRoutes of the objects the test reads out. The
// suite compares expected conditions as a subset; these rows list every condition, so a reason that
// changes shows here first.

import t from 'tap';
import type { HTTPRouteRule } from '../../../lib/model/index.ts';
import {
  APP,
  baseWorld,
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
  PARENT_OK,
  resolveWorld,
  routeLines,
  secretGrant,
  serviceGrant,
  tlsSecret,
  toBackend,
  WEB,
  worldWith,
  wrongSecretGrants,
  wrongServiceGrants,
} from './fixtures.ts';

interface Row {
  name: string;
  world: GatewayWorld;
  /** `Gateway name`, `HTTPRoute [namespace/]name`, `GatewayClass name` → its lines */
  expect: Record<string, string[]>;
}

const SKIP_READINESS = { 'gateway-api/skip-this-for-readiness': 'true' };
const SAME = { name: 'same-namespace' };
const HTTPS_LISTENER_OK = (name: string, routes = 0) => OK_HTTP(name, routes);
const PROGRAMMED_INVALID = 'Programmed=False/Invalid';
const NO_CONFLICTS = 'Conflicted=False/NoConflicts';
/** the base Gateway all forwarding tests use, with `routes` routes on its listener */
const sameNamespaceOk = (routes = 1) => [GATEWAY_OK(), OK_HTTP('http', routes)];
const routeOk = (parent = '-/same-namespace') => ['gen=1', `${parent}: ${PARENT_OK}`];

const gatewayOnly = (name: string, listeners: Parameters<typeof gateway>[1], created = 10) =>
  gateway(name, listeners, { created, annotations: SKIP_READINESS });

const ROWS: Row[] = [
  {
    name: 'GatewayClassObservedGenerationBump (generation 1)',
    world: worldWith({
      gatewayClasses: [
        gatewayClass('gatewayclass-observed-generation-bump', { description: 'old' }, { created: 10 }),
      ],
    }),
    expect: {
      'GatewayClass gatewayclass-observed-generation-bump': [
        `gen=1 Accepted=True/Accepted features=${FEATURES}`,
      ],
      [`GatewayClass ${CLASS}`]: [`gen=1 Accepted=True/Accepted features=${FEATURES}`],
    },
  },
  {
    name: 'GatewayClassObservedGenerationBump (generation 2)',
    world: worldWith({
      gatewayClasses: [
        gatewayClass(
          'gatewayclass-observed-generation-bump',
          { description: 'new' },
          { created: 10, generation: 2 },
        ),
      ],
    }),
    expect: {
      'GatewayClass gatewayclass-observed-generation-bump': [
        `gen=2 Accepted=True/Accepted features=${FEATURES}`,
      ],
    },
  },
  {
    name: 'GatewayObservedGenerationBump (before the patch)',
    world: worldWith({
      gateways: [
        gateway('gateway-observed-generation-bump', [http('http', { hostname: 'bar.com', from: 'All' })], {
          created: 10,
        }),
      ],
    }),
    expect: { 'Gateway gateway-observed-generation-bump': [GATEWAY_OK(1), OK_HTTP('http')] },
  },
  {
    name: 'GatewayObservedGenerationBump (listener alternate added)',
    world: worldWith({
      gateways: [
        gateway(
          'gateway-observed-generation-bump',
          [
            http('http', { hostname: 'bar.com', from: 'All' }),
            http('alternate', { hostname: 'foo.com', from: 'All' }),
          ],
          { created: 10, generation: 2 },
        ),
      ],
    }),
    expect: {
      'Gateway gateway-observed-generation-bump': [GATEWAY_OK(2), OK_HTTP('http'), OK_HTTP('alternate')],
    },
  },
  {
    name: 'GatewayInvalidParametersRef',
    world: worldWith({
      gateways: [
        gateway('gateway-invalid-parameters-ref', [http('http')], {
          created: 10,
          annotations: SKIP_READINESS,
          spec: {
            infrastructure: {
              parametersRef: { group: 'invalid.io', kind: 'InvalidParameters', name: 'invalid' },
            },
          },
        }),
      ],
    }),
    expect: {
      'Gateway gateway-invalid-parameters-ref': [
        `gen=1 Accepted=False/InvalidParameters ${PROGRAMMED_INVALID}`,
        `http: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[HTTPRoute] routes=0`,
      ],
    },
  },
  {
    name: 'GatewayListenerUnsupportedProtocol',
    world: worldWith({
      gateways: [
        gatewayOnly('gateway-only-unsupported-protocols', [
          { name: 'invalid', port: 1111, protocol: 'INVALID' },
        ]),
        gateway(
          'gateway-supported-and-unsupported-protocols',
          [http('http'), { name: 'invalid', port: 1111, protocol: 'INVALID' }],
          { created: 10 },
        ),
      ],
    }),
    expect: {
      'Gateway gateway-only-unsupported-protocols': [
        `gen=1 Accepted=False/ListenersNotValid ${PROGRAMMED_INVALID}`,
        `invalid: Accepted=False/UnsupportedProtocol ResolvedRefs=True/ResolvedRefs ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[] routes=0`,
      ],
      'Gateway gateway-supported-and-unsupported-protocols': [
        'gen=1 Accepted=True/ListenersNotValid Programmed=True/Programmed',
        OK_HTTP('http'),
        `invalid: Accepted=False/UnsupportedProtocol ResolvedRefs=True/ResolvedRefs ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[] routes=0`,
      ],
    },
  },
  {
    name: 'GatewayInvalidRouteKind',
    world: worldWith({
      gateways: [
        gatewayOnly('gateway-only-invalid-route-kind', [
          http('http', { allowedRoutes: { namespaces: { from: 'All' }, kinds: [{ kind: 'InvalidRoute' }] } }),
        ]),
        gatewayOnly('gateway-supported-and-invalid-route-kind', [
          http('http', {
            allowedRoutes: {
              namespaces: { from: 'All' },
              kinds: [{ kind: 'InvalidRoute' }, { kind: 'HTTPRoute' }],
            },
          }),
        ]),
      ],
    }),
    expect: {
      'Gateway gateway-only-invalid-route-kind': [
        `gen=1 Accepted=True/ListenersNotValid ${PROGRAMMED_INVALID}`,
        `http: Accepted=True/Accepted ResolvedRefs=False/InvalidRouteKinds ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[] routes=0`,
      ],
      'Gateway gateway-supported-and-invalid-route-kind': [
        `gen=1 Accepted=True/ListenersNotValid ${PROGRAMMED_INVALID}`,
        `http: Accepted=True/Accepted ResolvedRefs=False/InvalidRouteKinds ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[HTTPRoute] routes=0`,
      ],
    },
  },
  {
    name: 'GatewayInvalidTLSConfiguration',
    world: worldWith({
      gateways: [
        gatewayOnly('gateway-certificate-nonexistent-secret', [
          https('https', {
            from: 'All',
            certificate: { group: '', kind: 'Secret', name: 'nonexistent-certificate' },
          }),
        ]),
        gatewayOnly('gateway-certificate-unsupported-group', [
          https('https', {
            from: 'All',
            certificate: {
              group: 'wrong.group.company.io',
              kind: 'Secret',
              name: 'tls-validity-checks-certificate',
            },
          }),
        ]),
        gatewayOnly('gateway-certificate-unsupported-kind', [
          https('https', {
            from: 'All',
            certificate: { group: '', kind: 'WrongKind', name: 'tls-validity-checks-certificate' },
          }),
        ]),
        gatewayOnly('gateway-certificate-malformed-secret', [
          https('https', {
            from: 'All',
            certificate: { group: '', kind: 'Secret', name: 'malformed-certificate' },
          }),
        ]),
      ],
      secrets: [tlsSecret('malformed-certificate', INFRA, { crt: 'Hello world', key: 'Hello world' })],
    }),
    expect: Object.fromEntries(
      [
        'gateway-certificate-nonexistent-secret',
        'gateway-certificate-unsupported-group',
        'gateway-certificate-unsupported-kind',
        'gateway-certificate-malformed-secret',
      ].map((name) => [
        `Gateway ${name}`,
        [
          `gen=1 Accepted=True/ListenersNotValid ${PROGRAMMED_INVALID}`,
          `https: Accepted=True/Accepted ResolvedRefs=False/InvalidCertificateRef ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[HTTPRoute] routes=0`,
        ],
      ]),
    ),
  },
  {
    name: 'GatewayModifyListeners (add: before)',
    world: worldWith({
      gateways: [
        gateway('gateway-add-listener', [https('https', { hostname: 'secure.test.com', from: 'All' })], {
          created: 10,
        }),
      ],
      httpRoutes: [
        httpRoute(
          'http-route-1',
          [{ kind: 'Gateway', name: 'gateway-add-listener', namespace: INFRA }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
      ],
    }),
    expect: {
      'Gateway gateway-add-listener': [GATEWAY_OK(), HTTPS_LISTENER_OK('https', 1)],
      'HTTPRoute http-route-1': ['gen=1', `${INFRA}/gateway-add-listener: ${PARENT_OK}`],
    },
  },
  {
    name: 'GatewayModifyListeners (add: http added)',
    world: worldWith({
      gateways: [
        gateway(
          'gateway-add-listener',
          [
            https('https', { hostname: 'secure.test.com', from: 'All' }),
            http('http', { hostname: 'data.test.com', from: 'All' }),
          ],
          { created: 10, generation: 2 },
        ),
      ],
      httpRoutes: [
        httpRoute(
          'http-route-1',
          [{ kind: 'Gateway', name: 'gateway-add-listener', namespace: INFRA }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
      ],
    }),
    expect: {
      'Gateway gateway-add-listener': [GATEWAY_OK(2), HTTPS_LISTENER_OK('https', 1), OK_HTTP('http', 1)],
    },
  },
  {
    name: 'GatewayModifyListeners (remove: https removed)',
    world: worldWith({
      gateways: [
        gateway('gateway-remove-listener', [http('http', { from: 'All' })], { created: 10, generation: 2 }),
      ],
      httpRoutes: [
        httpRoute(
          'http-route-2',
          [{ kind: 'Gateway', name: 'gateway-remove-listener', namespace: INFRA }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
      ],
    }),
    expect: { 'Gateway gateway-remove-listener': [GATEWAY_OK(2), OK_HTTP('http', 1)] },
  },
  ...secretGrantRows(),
  {
    name: 'GatewayWithAttachedRoutes',
    world: worldWith({
      gateways: [
        gateway('gateway-with-one-attached-route', [selectorListener()], { created: 10 }),
        gateway('gateway-with-two-attached-routes', [selectorListener('foo.example.com')], { created: 10 }),
        gatewayOnly('unresolved-gateway-with-one-attached-unresolved-route', [
          {
            name: 'tls',
            port: 443,
            protocol: 'HTTPS',
            allowedRoutes: {
              kinds: [{ kind: 'HTTPRoute' }],
              namespaces: {
                from: 'Selector',
                selector: { matchLabels: { 'kubernetes.io/metadata.name': INFRA } },
              },
            },
            tls: {
              certificateRefs: [{ group: '', kind: 'Secret', name: 'does-not-exist' }],
              mode: 'Terminate',
            },
          },
        ]),
      ],
      httpRoutes: [
        httpRoute(
          'http-route-1',
          [{ name: 'gateway-with-one-attached-route' }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
        httpRoute(
          'http-route-2',
          [{ name: 'gateway-with-two-attached-routes' }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
        httpRoute(
          'http-route-3',
          [{ name: 'gateway-with-two-attached-routes' }],
          [toBackend('infra-backend-v1')],
          { created: 10 },
        ),
        httpRoute(
          'http-route-not-accepted',
          [{ name: 'gateway-with-two-attached-routes' }],
          [toBackend('infra-backend-v1')],
          {
            created: 10,
            hostnames: ['not-accepted.test.com'],
          },
        ),
        httpRoute(
          'http-route-4',
          [
            {
              kind: 'Gateway',
              name: 'unresolved-gateway-with-one-attached-unresolved-route',
              namespace: INFRA,
              sectionName: 'tls',
            },
          ],
          [toBackend('does-not-exist')],
          {
            created: 10,
          },
        ),
      ],
    }),
    expect: {
      'Gateway gateway-with-one-attached-route': [GATEWAY_OK(), OK_HTTP('http', 1)],
      'Gateway gateway-with-two-attached-routes': [GATEWAY_OK(), OK_HTTP('http', 2)],
      'HTTPRoute http-route-not-accepted': [
        'gen=1',
        '-/gateway-with-two-attached-routes: Accepted=False/NoMatchingListenerHostname ResolvedRefs=True/ResolvedRefs',
      ],
      'Gateway unresolved-gateway-with-one-attached-unresolved-route': [
        `gen=1 Accepted=True/ListenersNotValid ${PROGRAMMED_INVALID}`,
        `tls: Accepted=True/Accepted ResolvedRefs=False/InvalidCertificateRef ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[HTTPRoute] routes=1`,
      ],
      'HTTPRoute http-route-4': [
        'gen=1',
        `${INFRA}/unresolved-gateway-with-one-attached-unresolved-route#tls: Accepted=True/Accepted ResolvedRefs=False/BackendNotFound`,
      ],
    },
  },
  {
    name: 'HTTPRouteInvalidCrossNamespaceParentRef',
    world: worldWith({
      httpRoutes: [
        httpRoute(
          'invalid-cross-namespace-parent-ref',
          [{ name: 'same-namespace', namespace: INFRA }],
          [toBackend('web-backend')],
          {
            namespace: WEB,
            created: 10,
          },
        ),
      ],
    }),
    expect: {
      [`HTTPRoute ${WEB}/invalid-cross-namespace-parent-ref`]: [
        'gen=1',
        `${INFRA}/same-namespace: Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs`,
      ],
      'Gateway same-namespace': sameNamespaceOk(0),
    },
  },
  {
    name: 'HTTPRouteInvalidParentRefNotMatchingSectionName',
    world: worldWith({
      httpRoutes: [
        httpRoute(
          'httproute-listener-not-matching-section-name',
          [{ name: 'same-namespace', sectionName: 'http1', port: 80 }],
          [toBackend('infra-backend-v1')],
          {
            created: 10,
          },
        ),
      ],
    }),
    expect: {
      'HTTPRoute httproute-listener-not-matching-section-name': [
        'gen=1',
        '-/same-namespace#http1:80: Accepted=False/NoMatchingParent ResolvedRefs=True/ResolvedRefs',
      ],
      'Gateway same-namespace': sameNamespaceOk(0),
    },
  },
  {
    name: 'HTTPRouteObservedGenerationBump (backend patched)',
    world: worldWith({
      httpRoutes: [
        httpRoute('observed-generation-bump', [SAME], [toBackend('infra-backend-v2')], {
          created: 10,
          generation: 2,
        }),
      ],
    }),
    expect: { 'HTTPRoute observed-generation-bump': ['gen=2', `-/same-namespace: ${PARENT_OK}`] },
  },
  ...forwardingRows(),
];

function selectorListener(hostname?: string) {
  return http('http', {
    ...(hostname === undefined ? {} : { hostname }),
    allowedRoutes: {
      kinds: [{ kind: 'HTTPRoute' }],
      namespaces: { from: 'Selector', selector: { matchLabels: { 'kubernetes.io/metadata.name': INFRA } } },
    },
  });
}

/** Tests 8-11: an HTTPS listener whose certificate is web-backend/certificate. */
function secretGrantRows(): Row[] {
  const listener = () =>
    https('https', {
      from: 'All',
      certificate: { group: '', kind: 'Secret', name: 'certificate', namespace: WEB },
    });
  const row = (
    name: string,
    gatewayName: string,
    grants: GatewayWorld['referenceGrants'],
    line: string,
  ): Row => ({
    name,
    world: worldWith({
      gateways: [gateway(gatewayName, [listener()], { created: 10 })],
      referenceGrants: grants,
    }),
    expect: {
      [`Gateway ${gatewayName}`]:
        line === ''
          ? [GATEWAY_OK(), OK_HTTP('https')]
          : [`gen=1 Accepted=True/ListenersNotValid ${PROGRAMMED_INVALID}`, line],
    },
  });
  const refused = `https: Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted ${PROGRAMMED_INVALID} ${NO_CONFLICTS} kinds=[HTTPRoute] routes=0`;
  return [
    row(
      'GatewaySecretInvalidReferenceGrant',
      'gateway-secret-invalid-reference-grant',
      wrongSecretGrants(),
      refused,
    ),
    row('GatewaySecretMissingReferenceGrant', 'gateway-secret-missing-reference-grant', [], refused),
    row(
      'GatewaySecretReferenceGrantAllInNamespace',
      'gateway-secret-reference-grant-all-in-namespace',
      [secretGrant()],
      '',
    ),
    row(
      'GatewaySecretReferenceGrantSpecific',
      'gateway-secret-reference-grant-specific',
      [secretGrant('certificate')],
      '',
    ),
  ];
}

/** Tests 16-37: the route is accepted with its refs resolved (or the reason the test expects), the Gateway served. */
function forwardingRows(): Row[] {
  const simple = (name: string, routeName: string, rules: HTTPRouteRule[]): Row => ({
    name,
    world: worldWith({ httpRoutes: [httpRoute(routeName, [SAME], rules, { created: 10 })] }),
    expect: { [`HTTPRoute ${routeName}`]: routeOk(), 'Gateway same-namespace': sameNamespaceOk() },
  });
  const exact = (value: string, backend: string) => ({
    matches: [{ path: { type: 'Exact', value } }],
    backendRefs: [{ name: backend, port: 8080 }],
  });
  const prefix = (value: string, backend: string) => ({
    matches: [{ path: { type: 'PathPrefix', value } }],
    backendRefs: [{ name: backend, port: 8080 }],
  });
  const header = (name: string, value: string) => ({ headers: [{ name, value }] });
  return [
    simple('HTTPRouteSimpleSameNamespace', 'gateway-conformance-infra-test', [toBackend('infra-backend-v1')]),
    {
      name: 'HTTPRouteCrossNamespace',
      world: worldWith({
        httpRoutes: [
          httpRoute(
            'cross-namespace',
            [{ name: 'backend-namespaces', namespace: INFRA }],
            [toBackend('web-backend')],
            { namespace: WEB, created: 10 },
          ),
        ],
      }),
      expect: {
        [`HTTPRoute ${WEB}/cross-namespace`]: routeOk(`${INFRA}/backend-namespaces`),
        'Gateway backend-namespaces': [GATEWAY_OK(), OK_HTTP('http', 1)],
      },
    },
    {
      name: 'HTTPRouteServiceTypes',
      world: worldWith({
        services: [
          {
            metadata: { name: 'manual-endpointslices', namespace: INFRA },
            spec: { ports: [{ name: 'first-port', port: 8080 }] },
          },
          {
            metadata: { name: 'headless', namespace: INFRA },
            spec: { clusterIP: 'None', ports: [{ name: 'first-port', port: 8080 }] },
          },
          {
            metadata: { name: 'headless-manual-endpointslices', namespace: INFRA },
            spec: { clusterIP: 'None', ports: [{ name: 'first-port', port: 8080 }] },
          },
        ],
        httpRoutes: [
          httpRoute(
            'service-types',
            [SAME],
            [
              exact('/manual-endpointslices', 'manual-endpointslices'),
              exact('/headless', 'headless'),
              exact('/headless-manual-endpointslices', 'headless-manual-endpointslices'),
            ],
            { created: 10 },
          ),
        ],
      }),
      expect: { 'HTTPRoute service-types': routeOk(), 'Gateway same-namespace': sameNamespaceOk() },
    },
    {
      name: 'HTTPRouteMultipleGateways (status only: the traffic half is the documented failure)',
      world: worldWith({
        httpRoutes: [
          httpRoute(
            'multiple-gateways-shared-route',
            [SAME, { name: 'all-namespaces' }],
            [toBackend('infra-backend-v1', '/shared')],
            { created: 10 },
          ),
          httpRoute('same-namespace-dedicated-route', [SAME], [toBackend('infra-backend-v2', '/')], {
            created: 10,
          }),
          httpRoute(
            'all-namespaces-dedicated-route',
            [{ name: 'all-namespaces' }],
            [toBackend('infra-backend-v3', '/')],
            { created: 10 },
          ),
        ],
      }),
      expect: {
        'HTTPRoute multiple-gateways-shared-route': [
          'gen=1',
          `-/same-namespace: ${PARENT_OK}`,
          `-/all-namespaces: ${PARENT_OK}`,
        ],
        'Gateway same-namespace': sameNamespaceOk(2),
        'Gateway all-namespaces': [GATEWAY_OK(), OK_HTTP('http', 2)],
      },
    },
    simple('HTTPRouteExactPathMatching', 'exact-path-matching', [
      exact('/one', 'infra-backend-v1'),
      exact('/two', 'infra-backend-v2'),
    ]),
    simple('HTTPRouteMatching', 'matching', [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/' } }, header('version', 'one')],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/v2' } }, header('version', 'two')],
        backendRefs: [{ name: 'infra-backend-v2', port: 8080 }],
      },
    ]),
    simple('HTTPRouteHeaderMatching', 'header-matching', [
      { matches: [header('version', 'one')], backendRefs: [{ name: 'infra-backend-v1', port: 8080 }] },
      { matches: [header('version', 'two')], backendRefs: [{ name: 'infra-backend-v2', port: 8080 }] },
      {
        matches: [
          {
            headers: [
              { name: 'version', value: 'two' },
              { name: 'color', value: 'orange' },
            ],
          },
        ],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
      {
        matches: [header('color', 'blue'), header('color', 'green')],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
      {
        matches: [header('color', 'red'), header('color', 'yellow')],
        backendRefs: [{ name: 'infra-backend-v2', port: 8080 }],
      },
    ]),
    {
      name: 'HTTPRouteMatchingAcrossRoutes',
      world: worldWith({
        httpRoutes: [
          httpRoute(
            'matching-part1',
            [SAME],
            [
              {
                matches: [{ path: { type: 'PathPrefix', value: '/' } }, header('version', 'one')],
                backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
              },
            ],
            {
              created: 10,
              hostnames: ['example.com', 'example.net'],
            },
          ),
          httpRoute(
            'matching-part2',
            [SAME],
            [
              {
                matches: [{ path: { type: 'PathPrefix', value: '/v2' } }, header('version', 'two')],
                backendRefs: [{ name: 'infra-backend-v2', port: 8080 }],
              },
            ],
            {
              created: 10,
              hostnames: ['example.com'],
            },
          ),
        ],
      }),
      expect: {
        'HTTPRoute matching-part1': routeOk(),
        'HTTPRoute matching-part2': routeOk(),
        'Gateway same-namespace': sameNamespaceOk(2),
      },
    },
    simple('HTTPRoutePathMatchOrder', 'path-matching-order', [
      exact('/match', 'infra-backend-v1'),
      exact('/match/exact', 'infra-backend-v2'),
      exact('/match/exact/one', 'infra-backend-v3'),
      prefix('/match/', 'infra-backend-v3'),
      prefix('/match/prefix/', 'infra-backend-v1'),
      prefix('/match/prefix/one', 'infra-backend-v2'),
    ]),
    hostnameIntersectionRow(),
    listenerHostnameMatchingRow(),
    simple('HTTPRouteNoBackendRefs', 'no-backendrefs', [
      { matches: [{ path: { type: 'Exact', value: '/omitted-no-forward' } }] },
      { matches: [{ path: { type: 'Exact', value: '/empty-no-forward' } }], backendRefs: [] },
      prefix('/', 'infra-backend-v1'),
    ]),
    refRow(
      'HTTPRouteInvalidNonExistentBackendRef',
      'invalid-nonexistent-backend-ref',
      [{ backendRefs: [{ name: 'nonexistent', namespace: INFRA, port: 8080 }] }],
      'BackendNotFound',
    ),
    refRow(
      'HTTPRouteInvalidBackendRefUnknownKind',
      'invalid-backend-ref-unknown-kind',
      [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/v2' } }],
          backendRefs: [
            { group: 'unknownkind.example.com', kind: 'NonExistent', name: 'infra-backend-v1', port: 8080 },
          ],
        },
      ],
      'InvalidKind',
    ),
    simple('HTTPRouteWeight', 'weighted-backends', [
      {
        backendRefs: [
          { name: 'infra-backend-v1', port: 8080, weight: 70 },
          { name: 'infra-backend-v2', port: 8080, weight: 30 },
          { name: 'infra-backend-v3', port: 8080, weight: 0 },
        ],
      },
    ]),
    {
      name: 'HTTPRouteReferenceGrant',
      world: worldWith({
        referenceGrants: [serviceGrant()],
        httpRoutes: [
          httpRoute('reference-grant', [SAME], [toBackend('web-backend', undefined, WEB)], { created: 10 }),
        ],
      }),
      expect: { 'HTTPRoute reference-grant': routeOk(), 'Gateway same-namespace': sameNamespaceOk() },
    },
    {
      name: 'HTTPRouteReferenceGrant (grant deleted)',
      world: worldWith({
        httpRoutes: [
          httpRoute('reference-grant', [SAME], [toBackend('web-backend', undefined, WEB)], { created: 10 }),
        ],
      }),
      expect: {
        'HTTPRoute reference-grant': [
          'gen=1',
          '-/same-namespace: Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted',
        ],
      },
    },
    {
      ...refRow(
        'HTTPRouteInvalidReferenceGrant',
        'reference-grant',
        [toBackend('web-backend', undefined, WEB)],
        'RefNotPermitted',
      ),
      world: worldWith({
        referenceGrants: wrongServiceGrants(),
        httpRoutes: [
          httpRoute('reference-grant', [SAME], [toBackend('web-backend', undefined, WEB)], { created: 10 }),
        ],
      }),
    },
    refRow(
      'HTTPRouteInvalidCrossNamespaceBackendRef',
      'invalid-cross-namespace-backend-ref',
      [toBackend('web-backend', undefined, WEB)],
      'RefNotPermitted',
    ),
    {
      ...refRow(
        'HTTPRoutePartiallyInvalidViaInvalidReferenceGrant',
        'invalid-reference-grant',
        [toBackend('app-backend-v2', '/v2', APP), toBackend('app-backend-v1', undefined, APP)],
        'RefNotPermitted',
      ),
      world: worldWith({
        referenceGrants: [serviceGrant(APP, 'app-backend-v1')],
        httpRoutes: [
          httpRoute(
            'invalid-reference-grant',
            [SAME],
            [toBackend('app-backend-v2', '/v2', APP), toBackend('app-backend-v1', undefined, APP)],
            { created: 10 },
          ),
        ],
      }),
    },
    {
      name: 'HTTPRouteHTTPSListener',
      world: worldWith({
        httpRoutes: [
          httpRoute(
            'httproute-https-test',
            [{ name: 'same-namespace-with-https-listener' }],
            [toBackend('infra-backend-v1')],
            { created: 10, hostnames: ['example.org'] },
          ),
          httpRoute(
            'httproute-https-test-no-hostname',
            [{ name: 'same-namespace-with-https-listener', sectionName: 'https-with-hostname' }],
            [toBackend('infra-backend-v2')],
            {
              created: 10,
            },
          ),
        ],
      }),
      expect: {
        'HTTPRoute httproute-https-test': routeOk('-/same-namespace-with-https-listener'),
        'HTTPRoute httproute-https-test-no-hostname': routeOk(
          '-/same-namespace-with-https-listener#https-with-hostname',
        ),
        // example.org attaches to the hostname-less listener only; the second route to its section
        'Gateway same-namespace-with-https-listener': [
          GATEWAY_OK(),
          OK_HTTP('https', 1),
          OK_HTTP('https-with-hostname', 1),
          OK_HTTP('https-with-wildcard-hostname', 0),
          OK_HTTP('https-with-hostname-matching-wildcard', 0),
        ],
      },
    },
    simple('HTTPRouteRequestHeaderModifier', 'request-header-modifier', [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/set' } }],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { set: [{ name: 'X-Header-Set', value: 'set-overwrites-values' }] },
          },
        ],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/add' } }],
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: { add: [{ name: 'X-Header-Add', value: 'add-appends-values' }] },
          },
        ],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/remove' } }],
        filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { remove: ['X-Header-Remove'] } }],
        backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
      },
    ]),
    simple('HTTPRouteRedirectHostAndStatus', 'redirect-host-and-status', [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/hostname-redirect' } }],
        filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'example.org' } }],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/host-and-status' } }],
        filters: [{ type: 'RequestRedirect', requestRedirect: { statusCode: 301, hostname: 'example.org' } }],
      },
    ]),
  ];
}

/** A route on same-namespace that is accepted with ResolvedRefs=False/`reason`. */
function refRow(name: string, routeName: string, rules: HTTPRouteRule[], reason: string): Row {
  return {
    name,
    world: worldWith({ httpRoutes: [httpRoute(routeName, [SAME], rules, { created: 10 })] }),
    expect: {
      [`HTTPRoute ${routeName}`]: [
        'gen=1',
        `-/same-namespace: Accepted=True/Accepted ResolvedRefs=False/${reason}`,
      ],
      'Gateway same-namespace': sameNamespaceOk(),
    },
  };
}

function hostnameIntersectionRow(): Row {
  const gw = { name: 'httproute-hostname-intersection' };
  const route = (name: string, hostnames: string[], path: string, backend: string, parent = gw) =>
    httpRoute(name, [parent], [toBackend(backend, path)], { created: 10, hostnames });
  return {
    name: 'HTTPRouteHostnameIntersection',
    world: worldWith({
      gateways: [
        gateway(
          'httproute-hostname-intersection',
          [
            http('listener-1', { hostname: 'very.specific.com' }),
            http('listener-2', { hostname: '*.wildcard.io' }),
            http('listener-3', { hostname: '*.anotherwildcard.io' }),
          ],
          { created: 10 },
        ),
        gateway('httproute-hostname-intersection-all', [http('listener-1')], { created: 10 }),
      ],
      httpRoutes: [
        route(
          'specific-host-matches-listener-specific-host',
          ['non.matching.com', '*.nonmatchingwildcard.io', 'very.specific.com'],
          '/s1',
          'infra-backend-v1',
        ),
        route(
          'specific-host-matches-listener-wildcard-host',
          ['non.matching.com', 'wildcard.io', 'foo.wildcard.io', 'bar.wildcard.io', 'foo.bar.wildcard.io'],
          '/s2',
          'infra-backend-v2',
        ),
        route(
          'wildcard-host-matches-listener-specific-host',
          ['non.matching.com', '*.specific.com'],
          '/s3',
          'infra-backend-v3',
        ),
        route(
          'wildcard-host-matches-listener-wildcard-host',
          ['*.anotherwildcard.io'],
          '/s4',
          'infra-backend-v1',
        ),
        route('no-intersecting-hosts', ['specific.but.wrong.com', 'wildcard.io'], '/s5', 'infra-backend-v2'),
        httpRoute(
          'httproute-hostname-intersection-all',
          [{ name: 'httproute-hostname-intersection-all' }],
          [toBackend('infra-backend-v2')],
          {
            created: 10,
            hostnames: ['first.com', 'sub.first.com', 'second.com', 'sub.second.com'],
          },
        ),
      ],
    }),
    expect: {
      'Gateway httproute-hostname-intersection': [
        GATEWAY_OK(),
        OK_HTTP('listener-1', 2),
        OK_HTTP('listener-2', 1),
        OK_HTTP('listener-3', 1),
      ],
      'Gateway httproute-hostname-intersection-all': [GATEWAY_OK(), OK_HTTP('listener-1', 1)],
      'HTTPRoute specific-host-matches-listener-specific-host': routeOk('-/httproute-hostname-intersection'),
      'HTTPRoute no-intersecting-hosts': [
        'gen=1',
        '-/httproute-hostname-intersection: Accepted=False/NoMatchingListenerHostname ResolvedRefs=True/ResolvedRefs',
      ],
    },
  };
}

function listenerHostnameMatchingRow(): Row {
  const gw = 'httproute-listener-hostname-matching';
  return {
    name: 'HTTPRouteListenerHostnameMatching',
    world: worldWith({
      gateways: [
        gateway(
          gw,
          [
            http('listener-1', { hostname: 'bar.com' }),
            http('listener-2', { hostname: 'foo.bar.com' }),
            http('listener-3', { hostname: '*.bar.com' }),
            http('listener-4', { hostname: '*.foo.com' }),
          ],
          { created: 10 },
        ),
      ],
      httpRoutes: [
        httpRoute('backend-v1', [{ name: gw, sectionName: 'listener-1' }], [toBackend('infra-backend-v1')], {
          created: 10,
        }),
        httpRoute('backend-v2', [{ name: gw, sectionName: 'listener-2' }], [toBackend('infra-backend-v2')], {
          created: 10,
        }),
        httpRoute(
          'backend-v3',
          [
            { name: gw, sectionName: 'listener-3' },
            { name: gw, sectionName: 'listener-4' },
          ],
          [toBackend('infra-backend-v3')],
          { created: 10 },
        ),
      ],
    }),
    expect: {
      [`Gateway ${gw}`]: [
        GATEWAY_OK(),
        OK_HTTP('listener-1', 1),
        OK_HTTP('listener-2', 1),
        OK_HTTP('listener-3', 1),
        OK_HTTP('listener-4', 1),
      ],
      'HTTPRoute backend-v3': [
        'gen=1',
        `-/${gw}#listener-3: ${PARENT_OK}`,
        `-/${gw}#listener-4: ${PARENT_OK}`,
      ],
    },
  };
}

function linesOf(graph: ReturnType<typeof resolveWorld>['graph'], key: string): string[] {
  const [kind, id = ''] = key.split(' ');
  const [namespace, name] = id.includes('/') ? (id.split('/') as [string, string]) : [INFRA, id];
  if (kind === 'Gateway') return gatewayLines(graph, name, namespace);
  if (kind === 'HTTPRoute') return routeLines(graph, name, namespace);
  return classLines(graph, id);
}

for (const row of ROWS) {
  t.test(row.name, async (t) => {
    const { graph } = resolveWorld(row.world);
    for (const [key, lines] of Object.entries(row.expect)) t.strictSame(linesOf(graph, key), lines, key);
    // every condition of every object carries the object's generation
    const all = [
      ...graph.status.gatewayClasses.map((c) => [c.generation, c.conditions] as const),
      ...graph.status.gateways.flatMap((g) => [
        [g.generation, g.conditions] as const,
        ...g.listeners.map((l) => [g.generation, l.conditions] as const),
      ]),
      ...graph.status.httpRoutes.flatMap((r) => r.parents.map((p) => [r.generation, p.conditions] as const)),
    ];
    for (const [generation, conditions] of all) {
      for (const c of conditions)
        if (c.observedGeneration !== generation)
          t.fail(`${c.type}: observedGeneration ${c.observedGeneration}, not ${generation}`);
    }
  });
}

t.test('the base manifests: every Gateway accepted and programmed (NamespacesMustBeReady)', async (t) => {
  const { graph, diagnostics } = resolveWorld(baseWorld());
  t.strictSame(
    graph.status.gateways.map(
      (g) => `${g.name}: ${g.conditions.map((c) => `${c.type}=${c.status}`).join(' ')}`,
    ),
    [
      'all-namespaces: Accepted=True Programmed=True',
      'backend-namespaces: Accepted=True Programmed=True',
      'same-namespace: Accepted=True Programmed=True',
      'same-namespace-with-https-listener: Accepted=True Programmed=True',
    ],
  );
  t.strictSame(diagnostics, []);
});
