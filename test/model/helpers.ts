// Builders for model tests: a few fields in, a plain Kubernetes object out; and summaries that turn
// a build result into short strings a table can list.

import { readFileSync } from 'node:fs';
import type { Test } from 'tap';
import {
  type Backend,
  type BuildResult,
  buildModel,
  type ConfigMap,
  DEFAULT_MODEL_OPTIONS,
  EMPTY_SNAPSHOT,
  type EndpointSlice,
  type HTTPIngressPath,
  type Ingress,
  type IngressClass,
  type IngressTLS,
  type Model,
  type ModelOptions,
  type Route,
  type Secret,
  type Service,
  type Snapshot,
} from '../../lib/model/index.ts';

export const PREFIX = 'nginx.ingress.kubernetes.io';
const EPOCH = Date.parse('2026-01-01T00:00:00Z');

export interface PathSpec {
  path?: string;
  pathType?: string;
  /** `service:port` (number or name) */
  backend: string;
}

export interface RuleSpec {
  host?: string;
  /** undefined: a rule without `http` */
  paths?: PathSpec[];
}

export interface IngressSpec {
  namespace?: string;
  /** seconds after 2026-01-01; Ingresses are ordered by it */
  created?: number;
  /** spec.ingressClassName; null for none; default 'ingress-ts' */
  className?: string | null;
  annotations?: Record<string, string>;
  /** annotations without the prefix */
  nginx?: Record<string, string>;
  rules?: RuleSpec[];
  defaultBackend?: string;
  tls?: IngressTLS[];
}

export function backendOf(spec: string) {
  const [name, port = '80'] = spec.split(':');
  return { service: { name, port: /^\d+$/.test(port) ? { number: Number(port) } : { name: port } } };
}

export function path(path: string, backend: string, pathType = 'Prefix'): PathSpec {
  return { path, pathType, backend };
}

export function rule(host: string | undefined, ...paths: PathSpec[]): RuleSpec {
  return { host, paths };
}

export function ingress(name: string, spec: IngressSpec = {}): Ingress {
  const annotations: Record<string, string> = { ...spec.annotations };
  for (const [key, value] of Object.entries(spec.nginx ?? {})) annotations[`${PREFIX}/${key}`] = value;
  const body: NonNullable<Ingress['spec']> = {};
  if (spec.className !== null) body.ingressClassName = spec.className ?? 'ingress-ts';
  if (spec.defaultBackend !== undefined) body.defaultBackend = backendOf(spec.defaultBackend);
  if (spec.tls !== undefined) body.tls = spec.tls;
  if (spec.rules !== undefined) {
    body.rules = spec.rules.map((r) => ({
      ...(r.host === undefined ? {} : { host: r.host }),
      ...(r.paths === undefined
        ? {}
        : {
            http: {
              paths: r.paths.map((p) => ({
                ...(p.path === undefined ? {} : { path: p.path }),
                ...(p.pathType === undefined ? {} : { pathType: p.pathType }),
                backend: backendOf(p.backend),
              })),
            },
          }),
    }));
  }
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: spec.namespace ?? 'default',
      creationTimestamp: new Date(EPOCH + (spec.created ?? 0) * 1000).toISOString().replace('.000Z', 'Z'),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    spec: body,
  };
}

/** An Ingress of our class with one rule whose path entries are used exactly as given (possibly malformed). */
export function rawPaths(name: string, host: string, paths: unknown[]): Ingress {
  return {
    metadata: { name, namespace: 'default' },
    spec: { ingressClassName: 'ingress-ts', rules: [{ host, http: { paths: paths as HTTPIngressPath[] } }] },
  };
}

/** A raw path entry: Prefix `path` to `backend` (default: Service web, port 80). */
export function rawPath(
  path: unknown,
  backend: unknown = { service: { name: 'web', port: { number: 80 } } },
) {
  return { path, pathType: 'Prefix', backend };
}

export function ingressClass(name: string, controller = 'ingress-ts.dev/controller'): IngressClass {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name },
    spec: { controller },
  };
}

export function service(
  name: string,
  ports: Array<{ port: number; targetPort?: number | string; name?: string; protocol?: string }>,
  namespace = 'default',
): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { type: 'ClusterIP', ports },
  };
}

export function externalNameService(
  name: string,
  externalName: string,
  ports: Service['spec'] = {},
): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { ...ports, type: 'ExternalName', externalName },
  };
}

export function slice(
  serviceName: string,
  endpoints: Array<{ addresses: string[]; ready?: boolean }>,
  ports: Array<{ port: number; name?: string; protocol?: string }>,
  options: { name?: string; namespace?: string } = {},
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: options.name ?? `${serviceName}-abc`,
      namespace: options.namespace ?? 'default',
      labels: { 'kubernetes.io/service-name': serviceName },
    },
    addressType: 'IPv4',
    ports,
    endpoints: endpoints.map((e) => ({
      addresses: e.addresses,
      ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }),
    })),
  };
}

const fixtures = new URL('../fixtures/tls/', import.meta.url);
/** PEM pair from test/fixtures/tls: a-example, wildcard-example, cn-only, other */
export function pem(name: string): { crt: string; key: string } {
  return {
    crt: readFileSync(new URL(`${name}.crt`, fixtures), 'utf8'),
    key: readFileSync(new URL(`${name}.key`, fixtures), 'utf8'),
  };
}

export function tlsSecret(name: string, pair: { crt: string; key: string }, namespace = 'default'): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace },
    data: {
      'tls.crt': Buffer.from(pair.crt).toString('base64'),
      'tls.key': Buffer.from(pair.key).toString('base64'),
    },
  };
}

export interface World {
  ingresses: Ingress[];
  classes?: IngressClass[];
  services?: Service[];
  slices?: EndpointSlice[];
  secrets?: Secret[];
  configMaps?: ConfigMap[];
  /** create a Service with one ready endpoint for every backend no listed Service provides (default true) */
  autoBackends?: boolean;
}

/** A snapshot from a world; referenced Services that are not listed are created (ready, port = targetPort). */
export function snapshotOf(world: World): Snapshot {
  const services = [...(world.services ?? [])];
  const slices = [...(world.slices ?? [])];
  if (world.autoBackends !== false) {
    const listed = new Set(services.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`));
    let address = 1;
    for (const ing of world.ingresses) {
      const namespace = ing.metadata?.namespace ?? 'default';
      const list = <T>(value: T[] | undefined): T[] => (Array.isArray(value) ? value : []);
      const backends = [
        ing.spec?.defaultBackend,
        ...list(ing.spec?.rules).flatMap((r) => list(r?.http?.paths).map((p) => p?.backend)),
      ];
      for (const backend of backends) {
        const name = backend?.service?.name;
        const number = backend?.service?.port?.number;
        if (name === undefined || listed.has(`${namespace}/${name}`)) continue;
        listed.add(`${namespace}/${name}`);
        const port = number ?? 80;
        const portName = backend?.service?.port?.name;
        services.push(
          service(name, [{ port, targetPort: port, ...(portName ? { name: portName } : {}) }], namespace),
        );
        slices.push(
          slice(
            name,
            [{ addresses: [`10.0.0.${address++}`] }],
            [{ port, ...(portName ? { name: portName } : {}) }],
            {
              namespace,
            },
          ),
        );
      }
    }
  }
  return {
    ingresses: world.ingresses,
    ingressClasses: world.classes ?? [ingressClass('ingress-ts')],
    services,
    endpointSlices: slices,
    secrets: world.secrets ?? [],
    configMaps: world.configMaps ?? [],
  };
}

export function build(world: World, options: Partial<ModelOptions> = {}): BuildResult {
  return buildModel(snapshotOf(world), options);
}

/** `name` (namespace default) or `ns/name`, after `Kind:` for a Gateway API object */
export const who = (ref: { namespace: string; name: string; kind?: string } | null): string =>
  ref === null
    ? '-'
    : `${ref.kind === undefined ? '' : `${ref.kind}:`}${ref.namespace === 'default' ? ref.name : `${ref.namespace}/${ref.name}`}`;

/** ` [#rule protocols METHOD h:name=value q:name=value]` for an HTTPRoute's route, '' for an Ingress path */
function gatewayText(match: Route['gateway']): string {
  if (match === undefined) return '';
  const parts = [`#${match.rule}`, match.protocols];
  if (match.method !== null) parts.push(match.method);
  for (const header of match.headers) parts.push(`h:${header.name}=${header.value}`);
  for (const param of match.queryParams) parts.push(`q:${param.name}=${param.value}`);
  return ` [${parts.join(' ')}]`;
}

function targetOf(backend: Backend): string {
  if (backend.type === 'weighted') {
    if (backend.backends.length === 0) return '500';
    return backend.backends.map((b) => `${b.upstream ?? '500'}*${b.weight}`).join('|');
  }
  return backend.type === 'default' ? 'default' : backend.upstream;
}

/** `~> upstream (ingress) w=weight/total h=header[=value|~pattern] c=cookie`, the set parts only */
function canaryText(canary: Route['canary']): string {
  if (canary === null) return '';
  const parts = [` ~> ${canary.upstream} (${who(canary.ingress)}) w=${canary.weight}/${canary.weightTotal}`];
  if (canary.header !== null) {
    const match =
      canary.headerValue !== null
        ? `=${canary.headerValue}`
        : canary.headerPattern !== null
          ? `~${canary.headerPattern}`
          : '';
    parts.push(`h=${canary.header}${match}`);
  }
  if (canary.cookie !== null) parts.push(`c=${canary.cookie}`);
  return parts.join(' ');
}

/** `host Type path -> upstream (ingress)[ ~> canary...][ [gateway match]]`, every server, catch-all (`_`) last;
 * weighted backends as `upstream*weight|500*weight`. */
export function routeLines(model: Model): string[] {
  return [...model.servers, model.catchAll].flatMap((server) =>
    server.routes.map(
      (r) =>
        `${server.hostname} ${r.pathType} ${r.path} -> ${targetOf(r.backend)} (${who(r.ingress)})${canaryText(r.canary)}${gatewayText(r.gateway)}`,
    ),
  );
}

/** `host -> target (ingress)` for each server's default route, catch-all last. */
export function defaultLines(model: Model): string[] {
  return [...model.servers, model.catchAll].map(
    (server) =>
      `${server.hostname} -> ${targetOf(server.defaultRoute.backend)} (${who(server.defaultRoute.ingress)})`,
  );
}

/** `CODE name` (Ingress in default), else `CODE Kind:ns/name`, sorted. */
export function diagnosticLines(result: BuildResult): string[] {
  return result.diagnostics
    .map((d) =>
      d.kind === 'Ingress' && d.namespace === 'default'
        ? `${d.code} ${d.name}`
        : `${d.code} ${d.kind}:${d.namespace}/${d.name}`,
    )
    .sort();
}

export interface Case extends World {
  name: string;
  options?: Partial<ModelOptions>;
  /** exact route lines (see routeLines) */
  routes?: string[];
  /** exact default-route lines (see defaultLines) */
  defaults?: string[];
  /** exact diagnostic lines (see diagnosticLines); default: none */
  diagnostics?: string[];
  /** substrings that must appear in the diagnostic messages */
  messages?: string[];
  check?: (t: Test, result: BuildResult) => void;
}

export function runCases(t: Test, cases: readonly Case[]): void {
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const result = build(c, c.options);
      if (c.routes !== undefined) t.strictSame(routeLines(result.model), c.routes, 'routes');
      if (c.defaults !== undefined) t.strictSame(defaultLines(result.model), c.defaults, 'default routes');
      t.strictSame(diagnosticLines(result), [...(c.diagnostics ?? [])].sort(), 'diagnostics');
      for (const fragment of c.messages ?? []) {
        t.ok(
          result.diagnostics.some((d) => d.message.includes(fragment)),
          `a diagnostic says "${fragment}"`,
        );
      }
      c.check?.(t, result);
    });
  }
}

/** The build of a global ConfigMap (`ingress/ingress-ts`) holding `data`, and nothing else. */
export function buildFromConfigMap(data: Record<string, string>): BuildResult {
  const metadata = { namespace: 'ingress', name: 'ingress-ts' };
  return buildModel(
    { ...EMPTY_SNAPSHOT, configMaps: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata, data }] },
    { ...DEFAULT_MODEL_OPTIONS, configMap: 'ingress/ingress-ts' },
  );
}

/** One ConfigMap value of a key table: valid (`read` gives `want`) or invalid (`says`, the default stays). */
export interface KeyCase<C> {
  key: string;
  value: string;
  /** the part of the config the value sets; undefined: invalid, the default stays */
  read?: (config: C) => unknown;
  want?: unknown;
  /** what the diagnostic says (invalid values) */
  says?: string;
}

/**
 * A subtest per case: a valid value is read without a diagnostic; an invalid one gets one
 * CONFIG_VALUE_INVALID naming the key and keeps the whole config (`configOf`) at its default.
 */
export function runKeyCases<C>(t: Test, cases: readonly KeyCase<C>[], configOf: (model: Model) => C): void {
  const defaults = configOf(buildFromConfigMap({}).model);
  for (const c of cases) {
    t.test(`${c.key}: ${JSON.stringify(c.value)}`, async (t) => {
      const { model, diagnostics } = buildFromConfigMap({ [c.key]: c.value });
      const config = configOf(model);
      if (c.read !== undefined) {
        t.strictSame(diagnostics, [], 'no diagnostic');
        t.strictSame(c.read(config), c.want);
        return;
      }
      t.equal(diagnostics.length, 1, 'one diagnostic');
      const d = diagnostics[0];
      t.equal(d?.code, 'CONFIG_VALUE_INVALID');
      t.match(d?.message, `ConfigMap key ${c.key}=`);
      t.match(d?.message, c.says ?? '');
      t.match(d?.message, 'the default is used');
      t.strictSame(config, defaults, 'the default stays');
    });
  }
}
