// What the Gateway API half of the build produces, between its two steps:
//   resolveGateways(state)          GatewayClasses, Gateways, listeners, route attachment, hostnames,
//                                   ReferenceGrants and backendRefs → a GatewayGraph (plans + status)
//   addGatewayRoutes(state, graph)  the graph's route plans and listener certificates → servers, routes,
//                                   upstreams and certificates of the one routing model Ingresses build
// Status is computed here, purely; the leader writes it (lib/source/kube), adding what needs the
// clock or the cluster: lastTransitionTime, status.addresses, GatewayClass SupportedVersion.

import type { ObjectRef } from '../types.ts';
import type { HTTPRouteFilter, ParentReference } from './k8s.ts';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  /** the object's metadata.generation the condition was computed from */
  observedGeneration: number;
}

export interface GatewayClassStatusReport {
  name: string;
  generation: number;
  /** Accepted (SupportedVersion is the writer's) */
  conditions: Condition[];
  /** feature names that pass their conformance tests, sorted ascending */
  supportedFeatures: string[];
}

export interface ListenerStatusReport {
  name: string;
  supportedKinds: Array<{ group: string; kind: string }>;
  /** routes with Accepted=True attached to this listener, valid or not */
  attachedRoutes: number;
  /** Accepted, ResolvedRefs, Programmed, Conflicted */
  conditions: Condition[];
}

export interface GatewayStatusReport {
  namespace: string;
  name: string;
  generation: number;
  /** Accepted, Programmed */
  conditions: Condition[];
  /** in spec order, one per listener of the spec */
  listeners: ListenerStatusReport[];
}

export interface RouteParentStatusReport {
  /** the spec's parentRef with the CRD's defaults applied (group, kind; namespace as written) */
  parentRef: ParentReference;
  /** Accepted, ResolvedRefs (and PartiallyInvalid when a rule was dropped) */
  conditions: Condition[];
}

export interface HTTPRouteStatusReport {
  namespace: string;
  name: string;
  generation: number;
  /** one per parentRef naming one of our Gateways (or a Gateway of one of our classes) */
  parents: RouteParentStatusReport[];
}

/** Everything the leader writes; only objects that are ours (our GatewayClasses and their Gateways and routes). */
export interface GatewayApiStatus {
  gatewayClasses: GatewayClassStatusReport[];
  gateways: GatewayStatusReport[];
  httpRoutes: HTTPRouteStatusReport[];
}

/** A listener a route is accepted on. */
export interface AttachedListener {
  gateway: ObjectRef;
  listener: string;
  protocol: 'HTTP' | 'HTTPS';
  /** the listener's port as written (80, 443, or ingress-ts's own port): redirects build Location from it */
  specPort: number;
  /**
   * the route's effective hostnames on this listener (listener × route intersection, lower-cased,
   * wildcards as `*.example.com`); empty: every host (the catch-all server)
   */
  hostnames: string[];
}

/** One backendRef of a rule, resolved. */
export type ResolvedBackend =
  | { kind: 'service'; namespace: string; name: string; port: number; weight: number }
  /** refused: its share of the traffic answers 500 */
  | {
      kind: 'invalid';
      weight: number;
      reason: 'InvalidKind' | 'BackendNotFound' | 'RefNotPermitted' | string;
    };

export interface ResolvedRule {
  /** index in spec.rules */
  index: number;
  /** spec matches with defaults applied; a rule without matches gets one: PathPrefix `/` */
  matches: Array<{
    path: { type: 'Exact' | 'PathPrefix'; value: string };
    /** header names lower-cased; the first of a repeated name only */
    headers: Array<{ name: string; value: string }>;
    queryParams: Array<{ name: string; value: string }>;
    method: string | null;
  }>;
  /** the spec's filters (validated: only supported types, at most one of each) */
  filters: HTTPRouteFilter[];
  /** empty: every request answers 500 (HTTPRouteNoBackendRefs) */
  backends: ResolvedBackend[];
  /** resolved RequestMirror backends (a mirror to an invalid ref is dropped) */
  mirrors: Array<{ namespace: string; name: string; port: number; percent: number }>;
}

/** An accepted HTTPRoute: where it is served and what each rule does. */
export interface RoutePlan {
  route: ObjectRef;
  /** the route's creationTimestamp (precedence: oldest first, then namespace/name) */
  created: string;
  listeners: AttachedListener[];
  rules: ResolvedRule[];
}

/** A programmed HTTPS listener's certificate. */
export interface ListenerCertificate {
  gateway: ObjectRef;
  listener: string;
  /** lower-cased; null: no hostname (its certificate answers SNI names nothing else claims) */
  hostname: string | null;
  /** `namespace/name` of the Secret, usable (parsed and checked) */
  secret: string;
}

export interface GatewayGraph {
  status: GatewayApiStatus;
  /** oldest route first, then namespace/name */
  routes: RoutePlan[];
  /** oldest Gateway first, then namespace/name, then listener order */
  certificates: ListenerCertificate[];
}

/** The graph of a snapshot with no Gateway API objects. */
export const EMPTY_GATEWAY_GRAPH: GatewayGraph = Object.freeze({
  status: { gatewayClasses: [], gateways: [], httpRoutes: [] },
  routes: [],
  certificates: [],
}) as GatewayGraph;
