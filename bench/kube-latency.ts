// Change → traffic latency in Kubernetes mode: how long after a change is written to the API server
// the first request is served by the new configuration. Run with `node bench/kube-latency.ts
// [--changes N] [--gap MS]`.
//
// ingress-ts runs as the real CLI process (`--kubeconfig`, pinned to core 0 when taskset exists)
// against the fake API server of the tests (test/support/fake-apiserver.ts), which runs in this
// process with two echo backends. Per change: write it to the fake (which sends the watch event at
// once), then send back-to-back requests over one keep-alive connection until one is answered by the
// new configuration; the time from the write to that answer is the sample (an upper bound of "watch
// event reaches the process → first request served": it includes the event's trip over loopback).
// Two kinds, N changes each:
// - route: the Ingress's path moves (/v1 → /v2 ...): a full rebuild and swap;
// - endpoints: the Service's EndpointSlice moves between the two backends: the in-place fast path.
// Changes are spaced by --gap ms (default 250), longer than the scheduler's 100 ms hold-off, so each
// is an isolated change (a burst would be coalesced into one build by design).

import { writeFileSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type KubeObject, startFakeApiServer } from '../test/support/fake-apiserver.ts';
import {
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  isPinned,
  log,
  percentile,
  pinned,
  REPO,
  sleep,
  startProcess,
  stopProcess,
  waitFor,
} from './support/harness.ts';

const NAME = 'kube-latency';
const HOST = 'latency.bench.test';

const { values } = parseArgs({
  options: {
    changes: { type: 'string', default: '100' },
    gap: { type: 'string', default: '250' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'node bench/kube-latency.ts [--changes N (100)] [--gap MS between changes (250)]\nWrites bench/results/kube-latency-DATE.md\n',
  );
  process.exit(0);
}
const CHANGES = Math.max(1, Math.min(1000, Number(values.changes)));
const GAP_MS = Math.max(0, Number(values.gap));
initHarness(NAME, (CHANGES * 2 * (GAP_MS + 1000) + 60_000) * 1.5);
ensureTools(false); // taskset, when there

function echo(name: string): Server {
  return createServer((req, res) => {
    req.resume();
    res.end(name);
  });
}
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function fetchOnce(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, agent, headers: { host: HOST } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Requests until `served` says the answer comes from the new configuration; ms since `since`. */
async function until(
  port: number,
  path: string,
  served: (r: { status: number; body: string }) => boolean,
  since: number,
): Promise<number> {
  for (;;) {
    const reply = await fetchOnce(port, path);
    if (served(reply)) return performance.now() - since;
    if (performance.now() - since > 10_000)
      fail(1, `no answer from the new configuration on ${path} in 10 s`);
  }
}

const ingressClass: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name: 'ingress-ts' },
  spec: { controller: 'ingress-ts.dev/controller' },
};
const service: KubeObject = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'app', namespace: 'bench' },
  spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
};
const slice = (port: number): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'app-1', namespace: 'bench', labels: { 'kubernetes.io/service-name': 'app' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});
const ingress = (path: string): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: 'app', namespace: 'bench' },
  spec: {
    ingressClassName: 'ingress-ts',
    rules: [
      {
        host: HOST,
        http: {
          paths: [{ path, pathType: 'Prefix', backend: { service: { name: 'app', port: { number: 80 } } } }],
        },
      },
    ],
  },
});

function summary(samples: number[]): { p50: number; p99: number; max: number; mean: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}

const blue = echo('blue');
const green = echo('green');
const ports = { blue: await listen(blue), green: await listen(green) };
const api = await startFakeApiServer({ objects: [ingressClass, service, slice(ports.blue), ingress('/v0')] });
const kubeconfig = await api.writeKubeconfig();
const http = await freePort();
const argv = pinned(0, [
  process.execPath,
  'bin/ingress-ts.ts',
  '--kubeconfig',
  kubeconfig,
  '--http-port',
  String(http),
  '--https-port',
  String(await freePort()),
  '--healthz-port',
  String(await freePort()),
  '--bind-address',
  '127.0.0.1',
  '--log-level',
  'warn',
  '--disable-leader-election',
  '--enable-metrics=false',
]);
const controller = startProcess(argv);
try {
  await waitFor(
    'ingress-ts',
    async () => {
      if (controller.child.exitCode !== null) fail(1, `ingress-ts exited:\n${controller.output.join('\n')}`);
      return (await fetchOnce(http, '/v0').catch(() => ({ status: 0 }))).status === 200;
    },
    30_000,
  );
  log(`ingress-ts serving; ${CHANGES} route changes, then ${CHANGES} endpoint changes, ${GAP_MS} ms apart`);

  const route: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    await sleep(GAP_MS);
    const since = performance.now();
    api.apply(ingress(`/v${i}`));
    route.push(await until(http, `/v${i}`, (r) => r.status === 200, since));
  }
  const endpoints: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    await sleep(GAP_MS);
    const target = i % 2 === 1 ? 'green' : 'blue';
    const since = performance.now();
    api.apply(slice(ports[target]));
    endpoints.push(await until(http, `/v${CHANGES}`, (r) => r.status === 200 && r.body === target, since));
  }

  const r = summary(route);
  const e = summary(endpoints);
  const date = new Date().toISOString();
  const lines = [
    '# Change → traffic latency in Kubernetes mode',
    '',
    `- date: ${date.slice(0, 19)}Z`,
    `- machine: ${cpus()[0]?.model.trim() ?? 'unknown'} × ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    `- node ${process.version}; ingress-ts ${isPinned() ? 'pinned to core 0' : 'not pinned (no taskset)'}; the fake API server, backends and client in the bench process`,
    `- method: ${CHANGES} changes of each kind, ${GAP_MS} ms apart; a sample is the time from writing the change to the fake API server to the first request answered by the new configuration (back-to-back requests over one keep-alive connection)`,
    '',
    `Command: \`node bench/kube-latency.ts --changes ${CHANGES} --gap ${GAP_MS}\`; ingress-ts: \`${argv.join(' ').replace(kubeconfig, 'KUBECONFIG')}\``,
    '',
    '| change | what happens | p50 ms | p99 ms | max ms | mean ms |',
    '| -- | -- | --: | --: | --: | --: |',
    `| Ingress path | watch event → build → full swap | ${fixed(r.p50, 2)} | ${fixed(r.p99, 2)} | ${fixed(r.max, 2)} | ${fixed(r.mean, 2)} |`,
    `| EndpointSlice | watch event → build → endpoints swapped in place | ${fixed(e.p50, 2)} | ${fixed(e.p99, 2)} | ${fixed(e.max, 2)} | ${fixed(e.mean, 2)} |`,
    '',
  ];
  const file = join(REPO, 'bench', 'results', `kube-latency-${date.slice(0, 10)}.md`);
  writeFileSync(file, lines.join('\n'));
  process.stdout.write(`${lines.join('\n')}\n`);
  log(`written to ${file}`);
} finally {
  await stopProcess(controller);
  agent.destroy();
  await api.close();
  blue.close();
  green.close();
}
process.exit(0);
