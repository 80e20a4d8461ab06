// A GatewayGraph's route plans and listener certificates → servers, routes, upstreams and
// certificates of the routing model the Ingresses build: one listener set, both served. Each match
// of each rule becomes a Route in the Server.routes of every host the HTTPRoute is served on, beside
// the Ingress paths of that host (never a path conflict: finishRoutes puts them in one precedence,
// gateway/precedence.ts). A host only HTTPRoutes name gets a server of its own whose default route
// is the controller's default backend.

import { type BuildState, newDraft, type ServerDraft } from '../build-state.ts';
import type { Backend, GatewayRouteMatch, ObjectRef, Route } from '../types.ts';
import { applyListenerCertificates, listenerKey } from './certificates.ts';
import { routePrecedence } from './precedence.ts';
import { GATEWAY_LOCATION_ANNOTATIONS, type RuleFilters, ruleFiltersOf } from './route-match.ts';
import type { GatewayGraph, ResolvedRule, RoutePlan } from './types.ts';

/**
 * Adds the graph's routes to the servers (creating the hosts only HTTPRoutes name) and the listener
 * certificates to the hosts they claim. Returns the certificate answering SNI names nothing claims
 * (the oldest HTTPS listener without a hostname), or null: none, or --default-ssl-certificate is set.
 */
export function addGatewayRoutes(state: BuildState, graph: GatewayGraph): string | null {
  if (graph.routes.length === 0 && graph.certificates.length === 0) return null;
  const reached = new Map<string, Set<string>>();
  // one ref per HTTPRoute, shared by its routes: the precedence finds an object's rank by it
  const refs = graph.routes.map(
    ({ route }): ObjectRef => ({ namespace: route.namespace, name: route.name, kind: 'HTTPRoute' }),
  );
  for (let i = 0; i < graph.routes.length; i++) {
    addPlan(state, graph.routes[i] as RoutePlan, refs[i] as ObjectRef, reached);
  }
  if (graph.routes.length > 0) {
    state.routePrecedence = routePrecedence(
      state.ingresses.map((ingress) => ingress.ref),
      state.snapshot.ingresses,
      graph.routes,
      refs,
    );
  }
  return applyListenerCertificates(state, graph.certificates, reached);
}

/** Where one HTTPRoute is served on one host: the protocols and the listeners' ports as written. */
interface HostAttachment {
  http: number | null;
  https: number | null;
}

/** A rule with what its routes share on every host: backends, filters, mirrors. */
interface CompiledRule {
  rule: ResolvedRule;
  backend: Backend;
  filters: RuleFilters;
  mirrors: GatewayRouteMatch['mirrors'];
}

function addPlan(
  state: BuildState,
  plan: RoutePlan,
  route: ObjectRef,
  reached: Map<string, Set<string>>,
): void {
  const hosts = new Map<string, HostAttachment>();
  for (const listener of plan.listeners) {
    for (const host of listener.hostnames.length === 0 ? ['_'] : listener.hostnames) {
      let at = hosts.get(host);
      if (at === undefined) {
        at = { http: null, https: null };
        hosts.set(host, at);
      }
      if (listener.protocol === 'HTTP') {
        at.http ??= listener.specPort;
        continue;
      }
      at.https ??= listener.specPort;
      let claims = reached.get(host);
      if (claims === undefined) {
        claims = new Set();
        reached.set(host, claims);
      }
      claims.add(listenerKey(listener.gateway, listener.listener));
    }
  }
  if (hosts.size === 0) return;
  const rules = plan.rules.map((rule) => compileRule(state, route, rule));
  for (const [host, at] of hosts) {
    const draft = host === '_' ? state.catchAll : (state.drafts.get(host) ?? createDraft(state, host, route));
    const protocols = at.http === null ? 'https' : at.https === null ? 'http' : 'both';
    const listenerPorts = { http: at.http, https: at.https };
    for (const { rule, backend, filters, mirrors } of rules) {
      for (const match of rule.matches) {
        const exact = match.path.type === 'Exact';
        const gateway: GatewayRouteMatch = {
          rule: rule.index,
          protocols,
          listenerPorts,
          method: match.method === null ? null : match.method.toUpperCase(),
          headers: match.headers,
          queryParams: match.queryParams,
          ...filters,
          mirrors,
        };
        const added: Route = {
          path: match.path.value,
          pathType: exact ? 'Exact' : 'Prefix',
          pathTypeAsWritten: exact ? 'Exact' : 'Prefix',
          ingress: route,
          backend,
          annotations: GATEWAY_LOCATION_ANNOTATIONS,
          canary: null,
          setsAffinityCookie: false,
          gateway,
        };
        draft.server.routes.push(added);
      }
    }
  }
}

/** A host no Ingress names: its server belongs to the first HTTPRoute naming it; unmatched requests get the controller's default backend. */
function createDraft(state: BuildState, host: string, route: ObjectRef): ServerDraft {
  const draft = newDraft(host, route, {
    ingress: null,
    backend: { type: 'default' },
    annotations: GATEWAY_LOCATION_ANNOTATIONS,
    canary: null,
  });
  state.drafts.set(host, draft);
  return draft;
}

/**
 * Backends through the build's UpstreamResolver with the ConfigMap's load-balance (endpoints, a
 * Service without ready endpoints answering 503, as for an Ingress; ExternalName Services were
 * refused by resolveGateways); a refused backendRef is an entry without an upstream (500 for its
 * share).
 */
function compileRule(state: BuildState, route: ObjectRef, rule: ResolvedRule): CompiledRule {
  const upstreamOf = (namespace: string, service: string, port: number): string => {
    const { backend, problem } = state.resolver.resolve(
      { namespace, service, port: String(port) },
      state.config.loadBalance,
    );
    if (problem !== null) state.diagnostics.report('HTTPRoute', route, problem.code, problem.message);
    return backend.upstream;
  };
  const backends = rule.backends.map((backend) =>
    backend.kind === 'service'
      ? { upstream: upstreamOf(backend.namespace, backend.name, backend.port), weight: backend.weight }
      : { upstream: null, weight: backend.weight },
  );
  return {
    rule,
    backend: { type: 'weighted', backends },
    filters: ruleFiltersOf(rule.filters),
    mirrors: rule.mirrors.map((mirror) => ({
      upstream: upstreamOf(mirror.namespace, mirror.name, mirror.port),
      percent: mirror.percent,
    })),
  };
}
