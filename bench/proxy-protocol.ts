// The per-connection cost of use-proxy-protocol: CPU ns per PROXY header parse (v1 TCP4 / TCP6, v2
// TCP4 / TCP6 with TLVs), then short connections through a running ingress-ts (one data-plane thread,
// in this process, with its own 404 answering: no upstream) with the key off and on, in interleaved
// rounds, sent by a client in a child process: connections/s, and the CPU µs of this process (ingress-ts
// alone) per connection. CPU figures hold on a loaded machine; connections/s do not, so the load
// average is printed with them. Run with `node bench/proxy-protocol.ts [--connections N] [--rounds N]`.

import { spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseFlags } from '../lib/config/flags.ts';
import { runtimeSwapped } from '../lib/dataplane/events.ts';
import { encodeProxyV1, encodeProxyV2, parseProxyHeader } from '../lib/dataplane/listening/proxy-protocol.ts';
import { createLogger } from '../lib/log.ts';
import { start } from '../lib/main.ts';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    // the child's part: connect to this port, send this (hex) first chunk
    'client-port': { type: 'string' },
    first: { type: 'string' },
  },
});
const CONNECTIONS = Number(values.connections);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);

/** One connection: the first chunk, read to the close; resolves with whether a 404 came back. */
const oneConnection = (port: number, first: Buffer) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1', 0, 12);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer.startsWith('HTTP/1.1 404')));
    socket.end(first);
  });

if (values['client-port'] !== undefined) {
  // the child: CONNECTIONS connections, CONCURRENCY at a time; prints seconds and failures
  const port = Number(values['client-port']);
  const first = Buffer.from(values.first ?? '', 'hex');
  let left = CONNECTIONS;
  let failed = 0;
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (left-- > 0) if (!(await oneConnection(port, first))) failed++;
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  process.stdout.write(JSON.stringify({ seconds: Number(process.hrtime.bigint() - started) / 1e9, failed }));
  process.exit(0);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const cpuNs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) * 1000;
};

// 1. the parse alone
const client = { address: '203.0.113.7', port: 50000 };
const front = { address: '10.0.0.1', port: 443 };
const six = encodeProxyV2({ address: '2001:db8::42', port: 1234 }, { address: '2001:db8::1', port: 443 });
const tlvs = Buffer.from([
  0xea,
  0x00,
  0x16,
  0x01,
  ...Buffer.from('vpce-0123456789abcdef0'),
  0x04,
  0x00,
  0x00,
]);
const sixTlv = Buffer.concat([
  six.subarray(0, 14),
  Buffer.from([0, 36 + tlvs.length]),
  six.subarray(16),
  tlvs,
]);
const request = Buffer.from('GET / HTTP/1.1\r\nHost: nowhere.test\r\nConnection: close\r\n\r\n');
const headers: [string, Buffer][] = [
  ['v1 TCP4', encodeProxyV1(client, front)],
  ['v1 TCP6', encodeProxyV1({ address: '2001:db8::42', port: 1234 }, { address: '2001:db8::1', port: 443 })],
  ['v2 TCP4', encodeProxyV2(client, front)],
  ['v2 TCP6 + 2 TLVs', sixTlv],
];
const parseRows: string[] = [];
for (const [name, header] of headers) {
  // as a socket delivers it: the header and the request in one chunk
  const chunk = Buffer.concat([header, request]);
  const n = 200_000;
  const rounds: number[] = [];
  let sink = 0;
  for (let r = 0; r < 7; r++) {
    const before = cpuNs();
    for (let i = 0; i < n; i++) {
      const parsed = parseProxyHeader(chunk);
      if (parsed.kind === 'header') sink += parsed.length;
    }
    rounds.push((cpuNs() - before) / n);
  }
  if (sink === 0) throw new Error('nothing parsed');
  parseRows.push(`| ${name} | ${header.length} | ${median(rounds).toFixed(0)} |`);
}

// 2. connections through ingress-ts, the key off and on
const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-bench-pp-'));
const ingressClass = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: ingress-ts }
spec: { controller: ingress-ts.dev/controller }
`;
const configMap = (on: boolean) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: { worker-processes: "1", use-proxy-protocol: "${on}" }
`;
await writeFile(join(dir, 'class.yaml'), ingressClass);
await writeFile(join(dir, 'config.yaml'), configMap(false));
const parsed = parseFlags([
  '--manifests',
  dir,
  '--http-port',
  '0',
  '--https-port',
  '0',
  '--healthz-port',
  '0',
  '--bind-address',
  '127.0.0.1',
  '--configmap',
  'ingress/ingress-ts',
]);
if (parsed.kind !== 'run') throw new Error('flags');
const controller = await start(parsed.config, createLogger('silent'));
const port = controller.http.port;

let current = false;
const swapTo = async (on: boolean) => {
  if (on === current) return;
  current = on;
  const swapped = new Promise<void>((resolve) => {
    const onSwap = () => {
      unsubscribe(runtimeSwapped.name, onSwap);
      resolve();
    };
    subscribe(runtimeSwapped.name, onSwap);
  });
  await writeFile(join(dir, 'config.yaml'), configMap(on));
  await swapped;
};

const round = async (first: Buffer) => {
  const cpu = process.cpuUsage();
  const child = spawn(
    process.execPath,
    [
      fileURLToPath(import.meta.url),
      '--client-port',
      String(port),
      '--first',
      first.toString('hex'),
      '--connections',
      String(CONNECTIONS),
      '--concurrency',
      String(CONCURRENCY),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  const used = process.cpuUsage(cpu);
  const { seconds, failed } = JSON.parse(out) as { seconds: number; failed: number };
  if (failed > 0) throw new Error(`${failed} connections got no 404`);
  return { perSecond: CONNECTIONS / seconds, cpuUs: (used.user + used.system) / CONNECTIONS };
};

const plain = request;
const withHeader = Buffer.concat([encodeProxyV1(client, front), request]);
const withV2 = Buffer.concat([encodeProxyV2(client, front), request]);
const results: Record<string, { perSecond: number[]; cpuUs: number[] }> = {
  off: { perSecond: [], cpuUs: [] },
  'on, v1': { perSecond: [], cpuUs: [] },
  'on, v2': { perSecond: [], cpuUs: [] },
};
const record = (name: string, r: { perSecond: number; cpuUs: number }) => {
  results[name]?.perSecond.push(r.perSecond);
  results[name]?.cpuUs.push(r.cpuUs);
};
await round(plain); // warm-up
// a swap leaves work behind (the old runtime's collection, the report): an unrecorded round after
// each swap takes it, so that no mode pays for the swap before it; v1 and v2 take turns going first
for (let r = 0; r < ROUNDS; r++) {
  await swapTo(false);
  await round(plain);
  record('off', await round(plain));
  await swapTo(true);
  await round(withV2);
  const order: [string, Buffer][] = [
    ['on, v1', withHeader],
    ['on, v2', withV2],
  ];
  if (r % 2 === 1) order.reverse();
  for (const [name, first] of order) record(name, await round(first));
}
await controller.stop(0);
await rm(dir, { recursive: true, force: true });

const rows = Object.entries(results).map(
  ([name, r]) => `| ${name} | ${median(r.perSecond).toFixed(0)} | ${median(r.cpuUs).toFixed(1)} |`,
);
process.stdout.write(`# PROXY protocol: cost per connection

- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, node ${process.version}, ${cpus()[0]?.model ?? '?'} × ${cpus().length}; load average at the end ${(loadavg()[0] ?? Number.NaN).toFixed(2)}

## parseProxyHeader (thread CPU, median of 7 × 200,000; the header followed by a request in one chunk)

| header | bytes | ns per parse |
|---|---|---|
${parseRows.join('\n')}

## Short connections through ingress-ts (one thread; [header +] GET, 404 from ingress-ts, close)

${CONNECTIONS} connections × ${ROUNDS} rounds per mode, ${CONCURRENCY} at a time from a child process,
interleaved; medians. CPU: the ingress-ts process alone (user + system) per connection; it idles
between rounds, so the child's start-up adds a little to each mode alike.

| use-proxy-protocol | connections/s | CPU µs per connection |
|---|---|---|
${rows.join('\n')}
`);
