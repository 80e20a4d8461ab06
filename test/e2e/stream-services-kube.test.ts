// TCP services in Kubernetes mode, through the fake API server: --watch-namespace e2e with the
// --tcp-services-configmap in another namespace (watched for it), created after the start (a
// missing ConfigMap is still a reference: creating it opens the port), an EndpointSlice change that
// moves new streams to another backend, and the ConfigMap's deletion closing the port.

import { once } from 'node:events';
import { type AddressInfo, createServer, connect as netConnect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0 } from '../support/http.ts';
import { nextSwap } from '../support/swaps.ts';
import { testThreadsKube } from '../support/threads.ts';

t.setTimeout(120_000); // a controller and an API server start: slow on a loaded machine

async function tcpBackend(t: Test, name: string): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => socket.write(`${name}:${chunk.toString('latin1')}`));
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One exchange on a new connection: what comes back, or the error code. */
function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = netConnect({ port, host: '127.0.0.1' });
    const done = (result: string) => {
      socket.destroy();
      resolve(result);
    };
    socket.once('connect', () => socket.write(text));
    socket.once('data', (chunk: Buffer) => done(chunk.toString('latin1')));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
    socket.once('close', () => done('closed'));
  });
}

const slice = (port: number): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'db-1', namespace: 'e2e', labels: { 'kubernetes.io/service-name': 'db' } },
  addressType: 'IPv4',
  ports: [{ name: 'pg', port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});

const tcpMap = (port: number): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'tcp-services', namespace: 'edge' },
  data: { [String(port)]: 'e2e/db:pg' },
});

t.test('Kubernetes mode: the TCP services ConfigMap is watched in its namespace', async (t) => {
  const first = await tcpBackend(t, 'first');
  const second = await tcpBackend(t, 'second');
  const port = await freePort();
  const threads = testThreadsKube([]);
  const api = await startFakeApiServer({
    objects: [
      ...threads.objects,
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'db', namespace: 'e2e' },
        spec: { ports: [{ name: 'pg', port: 5432, targetPort: 'pg', protocol: 'TCP' }] },
      },
      slice(first),
    ],
  });
  t.teardown(() => api.close());
  const parsed = parseFlags([
    '--kubeconfig',
    await api.writeKubeconfig(),
    ...LOOPBACK_PORT_0,
    '--watch-namespace',
    'e2e',
    '--tcp-services-configmap',
    'edge/tcp-services',
    ...threads.flags,
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const controller: Controller = await start(parsed.config, createLogger('silent'));
  t.teardown(() => controller.stop(0));
  const settled = async () => {
    if (controller.threads === 1) await controller.dataPlane.streamsSettled();
  };

  t.equal(await exchange(port, 'x'), 'ECONNREFUSED', 'no ConfigMap yet: nothing listens');
  let swapped = nextSwap();
  api.apply(tcpMap(port));
  await swapped;
  await settled();
  t.equal(await exchange(port, 'hello'), 'first:hello', 'the ConfigMap created: the port serves');

  swapped = nextSwap();
  api.apply(slice(second));
  t.match(await swapped, { kind: 'endpoints' }, 'an endpoints-only change');
  await settled();
  t.equal(await exchange(port, 'hello'), 'second:hello', 'new streams go to the new endpoint');

  swapped = nextSwap();
  api.remove({ kind: 'ConfigMap', namespace: 'edge', name: 'tcp-services' });
  await swapped;
  await settled();
  t.equal(await exchange(port, 'x'), 'ECONNREFUSED', 'the ConfigMap deleted: the port closed');
});
