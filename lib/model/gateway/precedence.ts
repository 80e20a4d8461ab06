// The order of a host's routes once HTTPRoute rules share it with Ingress paths (one precedence for
// both). Routes that match the same requests by path (the same path type, and the same Exact path or
// Prefix paths equal but for a trailing slash) are tried in this order, and the first whose
// conditions all hold wins:
//   1. between an Ingress path and an HTTPRoute match, the older object (Ingresses and HTTPRoutes by
//      creationTimestamp on one time line): the oldest object wins a path, as between Ingresses in
//      ingress-nginx. An Ingress path has no conditions, so the HTTPRoute matches of newer objects
//      behind it are never reached: they are left out of the model (HTTPROUTE_PATH_TAKEN);
//   2. among HTTPRoute matches, Gateway API precedence: a method match, then the most header
//      matches, then the most query parameter matches, then the older object;
//   3. namespace/name; 4. the rule's index, then the match's, in the HTTPRoute.
// In regex mode (an Ingress of the host uses use-regex or rewrite-target) the Ingress regex routes
// come first, in ingress-nginx's location order, and the HTTPRoute routes after them: a newer
// HTTPRoute never takes requests a regex route of the host matches.
// Hosts without HTTPRoute routes keep ingress-nginx's location order (routes.ts).

import type { Ingress } from '../k8s.ts';
import { creationSeconds } from '../order.ts';
import { prefixMatchKey } from '../paths.ts';
import type { ObjectRef, Route } from '../types.ts';
import type { RoutePlan } from './types.ts';

/**
 * Each object's place on the one time line of Ingresses and HTTPRoutes, oldest first, by the ref
 * object its routes carry (`Route.ingress`: one per Ingress and one per HTTPRoute in a build).
 */
export interface RoutePrecedence {
  readonly ranks: ReadonlyMap<ObjectRef, number>;
}

interface Dated {
  ref: ObjectRef;
  seconds: number;
  key: string;
}

/**
 * Ingresses (in their build order: oldest first, ties as ingress-nginx breaks them) and route plans
 * (oldest first, then namespace/name) merged by creationTimestamp; on the same second the smaller
 * namespace/name first, and an Ingress before an HTTPRoute of the same namespace/name.
 */
export function routePrecedence(
  ingresses: readonly ObjectRef[],
  ingressObjects: readonly Ingress[],
  plans: readonly RoutePlan[],
  planRefs: readonly ObjectRef[],
): RoutePrecedence {
  const created = new Map<string, number>();
  for (const object of ingressObjects) {
    const { namespace, name } = object.metadata ?? {};
    if (typeof namespace === 'string' && typeof name === 'string')
      created.set(`${namespace}/${name}`, creationSeconds(object));
  }
  const dated = (ref: ObjectRef, seconds: number): Dated => ({
    ref,
    seconds,
    key: `${ref.namespace}/${ref.name}`,
  });
  const left = ingresses.map((ref) => dated(ref, created.get(`${ref.namespace}/${ref.name}`) ?? 0));
  const right = plans.map((plan, i) =>
    dated(planRefs[i] as ObjectRef, creationSeconds({ metadata: { creationTimestamp: plan.created } })),
  );
  const ranks = new Map<ObjectRef, number>();
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    const a = left[i];
    const b = right[j];
    // across kinds, the same second: ascending namespace/name (each list keeps its own tie order)
    const ingressFirst =
      b === undefined ||
      (a !== undefined && (a.seconds !== b.seconds ? a.seconds < b.seconds : a.key <= b.key));
    const next = (ingressFirst ? a : b) as Dated;
    if (ingressFirst) i++;
    else j++;
    if (!ranks.has(next.ref)) ranks.set(next.ref, ranks.size);
  }
  return { ranks };
}

/** A route with what its place depends on, worked out once per sort. */
interface Keyed {
  route: Route;
  /** the path the matcher keys it by: Prefix paths without their trailing slash */
  key: string;
  exact: boolean;
  /** an Ingress path: no conditions, and older than every HTTPRoute match kept beside it */
  ingress: boolean;
  method: number;
  headers: number;
  query: number;
  rank: number;
  rule: number;
}

function keyed(route: Route, precedence: RoutePrecedence): Keyed {
  const match = route.gateway;
  return {
    route,
    key: route.pathType === 'Prefix' ? prefixMatchKey(route.path) : route.path,
    exact: route.pathType === 'Exact',
    ingress: match === undefined,
    method: match?.method == null ? 0 : 1,
    headers: match?.headers.length ?? 0,
    query: match?.queryParams.length ?? 0,
    rank: precedence.ranks.get(route.ingress) ?? Number.MAX_SAFE_INTEGER,
    rule: match?.rule ?? 0,
  };
}

/**
 * Longest matched path first (ties reverse-lexicographic, as ingress-nginx), Exact before Prefix,
 * then the precedence. Transitive once the HTTPRoute matches behind an older Ingress path are gone:
 * every HTTPRoute match left at a key is older than the Ingress path there.
 */
function compareKeyed(a: Keyed, b: Keyed): number {
  if (a.key !== b.key) {
    if (a.key.length !== b.key.length) return b.key.length - a.key.length;
    return a.key > b.key ? -1 : 1;
  }
  if (a.exact !== b.exact) return a.exact ? -1 : 1;
  if (a.ingress || b.ingress) return a.rank - b.rank;
  return (
    b.method - a.method || b.headers - a.headers || b.query - a.query || a.rank - b.rank || a.rule - b.rule
  );
}

/** A match left out: the older Ingress path `by` serves every request it could. */
export type OnPathTaken = (route: Route, by: Route) => void;

/**
 * The routes of a host with HTTPRoute routes, in precedence order (stable: the matches of one rule
 * keep their order), without the HTTPRoute matches an older Ingress path of the same key hides
 * (`onTaken` hears of each). In regex mode the Ingress paths come first in `ingressOrder`
 * (ingress-nginx's location order, which decides regex matches), then the HTTPRoute routes.
 */
export function orderWithGatewayRoutes(
  routes: readonly Route[],
  regex: boolean,
  precedence: RoutePrecedence,
  ingressOrder: (a: Route, b: Route) => number,
  onTaken: OnPathTaken,
): Route[] {
  const all = routes.map((route) => keyed(route, precedence));
  if (regex) {
    const gateway = all.filter((k) => !k.ingress).sort(compareKeyed);
    const ingress = routes.filter((route) => route.gateway === undefined).sort(ingressOrder);
    return [...ingress, ...gateway.map((k) => k.route)];
  }
  const oldestIngress = new Map<string, Keyed>();
  for (const k of all) {
    if (!k.ingress) continue;
    const id = `${k.exact ? 'E' : 'P'}${k.key}`;
    const held = oldestIngress.get(id);
    if (held === undefined || k.rank < held.rank) oldestIngress.set(id, k);
  }
  const kept =
    oldestIngress.size === 0
      ? all
      : all.filter((k) => {
          if (k.ingress) return true;
          const holder = oldestIngress.get(`${k.exact ? 'E' : 'P'}${k.key}`);
          if (holder === undefined || holder.rank > k.rank) return true;
          onTaken(k.route, holder.route);
          return false;
        });
  return kept.sort(compareKeyed).map((k) => k.route);
}
