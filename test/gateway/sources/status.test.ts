// The Gateway API status writer against the fake API server, fed a hand-made report (the build's
// half that computes it is another step): what it writes on each kind, what it keeps (other
// controllers' route parents, lastTransitionTime of a condition whose status stays), what it
// removes (stale parents of ours), and when it writes nothing at all.
import t, { type Test } from 'tap';
import type { Condition, GatewayApiStatus } from '../../../lib/model/gateway/types.ts';
import { EMPTY_SNAPSHOT, type KubeObject as ModelObject, type Snapshot } from '../../../lib/model/k8s.ts';
import {
  createGatewayStatusWriter,
  type GatewayStatusOptions,
  STATUS_WRITES_IN_FLIGHT,
  supportedVersionCondition,
} from '../../../lib/source/kube/gateway-status.ts';
import {
  type FakeApiServer,
  GATEWAY_GROUP,
  type KubeObject,
  startFakeApiServer,
} from '../../support/fake-apiserver.ts';

const V1 = `${GATEWAY_GROUP}/v1`;
const OURS = 'ingress-ts.dev/gateway-controller';
const FOREIGN = 'example.net/other-controller';
const T0 = new Date('2026-01-01T10:00:00.123Z');
const T1 = new Date('2026-01-01T11:00:00Z');

const condition = (type: string, status: Condition['status'], reason: string, generation = 1): Condition => ({
  type,
  status,
  reason,
  message: `${type} is ${status}`,
  observedGeneration: generation,
});

const objects: KubeObject[] = [
  { apiVersion: V1, kind: 'GatewayClass', metadata: { name: 'ingress-ts' }, spec: { controllerName: OURS } },
  {
    apiVersion: V1,
    kind: 'Gateway',
    metadata: { name: 'edge', namespace: 'infra' },
    spec: { gatewayClassName: 'ingress-ts', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
  },
  {
    apiVersion: V1,
    kind: 'HTTPRoute',
    metadata: { name: 'site', namespace: 'web' },
    spec: { parentRefs: [{ name: 'edge', namespace: 'infra' }] },
    status: {
      parents: [
        {
          parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', name: 'theirs', namespace: 'infra' },
          controllerName: FOREIGN,
          conditions: [
            { ...condition('Accepted', 'True', 'Accepted'), lastTransitionTime: '2025-01-01T00:00:00Z' },
          ],
        },
        {
          parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', name: 'old', namespace: 'infra' },
          controllerName: OURS,
          conditions: [
            { ...condition('Accepted', 'True', 'Accepted'), lastTransitionTime: '2025-01-01T00:00:00Z' },
          ],
        },
      ],
    },
  },
];

function report(accepted: Condition['status'] = 'True', message = 'Accepted is True'): GatewayApiStatus {
  return {
    gatewayClasses: [
      {
        name: 'ingress-ts',
        generation: 1,
        conditions: [condition('Accepted', 'True', 'Accepted')],
        supportedFeatures: ['Gateway', 'HTTPRoute'],
      },
    ],
    gateways: [
      {
        namespace: 'infra',
        name: 'edge',
        generation: 1,
        conditions: [
          condition('Accepted', 'True', 'Accepted'),
          condition('Programmed', 'True', 'Programmed'),
        ],
        listeners: [
          {
            name: 'http',
            supportedKinds: [{ group: GATEWAY_GROUP, kind: 'HTTPRoute' }],
            attachedRoutes: 1,
            conditions: [
              condition('Accepted', 'True', 'Accepted'),
              condition('Programmed', 'True', 'Programmed'),
            ],
          },
        ],
      },
    ],
    httpRoutes: [
      {
        namespace: 'web',
        name: 'site',
        generation: 1,
        parents: [
          {
            parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', name: 'edge', namespace: 'infra' },
            conditions: [
              {
                ...condition(
                  'Accepted',
                  accepted,
                  accepted === 'True' ? 'Accepted' : 'NotAllowedByListeners',
                ),
                message,
              },
            ],
          },
        ],
      },
    ],
  };
}

/** What the watch would deliver: the API server's objects now. */
const snapshotOf = (api: FakeApiServer): Snapshot => ({
  ...EMPTY_SNAPSHOT,
  gatewayClasses: api.list('GatewayClass') as ModelObject[],
  gateways: api.list('Gateway') as ModelObject[],
  httpRoutes: api.list('HTTPRoute') as ModelObject[],
  referenceGrants: [],
  namespaces: [],
});

async function setup(
  t: Test,
  bundleVersion: string | null = 'v1.6.1',
  extra: Partial<GatewayStatusOptions> = {},
) {
  const api = await startFakeApiServer({ gatewayApi: { bundleVersion }, objects });
  t.teardown(() => api.close());
  const state = { leader: true, now: T0, errors: [] as string[] };
  const writer = createGatewayStatusWriter({
    kubeConfig: api.kubeConfig(),
    controllerName: OURS,
    addresses: () => [{ ip: '10.0.0.1' }, { hostname: 'lb.example.com' }],
    isLeader: () => state.leader,
    now: () => state.now,
    onError: (object, error) => state.errors.push(`${object}: ${(error as Error).message}`),
    ...extra,
  });
  return { api, state, writer };
}

const statusOf = (api: FakeApiServer, kind: string, name: string, namespace?: string) =>
  (api.get({ apiVersion: V1, kind, name, namespace }) as { status?: Record<string, unknown> }).status;
const writes = (api: FakeApiServer) => api.count((r) => r.method === 'PUT' && r.subresource === 'status');

t.test('first write: each kind, parents of others kept, a stale one of ours removed', async (t) => {
  const { api, state, writer } = await setup(t);
  await writer.update(snapshotOf(api), report());
  t.same(state.errors, []);
  t.equal(writes(api), 3, 'one write per object');
  const gatewayMeta = api.get({
    apiVersion: V1,
    kind: 'Gateway',
    namespace: 'infra',
    name: 'edge',
  })?.metadata;
  t.equal(gatewayMeta?.generation, 1, 'through /status: the generation does not move');
  const stamp = '2026-01-01T10:00:00Z';
  t.same(statusOf(api, 'GatewayClass', 'ingress-ts'), {
    conditions: [
      { ...condition('Accepted', 'True', 'Accepted'), lastTransitionTime: stamp },
      { ...supportedVersionCondition('v1.6.1', 1), lastTransitionTime: stamp },
    ],
    supportedFeatures: [{ name: 'Gateway' }, { name: 'HTTPRoute' }],
  });
  t.match(statusOf(api, 'GatewayClass', 'ingress-ts'), {
    conditions: [{}, { type: 'SupportedVersion', status: 'True', reason: 'SupportedVersion' }],
  });
  const gateway = statusOf(api, 'Gateway', 'edge', 'infra');
  t.same(gateway?.addresses, [
    { type: 'IPAddress', value: '10.0.0.1' },
    { type: 'Hostname', value: 'lb.example.com' },
  ]);
  t.match(gateway, {
    conditions: [
      { type: 'Accepted', status: 'True', observedGeneration: 1, lastTransitionTime: stamp },
      { type: 'Programmed', status: 'True' },
    ],
    listeners: [
      {
        name: 'http',
        attachedRoutes: 1,
        supportedKinds: [{ group: GATEWAY_GROUP, kind: 'HTTPRoute' }],
        conditions: [{ type: 'Accepted' }, { type: 'Programmed', lastTransitionTime: stamp }],
      },
    ],
  });
  const parents = statusOf(api, 'HTTPRoute', 'site', 'web')?.parents as Array<Record<string, unknown>>;
  t.same(
    parents.map((p) => [p.controllerName, (p.parentRef as { name: string }).name]),
    [
      [FOREIGN, 'theirs'],
      [OURS, 'edge'],
    ],
    "the other controller's entry kept, ours replaced: the stale 'old' entry is gone",
  );
  const written = objects[2] as { status: { parents: unknown[] } };
  t.same(parents[0], written.status.parents[0], 'theirs untouched');
});

t.test('unchanged: no request; a new message keeps lastTransitionTime, a new status moves it', async (t) => {
  const { api, state, writer } = await setup(t);
  await writer.update(snapshotOf(api), report());
  const before = api.requests.length;
  state.now = T1;
  await writer.update(snapshotOf(api), report());
  t.equal(api.requests.length, before, 'the watched copies match: not even a GET');

  await writer.update(snapshotOf(api), report('True', 'accepted, worded anew'));
  t.equal(writes(api), 4, 'the route written again');
  const ours = () => {
    const parents = statusOf(api, 'HTTPRoute', 'site', 'web')?.parents ?? [];
    const list = parents as Array<{ controllerName: string; conditions: unknown[] }>;
    return list.find((p) => p.controllerName === OURS)?.conditions[0];
  };
  t.match(
    ours(),
    { message: 'accepted, worded anew', lastTransitionTime: '2026-01-01T10:00:00Z' },
    'time kept',
  );

  await writer.update(snapshotOf(api), report('False'));
  t.match(ours(), { status: 'False', lastTransitionTime: '2026-01-01T11:00:00Z' }, 'status flipped: now');
  t.match(
    statusOf(api, 'Gateway', 'edge', 'infra'),
    { conditions: [{ lastTransitionTime: '2026-01-01T10:00:00Z' }] },
    'the Gateway was not rewritten',
  );
});

t.test('a build that changed neither the report nor the objects: nothing is even compared', async (t) => {
  const { api, writer } = await setup(t);
  await writer.update(snapshotOf(api), report());
  let reads = 0;
  const counted = <T extends object>(list: T): T =>
    new Proxy(list, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });
  const current = snapshotOf(api);
  const snapshot = { ...current, httpRoutes: counted([...(current.httpRoutes ?? [])]) };
  await writer.update(snapshot, report());
  t.ok(reads > 0, 'new lists: each object compared with the watched copy');
  reads = 0;
  await writer.update(snapshot, report());
  t.equal(reads, 0, 'the same lists and an equal report: settled, no object looked at');
  await writer.update(snapshot, report('True', 'reworded'));
  t.ok(reads > 0, 'a report that differs is looked at');
});

t.test('not the leader: nothing is asked of the API server', async (t) => {
  const { api, state, writer } = await setup(t);
  state.leader = false;
  const before = api.requests.length;
  await writer.update(snapshotOf(api), report());
  t.equal(api.requests.length, before);
  t.equal(statusOf(api, 'Gateway', 'edge', 'infra'), undefined);
});

t.test('leadership lost during a run: no request starts after it', async (t) => {
  const state = { leader: true, requestsThen: -1 };
  const { api, writer } = await setup(t, 'v1.6.1', {
    isLeader: () => state.leader,
    onWritten: () => {
      state.leader = false;
      state.requestsThen = api.requests.length;
    },
  });
  // the other objects' reads, in flight beside the GatewayClass's write, answer after it
  api.delayNext(
    (r) => r.method === 'GET' && r.subresource === 'status' && r.resource !== 'gatewayclasses',
    300,
    2,
  );
  await writer.update(snapshotOf(api), report());
  t.equal(writes(api), 1, 'the GatewayClass only');
  t.equal(api.requests.length, state.requestsThen, 'nothing asked once no longer the leader');
  t.equal(statusOf(api, 'Gateway', 'edge', 'infra'), undefined);
  state.leader = true;
  await writer.update(snapshotOf(api), report());
  t.match(
    statusOf(api, 'Gateway', 'edge', 'infra'),
    { listeners: [{ name: 'http' }] },
    'leading again: written',
  );
});

t.test('many objects: a bounded number in flight, each read before it is written', async (t) => {
  const routes = 30;
  const many: KubeObject[] = Array.from({ length: routes }, (_, i) => ({
    apiVersion: V1,
    kind: 'HTTPRoute',
    metadata: { name: `r${i}`, namespace: 'web' },
    spec: { parentRefs: [{ name: 'edge', namespace: 'infra' }] },
  }));
  const { api, state, writer } = await setup(t);
  for (const route of many) api.apply(route);
  const status = report();
  const parent = status.httpRoutes[0]?.parents ?? [];
  status.httpRoutes = many.map((_, i) => ({
    namespace: 'web',
    name: `r${i}`,
    generation: 1,
    parents: parent,
  }));
  let inFlight = 0;
  let most = 0;
  const pending = (r: { subresource?: string; status?: number }) =>
    r.subresource === 'status' && r.status === undefined;
  // every status read is slow: the count of unanswered requests at each arrival is what the writer has in flight
  api.delayNext(
    (r) => {
      if (r.subresource !== 'status') return false;
      inFlight = api.requests.filter(pending).length;
      most = Math.max(most, inFlight);
      return r.method === 'GET';
    },
    50,
    1000,
  );
  await writer.update(snapshotOf(api), status);
  t.same(state.errors, []);
  t.equal(writes(api), routes + 3, 'every object written once (and web/site, for its stale entry)');
  t.ok(most > 1, `several objects at once (${most})`);
  t.ok(most <= STATUS_WRITES_IN_FLIGHT, `never more than ${STATUS_WRITES_IN_FLIGHT} (${most})`);
  for (let i = 0; i < routes; i++) {
    const path = `/apis/${V1}/namespaces/web/httproutes/r${i}/status`;
    t.same(
      api.requests.filter((r) => r.path === path).map((r) => r.method),
      ['GET', 'PUT'],
      `r${i}: read, then written`,
    );
  }
});

t.test('a route no longer in the report loses our entry only; others are never cleared', async (t) => {
  const { api, writer } = await setup(t);
  await writer.update(snapshotOf(api), report());
  const none: GatewayApiStatus = { gatewayClasses: [], gateways: [], httpRoutes: [] };
  await writer.update(snapshotOf(api), none);
  const parents = statusOf(api, 'HTTPRoute', 'site', 'web')?.parents as Array<{ controllerName: string }>;
  t.same(
    parents.map((p) => p.controllerName),
    [FOREIGN],
  );
  t.match(
    statusOf(api, 'Gateway', 'edge', 'infra'),
    { listeners: [{ name: 'http' }] },
    'a Gateway left as it was',
  );
});

t.test('a conflict is retried with the object read again', async (t) => {
  const { api, state, writer } = await setup(t);
  api.failNext((r) => r.method === 'PUT' && r.resource === 'gateways', { status: 409, count: 2 });
  await writer.update(snapshotOf(api), report());
  t.same(state.errors, []);
  t.match(statusOf(api, 'Gateway', 'edge', 'infra'), { listeners: [{ name: 'http' }] });
});

t.test('SupportedVersion: an unknown or unreadable bundle version is False, Accepted stays', async (t) => {
  for (const version of ['v1.7.0', null]) {
    const { api, writer } = await setup(t, version);
    await writer.update(snapshotOf(api), report());
    t.match(
      statusOf(api, 'GatewayClass', 'ingress-ts'),
      {
        conditions: [
          { type: 'Accepted', status: 'True' },
          { type: 'SupportedVersion', status: 'False', reason: 'UnsupportedVersion' },
        ],
      },
      `bundle version ${version}`,
    );
  }
  t.equal(supportedVersionCondition('v1.0.0', 3).status, 'True');
  t.equal(supportedVersionCondition('v1.6.1', 3).observedGeneration, 3);
  t.equal(supportedVersionCondition('v2.0.0', 3).status, 'False');
});

t.test('without published addresses, status.addresses is left out', async (t) => {
  const { api, writer } = await setup(t, 'v1.6.1', { addresses: () => null });
  await writer.update(snapshotOf(api), report());
  t.notOk('addresses' in (statusOf(api, 'Gateway', 'edge', 'infra') ?? {}));
});

t.test('a failure is reported once per object until it succeeds', async (t) => {
  const { api, state, writer } = await setup(t);
  api.failNext((r) => r.method === 'PUT' && r.resource === 'gateways', { status: 500, count: 2 });
  await writer.update(snapshotOf(api), report());
  await writer.update(snapshotOf(api), report());
  t.equal(state.errors.length, 1, 'the same failure twice: one report');
  t.match(state.errors[0], /^Gateway infra\/edge: write: HTTP 500/);
  await writer.update(snapshotOf(api), report());
  t.match(statusOf(api, 'Gateway', 'edge', 'infra'), { listeners: [{ name: 'http' }] }, 'written at last');
});
