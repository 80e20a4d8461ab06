// The API server goes away after watch streams cut, 500s and 429s; its watch history is compacted
// meanwhile, so the controller's resourceVersions get 410, while a client sends requests in a loop:
// every request is served by the last good configuration, and once the API server is back the
// controller relists and converges on what changed meanwhile.
// The outage lasts until an informer has failed often enough for its retry delay to reach the cap,
// as in a long outage (read from the controller's log, not slept). By default the test scales the
// backoff down (retries from 100 ms up to 2 s: a few seconds of outage); INGRESS_TS_API_OUTAGE_BACKOFF=
// production runs it against the production backoff (500 ms up to 30 s: a minute or so).
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { DEFAULT_BACKOFF } from '../../lib/source/kube/informer.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, listen } from '../support/http.ts';
import { ingressObject, webCluster } from '../support/kube-objects.ts';
import { logSink } from '../support/log-sink.ts';
import { TEST_THREAD_COUNT, testThreadsKube } from '../support/threads.ts';

const PRODUCTION = process.env.INGRESS_TS_API_OUTAGE_BACKOFF === 'production';
const BACKOFF = PRODUCTION ? DEFAULT_BACKOFF : { initialMs: 100, maxMs: 2_000 };
const LONGEST_RETRY_MS = BACKOFF.maxMs;
/** failures in a row after which an informer's retry delay is computed at the cap */
const RETRIES_TO_CAP = Math.ceil(Math.log2(BACKOFF.maxMs / BACKOFF.initialMs)) + 1;
const RETRYING = /objects failed; retrying$/;
t.setTimeout(PRODUCTION ? 300_000 : 120_000); // tap's 30 s default is shorter than a long outage

t.test('API server faults, then gone until the retries reach their cap, under a request loop', async (t) => {
  const backend = echoServer('web');
  const port = await listen(backend);
  t.teardown(() => new Promise((resolve) => backend.close(resolve)));
  const flags = [...LOOPBACK_PORT_0, '--disable-leader-election'];
  const threads = testThreadsKube(flags);
  const api = await startFakeApiServer({
    objects: [
      ...webCluster(port),
      ingressObject('site', 'site.test'),
      ingressObject('gone', 'gone.test'),
      ...threads.objects,
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags(['--kubeconfig', kubeconfig, ...flags, ...threads.flags]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  // thousands of requests: their access log lines go nowhere (not into the TAP stream)
  const log = logSink();
  const controller = await start(parsed.config, createLogger('warn', log.stream), {
    accessLogStdout: { write() {} },
    kubeBackoff: BACKOFF,
  });
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  t.teardown(() => controller.stop(0));

  // the request loop: sequential requests, paced (a few hundred per second, so that the other test
  // files running beside this one keep their CPU), until told to stop; every answer recorded
  let looping = true;
  const statuses = new Map<number, number>();
  const loop = (async () => {
    while (looping) {
      const status = await get(controller.http.port, 'site.test', '/').then(
        (reply) => reply.status,
        () => 0, // a failed connection counts as status 0
      );
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      await delay(3);
    }
  })();

  // faults first, all of them consumed before the outage (a fault left over would hit after it)
  api.failNext({ verb: 'watch' }, { status: 500, count: 4 });
  api.failNext({ verb: 'watch' }, { status: 429, count: 2 });
  api.cutWatches();
  const failed = () => api.requests.filter((r) => r.verb === 'watch' && (r.status ?? 0) >= 429).length;
  while (failed() < 6) await api.waitForRequest({ verb: 'watch' }, 30_000);
  await api.stop();
  const outageFrom = log.lines.length;
  api.apply(ingressObject('during', 'during.test')); // changed while the controller cannot see it
  api.remove({ kind: 'Ingress', namespace: 'e2e', name: 'gone' }); // deleted meanwhile
  api.compact(); // and the watch history is gone: the informers' resourceVersions get 410 → relist
  const outageRetries = () => log.lines.slice(outageFrom).filter((line) => RETRYING.test(String(line.msg)));
  // the retry delays of the first kind that failed RETRIES_TO_CAP times in a row, once there is one
  const atCap = (): number[] | undefined => {
    const byKind = new Map<unknown, number[]>();
    for (const line of outageRetries()) {
      const delays = byKind.get(line.kind) ?? [];
      delays.push(Number(line.retryInMs));
      byKind.set(line.kind, delays);
    }
    return [...byKind.values()].find((delays) => delays.length >= RETRIES_TO_CAP);
  };
  while (atCap() === undefined) await log.next(RETRYING);
  t.equal(
    (await get(controller.healthz.port, 'localhost', '/healthz')).status,
    200,
    '/healthz 200 throughout',
  );
  // equal jitter: a delay computed at the cap lies between half of it and all of it; none is longer
  const retryDelays = outageRetries().map((line) => Number(line.retryInMs));
  const capped = atCap() ?? [];
  t.ok(
    (capped.at(-1) ?? 0) >= LONGEST_RETRY_MS / 2 && retryDelays.every((ms) => ms <= LONGEST_RETRY_MS),
    `the informers were retrying at the longest delay (${LONGEST_RETRY_MS} ms) before the API server came back`,
    { retryDelays },
  );
  await api.restart();

  // converged: the Ingress created during the outage is served (polled: requests are the only signal)
  const deadline = Date.now() + LONGEST_RETRY_MS + 10_000; // the informers' backoff is at its cap
  while ((await get(controller.http.port, 'during.test', '/')).status !== 200) {
    if (Date.now() > deadline) {
      looping = false;
      throw new Error('did not converge after the API server came back');
    }
    await delay(50);
  }
  looping = false;
  await loop;
  t.equal(
    (await get(controller.http.port, 'gone.test', '/')).status,
    404,
    'the deletion came with the relist',
  );
  t.ok(api.count({ verb: 'list', resource: 'ingresses' }) >= 2, 'the Ingresses were listed again (410)');
  const served = statuses.get(200) ?? 0;
  t.ok(served > 100, `${served} requests served during the faults and the outage`);
  t.same([...statuses.keys()], [200], 'every one of them a 200');
});
