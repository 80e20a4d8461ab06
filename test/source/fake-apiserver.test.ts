// The fake kube-apiserver (test/support/fake-apiserver.ts) against the real @kubernetes/client-node 2
// client: typed calls, patches, the status subresource, Leases, Events, selectors, informers and
// every fault the controller's informer wrapper must survive. The assertions pin down how the client
// behaves, so a client upgrade that changes it fails here first.

import { readFile } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import type { Test } from 'tap';
import t from 'tap';
import {
  type FakeApiServer,
  type FakeApiServerOptions,
  type KubeObject,
  startFakeApiServer,
} from '../support/fake-apiserver.ts';

/** Failure guard for awaited events; they normally arrive within a few ms. */
const TIMEOUT_MS = 5000;
const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

interface Cluster {
  fake: FakeApiServer;
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  net: k8s.NetworkingV1Api;
  coord: k8s.CoordinationV1Api;
  events: k8s.EventsV1Api;
}

async function cluster(t: Test, options: FakeApiServerOptions = {}): Promise<Cluster> {
  const fake = await startFakeApiServer(options);
  t.teardown(() => fake.close());
  const kc = fake.kubeConfig();
  return {
    fake,
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    net: kc.makeApiClient(k8s.NetworkingV1Api),
    coord: kc.makeApiClient(k8s.CoordinationV1Api),
    events: kc.makeApiClient(k8s.EventsV1Api),
  };
}

/** The ApiException a call rejects with, and the Status object in its (string) body. */
async function failure(call: Promise<unknown>): Promise<{ code: number; reason: string; message: string }> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof k8s.ApiException)) throw err;
    const status = JSON.parse(err.body as string) as { kind: string; reason: string; message: string };
    if (status.kind !== 'Status') throw new Error(`not a Status: ${err.body}`);
    return { code: err.code, reason: status.reason, message: status.message };
  }
  throw new Error('the call succeeded');
}

const ingress = (name: string, extra: Partial<KubeObject> = {}, namespace = 'default'): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace },
  spec: { rules: [{ host: `${name}.test` }] },
  ...extra,
});

const service = (name: string, labels: Record<string, string>, namespace = 'default'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace, labels },
  spec: { ports: [{ port: 80 }] },
});

// ---------------------------------------------------------------------------------------------
// An informer's callbacks as a log, with a way to await an entry.

interface Seen {
  what: 'add' | 'update' | 'delete' | 'error' | 'connect';
  /** `add default/a@12`, `error 500`, `error terminated`, `connect`. */
  text: string;
  obj?: k8s.KubernetesObject;
  err?: { statusCode?: number; message?: string; name?: string; cause?: { code?: string } };
}

function watchInformer<T extends k8s.KubernetesObject>(
  t: Test,
  informer: k8s.Informer<T> & k8s.ObjectCache<T>,
) {
  const log: Seen[] = [];
  let waiters: Array<() => void> = [];
  const push = (entry: Seen) => {
    log.push(entry);
    const current = waiters;
    waiters = [];
    for (const w of current) w();
  };
  for (const what of ['add', 'update', 'delete'] as const) {
    informer.on(what, (obj) => {
      const m = obj.metadata ?? {};
      const key = m.namespace ? `${m.namespace}/${m.name}` : m.name;
      push({ what, text: `${what} ${key}@${m.resourceVersion}`, obj });
    });
  }
  informer.on('error', (err?: Seen['err']) =>
    push({ what: 'error', text: `error ${err?.statusCode ?? err?.message}`, err }),
  );
  informer.on('connect', () => push({ what: 'connect', text: 'connect' }));
  let stopped = false;
  t.teardown(async () => {
    stopped = true;
    await informer.stop();
  });
  /** Resolves with the first entry at index >= `from` whose text starts with `prefix`. */
  const next = (prefix: string, from = 0): Promise<Seen> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`timed out waiting for "${prefix}"; saw ${log.map((s) => s.text).join(', ')}`)),
        TIMEOUT_MS,
      );
      const check = () => {
        const found = log.slice(from).find((s) => s.text.startsWith(prefix));
        if (found !== undefined) {
          clearTimeout(timer);
          resolve(found);
        } else if (!stopped) waiters.push(check);
      };
      check();
    });
  /** The log texts from index `from`, without connect entries. */
  const texts = (from = 0) =>
    log
      .slice(from)
      .filter((s) => s.what !== 'connect')
      .map((s) => s.text);
  return { log, next, texts };
}

function ingressInformer(c: Cluster) {
  return k8s.makeInformer(c.kc, '/apis/networking.k8s.io/v1/ingresses', () =>
    c.net.listIngressForAllNamespaces(),
  );
}

// ---------------------------------------------------------------------------------------------
// Typed calls

t.test('typed create, read, list, replace and delete of ingresses', async (t) => {
  const { fake, net } = await cluster(t);
  const created = await net.createNamespacedIngress({
    namespace: 'default',
    body: {
      metadata: { name: 'a' },
      spec: { ingressClassName: 'x' },
      status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } },
    },
  });
  t.equal(fake.requests.at(-1)?.status, 201, 'POST answers 201');
  t.equal(fake.requests.at(-1)?.contentType, 'application/json');
  t.match(created.metadata, {
    name: 'a',
    namespace: 'default',
    resourceVersion: fake.resourceVersion,
    generation: 1,
  });
  t.match(created.metadata?.uid, /^[0-9a-f-]{36}$/);
  t.ok(created.metadata?.creationTimestamp instanceof Date, 'typed results carry Date timestamps');
  t.equal(created.metadata?.creationTimestamp?.getMilliseconds(), 0, 'creationTimestamp has seconds only');
  t.same(created.status, { loadBalancer: {} }, 'create clears the status');

  t.match(
    await failure(net.createNamespacedIngress({ namespace: 'default', body: { metadata: { name: 'a' } } })),
    {
      code: 409,
      reason: 'AlreadyExists',
      message: 'ingresses.networking.k8s.io "a" already exists',
    },
  );
  t.match(await failure(net.readNamespacedIngress({ namespace: 'default', name: 'nope' })), {
    code: 404,
    reason: 'NotFound',
    message: 'ingresses.networking.k8s.io "nope" not found',
  });
  t.match(
    await failure(
      net.createNamespacedIngress({
        namespace: 'default',
        body: { metadata: { name: 'b', namespace: 'other' } },
      }),
    ),
    { code: 400, reason: 'BadRequest' },
    'a body namespace that differs from the path',
  );

  fake.apply(ingress('b', {}, 'other'));
  fake.apply(ingress('c'));
  const all = await net.listIngressForAllNamespaces();
  t.equal(all.metadata?.resourceVersion, fake.resourceVersion, 'the list RV is the current global RV');
  t.same(
    all.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`),
    ['default/a', 'default/c', 'other/b'],
    'sorted by namespace, then name',
  );
  t.equal(all.items[0]?.kind, undefined, 'list items carry no kind');
  const one = await net.listNamespacedIngress({ namespace: 'other' });
  t.same(
    one.items.map((i) => i.metadata?.name),
    ['b'],
  );

  const current = await net.readNamespacedIngress({ namespace: 'default', name: 'a' });
  const stale = structuredClone(current);
  const rv = Number(current.metadata?.resourceVersion);
  current.spec = { ingressClassName: 'y' };
  current.status = { loadBalancer: { ingress: [{ ip: '9.9.9.9' }] } };
  const replaced = await net.replaceNamespacedIngress({ namespace: 'default', name: 'a', body: current });
  t.equal(replaced.metadata?.generation, 2, 'a spec change moves generation');
  t.ok(Number(replaced.metadata?.resourceVersion) > rv, 'and the RV');
  t.same(replaced.status, { loadBalancer: {} }, 'a PUT of the main resource ignores .status');
  t.match(await failure(net.replaceNamespacedIngress({ namespace: 'default', name: 'a', body: stale })), {
    code: 409,
    reason: 'Conflict',
    message: /the object has been modified/,
  });

  replaced.metadata = { ...replaced.metadata, labels: { x: 'y' } };
  const relabeled = await net.replaceNamespacedIngress({ namespace: 'default', name: 'a', body: replaced });
  t.equal(relabeled.metadata?.generation, 2, 'a label change does not move an Ingress generation');
  const again = await net.replaceNamespacedIngress({ namespace: 'default', name: 'a', body: relabeled });
  t.equal(again.metadata?.resourceVersion, relabeled.metadata?.resourceVersion, 'a no-op PUT keeps the RV');
  t.match(
    await failure(
      net.replaceNamespacedIngress({ namespace: 'default', name: 'zz', body: { metadata: { name: 'zz' } } }),
    ),
    { code: 404 },
    'PUT to a missing ingress',
  );

  const deleted = await net.deleteNamespacedIngress({ namespace: 'default', name: 'a' });
  t.match(deleted, { kind: 'Status', status: 'Success', details: { name: 'a', kind: 'ingresses' } });
  t.equal(fake.get({ kind: 'Ingress', namespace: 'default', name: 'a' }), undefined);
  t.match(await failure(net.deleteNamespacedIngress({ namespace: 'default', name: 'a' })), { code: 404 });
});

t.test('the ingress status subresource changes only .status, without moving generation', async (t) => {
  const { fake, kc, net } = await cluster(t, { objects: [ingress('a')] });
  const current = await net.readNamespacedIngressStatus({ namespace: 'default', name: 'a' });
  current.spec = { ingressClassName: 'ignored' };
  current.status = { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } };
  const put = await net.replaceNamespacedIngressStatus({ namespace: 'default', name: 'a', body: current });
  t.same(put.status, { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } });
  t.same(put.spec, { rules: [{ host: 'a.test' }] }, 'spec comes from the stored object');
  t.equal(put.metadata?.generation, 1);
  t.equal(fake.requests.at(-1)?.path, '/apis/networking.k8s.io/v1/namespaces/default/ingresses/a/status');

  const merged = await net.patchNamespacedIngressStatus(
    {
      namespace: 'default',
      name: 'a',
      body: { spec: { rules: [] }, status: { loadBalancer: { ingress: [{ hostname: 'lb.test' }] } } },
    },
    MERGE,
  );
  t.equal(fake.requests.at(-1)?.contentType, 'application/merge-patch+json');
  t.same(
    merged.status?.loadBalancer?.ingress,
    [{ hostname: 'lb.test' }],
    'a list is replaced by a merge patch',
  );
  t.same(merged.spec, { rules: [{ host: 'a.test' }] });
  t.equal(merged.metadata?.generation, 1);

  const patched = await net.patchNamespacedIngressStatus({
    namespace: 'default',
    name: 'a',
    body: [{ op: 'replace', path: '/status/loadBalancer', value: {} }],
  });
  t.equal(fake.requests.at(-1)?.contentType, 'application/json-patch+json', 'PATCH defaults to json-patch');
  t.same(patched.status, { loadBalancer: {} });

  // The history kept each version with its own RV: a patch must not alias the stored object.
  const history: string[] = [];
  let done: (err: unknown) => void = () => {};
  const ended = new Promise((resolve) => {
    done = resolve;
  });
  await new k8s.Watch(kc).watch(
    '/apis/networking.k8s.io/v1/ingresses',
    { resourceVersion: '1' },
    (type, obj: k8s.V1Ingress) =>
      history.push(`${type}@${obj.metadata?.resourceVersion} ${JSON.stringify(obj.status?.loadBalancer)}`),
    done,
  );
  await fake.endWatches();
  await ended;
  t.same(history, [
    'MODIFIED@2 {"ingress":[{"ip":"10.0.0.1"}]}',
    'MODIFIED@3 {"ingress":[{"hostname":"lb.test"}]}',
    'MODIFIED@4 {}',
  ]);
});

t.test('patch types: json-patch operations, merge patch, strategic as merge, 415 for the rest', async (t) => {
  const { fake, core } = await cluster(t, {
    objects: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'c', labels: { a: '1' } },
        data: { x: '1', y: '2' },
      },
    ],
  });
  const patched = await core.patchNamespacedConfigMap({
    namespace: 'default',
    name: 'c',
    body: [
      { op: 'test', path: '/data/x', value: '1' },
      { op: 'add', path: '/data/z', value: '3' },
      { op: 'replace', path: '/data/x', value: 'one' },
      { op: 'remove', path: '/data/y' },
      { op: 'copy', from: '/data/z', path: '/data/w' },
      { op: 'move', from: '/data/z', path: '/data/v' },
      { op: 'add', path: '/metadata/labels/b~1c', value: '2' },
    ],
  });
  t.same(patched.data, { x: 'one', w: '3', v: '3' });
  t.same(patched.metadata?.labels, { a: '1', 'b/c': '2' }, '~1 escapes a slash');
  t.match(
    await failure(
      core.patchNamespacedConfigMap({
        namespace: 'default',
        name: 'c',
        body: [{ op: 'test', path: '/data/x', value: 'no' }],
      }),
    ),
    { code: 422 },
    'a failed test operation',
  );
  t.match(
    await failure(
      core.patchNamespacedConfigMap({
        namespace: 'default',
        name: 'c',
        body: [{ op: 'remove', path: '/data/nope' }],
      }),
    ),
    { code: 422 },
    'removing a missing path',
  );

  const merged = await core.patchNamespacedConfigMap(
    {
      namespace: 'default',
      name: 'c',
      body: { data: { x: null, n: 'new' }, metadata: { labels: { a: null } } },
    },
    MERGE,
  );
  t.same(merged.data, { w: '3', v: '3', n: 'new' }, 'null deletes in a merge patch');
  t.same(merged.metadata?.labels, { 'b/c': '2' });

  const strategic = await core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'c', body: { data: { s: 's' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
  );
  t.equal(strategic.data?.s, 's');
  t.match(
    await failure(
      core.patchNamespacedConfigMap(
        { namespace: 'default', name: 'c', body: { data: { s: 't' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
      ),
    ),
    { code: 415, reason: 'UnsupportedMediaType' },
    'server-side apply is not modelled',
  );
  const stale = { metadata: { resourceVersion: '1' }, data: { s: 'u' } };
  t.match(
    await failure(core.patchNamespacedConfigMap({ namespace: 'default', name: 'c', body: stale }, MERGE)),
    { code: 409, reason: 'Conflict' },
    'a patch carrying a stale metadata.resourceVersion',
  );
  t.match(
    await failure(core.patchNamespacedConfigMap({ namespace: 'default', name: 'none', body: {} }, MERGE)),
    { code: 404 },
  );
  t.same(
    fake.requests.filter((r) => r.verb === 'patch').map((r) => r.contentType),
    [
      'application/json-patch+json',
      'application/json-patch+json',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
      'application/apply-patch+yaml',
      'application/merge-patch+json',
      'application/merge-patch+json',
    ],
    'the request log records each PATCH content type',
  );
});

t.test('cluster-scoped ingressclasses and namespaces; generation rules of EndpointSlices', async (t) => {
  const { fake, core, net } = await cluster(t);
  await net.createIngressClass({
    body: { metadata: { name: 'ingress-ts' }, spec: { controller: 'ingress-ts.dev/c' } },
  });
  t.equal(fake.requests.at(-1)?.path, '/apis/networking.k8s.io/v1/ingressclasses');
  const classes = await net.listIngressClass();
  t.same(
    classes.items.map((c) => [c.metadata?.name, c.metadata?.namespace, c.metadata?.generation]),
    [['ingress-ts', undefined, 1]],
  );
  await core.createNamespace({ body: { metadata: { name: 'team' } } });
  t.same(
    (await core.listNamespace()).items.map((n) => n.metadata?.name),
    ['team'],
  );
  t.equal((await core.readNamespace({ name: 'team' })).metadata?.name, 'team');

  const slice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 's', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.1'] }],
  };
  t.equal(fake.apply(slice).metadata?.generation, 1);
  const moved = fake.apply({ ...slice, endpoints: [{ addresses: ['10.0.0.2'] }] });
  t.equal(moved.metadata?.generation, 2, 'endpoints changed');
  const annotated = fake.apply({ ...moved, metadata: { ...moved.metadata, annotations: { a: 'b' } } });
  t.equal(annotated.metadata?.generation, 2, 'an annotation does not move it');
  t.not(annotated.metadata?.resourceVersion, moved.metadata?.resourceVersion);
  const labelled = fake.apply({ ...annotated, metadata: { ...annotated.metadata, labels: { x: 'y' } } });
  t.equal(labelled.metadata?.generation, 3, 'a label change does');
  t.equal(fake.apply(labelled).metadata?.resourceVersion, labelled.metadata?.resourceVersion, 'no-op apply');
  t.equal(fake.list('EndpointSlice').length, 1);
});

t.test('leases: V1MicroTime accepted, a plain Date refused, optimistic concurrency', async (t) => {
  const { fake, coord } = await cluster(t);
  const at = new k8s.V1MicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 123));
  const body: k8s.V1Lease = {
    metadata: { name: 'leader' },
    spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 15, acquireTime: at, renewTime: at },
  };
  const created = await coord.createNamespacedLease({ namespace: 'kube-system', body });
  t.match(
    fake.requests.at(-1)?.body,
    { spec: { renewTime: '2026-01-02T03:04:05.123000Z' } },
    '6 digits on the wire',
  );
  t.equal(typeof created.spec?.renewTime, 'string', 'a MicroTime comes back as a string, not a Date');

  const read = await coord.readNamespacedLease({ namespace: 'kube-system', name: 'leader' });
  const stale = structuredClone(read);
  read.spec = {
    ...read.spec,
    holderIdentity: 'pod-a',
    renewTime: new k8s.V1MicroTime(Date.UTC(2026, 0, 2, 3, 4, 10)),
  };
  const renewed = await coord.replaceNamespacedLease({
    namespace: 'kube-system',
    name: 'leader',
    body: read,
  });
  t.equal(renewed.spec?.renewTime as unknown, '2026-01-02T03:04:10.000000Z');
  t.match(
    await failure(coord.replaceNamespacedLease({ namespace: 'kube-system', name: 'leader', body: stale })),
    {
      code: 409,
      reason: 'Conflict',
    },
  );
  const unconditional = structuredClone(renewed);
  delete unconditional.metadata?.resourceVersion;
  t.match(
    await failure(
      coord.replaceNamespacedLease({ namespace: 'kube-system', name: 'leader', body: unconditional }),
    ),
    { code: 422, reason: 'Invalid', message: /must be specified for an update/ },
    'a Lease PUT without resourceVersion',
  );

  const plainDate = { metadata: { name: 'other' }, spec: { holderIdentity: 'x', renewTime: new Date() } };
  t.match(
    await failure(coord.createNamespacedLease({ namespace: 'kube-system', body: plainDate })),
    { code: 400, reason: 'BadRequest', message: /MicroTime/ },
    'a Date serializes with 3 digits, which the server cannot parse',
  );
  const viaPut = await coord.replaceNamespacedLease({
    namespace: 'kube-system',
    name: 'fresh',
    body: { metadata: { name: 'fresh' }, spec: { holderIdentity: 'b', renewTime: at } },
  });
  t.equal(fake.requests.at(-1)?.status, 201, 'a PUT without RV to a missing Lease creates it');
  t.equal(viaPut.metadata?.name, 'fresh');
});

t.test('events: core v1 and events.k8s.io v1, generateName, validation', async (t) => {
  const { fake, core, events } = await cluster(t);
  const coreEvent = await core.createNamespacedEvent({
    namespace: 'default',
    body: {
      metadata: { generateName: 'web.' },
      involvedObject: { kind: 'Ingress', namespace: 'default', name: 'web' },
      reason: 'Sync',
      message: 'Scheduled for sync',
      type: 'Normal',
      count: 1,
      firstTimestamp: new Date(),
      lastTimestamp: new Date(),
      source: { component: 'ingress-ts' },
    },
  });
  t.match(coreEvent.metadata?.name, /^web\.[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  const bumped = await core.patchNamespacedEvent(
    { namespace: 'default', name: coreEvent.metadata?.name as string, body: { count: 2 } },
    MERGE,
  );
  t.equal(bumped.count, 2);
  t.match(
    await failure(
      core.createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: { name: 'x' },
          involvedObject: { kind: 'Ingress', namespace: 'elsewhere', name: 'web' },
        },
      }),
    ),
    { code: 422, reason: 'Invalid', message: /involvedObject.namespace/ },
  );

  const body: k8s.EventsV1Event = {
    metadata: { generateName: 'web.' },
    eventTime: new k8s.V1MicroTime(),
    reportingController: 'ingress-ts.dev/controller',
    reportingInstance: 'ingress-ts-0',
    action: 'Sync',
    reason: 'Sync',
    type: 'Normal',
    regarding: { kind: 'Ingress', namespace: 'default', name: 'web' },
    note: 'Scheduled for sync',
  };
  await events.createNamespacedEvent({ namespace: 'default', body });
  t.equal(fake.requests.at(-1)?.path, '/apis/events.k8s.io/v1/namespaces/default/events');
  t.match(
    await failure(
      events.createNamespacedEvent({ namespace: 'default', body: { ...body, eventTime: new Date() } }),
    ),
    { code: 400 },
    'eventTime is a MicroTime too',
  );
  t.match(
    await failure(events.createNamespacedEvent({ namespace: 'default', body: { ...body, type: 'Info' } })),
    { code: 422, message: /type/ },
  );
  t.equal(fake.list('Event').length, 1, 'one core event');
  t.equal(fake.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }).length, 1, 'one events.k8s.io event');
});

t.test('label and field selectors on lists', async (t) => {
  const { fake, core } = await cluster(t, {
    objects: [
      service('a', { app: 'web', tier: 'front' }),
      service('b', { app: 'web', tier: 'back' }),
      service('c', { app: 'db' }),
      service('d', {}),
      service('e', { app: 'web' }, 'other'),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tls' }, type: 'kubernetes.io/tls' },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'plain' }, type: 'Opaque' },
    ],
  });
  const names = async (labelSelector?: string, fieldSelector?: string) =>
    (await core.listNamespacedService({ namespace: 'default', labelSelector, fieldSelector })).items.map(
      (s) => s.metadata?.name,
    );
  t.same(await names('app=web'), ['a', 'b']);
  t.same(await names('app==web'), ['a', 'b']);
  t.same(await names('app!=web'), ['c', 'd'], '!= also matches a missing label');
  t.same(await names('tier in (front, back)'), ['a', 'b']);
  t.same(await names('tier notin (front)'), ['b', 'c', 'd']);
  t.same(await names('tier'), ['a', 'b']);
  t.same(await names('!tier'), ['c', 'd']);
  t.same(await names('app=web,tier=back'), ['b']);
  t.same(await names('app in (web,db),!tier'), ['c']);
  t.same(await names(undefined, 'metadata.name=a'), ['a']);
  t.same(await names(undefined, 'metadata.name!=a'), ['b', 'c', 'd']);
  t.same(await names('app=web', 'metadata.name!=a'), ['b']);
  t.equal(fake.requests.at(-1)?.query.labelSelector, 'app=web', 'the query is decoded');
  const everywhere = await core.listServiceForAllNamespaces({ fieldSelector: 'metadata.namespace=other' });
  t.same(
    everywhere.items.map((s) => s.metadata?.name),
    ['e'],
  );
  const secrets = await core.listSecretForAllNamespaces({ fieldSelector: 'type=kubernetes.io/tls' });
  t.same(
    secrets.items.map((s) => s.metadata?.name),
    ['tls'],
  );
  t.match(await failure(names(undefined, 'spec.type=ClusterIP')), {
    code: 400,
    message: 'field label not supported: spec.type',
  });
  t.same(await names('app='), [], 'an empty value is valid and matches no labelled service here');
  t.match(await failure(names('app=web=x')), { code: 400, reason: 'BadRequest' }, 'an unparsable selector');
});

// ---------------------------------------------------------------------------------------------
// Watches and informers

t.test('the watch wire format: flushed header, one JSON event per line, replay, bookmarks', async (t) => {
  const { fake, kc } = await cluster(t, { objects: [ingress('a'), ingress('b'), ingress('x', {}, 'other')] });
  const seen: Array<[string, string, string | undefined]> = [];
  let notify = () => {};
  const got = (n: number) =>
    new Promise<void>((resolve) => {
      notify = () => {
        if (seen.length >= n) resolve();
      };
      notify();
    });
  const watch = new k8s.Watch(kc);
  // watch() resolves only once the response header has arrived: the fake flushes it at once.
  const request = await watch.watch(
    '/apis/networking.k8s.io/v1/namespaces/default/ingresses',
    { resourceVersion: '0', allowWatchBookmarks: true, fieldSelector: 'metadata.name!=b' },
    (type, obj: KubeObject) => {
      seen.push([type, obj.metadata?.name ?? '', obj.metadata?.resourceVersion]);
      notify();
    },
    () => {},
  );
  t.teardown(() => request.abort());
  await got(1);
  t.same(seen, [['ADDED', 'a', '1']], 'RV 0: synthetic ADDED for the current objects that match');
  const record = fake.requests.find((r) => r.verb === 'watch');
  t.match(record, { namespace: 'default', query: { watch: 'true', resourceVersion: '0' }, status: 200 });

  const modified = fake.apply(ingress('a', { spec: { rules: [] } }));
  fake.apply(ingress('b', { spec: { rules: [] } })); // filtered out by the field selector
  fake.apply(ingress('x', { spec: { rules: [] } }, 'other')); // another namespace
  const removed = fake.remove({ kind: 'Ingress', name: 'a' });
  fake.bookmark();
  await got(4);
  t.same(seen.slice(1), [
    ['MODIFIED', 'a', modified.metadata?.resourceVersion],
    ['DELETED', 'a', removed?.metadata?.resourceVersion],
    ['BOOKMARK', '', fake.resourceVersion],
  ]);
  t.not(
    removed?.metadata?.resourceVersion,
    modified.metadata?.resourceVersion,
    'DELETED carries the delete RV',
  );
  t.equal(fake.openWatches('Ingress'), 1);

  // From an RV: the retained history after it, filtered the same way.
  const replayed: string[] = [];
  const done = new Promise<unknown>((resolve) => {
    void watch.watch(
      '/apis/networking.k8s.io/v1/ingresses',
      { resourceVersion: modified.metadata?.resourceVersion, timeoutSeconds: 1 },
      (type, obj: KubeObject) => replayed.push(`${type} ${obj.metadata?.name}`),
      resolve,
    );
  });
  t.equal(await done, null, 'timeoutSeconds ends the stream cleanly (done(null))');
  t.same(replayed, ['MODIFIED b', 'MODIFIED x', 'DELETED a']);
});

t.test('an informer lists, then watches from the list RV: add, update, delete', async (t) => {
  const c = await cluster(t, { objects: [ingress('a'), ingress('b', {}, 'other')] });
  const informer = ingressInformer(c);
  const { log, next, texts } = watchInformer(t, informer);
  await informer.start();
  await next('add other/b');
  const list = c.fake.requests.find((r) => r.verb === 'list');
  const watch = c.fake.requests.find((r) => r.verb === 'watch');
  t.match(list, { path: '/apis/networking.k8s.io/v1/ingresses', query: {} }, 'the list has no RV');
  t.same(watch?.query, { watch: 'true', resourceVersion: '2' }, 'the watch starts at the list RV');
  t.equal(log[0]?.what, 'connect');
  const listed = log[1]?.obj as k8s.V1Ingress;
  t.equal(listed.kind, undefined, 'list-sourced objects: no kind ...');
  t.ok(listed.metadata?.creationTimestamp instanceof Date, '... and Date timestamps');

  const from = log.length;
  c.fake.apply(ingress('c'));
  const added = await next('add default/c', from);
  t.equal((added.obj as KubeObject).kind, 'Ingress', 'watch-sourced objects: raw JSON with kind ...');
  t.equal(typeof added.obj?.metadata?.creationTimestamp, 'string', '... and string timestamps');
  c.fake.apply(ingress('a', { spec: { ingressClassName: 'y' } }));
  const updated = await next('update default/a', from);
  t.equal(updated.obj?.metadata?.generation, 2);
  c.fake.remove({ kind: 'Ingress', namespace: 'other', name: 'b' });
  await next('delete other/b', from);
  t.same(texts(from), ['add default/c@3', 'update default/a@4', 'delete other/b@5']);
  t.same(
    informer
      .list()
      .map((i) => i.metadata?.name)
      .sort(),
    ['a', 'c'],
  );
  t.equal(c.fake.count({ verb: 'list' }), 1, 'no relist');
});

t.test(
  'labelSelector: given to the list function and the informer; transitions are add/delete',
  async (t) => {
    const c = await cluster(t, { objects: [service('in', { app: 'web' }), service('out', { app: 'db' })] });
    const informer = k8s.makeInformer(
      c.kc,
      '/api/v1/namespaces/default/services',
      () => c.core.listNamespacedService({ namespace: 'default', labelSelector: 'app=web' }),
      'app=web',
    );
    const { log, next, texts } = watchInformer(t, informer);
    await informer.start();
    await next('add default/in');
    t.match(c.fake.requests.find((r) => r.verb === 'watch')?.query, { labelSelector: 'app=web' });
    const from = log.length;
    c.fake.apply(service('out', { app: 'web' }));
    await next('add default/out', from);
    c.fake.apply(service('in', { app: 'db' }));
    const left = await next('delete default/in', from);
    t.same(
      left.obj?.metadata?.labels,
      { app: 'web' },
      'a DELETED for leaving the selection carries the old content',
    );
    c.fake.apply(service('other', { app: 'web' }, 'elsewhere'));
    c.fake.apply(service('out', { app: 'web', v: '2' }));
    await next('update default/out', from);
    t.same(texts(from), ['add default/out@3', 'delete default/in@4', 'update default/out@6']);
  },
);

t.test(
  'the informer stops after a watch 500 and after a cut watch; start() resumes without a relist',
  async (t) => {
    const c = await cluster(t, { objects: [ingress('a')] });
    const informer = ingressInformer(c);
    const { log, next } = watchInformer(t, informer);
    await informer.start();
    await next('add default/a');

    // A clean end makes the client re-watch at once; that watch gets a 500.
    c.fake.failNext({ verb: 'watch' }, { status: 500 });
    let from = log.length;
    await c.fake.endWatches();
    const failed = await next('error', from);
    t.equal(failed.err?.statusCode, 500, 'the error carries statusCode');
    t.equal(c.fake.openWatches(), 0, 'and the informer does not retry');
    t.equal(c.fake.requests.at(-1)?.status, 500);

    from = log.length;
    const rewatch = c.fake.waitForRequest({ verb: 'watch' });
    c.fake.apply(ingress('b'));
    await informer.start();
    t.equal((await rewatch).query.resourceVersion, '1', 'start() resumes from the last RV');
    await next('add default/b', from);

    from = log.length;
    c.fake.cutWatches();
    const cut = await next('error', from);
    t.equal(cut.err?.message, 'terminated', 'a reset socket is undici "terminated"');
    t.equal(c.fake.openWatches(), 0);
    const resumed = c.fake.waitForRequest({ verb: 'watch' });
    await informer.start();
    t.equal((await resumed).query.resourceVersion, '2');
    t.equal(c.fake.count({ verb: 'list' }), 1, 'no relist after either error');
  },
);

t.test('410: an ERROR event or an HTTP 410 on the watch makes the informer relist', async (t) => {
  const c = await cluster(t, { objects: [ingress('a'), ingress('b')] });
  const informer = ingressInformer(c);
  const { log, next, texts } = watchInformer(t, informer);
  await informer.start();
  await next('add default/b');

  // While the informer is down, b goes away, c arrives and the history is compacted.
  c.fake.cutWatches();
  await next('error terminated');
  c.fake.remove({ kind: 'Ingress', name: 'b' });
  c.fake.apply(ingress('c'));
  c.fake.compact();
  const from = log.length;
  const relist = c.fake.waitForRequest({ verb: 'list' });
  const rewatch = c.fake.waitForRequest((r) => r.verb === 'watch' && r.query.resourceVersion === '4');
  await informer.start();
  await relist;
  await next('add default/c', from);
  await rewatch;
  t.same(
    texts(from),
    ['delete default/b@2', 'add default/c@4'],
    'the delete carries the stale cached object',
  );
  const watches = c.fake.requests.filter((r) => r.verb === 'watch');
  t.same(
    watches.map((r) => r.query.resourceVersion),
    ['2', '2', '4'],
    'the watch from the compacted RV, then one from the relist RV',
  );
  t.equal(c.fake.count({ verb: 'list' }), 2);

  // The HTTP status form (FakeApiServerOptions.expiredWatch: 'status' does the same for every expiry).
  // An event first: a re-watch with no event since the previous one waits 1 s, 2 s, ... (client backoff).
  c.fake.apply(ingress('d'));
  await next('add default/d', from);
  c.fake.failNext({ verb: 'watch' }, { status: 410 });
  const second = c.fake.waitForRequest({ verb: 'list' });
  await c.fake.endWatches();
  await second;
  t.equal(c.fake.count({ verb: 'list' }), 3, 'HTTP 410 relists too');
});

t.test('expiredWatch "status" and the maxHistory window', async (t) => {
  const c = await cluster(t, { expiredWatch: 'status', maxHistory: 2 });
  for (const name of ['a', 'b', 'c', 'd']) c.fake.apply(ingress(name)); // RVs 1-4; the window keeps 3 and 4
  const watch = new k8s.Watch(c.kc);
  const path = '/apis/networking.k8s.io/v1/ingresses';
  const expired = await new Promise<{ statusCode?: number } | null>((resolve) => {
    void watch.watch(path, { resourceVersion: '1' }, () => {}, resolve);
  });
  t.match(expired, { statusCode: 410 }, 'RV 1 is older than the window: an HTTP 410');

  const events: string[] = [];
  let done: (err: unknown) => void = () => {};
  const ended = new Promise((resolve) => {
    done = resolve;
  });
  await watch.watch(
    path,
    { resourceVersion: '2' },
    (type, obj: KubeObject) => events.push(`${type} ${obj.metadata?.name}`),
    done,
  );
  await c.fake.endWatches();
  t.equal(await ended, null, 'endWatches() is a clean end: done(null)');
  t.same(events, ['ADDED c', 'ADDED d'], 'RV 2 is inside the window: its history is replayed');
});

t.test('a server-side watch timeout is a clean end: the informer re-watches from its RV', async (t) => {
  const c = await cluster(t, { watchTimeoutMs: 50, objects: [ingress('a')] });
  const informer = ingressInformer(c);
  const { log, next } = watchInformer(t, informer);
  const first = c.fake.waitForRequest({ verb: 'watch' });
  await informer.start();
  await first;
  const second = await c.fake.waitForRequest({ verb: 'watch' });
  t.equal(second.query.resourceVersion, '1', 'the same RV');
  t.equal(c.fake.count({ verb: 'list' }), 1, 'no relist');
  t.notOk(
    log.some((s) => s.what === 'error'),
    'no error callback',
  );
  await next('connect', 2); // a connect per cycle
  await informer.stop(); // before the next end, whose re-watch would wait 1 s (backoff)
});

t.test('client quirk: stop() during the reconnect backoff does not cancel the pending watch', async (t) => {
  const c = await cluster(t, { objects: [ingress('a')] });
  // ListWatch (what makeInformer builds) with a controllable backoff sleep instead of timers.
  let sleeping: (ms: number) => void = () => {};
  const slept = new Promise<number>((resolve) => {
    sleeping = resolve;
  });
  let wake: () => void = () => {};
  const informer = new k8s.ListWatch(
    '/apis/networking.k8s.io/v1/ingresses',
    new k8s.Watch(c.kc),
    () => c.net.listIngressForAllNamespaces(),
    false,
    undefined,
    undefined,
    {
      delayFn: (ms) => {
        sleeping(ms);
        return new Promise<void>((resolve) => {
          wake = resolve;
        });
      },
    },
  );
  const { next } = watchInformer(t, informer);
  await informer.start();
  await next('add default/a');
  const immediate = c.fake.waitForRequest({ verb: 'watch' });
  await c.fake.endWatches(); // the first re-watch after the start is immediate ...
  await immediate;
  await c.fake.endWatches(); // ... the next one, with no event in between, sleeps first
  t.equal(await slept, 1000, 'the backoff starts at 1 s');
  await informer.stop();
  const late = c.fake.waitForRequest({ verb: 'watch' });
  wake();
  await late;
  t.equal(c.fake.openWatches(), 1, 'a stopped ListWatch is watching again');
  await informer.stop(); // this one aborts it
});

t.test('failNext: list faults reach typed calls and stop an informer', async (t) => {
  const c = await cluster(t, { objects: [ingress('a')] });
  c.fake.failNext({ verb: 'list', resource: 'ingresses' }, { status: 429, count: 2 });
  const throttled = await failure(c.net.listIngressForAllNamespaces());
  t.match(throttled, { code: 429, reason: 'TooManyRequests' });
  t.equal(c.fake.requests.at(-1)?.status, 429);

  const informer = ingressInformer(c);
  const { next } = watchInformer(t, informer);
  await informer.start();
  const failed = await next('error');
  t.equal(
    (failed.err as { code?: number }).code,
    429,
    'a failed list is an ApiException in the error callback',
  );
  t.equal(c.fake.count({ verb: 'watch' }), 0, 'and the informer stays stopped');

  await informer.start();
  await next('add default/a');
  t.equal(c.fake.count({ verb: 'list', resource: 'ingresses' }), 3, 'the fault was used up');

  c.fake.failNext((r) => r.method === 'GET' && r.name === 'a', { status: 403, message: 'no' });
  t.match(await failure(c.net.readNamespacedIngress({ namespace: 'default', name: 'a' })), {
    code: 403,
    reason: 'Forbidden',
    message: 'no',
  });
});

t.test('stop() makes the server unreachable; restart() serves the same state on the same port', async (t) => {
  const c = await cluster(t, { objects: [ingress('a')] });
  const informer = ingressInformer(c);
  const { log, next } = watchInformer(t, informer);
  await informer.start();
  await next('add default/a');
  const port = c.fake.port;

  await c.fake.stop();
  await next('error terminated');
  t.equal(c.fake.openConnections, 0);
  const refused = await c.net.listIngressForAllNamespaces().then(
    () => undefined,
    (err: { cause?: { code?: string } }) => err,
  );
  t.equal(refused?.cause?.code, 'ECONNREFUSED', 'connection refused while stopped');
  c.fake.apply(ingress('b')); // the store still works in-process

  await c.fake.restart();
  t.equal(c.fake.port, port);
  const from = log.length;
  await informer.start();
  await next('add default/b', from);
  t.equal(c.fake.count({ verb: 'list' }), 1, 'resumed from the RV, no relist');
});

t.test('kubeconfig file, bearer token, a new TCP connection per request', async (t) => {
  const { fake } = await cluster(t, { token: 's3cret' });
  const file = await fake.writeKubeconfig();
  t.match(await readFile(file, 'utf8'), /insecure-skip-tls-verify: true/);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  t.equal(kc.getCurrentCluster()?.server, fake.url);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const before = fake.connectionCount;
  for (let i = 0; i < 3; i++) await core.listNamespacedConfigMap({ namespace: 'default' });
  t.equal(
    fake.connectionCount - before,
    3,
    'client-node opens one connection per call (an Agent per request)',
  );
  t.equal(fake.requests.at(-1)?.headers.authorization, 'Bearer s3cret');
  t.match(fake.requests.at(-1)?.headers['user-agent'], /^kubernetes-client-javascript/);

  const wrong = new k8s.KubeConfig();
  wrong.loadFromOptions({
    clusters: [{ name: 'c', server: fake.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'wrong' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const denied = await wrong
    .makeApiClient(k8s.CoreV1Api)
    .listNamespacedConfigMap({ namespace: 'default' })
    .catch((err: k8s.ApiException<unknown>) => err);
  t.equal((denied as k8s.ApiException<unknown>).code, 401);
  await fake.close();
  await t.rejects(readFile(file), 'close() removes the kubeconfig file');
});

t.test('unknown paths and methods get a Status, always as application/json', async (t) => {
  const { fake } = await cluster(t);
  const call = async (method: string, path: string, body?: string, contentType = 'application/json') => {
    const res = await fetch(`${fake.url}${path}`, { method, body, headers: { 'content-type': contentType } });
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      body: (await res.json()) as KubeObject,
    };
  };
  t.match(await call('GET', '/apis/example.com/v1/widgets'), {
    status: 404,
    type: 'application/json',
    body: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 },
  });
  t.match(
    await call('GET', '/api/v1/namespaces/default/configmaps/c/status'),
    { status: 404 },
    'no status here',
  );
  t.match(await call('GET', '/api/v1/services/x'), { status: 404 }, 'a namespaced name needs its namespace');
  t.match(await call('POST', '/api/v1/services', '{}'), {
    status: 405,
    body: { reason: 'MethodNotAllowed' },
  });
  t.match(await call('DELETE', '/api/v1/namespaces/default/services'), { status: 405 });
  t.match(await call('POST', '/api/v1/namespaces/default/configmaps', '{'), {
    status: 400,
    body: { reason: 'BadRequest' },
  });
  t.match(await call('POST', '/api/v1/namespaces/default/configmaps', '{}', 'text/plain'), { status: 415 });
  t.match(
    await call('POST', '/api/v1/namespaces/default/configmaps', '{"kind":"Secret","metadata":{"name":"s"}}'),
    { status: 400 },
    'a body of another kind',
  );
  t.match(
    await call(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      '{"metadata":{"name":"s","resourceVersion":"7"}}',
    ),
    { status: 500, body: { message: 'resourceVersion should not be set on objects to be created' } },
  );
  t.match(await call('POST', '/api/v1/namespaces/default/configmaps', '{"metadata":{}}'), {
    status: 422,
    body: { reason: 'Invalid' },
  });
  t.match(await call('GET', '/api/v1/configmaps?watch=true&resourceVersion=abc'), { status: 400 });
  t.match(await call('GET', '/api/v1/configmaps?labelSelector=a%20b'), { status: 400 });
});

t.test('finalizers: DELETE only marks, removing the last finalizer completes it', async (t) => {
  const { fake, core } = await cluster(t, {
    objects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', finalizers: ['x/y'] } }],
  });
  await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'c' });
  const marked = fake.get({ kind: 'ConfigMap', name: 'c' });
  t.ok(marked?.metadata?.deletionTimestamp, 'deletionTimestamp set, still stored');
  await core.patchNamespacedConfigMap(
    { namespace: 'default', name: 'c', body: { metadata: { finalizers: null } } },
    MERGE,
  );
  t.equal(fake.get({ kind: 'ConfigMap', name: 'c' }), undefined, 'gone');
});

t.test('close() ends watches cleanly, drops every connection and leaves no server handle', async (t) => {
  const servers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;
  const baseline = servers();
  const c = await cluster(t, { objects: [ingress('a')] });
  t.equal(servers(), baseline + 1);
  const informer = ingressInformer(c);
  const { next } = watchInformer(t, informer);
  await informer.start();
  await next('add default/a');
  t.equal(c.fake.openWatches(), 1);
  t.ok(c.fake.openConnections >= 1);

  const started = performance.now();
  await c.fake.close();
  t.ok(performance.now() - started < 1000, 'promptly');
  t.equal(c.fake.openConnections, 0);
  t.equal(c.fake.openWatches(), 0);
  t.equal(servers(), baseline, 'the listening handle is gone');
  // The clean end made the informer re-watch at once, into a closed port.
  const refused = await next('error');
  t.equal(refused.err?.cause?.code, 'ECONNREFUSED');
  await c.fake.close(); // idempotent
});

t.test('RBAC rules: resourceNames allow get, list and watch of that name only, never create', async (t) => {
  const { fake, core, kc } = await cluster(t, {
    objects: [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'mine', namespace: 'ingress' } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'other', namespace: 'ingress' } },
    ],
    rbac: [
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['mine'],
        verbs: ['get', 'list', 'watch'],
        namespaces: ['ingress'],
      },
    ],
  });
  const status = (promise: Promise<unknown>) =>
    promise.then(
      () => 200,
      (error: { code?: number }) => error.code,
    );
  t.equal(await status(core.readNamespacedSecret({ name: 'mine', namespace: 'ingress' })), 200);
  t.equal(await status(core.readNamespacedSecret({ name: 'other', namespace: 'ingress' })), 403);
  // a list or watch with an exact metadata.name selector is judged by that name, as the API server's
  // RequestInfo does; without one it is a list of every name
  const mine = await core.listNamespacedSecret({ namespace: 'ingress', fieldSelector: 'metadata.name=mine' });
  t.same(
    mine.items.map((s) => s.metadata?.name),
    ['mine'],
  );
  t.equal(await status(core.listNamespacedSecret({ namespace: 'ingress' })), 403);
  t.equal(
    await status(core.listNamespacedSecret({ namespace: 'ingress', fieldSelector: 'metadata.name=other' })),
    403,
  );
  t.equal(
    await status(core.listNamespacedSecret({ namespace: 'elsewhere', fieldSelector: 'metadata.name=mine' })),
    403,
  );
  const watched = new Promise<string>((resolve, reject) => {
    void new k8s.Watch(kc).watch(
      '/api/v1/namespaces/ingress/secrets',
      { fieldSelector: 'metadata.name=mine' },
      (_type, object: KubeObject) => resolve(object.metadata?.name ?? ''),
      reject,
    );
  });
  t.equal(await watched, 'mine', 'the watch by name is allowed');
  const denied = await status(
    core.createNamespacedSecret({ namespace: 'ingress', body: { metadata: { name: 'mine2' } } }),
  );
  t.equal(denied, 403, 'a create has no name to match resourceNames');
  t.match(fake.requests.at(-1), { verb: 'create', status: 403 });
  fake.rbac = undefined;
  t.equal(await status(core.listNamespacedSecret({ namespace: 'ingress' })), 200, 'no rules: all allowed');
});
