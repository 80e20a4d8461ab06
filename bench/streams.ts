// TCP and UDP services: the CPU the relay adds, in one process (client, backend and one data plane on
// its main thread, all on loopback). Each workload runs directly against the backend and through
// the data plane, interleaved; the difference of process CPU time is the relay's cost:
// - TCP streams: connect, one 64-byte exchange, close (accept + upstream connect + pipes + close);
// - TCP bytes: one stream carrying 128 MiB one way to a backend that discards it;
// - UDP datagrams: request/response round trips in one session (proxy-stream-responses 0).
// Usage: node bench/streams.ts [--rounds 3]. Prints a table; nothing is written.

import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { buildModel, type KubeObject, type Snapshot } from '../lib/model/index.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const rounds = Number(values.rounds);
const STREAMS = 2000;
const BYTES = 128 * 2 ** 20;
const DATAGRAMS = 20_000;

const tcpEcho = createServer((socket) =>
  socket.on('data', (chunk) => socket.write(chunk)).on('error', () => {}),
);
tcpEcho.listen(0, '127.0.0.1');
await once(tcpEcho, 'listening');
const tcpSink = createServer((socket) => socket.on('data', () => {}).on('error', () => {}));
tcpSink.listen(0, '127.0.0.1');
await once(tcpSink, 'listening');
const udpEcho = createSocket('udp4');
udpEcho.on('message', (message, from) => udpEcho.send(message, from.port, from.address));
udpEcho.bind(0, '127.0.0.1');
await once(udpEcho, 'listening');
const portOf = (server: { address(): unknown }) => (server.address() as AddressInfo).port;

// ports for the data plane: taken from the kernel, released
async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = portOf(s);
  await new Promise((resolve) => s.close(resolve));
  return port;
}
const [echoPort, sinkPort, udpPort] = [await freePort(), await freePort(), await freePort()];

const slice = (name: string, port: number, protocol: string): KubeObject =>
  ({
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'b', labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    ports: [{ name: 'p', port, protocol }],
    endpoints: [{ addresses: ['127.0.0.1'] }],
  }) as KubeObject;
const service = (name: string, protocol: string): KubeObject =>
  ({
    kind: 'Service',
    metadata: { name, namespace: 'b' },
    spec: { ports: [{ name: 'p', port: 1, targetPort: 'p', protocol }] },
  }) as KubeObject;
const map = (name: string, data: Record<string, string>): KubeObject =>
  ({ kind: 'ConfigMap', metadata: { name, namespace: 'b' }, data }) as KubeObject;
const snapshot = {
  ingresses: [],
  ingressClasses: [],
  services: [service('echo', 'TCP'), service('sink', 'TCP'), service('udp', 'UDP')],
  endpointSlices: [
    slice('echo', portOf(tcpEcho), 'TCP'),
    slice('sink', portOf(tcpSink), 'TCP'),
    slice('udp', udpEcho.address().port, 'UDP'),
  ],
  secrets: [],
  configMaps: [
    map('tcp', { [String(echoPort)]: 'b/echo:p', [String(sinkPort)]: 'b/sink:p' }),
    map('udp', { [String(udpPort)]: 'b/udp:p' }),
    map('config', { 'proxy-stream-responses': '0' }),
  ],
} as unknown as Snapshot;
const { model, diagnostics } = buildModel(snapshot, {
  configMap: 'b/config',
  tcpServicesConfigMap: 'b/tcp',
  udpServicesConfigMap: 'b/udp',
});
if (diagnostics.length > 0) throw new Error(JSON.stringify(diagnostics));
const plane = new DataPlane({
  httpPort: 0,
  httpsPort: 0,
  bindAddress: '127.0.0.1',
  generatedDefaultCertificate: await generateDefaultCertificate(),
});
plane.swap(model);
await plane.listen();

async function streams(port: number): Promise<void> {
  const message = Buffer.alloc(64, 120);
  for (let i = 0; i < STREAMS; i++) {
    const socket = connect({ port, host: '127.0.0.1' });
    await once(socket, 'connect');
    socket.write(message);
    await once(socket, 'data');
    socket.destroy();
  }
}

async function bytes(port: number): Promise<void> {
  const socket = connect({ port, host: '127.0.0.1' });
  await once(socket, 'connect');
  const chunk = Buffer.alloc(64 * 1024, 120);
  for (let sent = 0; sent < BYTES; sent += chunk.length) {
    if (!socket.write(chunk)) await once(socket, 'drain');
  }
  socket.end();
  await once(socket, 'close');
}

async function datagrams(port: number): Promise<void> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  for (let i = 0; i < DATAGRAMS; i++) {
    const reply = once(socket, 'message');
    socket.send('ping', port, '127.0.0.1');
    await reply;
  }
  socket.close();
}

async function cpuMs(run: () => Promise<void>): Promise<number> {
  const start = process.cpuUsage();
  await run();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

const workloads = [
  {
    name: 'TCP stream (connect, 64 B echo, close)',
    unit: 'µs/stream',
    per: STREAMS,
    direct: portOf(tcpEcho),
    proxied: echoPort,
    run: streams,
    scale: 1000,
  },
  {
    name: `TCP bytes (${BYTES / 2 ** 20} MiB one way)`,
    unit: 'ms/GiB',
    per: BYTES / 2 ** 30,
    direct: portOf(tcpSink),
    proxied: sinkPort,
    run: bytes,
    scale: 1,
  },
  {
    name: 'UDP datagram round trip',
    unit: 'µs/datagram',
    per: DATAGRAMS,
    direct: udpEcho.address().port,
    proxied: udpPort,
    run: datagrams,
    scale: 1000,
  },
];
console.log(
  `load average ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, ${rounds} rounds`,
);
console.log('| workload | direct | through ingress-ts | added by the relay |');
console.log('|---|---|---|---|');
for (const w of workloads) {
  const direct: number[] = [];
  const proxied: number[] = [];
  for (let r = 0; r < rounds; r++) {
    direct.push(await cpuMs(() => w.run(w.direct)));
    proxied.push(await cpuMs(() => w.run(w.proxied)));
  }
  const median = (list: number[]) => list.toSorted((a, b) => a - b)[Math.floor(list.length / 2)] as number;
  const d = (median(direct) * w.scale) / w.per;
  const p = (median(proxied) * w.scale) / w.per;
  console.log(
    `| ${w.name} | ${d.toFixed(1)} ${w.unit} | ${p.toFixed(1)} ${w.unit} | ${(p - d).toFixed(1)} ${w.unit} |`,
  );
}
await plane.close(0);
tcpEcho.close();
tcpSink.close();
udpEcho.close();
