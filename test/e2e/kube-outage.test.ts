// The API server goes away after watch streams cut, 500s and 429s; its watch history is compacted
// meanwhile, so the controller's resourceVersions get 410, while a client sends requests in a loop:
// every request is served by the last good configuration, and once the API server is back the
// controller relists and converges on what changed meanwhile.
// The outage lasts three times the informers' longest retry delay, so that they have been waiting at
// that cap before the API server comes back, as in a long outage. By default the test scales both down
// (a 6 s outage, retries from 100 ms up to 2 s); INGRESS_TS_API_OUTAGE_MS=60000 runs an outage of that
// length against the production backoff (500 ms up to 30 s).
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, listen } from '../support/http.ts';
import { logSink } from '../support/log-sink.ts';
import { TEST_THREAD_COUNT, testThreadsKube } from '../support/threads.ts';

const OUTAGE_ENV = process.env.INGRESS_TS_API_OUTAGE_MS;
const OUTAGE_MS = OUTAGE_ENV === undefined ? 6_000 : Number(OUTAGE_ENV);
// undefined: the production backoff
const BACKOFF = OUTAGE_ENV === undefined ? { initialMs: 100, maxMs: 2_000 } : undefined;
const LONGEST_RETRY_MS = BACKOFF?.maxMs ?? 30_000;
t.setTimeout(OUTAGE_MS + 120_000); // tap's 30 s default is shorter than a long outage

const objects = (port: number): KubeObject[] => [
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'ingress-ts' },
    spec: { controller: 'ingress-ts.dev/controller' },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'e2e' },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-1', namespace: 'e2e', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port, protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
  },
  ingress('site', 'site.test'),
  ingress('gone', 'gone.test'),
];

function ingress(name: string, host: string): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: 'e2e' },
    spec: {
      ingressClassName: 'ingress-ts',
      rules: [
        {
          host,
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
            ],
          },
        },
      ],
    },
  };
}

t.test(`API server faults, then gone for ${OUTAGE_MS / 1000} s, under a request loop`, async (t) => {
  const backend = echoServer('web');
  const port = await listen(backend);
  t.teardown(() => new Promise((resolve) => backend.close(resolve)));
  const flags = [...LOOPBACK_PORT_0, '--disable-leader-election'];
  const threads = testThreadsKube(flags);
  const api = await startFakeApiServer({ objects: [...objects(port), ...threads.objects] });
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
  const back = delay(OUTAGE_MS);
  api.apply(ingress('during', 'during.test')); // changed while the controller cannot see it
  api.remove({ kind: 'Ingress', namespace: 'e2e', name: 'gone' }); // deleted meanwhile
  api.compact(); // and the watch history is gone: the informers' resourceVersions get 410 → relist
  await back;
  t.equal(
    (await get(controller.healthz.port, 'localhost', '/healthz')).status,
    200,
    '/healthz 200 throughout',
  );
  // equal jitter: a delay computed at the cap lies between half of it and all of it, one computed
  // below the cap at or under half of it; none is longer than the cap
  const retryDelays = log.lines
    .filter((line) => /objects failed; retrying$/.test(String(line.msg)))
    .map((line) => Number(line.retryInMs));
  t.ok(
    retryDelays.some((ms) => ms > LONGEST_RETRY_MS / 2) && retryDelays.every((ms) => ms <= LONGEST_RETRY_MS),
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
