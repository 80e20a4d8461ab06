// The Gateway API conformance suite's base manifests (conformance/base/manifests.yaml, v1.6.1) and its
// programmatic Secrets, as plain objects, with builders for the objects each test adds. Shared by the
// model's table tests and the conformance e2e tests: the e2e tests turn the same objects into what the
// fake API server or a manifests folder holds.

import { readFileSync } from 'node:fs';
import { readGlobalConfig } from '../../../lib/model/build.ts';
import { createBuildState, createObjectLookups } from '../../../lib/model/build-state.ts';
import { type Diagnostic, DiagnosticsCollector } from '../../../lib/model/diagnostics.ts';
import { resolveGateways } from '../../../lib/model/gateway/resolve.ts';
import type {
  Gateway,
  GatewayClass,
  GatewayGraph,
  HTTPRoute,
  HTTPRouteRule,
  Listener,
  ModelOptions,
  Namespace,
  ParentReference,
  ReferenceGrant,
  Secret,
  Service,
  Snapshot,
} from '../../../lib/model/index.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../../lib/model/index.ts';

export const GROUP = 'gateway.networking.k8s.io';
export const CONTROLLER = DEFAULT_MODEL_OPTIONS.gatewayControllerName as string;
export const CLASS = 'gateway-conformance';
/** supportedFeatures: the core features and the extended ones whose conformance tests pass, sorted */
export const FEATURES = [
  'Gateway',
  'HTTPRoute',
  'HTTPRouteHostRewrite',
  'HTTPRouteMethodMatching',
  'HTTPRoutePathRedirect',
  'HTTPRoutePathRewrite',
  'HTTPRoutePortRedirect',
  'HTTPRouteQueryParamMatching',
  'HTTPRouteRequestMirror',
  'HTTPRouteResponseHeaderModification',
  'HTTPRouteSchemeRedirect',
  'ReferenceGrant',
].join(',');
export const INFRA = 'gateway-conformance-infra';
export const APP = 'gateway-conformance-app-backend';
export const WEB = 'gateway-conformance-web-backend';

const EPOCH = Date.parse('2026-01-01T00:00:00Z');
/** RFC 3339 `seconds` after 2026-01-01: the base manifests are at 0, a test's objects later. */
export const at = (seconds: number): string =>
  new Date(EPOCH + seconds * 1000).toISOString().replace('.000Z', 'Z');

interface Meta {
  namespace?: string;
  /** seconds after 2026-01-01 (default 0) */
  created?: number;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function metadata(name: string, meta: Meta, namespaced = true) {
  return {
    name,
    ...(namespaced ? { namespace: meta.namespace ?? INFRA } : {}),
    creationTimestamp: at(meta.created ?? 0),
    generation: meta.generation ?? 1,
    ...(meta.labels === undefined ? {} : { labels: meta.labels }),
    ...(meta.annotations === undefined ? {} : { annotations: meta.annotations }),
  };
}

export function gatewayClass(name: string, spec: GatewayClass['spec'] = {}, meta: Meta = {}): GatewayClass {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: metadata(name, meta, false),
    spec: { controllerName: CONTROLLER, ...spec },
  };
}

export function gateway(
  name: string,
  listeners: Listener[],
  meta: Meta & { spec?: Gateway['spec'] } = {},
): Gateway {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: metadata(name, meta),
    spec: { gatewayClassName: CLASS, listeners, ...meta.spec },
  };
}

/** An HTTP listener on 80 admitting routes `from` (default Same). */
export function http(name: string, extra: Partial<Listener> & { from?: string } = {}): Listener {
  const { from = 'Same', ...rest } = extra;
  return { name, port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from } }, ...rest };
}

/** An HTTPS listener on 443 with one certificateRef (default infra/tls-validity-checks-certificate). */
export function https(
  name: string,
  extra: Partial<Listener> & { from?: string; certificate?: Record<string, string> } = {},
): Listener {
  const {
    from = 'Same',
    certificate = { group: '', kind: 'Secret', name: 'tls-validity-checks-certificate', namespace: INFRA },
    ...rest
  } = extra;
  return {
    name,
    port: 443,
    protocol: 'HTTPS',
    allowedRoutes: { namespaces: { from } },
    tls: { certificateRefs: [certificate] },
    ...rest,
  };
}

export function httpRoute(
  name: string,
  parentRefs: ParentReference[],
  rules: HTTPRouteRule[] | undefined,
  meta: Meta & { hostnames?: string[] } = {},
): HTTPRoute {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: metadata(name, meta),
    spec: {
      parentRefs,
      ...(meta.hostnames === undefined ? {} : { hostnames: meta.hostnames }),
      ...(rules === undefined ? {} : { rules }),
    },
  };
}

/** A rule sending everything (or `path` as a PathPrefix) to `backend` (`name:port`, namespace optional). */
export function toBackend(backend: string, path?: string, namespace?: string): HTTPRouteRule {
  const [name, port = '8080'] = backend.split(':');
  return {
    ...(path === undefined ? {} : { matches: [{ path: { type: 'PathPrefix', value: path } }] }),
    backendRefs: [{ name, port: Number(port), ...(namespace === undefined ? {} : { namespace }) }],
  };
}

export function referenceGrant(
  name: string,
  namespace: string,
  from: Array<{ group: string; kind: string; namespace: string }>,
  to: Array<{ group: string; kind: string; name?: string }>,
  created = 0,
): ReferenceGrant {
  return {
    apiVersion: `${GROUP}/v1beta1`,
    kind: 'ReferenceGrant',
    metadata: metadata(name, { namespace, created }),
    spec: { from, to },
  };
}

function namespace(name: string, labels: Record<string, string>): Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { ...labels, 'kubernetes.io/metadata.name': name } },
  };
}

function service(name: string, namespace: string, ports: number[]): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: {
      type: 'ClusterIP',
      ports: ports.map((port) => ({ port, targetPort: port === 443 ? 8443 : 3000 })),
    },
  };
}

const tlsFixtures = new URL('../../fixtures/tls/', import.meta.url);
const pemOf = (name: string, ext: string): string =>
  readFileSync(new URL(`${name}.${ext}`, tlsFixtures), 'utf8');

/** A `kubernetes.io/tls` Secret; `pair` names a PEM pair of test/fixtures/tls, or gives the values. */
export function tlsSecret(
  name: string,
  namespace: string,
  pair: string | { crt: string; key: string },
): Secret {
  const values = typeof pair === 'string' ? { crt: pemOf(pair, 'crt'), key: pemOf(pair, 'key') } : pair;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace },
    data: {
      'tls.crt': Buffer.from(values.crt).toString('base64'),
      'tls.key': Buffer.from(values.key).toString('base64'),
    },
  };
}

/** The objects of conformance/base/manifests.yaml and the suite's setup, core-relevant ones. */
export interface GatewayWorld {
  gatewayClasses: GatewayClass[];
  gateways: Gateway[];
  httpRoutes: HTTPRoute[];
  referenceGrants: ReferenceGrant[];
  namespaces: Namespace[];
  services: Service[];
  secrets: Secret[];
}

export function baseWorld(): GatewayWorld {
  return {
    gatewayClasses: [gatewayClass(CLASS)],
    namespaces: [
      namespace(INFRA, { 'gateway-conformance': 'infra' }),
      namespace(APP, { 'gateway-conformance': 'backend' }),
      namespace(WEB, { 'gateway-conformance': 'backend' }),
    ],
    gateways: [
      gateway('same-namespace', [http('http')]),
      gateway('all-namespaces', [http('http', { from: 'All' })]),
      gateway('backend-namespaces', [
        http('http', {
          allowedRoutes: {
            namespaces: { from: 'Selector', selector: { matchLabels: { 'gateway-conformance': 'backend' } } },
          },
        }),
      ]),
      gateway('same-namespace-with-https-listener', [
        https('https'),
        https('https-with-hostname', { hostname: 'second-example.org' }),
        https('https-with-wildcard-hostname', { hostname: '*.wildcard.org' }),
        https('https-with-hostname-matching-wildcard', { hostname: 'fourth-example.wildcard.org' }),
      ]),
    ],
    httpRoutes: [],
    referenceGrants: [],
    services: [
      service('infra-backend-v1', INFRA, [8080, 8081, 8082]),
      service('infra-backend-v2', INFRA, [8080]),
      service('infra-backend-v3', INFRA, [8080]),
      service('tls-backend', INFRA, [443]),
      service('app-backend-v1', APP, [8080]),
      service('app-backend-v2', APP, [8080]),
      service('tls-backend', APP, [443]),
      service('web-backend', WEB, [8080]),
    ],
    secrets: [
      tlsSecret('certificate', WEB, 'wildcard-example'),
      tlsSecret('tls-validity-checks-certificate', INFRA, 'a-example'),
    ],
  };
}

/** The base world plus a test's objects (lists appended). */
export function worldWith(extra: Partial<GatewayWorld>): GatewayWorld {
  const base = baseWorld();
  const out = { ...base };
  for (const key of Object.keys(extra) as Array<keyof GatewayWorld>) {
    (out[key] as unknown[]) = [...(base[key] as unknown[]), ...((extra[key] as unknown[]) ?? [])];
  }
  return out;
}

export function snapshotOfWorld(world: GatewayWorld): Snapshot {
  return {
    ingresses: [],
    ingressClasses: [],
    services: world.services,
    endpointSlices: [],
    secrets: world.secrets,
    configMaps: [],
    gatewayClasses: world.gatewayClasses,
    gateways: world.gateways,
    httpRoutes: world.httpRoutes,
    referenceGrants: world.referenceGrants,
    namespaces: world.namespaces,
  };
}

export interface Resolved {
  graph: GatewayGraph;
  diagnostics: Diagnostic[];
  /** what the build recorded as looked up: `namespace/name` */
  services: string[];
  secrets: string[];
}

/** resolveGateways alone over the world's snapshot, with the diagnostics and references it left. */
export function resolveWorld(world: GatewayWorld, overrides: Partial<ModelOptions> = {}): Resolved {
  const snapshot = snapshotOfWorld(world);
  const options: ModelOptions = { ...DEFAULT_MODEL_OPTIONS, ...overrides };
  const diagnostics = new DiagnosticsCollector();
  const lookups = createObjectLookups(snapshot);
  const config = readGlobalConfig(snapshot, options, lookups, diagnostics);
  const state = createBuildState(snapshot, options, diagnostics, lookups, config);
  const graph = resolveGateways(state);
  return {
    graph,
    diagnostics: diagnostics.list(),
    services: state.resolver.referencedServices(),
    secrets: [...lookups.referencedSecrets],
  };
}

const fromGateway = (namespace = INFRA) => [{ group: GROUP, kind: 'Gateway', namespace }];
const fromRoute = (namespace = INFRA) => [{ group: GROUP, kind: 'HTTPRoute', namespace }];

/** GatewaySecretInvalidReferenceGrant's seven grants: each wrong in one field, none lets infra's Gateways use web-backend/certificate. */
export function wrongSecretGrants(): ReferenceGrant[] {
  const secret = [{ group: '', kind: 'Secret', name: 'certificate' }];
  return [
    referenceGrant('reference-grant-wrong-namespace', APP, fromGateway(), secret),
    referenceGrant(
      'reference-grant-wrong-from-group',
      WEB,
      [{ group: 'not-the-group-youre-looking-for', kind: 'Gateway', namespace: INFRA }],
      secret,
    ),
    referenceGrant('reference-grant-wrong-from-kind', WEB, fromRoute(), secret),
    referenceGrant(
      'reference-grant-wrong-from-namespace',
      WEB,
      fromGateway('not-the-namespace-youre-looking-for'),
      secret,
    ),
    referenceGrant('reference-grant-wrong-to-group', WEB, fromGateway(), [
      {
        group: 'not-the-group-youre-looking-for',
        kind: 'Secret',
        name: 'not-the-certificate-youre-looking-for',
      },
    ]),
    referenceGrant('reference-grant-wrong-to-kind', WEB, fromGateway(), [
      { group: '', kind: 'Service', name: 'certificate' },
    ]),
    referenceGrant('reference-grant-wrong-to-name', WEB, fromGateway(), [
      { group: '', kind: 'Secret', name: 'not-the-certificate-youre-looking-for' },
    ]),
  ];
}

/** HTTPRouteInvalidReferenceGrant's seven grants: none lets infra's HTTPRoutes use web-backend/web-backend. */
export function wrongServiceGrants(): ReferenceGrant[] {
  const service = [{ group: '', kind: 'Service', name: 'web-backend' }];
  return [
    referenceGrant('reference-grant-wrong-namespace', INFRA, fromRoute(), service),
    referenceGrant(
      'reference-grant-wrong-from-group',
      WEB,
      [{ group: 'not-the-group-youre-looking-for', kind: 'HTTPRoute', namespace: INFRA }],
      service,
    ),
    referenceGrant('reference-grant-wrong-from-kind', WEB, fromGateway(), service),
    referenceGrant(
      'reference-grant-wrong-from-namespace',
      WEB,
      fromRoute('not-the-namespace-youre-looking-for'),
      service,
    ),
    referenceGrant('reference-grant-wrong-to-group', WEB, fromRoute(), [
      { group: 'not-the-group-youre-looking-for', kind: 'Service', name: 'web-backend' },
    ]),
    referenceGrant('reference-grant-wrong-to-kind', WEB, fromRoute(), [
      { group: '', kind: 'Secret', name: 'web-backend' },
    ]),
    referenceGrant('reference-grant-wrong-to-name', WEB, fromRoute(), [
      { group: '', kind: 'Secret', name: 'not-the-service-youre-looking-for' },
    ]),
  ];
}

/** The grant a correct Secret reference needs (GatewaySecretReferenceGrantSpecific/AllInNamespace). */
export function secretGrant(name?: string): ReferenceGrant {
  return referenceGrant('reference-grant', WEB, fromGateway(), [
    { group: '', kind: 'Secret', ...(name === undefined ? {} : { name }) },
  ]);
}

/** The grant HTTPRouteReferenceGrant adds: infra's HTTPRoutes may use web-backend/web-backend. */
export function serviceGrant(namespace = WEB, name = 'web-backend'): ReferenceGrant {
  return referenceGrant('reference-grant', namespace, fromRoute(), [{ group: '', kind: 'Service', name }]);
}

// --- summaries a table can list

type Conditioned = { conditions: Array<{ type: string; status: string; reason: string }> };
const conditionText = (c: Conditioned): string =>
  c.conditions.map((x) => `${x.type}=${x.status}/${x.reason}`).join(' ');

/** `gen=N Accepted=... Programmed=...`, then one line per listener: `name: conditions kinds=[...] routes=N`. */
export function gatewayLines(graph: GatewayGraph, name: string, namespace = INFRA): string[] {
  const report = graph.status.gateways.find((g) => g.name === name && g.namespace === namespace);
  if (report === undefined) return ['(not ours)'];
  return [
    `gen=${report.generation} ${conditionText(report)}`,
    ...report.listeners.map(
      (l) =>
        `${l.name}: ${conditionText(l)} kinds=[${l.supportedKinds.map((k) => k.kind).join(',')}] routes=${l.attachedRoutes}`,
    ),
  ];
}

/** One line per parent: `namespace/name[#section][:port]: conditions`, after `gen=N`. */
export function routeLines(graph: GatewayGraph, name: string, namespace = INFRA): string[] {
  const report = graph.status.httpRoutes.find((r) => r.name === name && r.namespace === namespace);
  if (report === undefined) return ['(no parents of ours)'];
  return [
    `gen=${report.generation}`,
    ...report.parents.map((p) => {
      const ref = p.parentRef;
      const section = ref.sectionName === undefined ? '' : `#${ref.sectionName}`;
      const port = ref.port === undefined ? '' : `:${ref.port}`;
      return `${ref.namespace ?? '-'}/${ref.name}${section}${port}: ${conditionText(p)}`;
    }),
  ];
}

export function classLines(graph: GatewayGraph, name: string): string[] {
  const report = graph.status.gatewayClasses.find((c) => c.name === name);
  if (report === undefined) return ['(not ours)'];
  return [`gen=${report.generation} ${conditionText(report)} features=${report.supportedFeatures.join(',')}`];
}

/** The listener line of a listener served and valid with `routes` routes. */
export const OK_HTTP = (name: string, routes = 0): string =>
  `${name}: Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs Programmed=True/Programmed Conflicted=False/NoConflicts kinds=[HTTPRoute] routes=${routes}`;
export const GATEWAY_OK = (generation = 1): string =>
  `gen=${generation} Accepted=True/Accepted Programmed=True/Programmed`;
export const PARENT_OK = 'Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs';
