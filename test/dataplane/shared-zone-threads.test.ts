// Two real worker threads counting in one zone's buffers: for each round (a time the test sets, so
// the outcome is deterministic), both threads start at once and fire requests from the same
// addresses; together they are accepted exactly as often as one zone accepts the same requests.
// Connection slots taken and given back from both threads at once stay exact.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { ConnectionZone, RequestZone } from '../../lib/dataplane/access/rate-limit.ts';
import { allocateZoneBuffer } from '../../lib/dataplane/access/shared-zone.ts';
import type { ZoneJob } from '../support/zone-worker.ts';

const RATE = 10; // r/s
const BURST = 5;
const LIMIT = 1000;

const requestsBuffer = allocateZoneBuffer();
const connectionsBuffer = allocateZoneBuffer();
const gate = new SharedArrayBuffer(4);
const workers = [0, 1].map(
  () =>
    new Worker(new URL('../support/zone-worker.ts', import.meta.url), {
      workerData: {
        requests: requestsBuffer,
        connections: connectionsBuffer,
        gate,
        rate: RATE,
        burst: BURST,
        limit: LIMIT,
      },
    }),
);
t.teardown(() => Promise.all(workers.map((worker) => worker.terminate())));
let round = 0;

/** a job without its round (the round is this test's count) */
type Job = { [K in ZoneJob['kind']]: Omit<Extract<ZoneJob, { kind: K }>, 'round'> }[ZoneJob['kind']];

/** One round on both workers at once; what each counted. */
async function both(job: Job): Promise<number[]> {
  round++;
  const answers = workers.map((worker) => once(worker, 'message'));
  for (const worker of workers) worker.postMessage({ ...job, round });
  Atomics.store(new Int32Array(gate), 0, round);
  Atomics.notify(new Int32Array(gate), 0);
  return (await Promise.all(answers)).map(([done]) => done as number);
}

t.test('limit-rps with a burst: two threads accept exactly what one zone accepts', async (t) => {
  const reference = new RequestZone(RATE, BURST, false);
  const rounds: [number, number, number][] = [
    // [ms, requests per thread, addresses]
    [0, 2000, 1],
    [50, 2000, 1],
    [100, 2000, 1],
    [350, 2000, 1],
    [1000, 2000, 3],
    [1000, 2000, 3],
    [1730, 5000, 7],
    [5000, 5000, 7],
    // 500 addresses: thousands of accepts (new addresses inserted, buckets written) from both threads
    [6000, 20_000, 500],
    [6100, 20_000, 500],
    [9000, 20_000, 500],
  ];
  let total = 0;
  for (const [now, count, addresses] of rounds) {
    let expected = 0;
    for (let i = 0; i < 2 * count; i++) if (reference.take(`10.0.0.${i % addresses}`, now)) expected++;
    const accepted = await both({ kind: 'take', now, count, addresses });
    const sum = (accepted[0] ?? 0) + (accepted[1] ?? 0);
    t.equal(sum, expected, `at ${now} ms: ${expected} accepted of ${2 * count} (${accepted.join(' + ')})`);
    total += sum;
  }
  t.ok(total > 1 + BURST, `${total} in all`);
  t.equal(new RequestZone(RATE, BURST, false, requestsBuffer).size, 500, 'every address remembered');
});

t.test('limit-connections: slots taken and given back from both threads at once stay exact', async (t) => {
  const view = new ConnectionZone(LIMIT, connectionsBuffer);
  const taken = await both({ kind: 'acquire', count: 800 });
  t.equal((taken[0] ?? 0) + (taken[1] ?? 0), LIMIT, `exactly the limit taken (${taken.join(' + ')})`);
  t.equal(view.inFlight('10.0.0.1'), LIMIT);
  t.notOk(view.acquire('10.0.0.1'), 'full');
  const releases = await Promise.all(
    workers.map((worker, i) => {
      const answer = once(worker, 'message');
      worker.postMessage({ kind: 'release', count: taken[i], round });
      return answer;
    }),
  );
  t.equal(releases.length, 2);
  t.equal(view.inFlight('10.0.0.1'), 0, 'all given back');

  const churned = await both({ kind: 'churn', count: 100_000, addresses: 3000 });
  t.equal((churned[0] ?? 0) + (churned[1] ?? 0), 200_000, 'every acquire under the limit succeeded');
  t.equal(view.table.size, 0, 'nothing left in flight: every insert and removal landed');
  let held = 0;
  for (let i = 0; i < 3000; i++) held += view.inFlight(`10.1.${i}.1`);
  t.equal(held, 0);
});
