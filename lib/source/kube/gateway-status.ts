// Gateway API status, written by the leader from the build's report (BuildResult.gatewayStatus):
// - GatewayClass: `conditions` (the report's Accepted, plus SupportedVersion from the HTTPRoute CRD's
//   bundle-version annotation: v1.0 to v1.6 supported, anything else or unreadable False/
//   UnsupportedVersion with Accepted left as the report says) and `supportedFeatures` as [{name}];
// - Gateway: `conditions`, `listeners` and `addresses`, the addresses Ingress status publishes
//   (--publish-status-address, else the --publish-service Service) typed IPAddress or Hostname;
//   without either flag `addresses` is left out (the conditions do not depend on it);
// - HTTPRoute: `status.parents`: the entries of other controllers kept as they are, ours replaced by
//   the report's, and ours that the report no longer has removed (also on routes no longer ours).
// A condition keeps its lastTransitionTime while its status stays; a new or flipped one gets now.
// An object is written only when its status differs: first judged on the watched copy (no request
// at all when it matches; nothing is compared when neither the report nor the watched objects
// changed since a run that left every object as wanted), then on a fresh GET of the /status
// subresource, then PUT there with the resourceVersion read, retried on a 409 Conflict. Up to 10 objects are in hand at once (each read,
// then written, by one lane; ingress-nginx's Ingress status pool has 10 too), and no request starts
// once this replica is no longer the leader; an update asked for meanwhile is coalesced into one more
// run with the latest report. Objects that are not ours are never written, not even to clear them.

import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { GATEWAY_GROUP } from '../../model/gateway/k8s.ts';
import type {
  Condition,
  GatewayApiStatus,
  GatewayClassStatusReport,
  GatewayStatusReport,
  HTTPRouteStatusReport,
  RouteParentStatusReport,
} from '../../model/gateway/types.ts';
import type { KubeObject, Snapshot } from '../../model/index.ts';
import { apiRequest, statusMessage } from './api-request.ts';
import type { LoadBalancerIngress } from './status.ts';

/** A condition as stored: the report's with the writer's lastTransitionTime. */
export interface StoredCondition extends Condition {
  lastTransitionTime: string;
}

export interface GatewayAddress {
  type: 'IPAddress' | 'Hostname';
  value: string;
}

export interface GatewayStatusOptions {
  kubeConfig: KubeConfig;
  /** --gateway-controller-name: our entries in HTTPRoute status.parents */
  controllerName: string;
  /** the published addresses (status.ts publishedAddresses), or null when there are none */
  addresses(snapshot: Snapshot): readonly LoadBalancerIngress[] | null;
  /** checked before every request: a replica that lost the Lease stops writing at once */
  isLeader(): boolean;
  /** a write failed (each object's failure once, until it succeeds again) */
  onError?(object: string, error: unknown): void;
  onWritten?(object: string): void;
  now?: () => Date;
  /** objects brought to their status at once (default STATUS_WRITES_IN_FLIGHT) */
  inFlight?: number;
}

export interface GatewayStatusWriter {
  update(snapshot: Snapshot, status: GatewayApiStatus): Promise<void>;
}

const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/httproutes.${GATEWAY_GROUP}`;
const BUNDLE_VERSION = `${GATEWAY_GROUP}/bundle-version`;
/** The bundle-version annotation is read again after this long (a CRD upgrade shows without a restart). */
const VERSION_TTL_MS = 10 * 60_000;
const MAX_CONFLICT_RETRIES = 3;
/** objects read and written at once: ingress-nginx updates Ingress status through a pool of 10 */
export const STATUS_WRITES_IN_FLIGHT = 10;
const API = `/apis/${GATEWAY_GROUP}/v1`;

type Status = Record<string, unknown>;

const rfc3339 = (date: Date): string => `${date.toISOString().slice(0, 19)}Z`;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The wanted conditions, each with the current lastTransitionTime when its status did not change. */
export function withTransitionTimes(
  wanted: readonly Condition[],
  current: unknown,
  now: string,
): StoredCondition[] {
  const previous = new Map<string, Record<string, unknown>>();
  for (const condition of list(current)) {
    if (isRecord(condition) && typeof condition.type === 'string') previous.set(condition.type, condition);
  }
  return wanted.map((condition) => {
    const before = previous.get(condition.type);
    const kept =
      before?.status === condition.status && typeof before.lastTransitionTime === 'string'
        ? before.lastTransitionTime
        : now;
    return { ...condition, lastTransitionTime: kept };
  });
}

/** SupportedVersion from the bundle-version annotation: v1.0 to v1.6 are the versions ingress-ts knows. */
export function supportedVersionCondition(version: string | null, generation: number): Condition {
  const known = version !== null && /^v1\.[0-6](\.\d+)?(-[0-9A-Za-z.-]+)?$/.test(version);
  return {
    type: 'SupportedVersion',
    status: known ? 'True' : 'False',
    reason: known ? 'SupportedVersion' : 'UnsupportedVersion',
    message: known
      ? `Gateway API ${version} is supported`
      : version === null
        ? 'the bundle version of the Gateway API CRDs could not be read; ingress-ts supports v1.0 to v1.6'
        : `Gateway API ${version} is not a version ingress-ts supports (v1.0 to v1.6)`,
    observedGeneration: generation,
  };
}

export function gatewayClassStatus(
  report: GatewayClassStatusReport,
  current: unknown,
  bundleVersion: string | null,
  now: string,
): Status {
  const base = isRecord(current) ? current : {};
  const wanted = [...report.conditions, supportedVersionCondition(bundleVersion, report.generation)];
  return {
    ...base,
    conditions: withTransitionTimes(wanted, base.conditions, now),
    supportedFeatures: report.supportedFeatures.map((name) => ({ name })),
  };
}

export function gatewayAddresses(published: readonly LoadBalancerIngress[] | null): GatewayAddress[] {
  return (published ?? []).map((entry) =>
    entry.ip !== undefined
      ? { type: 'IPAddress', value: entry.ip }
      : { type: 'Hostname', value: entry.hostname ?? '' },
  );
}

export function gatewayStatus(
  report: GatewayStatusReport,
  current: unknown,
  addresses: readonly GatewayAddress[],
  now: string,
): Status {
  const { addresses: _old, ...base } = isRecord(current) ? current : {};
  const listeners = new Map<string, Record<string, unknown>>();
  for (const listener of list(base.listeners)) {
    if (isRecord(listener) && typeof listener.name === 'string') listeners.set(listener.name, listener);
  }
  return {
    ...base,
    ...(addresses.length > 0 ? { addresses: addresses.map((a) => ({ ...a })) } : {}),
    conditions: withTransitionTimes(report.conditions, base.conditions, now),
    listeners: report.listeners.map((listener) => ({
      name: listener.name,
      supportedKinds: listener.supportedKinds.map((kind) => ({ ...kind })),
      attachedRoutes: listener.attachedRoutes,
      conditions: withTransitionTimes(listener.conditions, listeners.get(listener.name)?.conditions, now),
    })),
  };
}

/** A parentRef's identity, with the CRD's defaults (a route's own namespace may be written or not). */
const parentKey = (ref: unknown): string => {
  const r = isRecord(ref) ? ref : {};
  return JSON.stringify([
    r.group ?? GATEWAY_GROUP,
    r.kind ?? 'Gateway',
    r.namespace ?? '',
    r.name ?? '',
    r.sectionName ?? '',
    r.port ?? 0,
  ]);
};

/**
 * status.parents: others' entries as they are, ours replaced where they stand by the report's (none:
 * ours removed), the report's new ones last. Keeping the places keeps two controllers that share a
 * route from reordering the list on every write, each undoing the other's.
 */
export function httpRouteStatus(
  report: HTTPRouteStatusReport | undefined,
  current: unknown,
  controllerName: string,
  now: string,
): Status {
  const base = isRecord(current) ? current : {};
  const wanted = new Map<string, RouteParentStatusReport>();
  for (const parent of report?.parents ?? []) wanted.set(parentKey(parent.parentRef), parent);
  const ours = (previous: Record<string, unknown> | undefined, parent: RouteParentStatusReport) => ({
    parentRef: { ...parent.parentRef },
    controllerName,
    conditions: withTransitionTimes(parent.conditions, previous?.conditions, now),
  });
  const parents: unknown[] = [];
  const placed = new Set<string>();
  for (const parent of list(base.parents)) {
    if (!isRecord(parent) || parent.controllerName !== controllerName) {
      parents.push(parent);
      continue;
    }
    const key = parentKey(parent.parentRef);
    const next = wanted.get(key);
    if (next === undefined || placed.has(key)) continue;
    parents.push(ours(parent, next));
    placed.add(key);
  }
  for (const [key, parent] of wanted) if (!placed.has(key)) parents.push(ours(undefined, parent));
  return { ...base, parents };
}

const hasOurParent = (route: KubeObject, controllerName: string): boolean =>
  list((route as { status?: { parents?: unknown } }).status?.parents).some(
    (parent) => isRecord(parent) && parent.controllerName === controllerName,
  );

const statusOf = (object: unknown): unknown => (isRecord(object) ? object.status : undefined);

/** One object to bring to its wanted status; `next` computes it from a current status. */
interface Target {
  label: string;
  /** the object's path (its /status subresource is written) */
  path: string;
  /** the copy the watch last delivered, if any */
  watched: KubeObject | undefined;
  next(current: unknown): Status;
}

const objectPath = (plural: string, namespace: string | null, name: string): string =>
  namespace === null
    ? `${API}/${plural}/${encodeURIComponent(name)}`
    : `${API}/namespaces/${encodeURIComponent(namespace)}/${plural}/${encodeURIComponent(name)}`;

const byKey = (objects: readonly KubeObject[] | undefined): Map<string, KubeObject> =>
  new Map((objects ?? []).map((o) => [`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, o]));

/** Every object whose status may need a write: the report's, and routes with a stale entry of ours. */
function statusTargets(
  snapshot: Snapshot,
  status: GatewayApiStatus,
  context: { controllerName: string; bundle: string | null; addresses: GatewayAddress[]; stamp: string },
): Target[] {
  const { controllerName, bundle, addresses, stamp } = context;
  const found: Target[] = [];
  const classes = byKey(snapshot.gatewayClasses);
  for (const report of status.gatewayClasses) {
    found.push({
      label: `GatewayClass ${report.name}`,
      path: objectPath('gatewayclasses', null, report.name),
      watched: classes.get(`/${report.name}`),
      next: (current) => gatewayClassStatus(report, current, bundle, stamp),
    });
  }
  const gateways = byKey(snapshot.gateways);
  for (const report of status.gateways) {
    found.push({
      label: `Gateway ${report.namespace}/${report.name}`,
      path: objectPath('gateways', report.namespace, report.name),
      watched: gateways.get(`${report.namespace}/${report.name}`),
      next: (current) => gatewayStatus(report, current, addresses, stamp),
    });
  }
  const routes = byKey(snapshot.httpRoutes);
  const reported = new Map(status.httpRoutes.map((r) => [`${r.namespace}/${r.name}`, r]));
  // routes the report names, and routes that still carry an entry of ours (to be removed)
  const keys = new Set(reported.keys());
  for (const [key, route] of routes) if (hasOurParent(route, controllerName)) keys.add(key);
  for (const key of keys) {
    const [namespace = '', name = ''] = key.split('/');
    const report = reported.get(key);
    found.push({
      label: `HTTPRoute ${key}`,
      path: objectPath('httproutes', namespace, name),
      watched: routes.get(key),
      next: (current) => httpRouteStatus(report, current, controllerName, stamp),
    });
  }
  return found;
}

/** `work` on each item, at most `lanes` at once, in order of start; a lane whose work answers false
 * takes no more items. */
async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  work: (item: T) => Promise<boolean>,
): Promise<void> {
  let taken = 0;
  const lane = async (): Promise<void> => {
    while (taken < items.length) if (!(await work(items[taken++] as T))) return;
  };
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
}

export function createGatewayStatusWriter(options: GatewayStatusOptions): GatewayStatusWriter {
  const { kubeConfig, controllerName } = options;
  const now = options.now ?? (() => new Date());
  let version: { value: string | null; readAt: number } | null = null;
  /** object → the message last reported for it */
  const failing = new Map<string, string>();
  let running: Promise<void> | null = null;
  let pending: { snapshot: Snapshot; status: GatewayApiStatus } | null = null;

  const bundleVersion = async (): Promise<string | null> => {
    if (version !== null && Date.now() - version.readAt < VERSION_TTL_MS) return version.value;
    let value: string | null = null;
    try {
      const response = await apiRequest(kubeConfig, 'GET', CRD_PATH);
      const annotations = (response.body as KubeObject | null)?.metadata?.annotations;
      if (response.status === 200 && typeof annotations?.[BUNDLE_VERSION] === 'string') {
        value = annotations[BUNDLE_VERSION];
      }
    } catch {
      // the API server unreachable: the last answer stands, and the next run asks again
      return version?.value ?? null;
    }
    version = { value, readAt: Date.now() };
    return value;
  };

  const failed = (label: string, error: unknown): void => {
    const message = error instanceof Error ? error.message : String(error);
    if (failing.get(label) === message) return;
    failing.set(label, message);
    options.onError?.(label, error);
  };

  /** false: stopped because this replica no longer leads (the object may not be as wanted) */
  const writeOne = async (target: Target): Promise<boolean> => {
    if (target.watched !== undefined) {
      const current = statusOf(target.watched);
      if (isDeepStrictEqual(current, target.next(current))) return true; // as the watch last said
    }
    for (let attempt = 0; ; attempt++) {
      if (!options.isLeader()) return false;
      const read = await apiRequest(kubeConfig, 'GET', `${target.path}/status`);
      if (read.status === 404) return true; // deleted meanwhile
      if (read.status !== 200 || !isRecord(read.body)) throw new Error(`read: ${statusMessage(read)}`);
      const next = target.next(read.body.status);
      if (isDeepStrictEqual(read.body.status, next)) return true;
      if (!options.isLeader()) return false;
      const written = await apiRequest(kubeConfig, 'PUT', `${target.path}/status`, {
        ...read.body,
        status: next,
      });
      if (written.status === 200) {
        failing.delete(target.label);
        options.onWritten?.(target.label);
        return true;
      }
      if (written.status === 404) return true;
      if (written.status !== 409 || attempt >= MAX_CONFLICT_RETRIES) {
        throw new Error(`write: ${statusMessage(written)}`);
      }
    }
  };

  /** The inputs of the last run that brought every object to its status: most builds (endpoint
   * churn) change none of them, and the store keeps a list's array while nothing in it changes. */
  let settled: { lists: readonly unknown[]; inputs: string } | null = null;

  const run = async (snapshot: Snapshot, status: GatewayApiStatus): Promise<void> => {
    if (!options.isLeader()) return;
    const stamp = rfc3339(now());
    // the CRD is read only when there is a GatewayClass to write
    const bundle = status.gatewayClasses.length > 0 ? await bundleVersion() : null;
    const addresses = gatewayAddresses(options.addresses(snapshot));
    const lists = [snapshot.gatewayClasses, snapshot.gateways, snapshot.httpRoutes];
    const inputs = JSON.stringify([status, addresses, bundle]);
    if (settled?.inputs === inputs && settled.lists.every((list, i) => list === lists[i])) return;
    settled = null;
    const targets = statusTargets(snapshot, status, { controllerName, bundle, addresses, stamp });
    // a few objects at a time: one after the other, a first write of 1,000 routes waited ~10 s on
    // round trips; a run still ends before the next starts, so an object's writes keep their order
    let complete = true;
    await inLanes(targets, options.inFlight ?? STATUS_WRITES_IN_FLIGHT, async (target) => {
      if (!options.isLeader()) {
        complete = false;
        return false;
      }
      try {
        if (!(await writeOne(target))) complete = false;
      } catch (error) {
        complete = false;
        failed(target.label, error);
      }
      return true;
    });
    if (complete) settled = { lists, inputs };
  };

  const drain = async (): Promise<void> => {
    while (pending !== null) {
      const { snapshot, status } = pending;
      pending = null;
      try {
        await run(snapshot, status);
      } catch (error) {
        failed('', error); // never a rejection: callers fire and forget
      }
    }
  };

  return {
    update(snapshot, status) {
      pending = { snapshot, status };
      running ??= drain().finally(() => {
        running = null;
      });
      return running;
    },
  };
}
