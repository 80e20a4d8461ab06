// End to end in Kubernetes mode: a controller watching the fake API server (test/support/
// fake-apiserver.ts) through --kubeconfig, real echo backends, real HTTP. Objects are created,
// changed and deleted on the API server; the traffic follows. The API server then misbehaves (cut
// watches, 500s, gone for a while) and traffic keeps being served by the last good configuration
// until it converges. Last, the real CLI process starts and stops the same way.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, listen, type Reply } from '../support/http.ts';
import { parseExposition, sampleValue } from '../support/prometheus.ts';
import { nextSwap } from '../support/swaps.ts';
import { TEST_THREAD_COUNT, testThreadsKube } from '../support/threads.ts';

/** the suite's worker-processes (INGRESS_TS_TEST_THREADS): no test here names a --configmap */
const threads = testThreadsKube([]);

t.setTimeout(120_000); // two controller processes start and elect a leader: slow on a loaded machine

const backendOf = (reply: Reply): string => (JSON.parse(reply.body) as { backend: string }).backend;

const ingressClass: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name: 'ingress-ts' },
  spec: { controller: 'ingress-ts.dev/controller' },
};

function service(name: string, namespace = 'e2e'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
}

function slice(serviceName: string, ports: number[], namespace = 'e2e'): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${serviceName}-1`, namespace, labels: { 'kubernetes.io/service-name': serviceName } },
    addressType: 'IPv4',
    // one port per slice in Kubernetes; several backends on different ports need several slices,
    // so this slice lists one endpoint and the port of the first backend
    ports: [{ name: 'http', port: ports[0], protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
  };
}

function ingress(
  name: string,
  host: string,
  paths: Array<[path: string, service: string]>,
  options: { namespace?: string; className?: string } = {},
): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: options.namespace ?? 'e2e' },
    spec: {
      ingressClassName: options.className ?? 'ingress-ts',
      rules: [
        {
          host,
          http: {
            paths: paths.map(([path, svc]) => ({
              path,
              pathType: 'Prefix',
              backend: { service: { name: svc, port: { number: 80 } } },
            })),
          },
        },
      ],
    },
  };
}

/** Polls until `check` passes (a request is an event the test cannot subscribe to any other way). */
async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

t.test('Kubernetes mode end to end, in process', async (t) => {
  const backends: Record<string, number> = {};
  for (const name of ['web', 'api', 'web2']) {
    const server = echoServer(name);
    backends[name] = await listen(server);
    t.teardown(() => new Promise((resolve) => server.close(resolve)));
  }
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      ingressClass,
      service('web'),
      slice('web', [backends.web as number]),
      service('api'),
      slice('api', [backends.api as number]),
      ingress('site', 'site.test', [['/', 'web']]),
      ingress('theirs', 'theirs.test', [['/', 'web']], { className: 'nginx' }),
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags([
    '--kubeconfig',
    kubeconfig,
    ...LOOPBACK_PORT_0,
    '--log-level',
    'silent',
    ...threads.flags,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const controller = await start(parsed.config, createLogger('silent'));
  t.equal(controller.threads, TEST_THREAD_COUNT, "the suite's data-plane threads");
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  t.test('the first build serves what the API server lists', async (t) => {
    const reply = await get(port, 'site.test', '/');
    t.equal(reply.status, 200);
    t.equal(backendOf(reply), 'web');
    t.equal((await get(port, 'theirs.test', '/')).status, 404, 'another class is not served');
    t.equal(
      api.openWatches(),
      6,
      'one watch per kind: IngressClass, Ingress, Service, EndpointSlice, Secret, ConfigMap',
    );
  });

  t.test('create, update, delete an Ingress: traffic follows', async (t) => {
    let swapped = nextSwap();
    api.apply(ingress('site2', 'two.test', [['/', 'api']]));
    await swapped;
    t.equal(backendOf(await get(port, 'two.test', '/')), 'api', 'created');

    swapped = nextSwap();
    api.apply(ingress('site2', 'two.test', [['/v2', 'api']]));
    await swapped;
    t.equal((await get(port, 'two.test', '/')).status, 404, 'the old path is gone');
    t.equal(backendOf(await get(port, 'two.test', '/v2/x')), 'api', 'the new path routes');

    swapped = nextSwap();
    api.remove({ kind: 'Ingress', namespace: 'e2e', name: 'site2' });
    await swapped;
    t.equal((await get(port, 'two.test', '/v2/x')).status, 404, 'deleted');
  });

  t.test('an EndpointSlice change swaps endpoints in place', async (t) => {
    const swapped = nextSwap();
    api.apply(slice('web', [backends.web2 as number]));
    t.match(await swapped, { kind: 'endpoints' }, 'no full rebuild');
    t.equal(backendOf(await get(port, 'site.test', '/')), 'web2');
  });

  t.test('diagnostics become Events on the object concerned, once each', async (t) => {
    const conflictEvents = () =>
      (
        api.list('Event', 'e2e') as Array<{
          reason?: string;
          involvedObject?: { name?: string; uid?: string };
        }>
      ).filter((e) => e.reason === 'PATH_CONFLICT' && e.involvedObject?.name === 'dup');
    const created = api.waitForRequest({ verb: 'create', resource: 'events' });
    api.apply(ingress('dup', 'site.test', [['/', 'api']])); // newer than site: loses site.test /
    await created;
    const [event] = conflictEvents();
    t.ok(event, 'a PATH_CONFLICT Event on e2e/dup');
    t.equal(
      event?.involvedObject?.uid,
      api.get({ kind: 'Ingress', namespace: 'e2e', name: 'dup' })?.metadata?.uid,
    );
    const swapped = nextSwap();
    api.apply(ingress('other', 'other.test', [['/', 'api']])); // another build, dup's conflict unchanged
    await swapped;
    t.equal(conflictEvents().length, 1, 'not repeated at the next build');
    api.remove({ kind: 'Ingress', namespace: 'e2e', name: 'dup' });
  });

  t.test('the API server misbehaves: the last configuration keeps serving, then converges', async (t) => {
    api.failNext({ verb: 'watch' }, { status: 500, count: 3 });
    api.cutWatches();
    t.equal(backendOf(await get(port, 'site.test', '/')), 'web2', 'served while the watches are down');
    await api.stop();
    for (let i = 0; i < 20; i++) t.equal((await get(port, 'site.test', '/')).status, 200);
    const healthz = await get(controller.healthz.port, 'localhost', '/healthz');
    t.equal(healthz.status, 200, '/healthz stays 200 while the API server is unreachable');
    api.apply(ingress('later', 'later.test', [['/', 'api']]));
    await api.restart();
    await eventually(async () => (await get(port, 'later.test', '/')).status === 200, 'converged');
    t.equal(backendOf(await get(port, 'later.test', '/')), 'api');

    const metrics = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
    // the Ingress watch had to restart to converge; the others may still be waiting for theirs
    const restarts = sampleValue(metrics, 'ingress_ts_informer_restarts_total', { kind: 'Ingress' }) ?? 0;
    t.ok(restarts >= 1, `Ingress watch restarts counted (${restarts})`);
    for (const kind of ['Service', 'EndpointSlice', 'Secret', 'IngressClass']) {
      t.not(
        sampleValue(metrics, 'ingress_ts_informer_restarts_total', { kind }),
        undefined,
        `${kind} series`,
      );
    }
    t.equal(
      sampleValue(metrics, 'nginx_ingress_controller_leader_election_status', { name: 'ingress-ts-leader' }),
      1,
      'leader_election_status: the only replica leads',
    );
  });
});

t.test('a burst of 100 Ingresses is a handful of builds; classes and --watch-namespace', async (t) => {
  const server = echoServer('burst');
  const backend = await listen(server);
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const legacy = ingress('legacy', 'legacy.test', [['/', 'burst']]);
  delete (legacy.spec as { ingressClassName?: string }).ingressClassName;
  legacy.metadata = { ...legacy.metadata, annotations: { 'kubernetes.io/ingress.class': 'ingress-ts' } };
  const classless = ingress('classless', 'classless.test', [['/', 'burst']]);
  delete (classless.spec as { ingressClassName?: string }).ingressClassName;
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      ingressClass,
      service('burst'),
      slice('burst', [backend]),
      legacy,
      classless,
      service('burst', 'elsewhere'),
      slice('burst', [backend], 'elsewhere'),
      ingress('elsewhere', 'elsewhere.test', [['/', 'burst']], { namespace: 'elsewhere' }),
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const parsed = parseFlags([
    '--kubeconfig',
    kubeconfig,
    '--watch-namespace',
    'e2e',
    ...LOOPBACK_PORT_0,
    ...threads.flags,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const controller = await start(parsed.config, createLogger('silent'));
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  t.equal(backendOf(await get(port, 'legacy.test', '/')), 'burst', 'the legacy class annotation is served');
  t.equal((await get(port, 'classless.test', '/')).status, 404, 'no class: not served by default');
  t.equal((await get(port, 'elsewhere.test', '/')).status, 404, 'another namespace than --watch-namespace');
  t.equal(api.count({ verb: 'watch', resource: 'ingresses', namespace: 'elsewhere' }), 0);

  const builds = async () => {
    const metrics = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
    return sampleValue(metrics, 'ingress_ts_model_build_duration_seconds_count', {}) ?? 0;
  };
  const before = await builds();
  for (let i = 0; i < 100; i++) api.apply(ingress(`burst-${i}`, `burst-${i}.test`, [['/', 'burst']]));
  await eventually(
    async () => (await get(port, 'burst-99.test', '/')).status === 200,
    'the last of the burst',
  );
  for (const i of [0, 42, 99]) t.equal((await get(port, `burst-${i}.test`, '/')).status, 200, `burst-${i}`);
  const built = (await builds()) - before;
  t.ok(built >= 1 && built <= 10, `100 Ingresses in one burst: ${built} build(s)`);
});

// the Service is in the controller's namespace: found whether every namespace is watched, one other
// namespace (its own watch, by name), or the namespaces a selector picks (which do not include it)
for (const [scope, flags] of [
  ['every namespace', []],
  ['--watch-namespace e2e', ['--watch-namespace', 'e2e']],
  ['--watch-namespace-selector team=web', ['--watch-namespace-selector', 'team=web']],
] as const) {
  t.test(
    `--publish-service (${scope}): Ingress status follows the Service's load-balancer address`,
    async (t) => {
      const lb = (ip: string): KubeObject => ({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'lb', namespace: 'ingress' },
        spec: { type: 'LoadBalancer', clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
        status: { loadBalancer: { ingress: [{ ip }] } },
      });
      const namespace = (name: string, labels: Record<string, string>): KubeObject => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels },
      });
      const api = await startFakeApiServer({
        objects: [
          ...threads.objects,
          ingressClass,
          namespace('e2e', { team: 'web' }),
          namespace('ingress', {}),
          lb('198.51.100.1'),
          ingress('site', 'site.test', [['/', 'web']]),
        ],
      });
      t.teardown(() => api.close());
      const kubeconfig = await api.writeKubeconfig();
      const parsed = parseFlags([
        '--kubeconfig',
        kubeconfig,
        '--publish-service',
        'ingress/lb',
        '--disable-leader-election',
        ...flags,
        ...LOOPBACK_PORT_0,
        ...threads.flags,
      ]);
      if (parsed.kind !== 'run') throw new Error('expected run');
      const controller = await start(parsed.config, createLogger('silent'));
      t.teardown(() => controller.stop(0));
      const statusOf = () =>
        (
          api.get({ kind: 'Ingress', namespace: 'e2e', name: 'site' })?.status as
            | { loadBalancer?: unknown }
            | undefined
        )?.loadBalancer;
      await eventually(
        async () => String(JSON.stringify(statusOf())).includes('198.51.100.1'),
        'the first address',
      );
      t.same(statusOf(), { ingress: [{ ip: '198.51.100.1' }] });
      api.apply(lb('198.51.100.2')); // the cloud moved the load balancer
      await eventually(
        async () => String(JSON.stringify(statusOf())).includes('198.51.100.2'),
        'the new address',
      );
      t.same(statusOf(), { ingress: [{ ip: '198.51.100.2' }] });
      if (scope === '--watch-namespace e2e') {
        t.ok(
          api.count({ verb: 'watch', resource: 'services', namespace: 'ingress' }) >= 1,
          'the Service is watched in its own namespace',
        );
      }
    },
  );
}

t.test('the CLI process: --kubeconfig, serving, SIGTERM exits 0', async (t) => {
  const server = echoServer('cli');
  const backend = await listen(server);
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      ingressClass,
      service('cli'),
      slice('cli', [backend]),
      ingress('cli', 'cli.test', [['/', 'cli']]),
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [bin, '--kubeconfig', kubeconfig, ...LOOPBACK_PORT_0, ...threads.flags],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.teardown(() => child.kill('SIGKILL'));
  let output = '';
  const serving = await new Promise<{ http: number }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n').find((l) => l.includes('serving'));
      if (line) resolve(JSON.parse(line) as { http: number });
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  t.match(output, /"msg":"cluster objects listed"/);
  t.match(output, new RegExp(`"threads":${TEST_THREAD_COUNT}[,}]`), "the suite's data-plane threads");
  t.equal(backendOf(await get(serving.http, 'cli.test', '/')), 'cli');
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});

/** A controller process, its JSON log lines, and a way to await one. */
function controllerProcess(kubeconfig: string, podName: string, extra: string[]) {
  const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [bin, '--kubeconfig', kubeconfig, ...LOOPBACK_PORT_0, ...extra, ...threads.flags],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, POD_NAME: podName, POD_NAMESPACE: 'ingress' },
    },
  );
  const lines: Array<Record<string, unknown>> = [];
  let waiters: Array<{ match: (line: Record<string, unknown>) => boolean; resolve: () => void }> = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const complete = buffered.split('\n');
    buffered = complete.pop() ?? '';
    for (const text of complete) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as Record<string, unknown>;
      lines.push(line);
      for (const w of waiters.filter((w) => w.match(line))) w.resolve();
      waiters = waiters.filter((w) => !w.match(line));
    }
  });
  const logged = (match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      if (lines.some(match)) return resolve();
      const timer = setTimeout(() => reject(new Error(`${podName}: no log line ${what}`)), timeoutMs);
      waiters.push({
        match,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  return { child, lines, logged };
}

t.test('two controller processes: one leader writes status; kill it, the other takes over', async (t) => {
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      ingressClass,
      service('web'),
      slice('web', [1]),
      ingress('site', 'site.test', [['/', 'web']]),
    ],
  });
  t.teardown(() => api.close());
  const kubeconfig = await api.writeKubeconfig();
  const flags = ['--election-ttl=2s', '--publish-status-address', '192.0.2.10', '--log-level', 'info'];
  const statusWritten = (ingress: string) => (line: Record<string, unknown>) =>
    line.msg === 'Ingress status updated' && line.ingress === ingress;
  const elected = (line: Record<string, unknown>) => line.msg === 'elected leader';

  const a = controllerProcess(kubeconfig, 'pod-a', flags);
  t.teardown(() => a.child.kill('SIGKILL'));
  await a.logged(elected, 'elected leader');
  await a.logged(statusWritten('e2e/site'), 'status of e2e/site');
  const lbStatus = (name: string) =>
    (api.get({ kind: 'Ingress', namespace: 'e2e', name })?.status as { loadBalancer?: unknown } | undefined)
      ?.loadBalancer;
  t.same(lbStatus('site'), { ingress: [{ ip: '192.0.2.10' }] });

  const b = controllerProcess(kubeconfig, 'pod-b', flags);
  t.teardown(() => b.child.kill('SIGKILL'));
  await b.logged((line) => String(line.msg).includes('serving'), 'serving');
  api.apply(ingress('site2', 'two.test', [['/', 'web']]));
  await a.logged(statusWritten('e2e/site2'), 'status of e2e/site2');
  t.same(lbStatus('site2'), { ingress: [{ ip: '192.0.2.10' }] });
  t.notOk(b.lines.some(elected), 'the second replica is not the leader');
  t.notOk(
    b.lines.some((line) => line.msg === 'Ingress status updated'),
    'and writes no status',
  );

  const killed = performance.now();
  a.child.kill('SIGKILL'); // no release: the Lease must expire
  await b.logged(elected, 'elected leader after the kill', 10_000);
  const takeover = performance.now() - killed;
  t.ok(takeover < 2000 * 2, `took over within the TTL plus a retry (${Math.round(takeover)} ms)`);
  api.apply(ingress('site3', 'three.test', [['/', 'web']]));
  await b.logged(statusWritten('e2e/site3'), 'status of e2e/site3 by the new leader');
  t.same(lbStatus('site3'), { ingress: [{ ip: '192.0.2.10' }] });
});
