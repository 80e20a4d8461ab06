// The resilient informer against the fake API server: first list, live events, and recovery from
// everything that leaves client-node's own informer stopped (a reset watch, a 500, a failed list, an
// unreachable server), plus 410 → relist, and a stop() that really stops.
import type { KubernetesObject } from '@kubernetes/client-node';
import t from 'tap';
import { backoffDelay, createInformer, type ResilientInformer } from '../../lib/source/kube/informer.ts';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver.ts';

const SERVICES = '/api/v1/services';
const FAST = { initialMs: 10, maxMs: 100 };

const service = (name: string, port = 80, namespace = 'web') => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ port }] },
});

type Event = { type: 'upsert' | 'delete'; name: string; port: number | undefined };

/** An informer on Services recording its events; next(...) awaits one matching event. */
function watchServices(api: FakeApiServer, t: { teardown(fn: () => unknown): void }) {
  const events: Event[] = [];
  let connects = 0;
  let onConnect: () => void = () => {};
  const errors: unknown[] = [];
  let waiters: Array<{ match: (e: Event) => boolean; resolve: (e: Event) => void }> = [];
  const record = (type: Event['type']) => (object: KubernetesObject) => {
    const spec = (object as { spec?: { ports?: Array<{ port?: number }> } }).spec;
    const event = { type, name: object.metadata?.name ?? '', port: spec?.ports?.[0]?.port };
    events.push(event);
    for (const waiter of waiters.filter((w) => w.match(event))) waiter.resolve(event);
    waiters = waiters.filter((w) => !w.match(event));
  };
  const informer: ResilientInformer = createInformer({
    kind: 'Service',
    path: SERVICES,
    kubeConfig: api.kubeConfig(),
    onUpsert: record('upsert'),
    onDelete: record('delete'),
    onError: (error) => errors.push(error),
    onConnect: () => {
      connects++;
      onConnect();
    },
    backoff: FAST,
  });
  t.teardown(() => informer.stop());
  const next = (type: Event['type'], name: string, port?: number) =>
    new Promise<Event>((resolve) => {
      const match = (e: Event) =>
        e.type === type && e.name === name && (port === undefined || e.port === port);
      const seen = events.find(match);
      if (seen) resolve(seen);
      else waiters.push({ match, resolve });
    });
  /** resolves at the client's next (re)connect cycle */
  const nextConnect = () =>
    new Promise<number>((resolve) => {
      onConnect = () => resolve(connects);
    });
  return { informer, events, errors, next, nextConnect };
}

async function fakeApi(t: { teardown(fn: () => unknown): void }): Promise<FakeApiServer> {
  const api = await startFakeApiServer({ objects: [service('a'), service('b')] });
  t.teardown(() => api.close());
  return api;
}

t.test('start() resolves once the first list is delivered; then live events flow', async (t) => {
  const api = await fakeApi(t);
  const { informer, events, next } = watchServices(api, t);
  await informer.start();
  t.ok(informer.synced);
  t.same(
    events.map((e) => `${e.type} ${e.name}`),
    ['upsert a', 'upsert b'],
    'the list, before start() resolved',
  );
  api.apply(service('c'));
  await next('upsert', 'c');
  api.apply(service('a', 81));
  await next('upsert', 'a', 81);
  api.remove({ kind: 'Service', namespace: 'web', name: 'b' });
  await next('delete', 'b');
  t.equal(informer.restarts, 0);
});

t.test('a reset watch stream (the client informer stops for good) is restarted', async (t) => {
  const api = await fakeApi(t);
  const { informer, errors, next } = watchServices(api, t);
  await informer.start();
  const rewatch = api.waitForRequest({ verb: 'watch', resource: 'services' });
  api.cutWatches();
  await rewatch;
  api.apply(service('after-cut'));
  await next('upsert', 'after-cut');
  t.equal(informer.restarts, 1);
  t.equal(errors.length, 1, 'the error was reported');
  t.equal(
    api.count({ verb: 'list', resource: 'services' }),
    1,
    'resumed from its resourceVersion, no relist',
  );
});

t.test('a 500 and a 429 on the watch, then a refused connection: retried until it works', async (t) => {
  const api = await fakeApi(t);
  const { informer, next } = watchServices(api, t);
  await informer.start();
  api.failNext({ verb: 'watch', resource: 'services' }, { status: 500 });
  api.failNext({ verb: 'watch', resource: 'services' }, { status: 429 });
  api.cutWatches();
  api.apply(service('after-faults'));
  await next('upsert', 'after-faults');
  t.ok(informer.restarts >= 3, `restarted ${informer.restarts} times`);

  await api.stop(); // unreachable: connections refused
  api.apply(service('while-down', 82));
  api.remove({ kind: 'Service', namespace: 'web', name: 'a' });
  const reconnected = api.waitForRequest({ verb: 'watch', resource: 'services' }, 10_000);
  await api.restart();
  await reconnected;
  await next('upsert', 'while-down', 82);
  await next('delete', 'a');
  t.pass('converged after the API came back');
});

t.test('a resourceVersion too old for the server: 410, relist, deletions reported', async (t) => {
  const api = await fakeApi(t);
  const { informer, next } = watchServices(api, t);
  await informer.start();
  await api.stop();
  api.remove({ kind: 'Service', namespace: 'web', name: 'b' });
  api.apply(service('new'));
  api.compact();
  const relisted = api.waitForRequest({ verb: 'list', resource: 'services' }, 10_000);
  await api.restart();
  await relisted;
  await next('delete', 'b');
  await next('upsert', 'new');
  t.equal(api.count({ verb: 'list', resource: 'services' }), 2);
});

t.test('a failing first list: start() waits for the list that succeeds', async (t) => {
  const api = await fakeApi(t);
  api.failNext({ verb: 'list', resource: 'services' }, { status: 500, count: 2 });
  const { informer, events, errors } = watchServices(api, t);
  await informer.start();
  t.ok(informer.synced);
  t.equal(informer.restarts, 2);
  t.equal(errors.length, 2);
  t.match(String(errors[0]), /HTTP 500/, 'the error says what the server answered');
  t.same(
    events.map((e) => e.name),
    ['a', 'b'],
  );
});

t.test('stop(): no restart, no more requests, and start() of a never-synced informer returns', async (t) => {
  const api = await fakeApi(t);
  const { informer, errors } = watchServices(api, t);
  await informer.start();
  await informer.stop();
  const requests = api.requests.length;
  api.cutWatches();
  api.apply(service('ignored'));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(api.requests.length, requests, 'nothing more asked of the server');
  t.equal(errors.length, 0, 'the AbortError of stop() is not an error');
  t.equal(api.openWatches(), 0);

  // an informer that can never list: stop() releases its start()
  api.failNext({ verb: 'list', resource: 'services' }, { status: 403, count: 1000 });
  const blocked = watchServices(api, t);
  const started = blocked.informer.start();
  await api.waitForRequest({ verb: 'list', resource: 'services' });
  await blocked.informer.stop();
  await started;
  t.notOk(blocked.informer.synced);
});

t.test("stop() during the client's own re-watch sleep: no watch afterwards", async (t) => {
  const api = await fakeApi(t);
  const { informer, nextConnect } = watchServices(api, t);
  await informer.start();
  // two clean ends without an event in between: the client sleeps 1 s before re-watching
  const rewatch = api.waitForRequest({ verb: 'watch', resource: 'services' });
  await api.endWatches();
  await rewatch;
  const sleeping = nextConnect(); // the connect event comes right before that sleep
  await api.endWatches();
  await sleeping;
  await informer.stop();
  // absence can only be shown by waiting past the client's 1 s sleep
  await t.rejects(api.waitForRequest({ verb: 'watch', resource: 'services' }, 1500), /no request matching/);
  t.equal(api.openWatches(), 0);
});

t.test('backoff: exponential, capped, with jitter in [half, full]', async (t) => {
  const backoff = { initialMs: 500, maxMs: 30_000 };
  t.equal(
    backoffDelay(0, backoff, () => 0),
    250,
  );
  t.equal(
    backoffDelay(0, backoff, () => 0.999999),
    500,
  );
  t.equal(
    backoffDelay(3, backoff, () => 0),
    2000,
  );
  t.equal(
    backoffDelay(10, backoff, () => 0),
    15_000,
    'capped at maxMs',
  );
  t.equal(
    backoffDelay(1000, backoff, () => 0.999999),
    30_000,
  );
});
