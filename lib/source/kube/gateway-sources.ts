// The Gateway API in Kubernetes mode: whether its CRDs are installed (one discovery request), and
// what is then watched. Nothing of the Gateway API is watched unless discovery lists all four kinds
// ingress-ts reads: a cluster without the CRDs sees one extra GET at start and nothing else.
//
// Discovery answers 404 when the group is not installed and 403 when RBAC refuses it (discovery is
// normally open to every authenticated user; a hardened cluster may close it): both turn the Gateway
// API off with one log line. Any other failure (the API server unreachable, a 5xx) is retried with
// the informers' backoff, as their first lists are: the first build waits for the answer, so that a
// cluster with Gateways never serves a first model without them.
//
// RBAC that forbids the first list of one of the kinds (or of Namespaces) turns the Gateway API off as
// well, with one error line naming the resource to grant: clusters such as GKE ship the CRDs while
// hand-written roles lack the rules, and an informer retrying that 403 forever would hold back the
// first build, and so the Ingresses. A 403 once a kind has been listed (RBAC removed while running)
// keeps its last objects and is retried like any watch failure.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../log.ts';
import { GATEWAY_GROUP } from '../../model/gateway/k8s.ts';
import type { StoreKind } from '../../store/store.ts';
import { apiRequest, statusMessage } from './api-request.ts';
import { type Backoff, backoffDelay, DEFAULT_BACKOFF, listObjects, type WatchTarget } from './informer.ts';

export const GATEWAY_API_PATH = `/apis/${GATEWAY_GROUP}/v1`;

/** The plural names discovery must list, by kind. */
const GATEWAY_RESOURCES = {
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  ReferenceGrant: 'referencegrants',
} as const;

export type GatewayApiState =
  | { enabled: true }
  | {
      enabled: false;
      reason: string;
      /** RBAC forbade the first list of this kind (an error to fix, where the others are facts) */
      forbidden?: { kind: string; resource: string; apiGroup: string; error: unknown };
    };

/** A Gateway API watch, with the resource and API group that RBAC rules name. */
export interface GatewayWatchTarget extends WatchTarget {
  store: StoreKind;
  resource: string;
  apiGroup: string;
}

export interface DiscoveryOptions {
  kubeConfig: KubeConfig;
  backoff?: Backoff;
  /** a failure other than 404/403, retried in retryInMs */
  onError?(error: unknown, retryInMs: number): void;
  /** true once the source stops: the retries end (the answer is then "off") */
  stopped?(): boolean;
}

/** The discovery answer's resource names → on, or off with the reason. */
export function gatewayApiState(status: number, body: unknown): GatewayApiState | null {
  if (status === 404) {
    return { enabled: false, reason: 'Gateway API CRDs not installed; Gateway API support is off' };
  }
  if (status === 403) {
    return {
      enabled: false,
      reason: `discovery of ${GATEWAY_API_PATH} is forbidden (RBAC); Gateway API support is off`,
    };
  }
  if (status !== 200) return null;
  const resources = (body as { resources?: Array<{ name?: unknown }> } | null)?.resources;
  const served = new Set(Array.isArray(resources) ? resources.map((r) => r?.name) : []);
  const missing = Object.values(GATEWAY_RESOURCES).filter((plural) => !served.has(plural));
  if (missing.length > 0) {
    return {
      enabled: false,
      reason: `${GATEWAY_API_PATH} does not serve ${missing.join(', ')} (install Gateway API CRDs that serve all four in v1); Gateway API support is off`,
    };
  }
  return { enabled: true };
}

/** Asks until the API server answers; 404 and 403 are answers. */
export async function discoverGatewayApi(options: DiscoveryOptions): Promise<GatewayApiState> {
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  for (let attempt = 0; ; attempt++) {
    let error: unknown;
    try {
      const response = await apiRequest(options.kubeConfig, 'GET', GATEWAY_API_PATH);
      const state = gatewayApiState(response.status, response.body);
      if (state !== null) return state;
      error = new Error(`discovery of ${GATEWAY_API_PATH}: ${statusMessage(response)}`);
    } catch (failure) {
      error = failure;
    }
    if (options.stopped?.()) return { enabled: false, reason: 'stopped' };
    const delay = backoffDelay(attempt, backoff, Math.random);
    options.onError?.(error, delay);
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (options.stopped?.()) return { enabled: false, reason: 'stopped' };
  }
}

/** The Gateway API kinds (all namespaces, or --watch-namespace; GatewayClass is cluster-scoped) and
 * every Namespace, for the labels `allowedRoutes.namespaces.selector` matches. */
export function gatewayWatchTargets(watchNamespace: string | null): GatewayWatchTarget[] {
  const targets: GatewayWatchTarget[] = Object.entries(GATEWAY_RESOURCES).map(([kind, plural]) => ({
    kind,
    store: kind as StoreKind,
    resource: plural,
    apiGroup: GATEWAY_GROUP,
    path:
      kind === 'GatewayClass' || watchNamespace === null
        ? `${GATEWAY_API_PATH}/${plural}`
        : `${GATEWAY_API_PATH}/namespaces/${encodeURIComponent(watchNamespace)}/${plural}`,
  }));
  targets.push({
    kind: 'Namespace',
    store: 'Namespace',
    resource: 'namespaces',
    apiGroup: '',
    path: '/api/v1/namespaces',
  });
  return targets;
}

/** Off because RBAC refused the first list of `target`: what to grant, in RBAC's own words. */
export function forbiddenListState(target: GatewayWatchTarget, error: unknown): GatewayApiState {
  const resource = target.apiGroup === '' ? target.resource : `${target.resource}.${target.apiGroup}`;
  return {
    enabled: false,
    reason: `no permission to list ${resource} (RBAC: list and watch on ${target.resource} in API group "${target.apiGroup}"); Gateway API support is off until a restart`,
    forbidden: { kind: target.kind, resource: target.resource, apiGroup: target.apiGroup, error },
  };
}

/** One read of the Gateway API kinds for `ingress-ts check`, with the controller's rules: nothing when
 * discovery says off (404, 403, a kind missing) or RBAC refuses a list; an API server that fails
 * otherwise is an error (the controller would retry; a one-shot check says so instead). */
export async function listGatewayApiOnce(
  kubeConfig: KubeConfig,
  watchNamespace: string | null,
): Promise<{ state: GatewayApiState; lists: Array<{ target: GatewayWatchTarget; items: unknown[] }> }> {
  const response = await apiRequest(kubeConfig, 'GET', GATEWAY_API_PATH);
  const state = gatewayApiState(response.status, response.body);
  if (state === null) throw new Error(`discovery of ${GATEWAY_API_PATH}: ${statusMessage(response)}`);
  if (!state.enabled) return { state, lists: [] };
  const targets = gatewayWatchTargets(watchNamespace);
  const lists: Array<{ target: GatewayWatchTarget; items: unknown[] }> = [];
  for (const target of targets) {
    try {
      lists.push({ target, items: (await listObjects(kubeConfig, target)).items ?? [] });
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 403) throw error;
      return { state: forbiddenListState(target, error), lists: [] };
    }
  }
  return { state, lists };
}

/** The one log line saying whether the Gateway API is on: an error when RBAC refused a first list. */
export function logGatewayApiState(log: Logger, state: GatewayApiState): void {
  if (state.enabled) log.info('Gateway API CRDs found; watching them');
  else if (state.forbidden === undefined) log.info(state.reason);
  else {
    const { kind, resource, apiGroup, error } = state.forbidden;
    log.error({ kind, resource, apiGroup, verb: 'list', err: error }, state.reason);
  }
}
