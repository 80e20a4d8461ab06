// Hand-made GatewayGraphs for the tests of addGatewayRoutes: route plans and listener certificates
// from a few fields, and a build that takes the graph as it is (not resolveGateways's).

import {
  type BuildResult,
  buildModel,
  createBuildCaches,
  type Gateway,
  type GatewayGraph,
  type HTTPRouteFilter,
  type ListenerCertificate,
  type ModelOptions,
  type ResolvedBackend,
  type ResolvedRule,
  type RoutePlan,
} from '../../../lib/model/index.ts';
import { service, slice, snapshotOf, type World } from '../helpers.ts';

const EPOCH = Date.parse('2026-01-01T00:00:00Z');
/** seconds after 2026-01-01, as the Ingress helper's `created` */
export const stamp = (seconds: number): string =>
  new Date(EPOCH + seconds * 1000).toISOString().replace('.000Z', 'Z');

export interface ListenerSpec {
  /** default `gw` */
  gateway?: string;
  /** default `http` / `https` by protocol */
  name?: string;
  protocol?: 'HTTP' | 'HTTPS';
  port?: number;
  /** effective hostnames; [] (default): the catch-all */
  hostnames?: string[];
}

export interface MatchSpec {
  /** default PathPrefix / */
  path?: string;
  exact?: boolean;
  method?: string;
  /** `name=value` */
  headers?: string[];
  query?: string[];
}

export interface RuleSpec {
  /** default one match: PathPrefix / */
  matches?: MatchSpec[];
  /** `service:port[*weight]`, or `!reason[*weight]` for a refused ref; default `web:80` */
  backends?: string[];
  filters?: HTTPRouteFilter[];
  /** `service:port` */
  mirrors?: string[];
}

export interface PlanSpec {
  namespace?: string;
  /** seconds after 2026-01-01 */
  created?: number;
  /** default one HTTP listener for the catch-all */
  listeners?: ListenerSpec[];
  /** default one rule */
  rules?: RuleSpec[];
}

const pair = (text: string): { name: string; value: string } => {
  const [name = '', value = ''] = text.split('=');
  return { name, value };
};

function backendOf(spec: string, namespace: string): ResolvedBackend {
  const [target = '', weight = '1'] = spec.split('*');
  if (target.startsWith('!')) return { kind: 'invalid', reason: target.slice(1), weight: Number(weight) };
  const [name = '', port = '80'] = target.split(':');
  return { kind: 'service', namespace, name, port: Number(port), weight: Number(weight) };
}

export function plan(name: string, spec: PlanSpec = {}): RoutePlan {
  const namespace = spec.namespace ?? 'default';
  const rules: ResolvedRule[] = (spec.rules ?? [{}]).map((rule, index) => ({
    index,
    matches: (rule.matches ?? [{}]).map((m) => ({
      path: { type: m.exact === true ? 'Exact' : 'PathPrefix', value: m.path ?? '/' },
      headers: (m.headers ?? []).map(pair),
      queryParams: (m.query ?? []).map(pair),
      method: m.method ?? null,
    })),
    filters: rule.filters ?? [],
    backends: (rule.backends ?? ['web:80']).map((b) => backendOf(b, namespace)),
    mirrors: (rule.mirrors ?? []).map((m) => {
      const [service = '', port = '80'] = m.split(':');
      return { namespace, name: service, port: Number(port), percent: 100 };
    }),
  }));
  return {
    route: { namespace, name },
    created: stamp(spec.created ?? 0),
    listeners: (spec.listeners ?? [{}]).map((l) => {
      const protocol = l.protocol ?? 'HTTP';
      return {
        gateway: { namespace: 'infra', name: l.gateway ?? 'gw', kind: 'Gateway' as const },
        listener: l.name ?? protocol.toLowerCase(),
        protocol,
        specPort: l.port ?? (protocol === 'HTTP' ? 80 : 443),
        hostnames: l.hostnames ?? [],
      };
    }),
    rules,
  };
}

/** An HTTPS listener's certificate: Gateway `gw` (namespace infra), the Secret in infra. */
export function listenerCertificate(
  secret: string,
  hostname: string | null,
  gateway = 'gw',
  listener = 'https',
): ListenerCertificate {
  return {
    gateway: { namespace: 'infra', name: gateway, kind: 'Gateway' },
    listener,
    hostname,
    secret: `infra/${secret}`,
  };
}

export function graphOf(routes: RoutePlan[], certificates: ListenerCertificate[] = []): GatewayGraph {
  return { status: { gatewayClasses: [], gateways: [], httpRoutes: [] }, routes, certificates };
}

/** A Gateway object, for its creationTimestamp (certificates: the older Gateway wins). */
export function gateway(name: string, created: number): Gateway {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { namespace: 'infra', name, creationTimestamp: stamp(created) },
    spec: { gatewayClassName: 'ingress-ts', listeners: [] },
  };
}

export interface GatewayWorld extends World {
  gateways?: Gateway[];
}

/**
 * The build of `world` with `graph` as the Gateway API half; every Service a plan names (in its own
 * namespace) exists with one ready endpoint unless the world lists it or `missing` names it.
 */
export function buildWithGraph(
  world: GatewayWorld,
  graph: GatewayGraph,
  options: Partial<ModelOptions> = {},
  missing: string[] = [],
): BuildResult {
  const services = [...(world.services ?? [])];
  const slices = [...(world.slices ?? [])];
  const listed = new Set(services.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`));
  let address = 100;
  for (const p of graph.routes) {
    for (const rule of p.rules) {
      const refs = [...rule.backends.flatMap((b) => (b.kind === 'service' ? [b] : [])), ...rule.mirrors];
      for (const ref of refs) {
        const key = `${ref.namespace}/${ref.name}`;
        if (listed.has(key) || missing.includes(ref.name)) continue;
        listed.add(key);
        services.push(service(ref.name, [{ port: ref.port, targetPort: ref.port }], ref.namespace));
        slices.push(
          slice(ref.name, [{ addresses: [`10.1.0.${address++}`] }], [{ port: ref.port }], {
            namespace: ref.namespace,
          }),
        );
      }
    }
  }
  const snapshot = { ...snapshotOf({ ...world, services, slices }), gateways: world.gateways ?? [] };
  return buildModel(snapshot, options, createBuildCaches(), () => graph);
}
