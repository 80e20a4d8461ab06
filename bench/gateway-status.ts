// The Gateway API status writer's first write of many HTTPRoutes: a new leader (or a first start) with
// N routes attached to one Gateway, none of which carries our status yet, so every object is read and
// written. Run with `node bench/gateway-status.ts [--routes N] [--latency MS] [--rounds R]`.
//
// The tests' fake API server runs in a worker thread (so its own CPU is not the writer's), and answers
// each request after --latency ms (default 0: loopback only; a real API server adds a few ms of
// round trip and etcd write). Per round and per number of objects in flight (1: one after the other,
// as before; the writer's default): the wall time of the update, and the main thread's CPU
// (process.threadCpuUsage), which is the writer's requests and JSON.

import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { GatewayApiStatus } from '../lib/model/gateway/types.ts';
import { EMPTY_SNAPSHOT, type KubeObject as ModelObject } from '../lib/model/k8s.ts';
import { createGatewayStatusWriter, STATUS_WRITES_IN_FLIGHT } from '../lib/source/kube/gateway-status.ts';
import { GATEWAY_GROUP, type KubeObject, startFakeApiServer } from '../test/support/fake-apiserver.ts';

const V1 = `${GATEWAY_GROUP}/v1`;
const OURS = 'ingress-ts.dev/gateway-controller';

interface Setup {
  routes: number;
  latency: number;
}

function objects(routes: number): KubeObject[] {
  return [
    {
      apiVersion: V1,
      kind: 'GatewayClass',
      metadata: { name: 'ingress-ts' },
      spec: { controllerName: OURS },
    },
    {
      apiVersion: V1,
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: 'infra' },
      spec: { gatewayClassName: 'ingress-ts', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    },
    ...Array.from({ length: routes }, (_, i) => ({
      apiVersion: V1,
      kind: 'HTTPRoute',
      metadata: { name: `route-${i}`, namespace: `team-${i % 50}` },
      spec: { parentRefs: [{ name: 'edge', namespace: 'infra' }], hostnames: [`r${i}.example.com`] },
    })),
  ];
}

/** In the worker: a fresh fake API server per round; the port goes back to the main thread. */
async function serve(setup: Setup): Promise<void> {
  let api = await startFakeApiServer({ gatewayApi: true, objects: objects(setup.routes) });
  const slow = () => {
    if (setup.latency > 0) api.delayNext(() => true, setup.latency, Number.MAX_SAFE_INTEGER);
  };
  slow();
  parentPort?.on('message', async (message: string) => {
    if (message === 'reset') {
      await api.close();
      api = await startFakeApiServer({ gatewayApi: true, objects: objects(setup.routes) });
      slow();
      parentPort?.postMessage({ url: api.url });
    } else if (message === 'close') {
      await api.close();
      parentPort?.close();
    }
  });
  parentPort?.postMessage({ url: api.url });
}

function report(routes: number): GatewayApiStatus {
  const condition = (type: string) => ({
    type,
    status: 'True' as const,
    reason: type,
    message: `${type} is True`,
    observedGeneration: 1,
  });
  return {
    gatewayClasses: [
      {
        name: 'ingress-ts',
        generation: 1,
        conditions: [condition('Accepted')],
        supportedFeatures: ['Gateway'],
      },
    ],
    gateways: [
      {
        namespace: 'infra',
        name: 'edge',
        generation: 1,
        conditions: [condition('Accepted'), condition('Programmed')],
        listeners: [
          {
            name: 'http',
            supportedKinds: [{ group: GATEWAY_GROUP, kind: 'HTTPRoute' }],
            attachedRoutes: routes,
            conditions: [condition('Accepted'), condition('Programmed')],
          },
        ],
      },
    ],
    httpRoutes: Array.from({ length: routes }, (_, i) => ({
      namespace: `team-${i % 50}`,
      name: `route-${i}`,
      generation: 1,
      parents: [
        {
          parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', namespace: 'infra', name: 'edge' },
          conditions: [condition('Accepted'), condition('ResolvedRefs')],
        },
      ],
    })),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      routes: { type: 'string', default: '1000' },
      latency: { type: 'string', default: '0' },
      rounds: { type: 'string', default: '3' },
    },
  });
  const setup: Setup = { routes: Number(values.routes), latency: Number(values.latency) };
  const worker = new Worker(new URL(import.meta.url), { workerData: setup });
  const next = () => new Promise<{ url: string }>((resolve) => worker.once('message', resolve));
  let { url } = await next();
  const { KubeConfig } = await import('@kubernetes/client-node');
  console.log(
    `${setup.routes} HTTPRoutes + 1 Gateway + 1 GatewayClass, latency ${setup.latency} ms, ${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log('| in flight | round | wall ms | main-thread CPU ms | writes |');
  console.log('|---|---|---|---|---|');
  const status = report(setup.routes);
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const inFlight of [1, STATUS_WRITES_IN_FLIGHT]) {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromOptions({
        clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
        users: [{ name: 'fake', token: 'fake-token' }],
        contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
        currentContext: 'fake',
      });
      let writes = 0;
      const writer = createGatewayStatusWriter({
        kubeConfig,
        controllerName: OURS,
        addresses: () => [{ ip: '10.0.0.1' }],
        isLeader: () => true,
        inFlight,
        onWritten: () => writes++,
        onError: (object, error) => console.error(object, error),
      });
      // what the watch delivered: the objects without status (so every one is read and written)
      const snapshot = {
        ...EMPTY_SNAPSHOT,
        gatewayClasses: [],
        gateways: [],
        httpRoutes: objects(setup.routes).filter((o) => o.kind === 'HTTPRoute') as ModelObject[],
        referenceGrants: [],
        namespaces: [],
      };
      const cpu = process.threadCpuUsage();
      const start = performance.now();
      await writer.update(snapshot, status);
      const wall = performance.now() - start;
      const used = process.threadCpuUsage(cpu);
      console.log(
        `| ${inFlight} | ${round} | ${wall.toFixed(0)} | ${((used.user + used.system) / 1000).toFixed(0)} | ${writes} |`,
      );
      worker.postMessage('reset');
      ({ url } = await next());
    }
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  worker.postMessage('close');
}

if (isMainThread) await main();
else await serve(workerData as Setup);
