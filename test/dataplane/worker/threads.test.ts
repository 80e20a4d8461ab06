// Two data-plane worker threads behind one handle (DataPlaneThreads): both listen on the same ports
// and both serve, a swap is acknowledged by both before apply resolves, the counters and the
// forwarded request measures are exact sums, a stopped thread is replaced with the current model,
// and close drains the requests in flight in every thread.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import t, { type Test } from 'tap';
import { requestMeasured } from '../../../lib/dataplane/events.ts';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { DataPlaneThreads } from '../../../lib/dataplane/worker/pool.ts';
import type { Model } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../../model/helpers.ts';
import { echoBackend, send } from '../../support/echo.ts';
import { listen } from '../../support/http.ts';
import { untilRefused } from '../../support/listening.ts';

// each case starts two worker threads: ~20 s for the file on a loaded 2-core machine, near tap's 30 s
t.setTimeout(120_000);

const generatedDefaultCertificate = await generateDefaultCertificate();

function model(backendPort: number, hosts: string[], nginx: Record<string, string> = {}): Model {
  return build({
    ingresses: hosts.map((host, i) =>
      ingress(`site-${i}`, { created: i, nginx, rules: [rule(host, path('/', 'web:80'))] }),
    ),
    services: [service('web', [{ port: 80, targetPort: backendPort }])],
    slices: [slice('web', [{ addresses: ['127.0.0.1'] }], [{ port: backendPort }])],
  }).model;
}

async function threads(
  t: Test,
  backend: Server,
  first = (backendPort: number) => model(backendPort, ['one.test']),
) {
  const backendPort = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  const pool = new DataPlaneThreads({
    threads: 2,
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate,
  });
  t.teardown(() => pool.close());
  await pool.apply(first(backendPort));
  const { http } = await pool.listen();
  return { pool, port: http.port, backendPort };
}

/** `n` requests, each on a connection of its own, so the kernel spreads them over the threads. */
async function requests(port: number, host: string, n: number): Promise<number[]> {
  const replies = await Promise.all(Array.from({ length: n }, () => send(port, host, '/')));
  return replies.map((reply) => reply.status);
}

/** Requests each thread received so far, in thread order. */
async function perThread(pool: DataPlaneThreads): Promise<number[]> {
  await pool.flushed();
  return ((await pool.describe())?.threads ?? []).map((thread) => thread.requests);
}

t.test('both threads serve, and the counters and records are exact sums', async (t) => {
  const { pool, port } = await threads(t, echoBackend('web'));
  const records: unknown[] = [];
  const onRecord = (record: unknown) => records.push(record);
  subscribe(requestMeasured.name, onRecord);
  t.teardown(() => unsubscribe(requestMeasured.name, onRecord));

  const statuses = await requests(port, 'one.test', 40);
  t.strictSame(statuses, Array(40).fill(200), 'every request answered by the backend');
  const stats = await pool.flushed();
  t.equal(stats.requests, 40, 'requests: the sum over the threads');
  t.equal(stats.accepted, 40, 'connections: the sum over the threads');
  t.equal(stats.threads, 2);
  t.equal(records.length, 40, 'one measure per request, forwarded to this thread');
  const counts = await perThread(pool);
  t.equal(counts.length, 2, 'two threads described');
  t.ok(
    counts.every((n) => n > 0),
    `each thread served some (${counts.join(' + ')})`,
  );
  t.equal(
    counts.reduce((a, b) => a + b, 0),
    40,
  );
});

t.test('a swap is acknowledged by both threads before apply resolves', async (t) => {
  const { pool, port, backendPort } = await threads(t, echoBackend('web'));
  t.strictSame(await requests(port, 'two.test', 4), Array(4).fill(404), 'not routed yet');
  const next = model(backendPort, ['one.test', 'two.test']);
  const result = await pool.apply(next);
  // read at once, before any other message from the threads can arrive
  t.strictSame(
    pool.threads.map((thread) => thread.hash),
    [next.hash, next.hash],
    'both threads acknowledged the new model',
  );
  t.strictSame(result, { kind: 'full', hash: next.hash });
  const described = await pool.describe();
  t.strictSame(
    described?.threads?.map((thread) => thread.hash),
    [next.hash, next.hash],
    'both threads serve the new model',
  );
  t.equal(described?.hash, next.hash);
  const before = await perThread(pool);
  t.strictSame(await requests(port, 'two.test', 40), Array(40).fill(200), 'the new route everywhere');
  const after = await perThread(pool);
  t.ok(
    after.every((n, i) => n > (before[i] ?? 0)),
    'both threads served the new route',
  );
  t.strictSame(await pool.apply(next), { kind: 'unchanged', hash: next.hash });
});

t.test('a thread that stops is replaced with the current model; the other keeps serving', async (t) => {
  const { pool, port, backendPort } = await threads(t, echoBackend('web'));
  const current = model(backendPort, ['one.test', 'three.test']);
  await pool.apply(current);
  t.strictSame(await requests(port, 'three.test', 10), Array(10).fill(200));
  const served = (await pool.flushed()).requests;
  const [stopped, other] = pool.workers;
  const stoppedId = stopped?.threadId;
  await stopped?.terminate();
  // the other thread alone, while the first is being replaced
  t.equal((await send(port, 'three.test', '/')).status, 200, 'served meanwhile');
  await pool.settled();

  const stats = await pool.flushed();
  t.equal(stats.threadRestarts, 1, 'the replacement is counted');
  t.equal(stats.requests, served + 1, 'the stopped thread’s requests stay counted');
  const described = await pool.describe();
  const ids = described?.threads?.map((thread) => thread.threadId) ?? [];
  t.not(ids[0], stoppedId, 'a new thread in the first slot');
  t.equal(ids[1], other?.threadId, 'the other thread kept');
  t.strictSame(
    described?.threads?.map((thread) => thread.hash),
    [current.hash, current.hash],
    'the replacement serves the current model',
  );
  const before = await perThread(pool);
  t.strictSame(await requests(port, 'three.test', 40), Array(40).fill(200));
  const after = await perThread(pool);
  t.ok((after[0] ?? 0) > (before[0] ?? 0), 'the replacement listens and serves');
});

t.test('close drains the requests in flight in every thread', async (t) => {
  // a backend that holds every request until told to answer
  const held: Array<() => void> = [];
  let arrived: () => void = () => {};
  const allArrived = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const N = 24;
  const backend = createServer((req, res) => {
    req.resume();
    held.push(() => res.end('done'));
    if (held.length === N) arrived();
  });
  const { pool, port } = await threads(t, backend);
  const replies = Promise.all(Array.from({ length: N }, () => send(port, 'one.test', '/')));
  await allArrived;
  const counts = await perThread(pool);
  t.ok(
    counts.every((n) => n > 0),
    `requests in flight in both threads (${counts.join(' + ')})`,
  );
  const closed = pool.close(10_000);
  // every thread has stopped accepting: the drain has begun everywhere
  await untilRefused(port);
  for (const answer of held) answer();
  const answered = await replies;
  t.strictSame(
    answered.map((reply) => reply.status),
    Array(N).fill(200),
    'every request in flight finished',
  );
  await closed;
  await t.rejects(send(port, 'one.test', '/'), 'nothing listens any more');
});

t.test('rate limits count once per replica: both threads count in the same zone', async (t) => {
  // limit-rpm 1 with the default burst multiplier 5: one zone lets 1 + 5 through at once (the
  // bucket drains 1/60 of a request per second, far less than one during the test)
  const { pool, port } = await threads(t, echoBackend('web'), (backendPort) =>
    model(backendPort, ['limited.test'], { 'limit-rpm': '1' }),
  );
  const before = await perThread(pool);
  const statuses = await requests(port, 'limited.test', 40);
  const counts = (await perThread(pool)).map((n, i) => n - (before[i] ?? 0));
  t.ok(
    counts.every((n) => n >= 6),
    `each thread saw enough requests to let a whole burst through on its own (${counts.join(' + ')})`,
  );
  t.equal(statuses.filter((status) => status === 200).length, 6, 'one burst in all, not one per thread');
  t.equal(
    statuses.filter((status) => status === 503).length,
    34,
    'the rest refused with limit-req-status-code',
  );
});
