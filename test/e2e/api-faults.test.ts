// The API server misbehaving for a while, without going away (the outage itself:
// test/e2e/kube-outage.test.ts): in each of six rounds every watch stream is cut, lists and watches
// answered 500 and 429 and lists answered late, while a client sends requests in a loop (a round
// ends once the controller has met its watch faults and watches again). Every request
// is served by the last good configuration, and what changed meanwhile (an Ingress created, one
// deleted, a Service's endpoints moved) is applied once the faults stop.
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, listen } from '../support/http.ts';
import { ingressObject, sliceObject, webCluster } from '../support/kube-objects.ts';
import { TEST_THREAD_COUNT, testThreadsKube } from '../support/threads.ts';

/** Fault rounds: each cuts the watches and fails the next three. */
const ROUNDS = 6;
const WATCH_FAULTS = 3;
t.setTimeout(120_000);

t.test(`API server faults in ${ROUNDS} rounds under a request loop`, async (t) => {
  const web = echoServer('web');
  const moved = echoServer('moved');
  const webPort = await listen(web);
  const movedPort = await listen(moved);
  t.teardown(() => {
    web.close();
    moved.close();
  });
  const flags = [...LOOPBACK_PORT_0, '--disable-leader-election'];
  const threads = testThreadsKube(flags);
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      ...webCluster(webPort),
      ingressObject('site', 'site.test'),
      ingressObject('gone', 'gone.test'),
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags(['--kubeconfig', kubeconfig, ...flags, ...threads.flags]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  // the informers retry sooner than in production (500 ms doubling up to 30 s): the rounds are about
  // faults met and recovered from, not about waiting; the request loop's access log goes nowhere
  const controller = await start(parsed.config, createLogger('silent'), {
    accessLogStdout: { write() {} },
    kubeBackoff: { initialMs: 100, maxMs: 2_000 },
  });
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  t.equal((await get(port, 'site.test', '/')).status, 200, 'served before the faults');

  let looping = true;
  const statuses = new Map<number, number>();
  const loop = (async () => {
    while (looping) {
      const status = await get(port, 'site.test', '/').then(
        (reply) => reply.status,
        () => 0, // a failed connection counts as status 0
      );
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      await delay(3);
    }
  })();

  const watchesBefore = api.count({ verb: 'watch' });
  const failedWatches = () => api.requests.filter((r) => r.verb === 'watch' && (r.status ?? 0) >= 429).length;
  for (let round = 0; round < ROUNDS; round++) {
    const failuresDue = failedWatches() + WATCH_FAULTS;
    api.failNext({ verb: 'list' }, { status: 500, count: 2 });
    api.failNext({ verb: 'watch' }, { status: 429, count: 2 });
    api.failNext({ verb: 'watch' }, { status: 500, count: 1 });
    api.delayNext({ verb: 'list' }, 1000, 2);
    api.cutWatches();
    // changed while the controller keeps losing its streams
    if (round === 1) api.apply(ingressObject('during', 'during.test'));
    if (round === 2) api.remove({ kind: 'Ingress', namespace: 'e2e', name: 'gone' });
    // the Service's endpoints move to another backend (an Ingress moved to another Service instead
    // could briefly meet a Service whose EndpointSlice the controller has not seen yet: a 503 in a
    // real cluster too)
    if (round === 3) api.apply(sliceObject('web', movedPort));
    if (round === 4) api.compact(); // the history is gone as well: 410 on the next watch, a relist
    // the round lasts until the informers have met its watch faults (backing off, relisting) and one
    // watches again; the client loop above keeps sending requests all along
    while (failedWatches() < failuresDue) await api.waitForRequest({ verb: 'watch' }, 30_000);
    const since = api.requests.length;
    const watchingAgain = () => api.requests.slice(since).some((r) => r.verb === 'watch' && r.status === 200);
    while (!watchingAgain()) await api.waitForRequest({ verb: 'watch' }, 30_000);
  }
  const failed = api.requests.filter((r) => (r.status ?? 0) >= 429).length;
  t.ok(failed >= ROUNDS, `${failed} requests of the controller answered 429 or 500`);
  t.ok(api.count({ verb: 'watch' }) - watchesBefore >= ROUNDS, 'the controller watched again after each cut');

  // converged: everything changed during the faults is served (polled: requests are the only signal)
  const deadline = Date.now() + 40_000; // generous: the informers' backoff is at most 2 s here
  const converged = async () =>
    (await get(port, 'during.test', '/')).status === 200 &&
    (await get(port, 'gone.test', '/')).status === 404 &&
    (await get(port, 'site.test', '/')).body.includes('"backend": "moved"');
  while (!(await converged())) {
    if (Date.now() > deadline) {
      looping = false;
      await loop;
      throw new Error('did not converge after the faults');
    }
    await delay(50);
  }
  looping = false;
  await loop;
  const served = statuses.get(200) ?? 0;
  t.ok(served > 100, `${served} requests served during the faults`);
  t.same([...statuses.keys()], [200], 'every one of them a 200');
  t.equal(
    (await get(controller.healthz.port, 'localhost', '/healthz')).status,
    200,
    '/healthz 200 throughout',
  );
});
