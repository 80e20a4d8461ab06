// The suite's status checks (conformance/utils/kubernetes/helpers.go), with its matching rules kept
// literally so that passing here predicts passing there: expected conditions are a subset of the
// actual ones (type and status, reason unless it is ""), every condition carries the object's
// latest generation, a Gateway's listener statuses are exactly as many as expected, a route's
// parent matches on controllerName, group and kind as written, name, and namespace (nil allowed in
// the route's own namespace), never on sectionName. Each check is a pure function returning its
// problems; each waiter awaits them on the fake API server's watch and fails with the last ones.
import type { Test } from 'tap';
import type { KubeObject } from '../../support/fake-apiserver.ts';
import type { Conformance } from './harness.ts';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  observedGeneration?: number;
}

/** `status` or `reason` "" (or absent): any */
export interface ExpectedCondition {
  type: string;
  status?: string;
  reason?: string;
}

export interface NamespacedName {
  namespace: string;
  name: string;
}

const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const GATEWAY_SKIP_READINESS = 'gateway-api/skip-this-for-readiness';

const generationOf = (obj: KubeObject) => obj.metadata?.generation as number | undefined;
const statusOf = (obj: KubeObject) => (obj.status ?? {}) as Record<string, unknown>;
const conditionsOf = (value: unknown): Condition[] =>
  ((value as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[];
const describe = (conditions: readonly Condition[]) =>
  `[${conditions.map((c) => `${c.type}=${c.status}/${c.reason ?? ''}`).join(', ')}]`;

/** findConditionInList */
export function findCondition(conditions: readonly Condition[], expected: ExpectedCondition): boolean {
  return conditions.some(
    (c) =>
      c.type === expected.type &&
      (!expected.status || c.status === expected.status) &&
      (!expected.reason || c.reason === expected.reason),
  );
}

/** conditionsMatch: every expected condition is among the actual ones. */
export function conditionsMatch(
  expected: readonly ExpectedCondition[],
  actual: readonly Condition[],
): string[] {
  if (actual.length < expected.length)
    return [`expected ${expected.length} conditions or more, got ${describe(actual)}`];
  return expected
    .filter((e) => !findCondition(actual, e))
    .map((e) => `${e.type}=${e.status ?? ''}/${e.reason ?? ''} not in ${describe(actual)}`);
}

/** ConditionsHaveLatestObservedGeneration */
export function staleConditions(obj: KubeObject, conditions: readonly Condition[]): string[] {
  const generation = generationOf(obj);
  const stale = conditions.filter((c) => c.observedGeneration !== generation);
  if (stale.length === 0) return [];
  return [
    `expected observedGeneration ${generation} on every condition, stale: ${stale
      .map((c) => `${c.type} (generation ${c.observedGeneration})`)
      .join(', ')}`,
  ];
}

export interface ExpectedListener {
  name: string;
  supportedKinds: Array<{ group?: string; kind: string }>;
  attachedRoutes: number;
  conditions: ExpectedCondition[];
}

interface ListenerStatus {
  name: string;
  supportedKinds?: Array<{ group?: string; kind: string }>;
  attachedRoutes?: number;
  conditions?: Condition[];
}

/** gatewayListenersMatch */
export function listenersMatch(
  expected: readonly ExpectedListener[],
  actual: readonly ListenerStatus[],
): string[] {
  if (expected.length !== actual.length)
    return [
      `expected ${expected.length} listener statuses, got ${actual.length} (${actual.map((l) => l.name)})`,
    ];
  for (const want of expected) {
    const got = actual.find((l) => l.name === want.name);
    if (got === undefined) return [`no status for listener ${want.name}`];
    const kinds = got.supportedKinds ?? [];
    if (want.supportedKinds.length === 0 && kinds.length !== 0)
      return [`listener ${want.name}: expected no supportedKinds, got ${JSON.stringify(kinds)}`];
    for (const kind of want.supportedKinds) {
      const group = kind.group ?? GATEWAY_GROUP;
      if (!kinds.some((k) => (k.group ?? GATEWAY_GROUP) === group && k.kind === kind.kind))
        return [
          `listener ${want.name}: ${group}/${kind.kind} not in supportedKinds ${JSON.stringify(kinds)}`,
        ];
    }
    if ((got.attachedRoutes ?? 0) !== want.attachedRoutes)
      return [
        `listener ${want.name}: expected attachedRoutes ${want.attachedRoutes}, got ${got.attachedRoutes}`,
      ];
    const problems = conditionsMatch(want.conditions, got.conditions ?? []);
    if (problems.length > 0) return problems.map((p) => `listener ${want.name}: ${p}`);
  }
  return [];
}

export interface ParentRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  sectionName?: string;
  port?: number;
}

export interface ExpectedParent {
  parentRef: ParentRef;
  controllerName: string;
  conditions: ExpectedCondition[];
}

interface RouteParentStatus {
  parentRef?: ParentRef;
  controllerName?: string;
  conditions?: Condition[];
}

const parentsOf = (route: KubeObject) => (statusOf(route).parents ?? []) as RouteParentStatus[];

/** parentsForRouteMatch: every expected parent has an actual one that matches it. */
export function parentsMatch(
  expected: readonly ExpectedParent[],
  actual: readonly RouteParentStatus[],
  namespaceRequired: boolean,
): string[] {
  const problems: string[] = [];
  for (const want of expected) {
    const matched = actual.some((got) => {
      const ref = got.parentRef;
      return (
        got.controllerName === want.controllerName &&
        ref?.group === want.parentRef.group &&
        ref?.kind === want.parentRef.kind &&
        ref?.name === want.parentRef.name &&
        (ref?.namespace === want.parentRef.namespace ||
          (!namespaceRequired && ref?.namespace === undefined)) &&
        conditionsMatch(want.conditions, got.conditions ?? []).length === 0
      );
    });
    if (!matched)
      problems.push(
        `no parent ${want.parentRef.namespace ?? ''}/${want.parentRef.name} (${want.controllerName}) with ` +
          `${want.conditions.map((c) => `${c.type}=${c.status}`).join(', ')}; parents: ${JSON.stringify(actual)}`,
      );
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The waiters, named after the suite's helpers

type Check = (obj: KubeObject) => string[];

async function waitForObject(
  t: Test,
  h: Conformance,
  kind: 'GatewayClass' | 'Gateway' | 'HTTPRoute',
  where: { namespace?: string; name: string },
  check: Check,
  what: string,
  timeoutMs?: number,
): Promise<KubeObject> {
  const [obj] = await h.waitFor(
    kind,
    where,
    (objects) => {
      const found = objects[0];
      return found === undefined ? [`no ${kind} ${where.namespace ?? ''}/${where.name}`] : check(found);
    },
    what,
    timeoutMs,
  );
  t.pass(what);
  return obj as KubeObject;
}

/** GWCMustHaveAcceptedConditionTrue ("True") / GWCMustHaveAcceptedConditionAny (""). */
export async function gatewayClassMustBeAccepted(t: Test, h: Conformance, name: string, status: '' | 'True') {
  return waitForObject(
    t,
    h,
    'GatewayClass',
    { name },
    (gwc) => {
      const conditions = conditionsOf(statusOf(gwc));
      const stale = staleConditions(gwc, conditions);
      if (stale.length > 0) return stale;
      return findCondition(conditions, { type: 'Accepted', status })
        ? []
        : [`no Accepted=${status} in ${describe(conditions)}`];
    },
    `GatewayClass ${name} has Accepted${status ? `=${status}` : ''} with the latest generation`,
  );
}

/** NamespacesMustBeReady: every Gateway not excluded is Accepted and Programmed at its generation. */
export async function namespacesMustBeReady(t: Test, h: Conformance, namespaces: readonly string[]) {
  for (const namespace of namespaces) {
    await h.waitFor(
      'Gateway',
      { namespace },
      (gateways) =>
        gateways.flatMap((gw) => {
          const annotations = (gw.metadata?.annotations ?? {}) as Record<string, string>;
          if (annotations[GATEWAY_SKIP_READINESS] === 'true') return [];
          const conditions = conditionsOf(statusOf(gw));
          const problems = [
            ...staleConditions(gw, conditions),
            ...conditionsMatch(
              [
                { type: 'Accepted', status: 'True' },
                { type: 'Programmed', status: 'True' },
              ],
              conditions,
            ),
          ];
          return problems.map((p) => `Gateway ${gw.metadata?.name}: ${p}`);
        }),
      `Gateways in ${namespace} are Accepted and Programmed`,
    );
  }
  t.pass(`Gateways in ${namespaces.join(', ')} are ready`);
}

const gatewayConditionsCheck =
  (extra: (gw: KubeObject) => string[]): Check =>
  (gw) => {
    const stale = staleConditions(gw, conditionsOf(statusOf(gw)));
    return stale.length > 0 ? stale : extra(gw);
  };

/** GatewayMustHaveLatestConditions */
export function gatewayMustHaveLatestConditions(t: Test, h: Conformance, gw: NamespacedName) {
  return waitForObject(
    t,
    h,
    'Gateway',
    gw,
    gatewayConditionsCheck(() => []),
    `Gateway ${gw.name}: latest generation`,
  );
}

/** GatewayClassMustHaveLatestConditions */
export function gatewayClassMustHaveLatestConditions(t: Test, h: Conformance, name: string) {
  return waitForObject(
    t,
    h,
    'GatewayClass',
    { name },
    (gwc) => staleConditions(gwc, conditionsOf(statusOf(gwc))),
    `GatewayClass ${name}: latest generation`,
  );
}

/** GatewayMustHaveCondition */
export function gatewayMustHaveCondition(
  t: Test,
  h: Conformance,
  gw: NamespacedName,
  condition: ExpectedCondition,
) {
  return waitForObject(
    t,
    h,
    'Gateway',
    gw,
    gatewayConditionsCheck((obj) => conditionsMatch([condition], conditionsOf(statusOf(obj)))),
    `Gateway ${gw.name} has ${condition.type}=${condition.status}/${condition.reason ?? ''}`,
  );
}

const listenersOf = (gw: KubeObject) => (statusOf(gw).listeners ?? []) as ListenerStatus[];

/** GatewayStatusMustHaveListeners */
export function gatewayStatusMustHaveListeners(
  t: Test,
  h: Conformance,
  gw: NamespacedName,
  listeners: readonly ExpectedListener[],
) {
  return waitForObject(
    t,
    h,
    'Gateway',
    gw,
    gatewayConditionsCheck((obj) => listenersMatch(listeners, listenersOf(obj))),
    `Gateway ${gw.name} has the listener statuses expected`,
  );
}

/** GatewayListenersMustHaveConditions: every listener (or those named) has every condition. */
export function gatewayListenersMustHaveConditions(
  t: Test,
  h: Conformance,
  gw: NamespacedName,
  conditions: readonly ExpectedCondition[],
  listenerNames: readonly string[] = [],
) {
  return waitForObject(
    t,
    h,
    'Gateway',
    gw,
    (obj) => {
      const listeners = listenersOf(obj).filter(
        (l) => listenerNames.length === 0 || listenerNames.includes(l.name),
      );
      const missing = listenerNames.filter((name) => !listeners.some((l) => l.name === name));
      return [
        ...missing.map((name) => `no status for listener ${name}`),
        ...listeners.flatMap((l) =>
          conditionsMatch(conditions, l.conditions ?? []).map((p) => `listener ${l.name}: ${p}`),
        ),
      ];
    },
    `Gateway ${gw.name}: listeners have ${conditions.map((c) => `${c.type}=${c.status}`).join(', ')}`,
  );
}

/** GatewayMustHaveZeroRoutes: no listener statuses, or exactly one with attachedRoutes 0. */
export function gatewayMustHaveZeroRoutes(t: Test, h: Conformance, gw: NamespacedName) {
  return waitForObject(
    t,
    h,
    'Gateway',
    gw,
    gatewayConditionsCheck((obj) => {
      const listeners = listenersOf(obj);
      if (listeners.length === 0 || (listeners.length === 1 && (listeners[0]?.attachedRoutes ?? 0) === 0))
        return [];
      return [`want zero listeners or one with zero routes, got ${JSON.stringify(listeners)}`];
    }),
    `Gateway ${gw.name} has zero routes`,
  );
}

/** The address the suite reads (WaitForGatewayAddress): the first status address with a type. */
export function gatewayAddressOf(gw: KubeObject): string | undefined {
  const addresses = (statusOf(gw).addresses ?? []) as Array<{ type?: string; value?: string }>;
  return addresses.find((a) => a.type !== undefined && a.type !== null)?.value;
}

/** WaitForGatewayAddress */
export async function waitForGatewayAddress(t: Test, h: Conformance, gw: NamespacedName): Promise<string> {
  const obj = await waitForObject(
    t,
    h,
    'Gateway',
    gw,
    gatewayConditionsCheck((o) =>
      gatewayAddressOf(o) === undefined ? ['no status address with a type'] : [],
    ),
    `Gateway ${gw.name} has an address`,
  );
  return gatewayAddressOf(obj) as string;
}

/** HTTPRouteMustHaveParents */
export function httpRouteMustHaveParents(
  t: Test,
  h: Conformance,
  route: NamespacedName,
  parents: readonly ExpectedParent[],
  namespaceRequired: boolean,
) {
  return waitForObject(
    t,
    h,
    'HTTPRoute',
    route,
    (obj) => {
      const actual = parentsOf(obj);
      const stale = actual.flatMap((p) => staleConditions(obj, p.conditions ?? []));
      return stale.length > 0 ? stale : parentsMatch(parents, actual, namespaceRequired);
    },
    `HTTPRoute ${route.name} has the parents expected`,
  );
}

/** HTTPRouteMustHaveCondition: the parent entry for `gw` has the condition. */
export function httpRouteMustHaveCondition(
  t: Test,
  h: Conformance,
  route: NamespacedName,
  gw: NamespacedName,
  condition: ExpectedCondition,
) {
  return waitForObject(
    t,
    h,
    'HTTPRoute',
    route,
    (obj) => {
      const parents = parentsOf(obj);
      const stale = parents.flatMap((p) => staleConditions(obj, p.conditions ?? []));
      if (stale.length > 0) return stale;
      const found = parents.some(
        (p) =>
          p.parentRef?.name === gw.name &&
          (p.parentRef.namespace === undefined || p.parentRef.namespace === gw.namespace) &&
          findCondition(p.conditions ?? [], condition),
      );
      return found
        ? []
        : [
            `no parent ${gw.name} with ${condition.type}=${condition.status}/${condition.reason ?? ''}: ${JSON.stringify(parents)}`,
          ];
    },
    `HTTPRoute ${route.name} has ${condition.type}=${condition.status}/${condition.reason ?? ''} for ${gw.name}`,
  );
}

/** HTTPRouteMustHaveResolvedRefsConditionsTrue */
export function httpRouteMustHaveResolvedRefsConditionsTrue(
  t: Test,
  h: Conformance,
  route: NamespacedName,
  gw: NamespacedName,
) {
  return httpRouteMustHaveCondition(t, h, route, gw, {
    type: 'ResolvedRefs',
    status: 'True',
    reason: 'ResolvedRefs',
  });
}

/** HTTPRouteMustHaveLatestConditions */
export function httpRouteMustHaveLatestConditions(t: Test, h: Conformance, route: NamespacedName) {
  return waitForObject(
    t,
    h,
    'HTTPRoute',
    route,
    (obj) => parentsOf(obj).flatMap((p) => staleConditions(obj, p.conditions ?? [])),
    `HTTPRoute ${route.name}: latest generation`,
  );
}

/**
 * HTTPRouteMustHaveNoAcceptedParents: exactly one parent, Accepted=False at the latest generation;
 * or no parent at all for the whole wait (the suite's "empty twice").
 */
export async function httpRouteMustHaveNoAcceptedParents(t: Test, h: Conformance, route: NamespacedName) {
  const check: Check = (obj) => {
    const parents = parentsOf(obj);
    if (parents.length !== 1) return [`expected one parent, got ${parents.length}`];
    const conditions = (parents[0] as RouteParentStatus).conditions ?? [];
    return [
      ...staleConditions(obj, conditions),
      ...conditionsMatch([{ type: 'Accepted', status: 'False' }], conditions),
    ];
  };
  const what = `HTTPRoute ${route.name} has no accepted parents`;
  try {
    await waitForObject(t, h, 'HTTPRoute', route, check, what, 5_000);
  } catch (err) {
    const obj = h.get({ kind: 'HTTPRoute', apiVersion: `${GATEWAY_GROUP}/v1`, ...route });
    if (obj === undefined || parentsOf(obj).length > 0) throw err;
    t.pass(`${what} (none at all)`);
  }
}

/**
 * GatewayAndHTTPRoutesMustBeAccepted: the Gateway has an address; each route has an Accepted=True
 * parent for it (group and kind written, namespace when the route is elsewhere); every listener of
 * the Gateway is ResolvedRefs, Accepted and Programmed. Returns the Gateway's address.
 */
export async function gatewayAndHTTPRoutesMustBeAccepted(
  t: Test,
  h: Conformance,
  controllerName: string,
  gw: NamespacedName & { listenerNames?: readonly string[] },
  routes: readonly NamespacedName[],
): Promise<string> {
  const address = await waitForGatewayAddress(t, h, gw);
  const sections = gw.listenerNames?.length ? gw.listenerNames : [''];
  for (const route of routes) {
    const parents: ExpectedParent[] = sections.map((sectionName) => ({
      parentRef: {
        group: GATEWAY_GROUP,
        kind: 'Gateway',
        name: gw.name,
        namespace: gw.namespace,
        sectionName,
      },
      controllerName,
      conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
    }));
    await httpRouteMustHaveParents(t, h, route, parents, route.namespace !== gw.namespace);
  }
  await gatewayListenersMustHaveConditions(t, h, gw, [
    { type: 'ResolvedRefs', status: 'True' },
    { type: 'Accepted', status: 'True' },
    { type: 'Programmed', status: 'True' },
  ]);
  return address;
}
