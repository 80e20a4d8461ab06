// The Gateway API objects of a snapshot → a GatewayGraph: which GatewayClasses and Gateways are ours,
// each listener checked (protocol, port, kinds, certificates), each HTTPRoute attached to the listeners
// its parentRefs and their allowedRoutes admit (with the effective hostnames), backendRefs resolved
// through ReferenceGrants, and the status of every one of our objects. Pure: the status carries no
// time; the leader adds lastTransitionTime and addresses when it writes.

import type { BuildState } from '../build-state.ts';
import { refName } from '../build-state.ts';
import { objectKey } from '../k8s.ts';
import { creationSeconds } from '../order.ts';
import type { ObjectRef } from '../types.ts';
import {
  attachParent,
  defaultedParentRef,
  NamespaceLabels,
  type ParentOutcome,
  type RouteHostnames,
} from './attachment.ts';
import { compareNames, selectGatewayClasses } from './classes.ts';
import { condition, generationOf } from './conditions.ts';
import { markConflicts } from './conflicts.ts';
import { gatewayStatus } from './gateway-status.ts';
import { GrantIndex } from './grants.ts';
import { hostnameProblem } from './hostnames.ts';
import type { HTTPRoute, ParentReference } from './k8s.ts';
import { type GatewayEntry, isProgrammed, type ListenerEntry, selectGateways } from './listeners.ts';
import { type RouteRules, resolveRouteRules } from './route-rules.ts';
import {
  type AttachedListener,
  type Condition,
  EMPTY_GATEWAY_GRAPH,
  type GatewayGraph,
  type HTTPRouteStatusReport,
  type ListenerCertificate,
  type RoutePlan,
} from './types.ts';

export function resolveGateways(state: BuildState): GatewayGraph {
  const { snapshot } = state;
  if ((snapshot.gateways?.length ?? 0) === 0 && (snapshot.gatewayClasses?.length ?? 0) === 0) {
    // HTTPRoutes left without any Gateway still get a (empty) status: the writer removes the
    // entries our Gateways left in their status.parents
    if ((snapshot.httpRoutes?.length ?? 0) === 0) return EMPTY_GATEWAY_GRAPH;
    return { ...EMPTY_GATEWAY_GRAPH, status: { gatewayClasses: [], gateways: [], httpRoutes: [] } };
  }
  const classes = selectGatewayClasses(state);
  const grants = new GrantIndex(snapshot.referenceGrants ?? []);
  const gateways = selectGateways(state, classes.accepted, grants);
  markConflicts(gateways);
  const byName = new Map<string, GatewayEntry>(gateways.map((g) => [refName(g.ref), g]));
  const namespaces = new NamespaceLabels(snapshot.namespaces ?? []);
  const routes: RoutePlan[] = [];
  const httpRoutes: HTTPRouteStatusReport[] = [];
  for (const route of sortRoutes(snapshot.httpRoutes ?? [])) {
    const resolved = resolveRoute(state, route, byName, namespaces, grants);
    if (resolved === null) continue;
    httpRoutes.push(resolved.status);
    if (resolved.plan !== null) routes.push(resolved.plan);
  }
  return {
    status: {
      gatewayClasses: classes.status,
      gateways: gateways.map((g) => gatewayStatus(state, g)),
      httpRoutes,
    },
    routes,
    certificates: listenerCertificates(gateways),
  };
}

/** Oldest first, then namespace/name; routes without a namespace or name are not routes. */
function sortRoutes(routes: readonly HTTPRoute[]): HTTPRoute[] {
  return routes
    .filter((r) => typeof r?.metadata?.namespace === 'string' && typeof r.metadata.name === 'string')
    .map((route) => ({
      route,
      seconds: creationSeconds(route),
      key: objectKey(route.metadata?.namespace as string, route.metadata?.name as string),
    }))
    .sort((a, b) => a.seconds - b.seconds || compareNames(a.key, b.key))
    .map((entry) => entry.route);
}

interface ResolvedRoute {
  status: HTTPRouteStatusReport;
  plan: RoutePlan | null;
}

/** null: no parentRef names one of our Gateways (the route is someone else's). */
function resolveRoute(
  state: BuildState,
  route: HTTPRoute,
  gateways: ReadonlyMap<string, GatewayEntry>,
  namespaces: NamespaceLabels,
  grants: GrantIndex,
): ResolvedRoute | null {
  const ref: ObjectRef = {
    namespace: route.metadata?.namespace as string,
    name: route.metadata?.name as string,
    kind: 'HTTPRoute',
  };
  const parents: Array<[ParentReference, GatewayEntry]> = [];
  const specParents: unknown = route.spec?.parentRefs;
  for (const spec of Array.isArray(specParents) ? (specParents as Array<ParentReference | null>) : []) {
    const parentRef = spec === null ? null : defaultedParentRef(spec);
    const gateway =
      parentRef === null
        ? undefined
        : gateways.get(objectKey(parentRef.namespace ?? ref.namespace, parentRef.name as string));
    if (parentRef !== null && gateway !== undefined) parents.push([parentRef, gateway]);
  }
  if (parents.length === 0) return null;
  const generation = generationOf(route);
  const rules = resolveRouteRules(state, grants, route);
  reportRules(state, ref, rules);
  const hostnames = routeHostnames(state, ref, route);
  const outcomes = parents.map(([parentRef, gateway]) =>
    attachParent(parentRef, gateway, ref.namespace, hostnames, namespaces),
  );
  // every rule dropped: the route is not accepted (a route with `rules: []` is, and serves nothing)
  if (rules.rules.length === 0 && rules.dropped.length > 0) {
    for (const outcome of outcomes) {
      if (!outcome.accepted.ok) continue;
      outcome.accepted = {
        ok: false,
        reason: 'UnsupportedValue',
        message: `no rule can be served: ${rules.dropped.join('; ')}`,
      };
      outcome.attached = [];
    }
  }
  const listeners = countAttached(outcomes);
  const status: HTTPRouteStatusReport = {
    namespace: ref.namespace,
    name: ref.name,
    generation,
    parents: outcomes.map((outcome) => ({
      parentRef: outcome.parentRef,
      conditions: parentConditions(outcome, rules, generation),
    })),
  };
  const served = [...listeners].filter(([listener]) => isProgrammed(listener));
  if (served.length === 0) return { status, plan: null };
  const plan: RoutePlan = {
    route: ref,
    created: route.metadata?.creationTimestamp ?? '',
    listeners: served.map(([listener, names]) => attachedListener(listener, names)),
    rules: rules.rules,
  };
  return { status, plan };
}

/** Each listener the route is accepted on (once, whatever the number of parentRefs naming it); counts it there. */
function countAttached(outcomes: readonly ParentOutcome[]): Map<ListenerEntry, string[]> {
  const listeners = new Map<ListenerEntry, string[]>();
  for (const outcome of outcomes) {
    for (const { listener, hostnames } of outcome.attached) {
      if (listeners.has(listener)) continue;
      listeners.set(listener, hostnames);
      listener.attachedRoutes++;
    }
  }
  return listeners;
}

function attachedListener(listener: ListenerEntry, hostnames: string[]): AttachedListener {
  return {
    gateway: listener.gateway.ref,
    listener: listener.name,
    protocol: listener.protocol as 'HTTP' | 'HTTPS',
    specPort: listener.specPort,
    hostnames,
  };
}

function parentConditions(outcome: ParentOutcome, rules: RouteRules, generation: number): Condition[] {
  const { accepted } = outcome;
  const conditions = [
    accepted.ok
      ? condition('Accepted', 'True', 'Accepted', 'accepted', generation)
      : condition('Accepted', 'False', accepted.reason, accepted.message, generation),
  ];
  const [first] = rules.refProblems;
  conditions.push(
    first === undefined
      ? condition('ResolvedRefs', 'True', 'ResolvedRefs', 'references resolved', generation)
      : condition(
          'ResolvedRefs',
          'False',
          first.reason,
          rules.refProblems.map((p) => p.message).join('; '),
          generation,
        ),
  );
  if (accepted.ok && rules.dropped.length > 0) {
    const message = `Dropped Rule${rules.dropped.length > 1 ? 's' : ''}: ${rules.dropped.join('; ')}`;
    conditions.push(condition('PartiallyInvalid', 'True', 'UnsupportedValue', message, generation));
  }
  return conditions;
}

/** The route's valid hostnames, lower-cased; an invalid one is left out (and reported). */
function routeHostnames(state: BuildState, ref: ObjectRef, route: HTTPRoute): RouteHostnames {
  const listed: unknown = route.spec?.hostnames;
  const names = Array.isArray(listed) ? (listed as unknown[]) : [];
  const hostnames: string[] = [];
  for (const name of names) {
    const hostname = typeof name === 'string' ? name.toLowerCase() : '';
    const problem = hostnameProblem(hostname);
    if (problem === null) hostnames.push(hostname);
    else
      state.diagnostics.report(
        'HTTPRoute',
        ref,
        'HTTPROUTE_INVALID',
        `hostname ${JSON.stringify(name)}: ${problem}; it is ignored`,
      );
  }
  return { hostnames, namesSome: names.length > 0 };
}

function reportRules(state: BuildState, ref: ObjectRef, rules: RouteRules): void {
  for (const dropped of rules.dropped) {
    state.diagnostics.report('HTTPRoute', ref, 'HTTPROUTE_INVALID', `${dropped}; the rule is not served`);
  }
  for (const problem of rules.refProblems) {
    state.diagnostics.report('HTTPRoute', ref, 'HTTPROUTE_BACKEND_INVALID', problem.message);
  }
}

/** One per programmed HTTPS listener: oldest Gateway first, then listener order. */
function listenerCertificates(gateways: readonly GatewayEntry[]): ListenerCertificate[] {
  const out: ListenerCertificate[] = [];
  for (const gateway of gateways) {
    for (const listener of gateway.listeners) {
      if (listener.protocol !== 'HTTPS' || listener.certificate === null || !isProgrammed(listener)) continue;
      out.push({
        gateway: gateway.ref,
        listener: listener.name,
        hostname: listener.hostname,
        secret: listener.certificate,
      });
    }
  }
  return out;
}
