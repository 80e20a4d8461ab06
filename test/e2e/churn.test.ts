// Configuration churn under requests, in process: 1,000 swaps of one DataPlane alternating
// endpoints-only and full (test/support/churn.ts), with two clients sending requests all along.
// No request may fail, and once the clients are gone the process must hold exactly the active
// handles (sockets, servers, timers: process.getActiveResourcesInfo()) it held before the churn, with
// no timer or socket per swap. undici unreferences idle pooled connections, so that list does not
// show them: the retired peer's pool is checked on its backend, which must see its connections
// closed. bench/churn-bench.ts runs the same churn 10,000 times under wrk.
import { Agent, createServer, type Server } from 'node:http';
import t from 'tap';
import { DataPlane } from '../../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { buildModel } from '../../lib/model/index.ts';
import { activeResources, CHURN_HOST, churnKind, churnSnapshot } from '../support/churn.ts';
import { get, listen } from '../support/http.ts';

t.setTimeout(120_000);

const SWAPS = 1000;
/** a completed request is awaited every this many swaps, so requests and swaps interleave */
const SWAPS_PER_REQUEST = 10;

/** A backend answering its name; it keeps idle connections (longer than the test), so only the
 * proxy closing its pool closes them. */
function backend(name: string): Server {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(name));
  });
  server.keepAliveTimeout = 300_000;
  return server;
}

const connections = (server: Server) =>
  new Promise<number>((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );

/** Resolves once `check` holds (checked every 20 ms, for up to 10 s); resolves false if it never does. */
async function until(check: () => boolean | Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

t.test('1,000 alternating swaps under requests: no failed request, no handle left behind', async (t) => {
  const a = backend('a');
  const b = backend('b');
  const ports: [number, number] = [await listen(a), await listen(b)];
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  const { http } = await dataPlane.listen();
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  t.teardown(async () => {
    agent.destroy();
    await dataPlane.close();
    a.closeAllConnections();
    b.closeAllConnections();
    a.close();
    b.close();
  });

  t.equal(dataPlane.swap(buildModel(churnSnapshot(0, ports)).model), 'full');

  // two clients, each one request at a time on its keep-alive connection
  let running = true;
  let served = 0;
  let byB = 0;
  const failures: string[] = [];
  const waiting: Array<() => void> = [];
  const client = async () => {
    while (running) {
      try {
        const reply = await get(http.port, CHURN_HOST, '/', agent);
        if (reply.body === 'b') byB++;
        if (reply.status !== 200) failures.push(`status ${reply.status}: ${reply.body.slice(0, 80)}`);
      } catch (error) {
        failures.push(String(error));
      }
      served++;
      for (const wake of waiting.splice(0)) wake();
    }
  };
  const nextRequest = () => new Promise<void>((resolve) => waiting.push(resolve));

  // warm-up: both clients connected, the pool to backend a holding their two connections
  const clients = [client(), client()];
  while (served < 200) await nextRequest();
  running = false;
  await Promise.all(clients);
  t.ok(await until(async () => (await connections(a)) === 2), 'two pooled connections to backend a');
  const before = activeResources();

  running = true;
  const churning = [client(), client()];
  const servedBefore = served;
  const kinds = { full: 0, endpoints: 0, unchanged: 0 };
  let wrongKind = 0;
  for (let step = 1; step <= SWAPS; step++) {
    const kind = dataPlane.swap(buildModel(churnSnapshot(step, ports)).model);
    kinds[kind]++;
    if (kind !== churnKind(step)) wrongKind++;
    if (step % SWAPS_PER_REQUEST === 0) await nextRequest();
    else await new Promise((resolve) => setImmediate(resolve));
  }
  running = false;
  await Promise.all(churning);

  t.same(kinds, { full: SWAPS / 2, endpoints: SWAPS / 2, unchanged: 0 });
  t.equal(wrongKind, 0, 'every swap of the kind its step changed');
  t.ok(
    served - servedBefore >= SWAPS / SWAPS_PER_REQUEST,
    `requests during the churn: ${served - servedBefore}`,
  );
  t.same(failures, [], 'no failed request');
  t.ok(byB > 0, `requests served by backend b while it had endpoints: ${byB}`);

  // the last step removed backend b again: its retired pool closes its connections
  t.ok(await until(async () => (await connections(b)) === 0), 'no connection left to retired backend b');
  const settled = await until(() => {
    const now = activeResources();
    return Object.keys({ ...now, ...before }).every((type) => now[type] === before[type]);
  });
  t.ok(settled, 'the handles settle back to their count before the churn');
  t.same(activeResources(), before, 'active handles and timers by type: after = before');
});
