// How DataPlaneThreads applies a change: every thread is sent the delta over the model it serves
// (the whole model only when it serves another, e.g. a replacement), rebuilds exactly the model the
// controller built, updates endpoints in place as with one thread, and swaps only once every thread
// has prepared: a compile that fails in one thread leaves all of them on the previous model, and
// apply rejects once with that thread's error.
import t, { type Test } from 'tap';
import { type AppliedChange, createApplier } from '../../../lib/controller/apply.ts';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { DataPlaneThreads } from '../../../lib/dataplane/worker/pool.ts';
import { createBuildCaches, type Model, type Snapshot } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice, snapshotOf } from '../../model/helpers.ts';
import { echoBackend, send } from '../../support/echo.ts';
import { listen } from '../../support/http.ts';

// six pools of two threads, each started and stopped: tap's 30 s default is too short on a busy machine
t.setTimeout(120_000);
const generatedDefaultCertificate = await generateDefaultCertificate();

/** One Ingress per host, all to the echo backend; `addresses` are the backend's endpoints. */
function world(backendPort: number, hosts: string[], addresses = ['127.0.0.1']) {
  return {
    ingresses: hosts.map((host, i) =>
      ingress(`site-${host}`, { created: i, rules: [rule(host, path('/', 'web:80'))] }),
    ),
    services: [service('web', [{ port: 80, targetPort: backendPort }])],
    slices: [slice('web', [{ addresses }], [{ port: backendPort }])],
  };
}

function model(backendPort: number, hosts: string[], addresses = ['127.0.0.1']): Model {
  return build(world(backendPort, hosts, addresses)).model;
}

async function threads(t: Test, fullModels = false) {
  const backend = echoBackend('web');
  const backendPort = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  const pool = new DataPlaneThreads({
    threads: 2,
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate,
    fullModels,
  });
  t.teardown(() => pool.close());
  await pool.apply(model(backendPort, ['a.test']));
  const { http } = await pool.listen();
  return { pool, port: http.port, backendPort };
}

/** `n` requests on connections of their own (spread over both threads): their statuses. */
async function statuses(port: number, host: string, n = 16): Promise<number[]> {
  const replies = await Promise.all(Array.from({ length: n }, () => send(port, host, '/')));
  return replies.map((reply) => reply.status);
}

t.test('each thread gets a delta and holds exactly the model that was built', async (t) => {
  const { pool, backendPort } = await threads(t);
  t.strictSame(
    pool.lastApply?.threads.map((thread) => thread.payload),
    ['full', 'full'],
    'the first model: whole',
  );
  const hosts = ['a.test'];
  for (let i = 0; i < 6; i++) {
    hosts.push(`h${i}.test`);
    const next = model(backendPort, hosts);
    await pool.apply(next);
    const record = pool.lastApply;
    t.strictSame(
      record?.threads.map((thread) => thread.payload),
      ['delta', 'delta'],
      `change ${i}: deltas`,
    );
    t.ok((record?.deltaBytes ?? Infinity) < 4096, `change ${i}: a small delta (${record?.deltaBytes} bytes)`);
    t.equal(record?.fullBytes, null, 'the whole model was not even serialised');
    const [one, two] = await pool.servingModels();
    t.strictSame(one, next, `change ${i}: the first thread holds the built model`);
    t.strictSame(two, next, `change ${i}: so does the second`);
  }
});

t.test('a replacement thread gets the whole model, then deltas, and holds the same models', async (t) => {
  const { pool, port, backendPort } = await threads(t);
  const first = pool.workers[0];
  await pool.apply(model(backendPort, ['a.test', 'b.test']));
  await first?.terminate();
  await pool.settled();
  t.not(pool.workers[0], first, 'replaced');
  const next = model(backendPort, ['a.test', 'b.test', 'c.test']);
  await pool.apply(next);
  t.strictSame(
    pool.lastApply?.threads.map((thread) => thread.payload),
    ['delta', 'delta'],
    'the replacement started on the whole model and takes deltas since',
  );
  const [one, two] = await pool.servingModels();
  t.strictSame(one, next);
  t.strictSame(two, next);
  t.strictSame(await statuses(port, 'c.test'), Array(16).fill(200), 'both serve the new host');
});

t.test('an endpoints-only change: a delta of that upstream, balancers updated in place', async (t) => {
  const { pool, backendPort } = await threads(t);
  const moved = model(backendPort, ['a.test'], ['127.0.0.1', '127.0.0.2']);
  const swap = await pool.apply(moved);
  t.equal(swap.kind, 'endpoints');
  const record = pool.lastApply;
  t.strictSame(
    record?.threads.map((thread) => thread.payload),
    ['delta', 'delta'],
  );
  t.strictSame(await pool.servingModels(), [moved, moved]);
  t.strictSame(
    pool.threads.map((thread) => thread.hash),
    [moved.hash, moved.hash],
  );
});

t.test('a compile that fails in one thread: no thread swaps, apply rejects once', async (t) => {
  const { pool, port, backendPort } = await threads(t);
  const before = model(backendPort, ['a.test']);
  const next = model(backendPort, ['a.test', 'new.test']);
  t.strictSame(await statuses(port, 'new.test'), Array(16).fill(404), 'not routed yet');
  await pool.failNextPrepare(1, 'compile failed in thread 1');
  await t.rejects(pool.apply(next), { message: 'compile failed in thread 1' });
  t.strictSame(await statuses(port, 'new.test'), Array(16).fill(404), 'no thread serves the new model');
  t.strictSame(await pool.servingModels(), [before, before], 'both serve the previous model');
  t.strictSame(
    pool.threads.map((thread) => thread.hash),
    [before.hash, before.hash],
  );
  // the next apply starts from the model both still serve: deltas again
  await pool.apply(next);
  t.strictSame(
    pool.lastApply?.threads.map((thread) => thread.payload),
    ['delta', 'delta'],
  );
  t.strictSame(await statuses(port, 'new.test'), Array(16).fill(200), 'then both serve it');
  t.strictSame(await pool.servingModels(), [next, next]);
});

t.test('the controller sees one failed apply and keeps the previous model as applied', async (t) => {
  const { pool, backendPort } = await threads(t);
  let snapshot: Snapshot = snapshotOf(world(backendPort, ['a.test']));
  const applied: AppliedChange[] = [];
  const applier = createApplier({
    handle: pool,
    modelOptions: {},
    caches: createBuildCaches(),
    snapshot: () => snapshot,
    onApplied: (change) => applied.push(change),
  });
  await applier.run();
  const before = applier.latest().model;
  snapshot = snapshotOf(world(backendPort, ['a.test', 'new.test']));
  await pool.failNextPrepare(0, 'compile failed in thread 0');
  await t.rejects(applier.run(), { message: 'compile failed in thread 0' });
  t.equal(applied.length, 1, 'the failed change is not reported as applied (the reload counts as failed)');
  t.equal(applier.latest().model, before, 'the previous model is still the applied one');
  await applier.run();
  t.equal(applied.length, 2, 'the next run applies it');
});

t.test(
  'fullModels: every thread is sent the whole model (the former protocol, for benchmarks)',
  async (t) => {
    const { pool, backendPort } = await threads(t, true);
    const next = model(backendPort, ['a.test', 'b.test']);
    await pool.apply(next);
    t.strictSame(
      pool.lastApply?.threads.map((thread) => thread.payload),
      ['full', 'full'],
    );
    t.equal(pool.lastApply?.posted, 2 * (pool.lastApply?.fullBytes ?? 0), 'serialised once, copied to each');
    t.strictSame(await pool.servingModels(), [next, next]);
  },
);
