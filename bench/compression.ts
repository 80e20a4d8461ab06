// Response compression (use-gzip / enable-brotli): the CPU a proxied request costs ingress-ts with
// compression off, gzip level 1 and 5 and brotli 4, and the bytes it saves, for HTML and JSON bodies
// of 1, 10 and 100 KiB. ingress-ts runs in this process on one data-plane thread; the upstream and the
// client are child processes (this same script), so the process's CPU time (every thread: zlib runs
// in libuv's pool) is ingress-ts's alone. Rounds interleave the variants, so a change of the machine's
// load hits them alike; the medians are reported.
//
//   node bench/compression.ts [--requests 2000] [--rounds 3] [--no-write]

import { type ChildProcess, spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { parseFlags } from '../lib/config/flags.ts';
import { runtimeSwapped } from '../lib/dataplane/events.ts';
import { createLogger } from '../lib/log.ts';
import { start } from '../lib/main.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    'no-write': { type: 'boolean', default: false },
    upstream: { type: 'boolean', default: false },
    'client-port': { type: 'string' },
    path: { type: 'string' },
    accept: { type: 'string' },
  },
});

/** Text that compresses like a real page: markup repeats, names, prices and ids do not. */
function html(size: number): string {
  let seed = 7;
  const next = () => {
    seed = (seed * 48271) % 2147483647;
    return seed;
  };
  const words = [
    'alpine',
    'harbor',
    'cobalt',
    'meadow',
    'quartz',
    'ember',
    'willow',
    'summit',
    'delta',
    'orchid',
  ];
  let out = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Catalogue</title>';
  out +=
    '<link rel="stylesheet" href="/static/site.css"></head><body><main class="catalogue"><ul class="items">';
  while (out.length < size) {
    const id = next() % 100000;
    const name = `${words[next() % 10]} ${words[next() % 10]}`;
    out += `<li class="item" data-id="${id}"><a href="/products/${id}">${name}</a>`;
    out += `<span class="price">${(next() % 10000) / 100} EUR</span><span class="stock">${next() % 50} left</span></li>`;
  }
  return out.slice(0, size);
}

function json(size: number): string {
  let seed = 11;
  const next = () => {
    seed = (seed * 48271) % 2147483647;
    return seed;
  };
  const items: unknown[] = [];
  let length = 2;
  while (length < size) {
    const item = {
      id: next() % 1000000,
      sku: `SKU-${(next() % 1e8).toString(36).toUpperCase()}`,
      name: `item ${next() % 9999}`,
      price: (next() % 100000) / 100,
      tags: ['new', 'sale', 'eco'].slice(0, next() % 4),
      available: next() % 2 === 0,
    };
    items.push(item);
    length += JSON.stringify(item).length + 1;
  }
  return `${JSON.stringify(items)
    .slice(0, size - 2)
    .replace(/,?[^,]*$/, '')}]`;
}

const BODIES: ReadonlyArray<{ name: string; path: string; type: string; body: string }> = [
  { name: 'HTML 1 KiB', path: '/html-1k', type: 'text/html; charset=utf-8', body: html(1024) },
  { name: 'HTML 10 KiB', path: '/html-10k', type: 'text/html; charset=utf-8', body: html(10 * 1024) },
  { name: 'HTML 100 KiB', path: '/html-100k', type: 'text/html; charset=utf-8', body: html(100 * 1024) },
  { name: 'JSON 10 KiB', path: '/json-10k', type: 'application/json', body: json(10 * 1024) },
  { name: 'JSON 100 KiB', path: '/json-100k', type: 'application/json', body: json(100 * 1024) },
];

// --- the upstream: answers each path with its body and a Content-Length
if (values.upstream) {
  const byPath = new Map(BODIES.map((b) => [b.path, b]));
  const server = createServer((req, res) => {
    req.resume();
    const b = byPath.get(req.url ?? '');
    if (b === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': b.type, 'content-length': String(Buffer.byteLength(b.body)) });
    res.end(b.body);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
  await once(process, 'SIGTERM');
  process.exit(0);
}

// --- the client: N requests, `concurrency` keep-alive connections; body bytes as received
if (values['client-port'] !== undefined) {
  const port = Number(values['client-port']);
  const agent = new Agent({ keepAlive: true, maxSockets: Number(values.concurrency) });
  let left = Number(values.requests);
  let bytes = 0;
  let failed = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const headers: Record<string, string> = { host: 'bench.test' };
      if (values.accept !== '') headers['accept-encoding'] = values.accept ?? '';
      const req = request({ port, host: '127.0.0.1', path: values.path, headers, agent }, (res) => {
        if (res.statusCode !== 200) failed++;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', resolve);
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  const worker = async () => {
    while (left-- > 0) await one();
  };
  await Promise.all(Array.from({ length: Number(values.concurrency) }, worker));
  agent.destroy();
  process.stdout.write(JSON.stringify({ bytes, failed }));
  process.exit(0);
}

const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const SCRIPT = fileURLToPath(import.meta.url);

interface Variant {
  name: string;
  config: Record<string, string>;
  accept: string;
}
const VARIANTS: readonly Variant[] = [
  { name: 'off', config: {}, accept: 'gzip, deflate, br' },
  { name: 'gzip 1', config: { 'use-gzip': 'true', 'gzip-level': '1' }, accept: 'gzip, deflate' },
  { name: 'gzip 5', config: { 'use-gzip': 'true', 'gzip-level': '5' }, accept: 'gzip, deflate' },
  { name: 'brotli 4', config: { 'enable-brotli': 'true', 'brotli-level': '4' }, accept: 'gzip, deflate, br' },
];

const child = (args: string[]): ChildProcess =>
  spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
const output = async (p: ChildProcess): Promise<string> => {
  let out = '';
  p.stdout?.on('data', (c: Buffer) => {
    out += c.toString();
  });
  await once(p, 'exit');
  return out;
};

const upstream = child(['--upstream']);
const upstreamPort = await new Promise<number>((resolve) =>
  upstream.stdout?.once('data', (c: Buffer) => resolve(Number(c.toString().trim()))),
);

const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-bench-compression-'));
const manifests = (config: Record<string, string>) => `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: ingress-ts }
spec: { controller: ingress-ts.dev/controller }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify({ 'worker-processes': '1', 'disable-access-log': 'true', ...config })}
---
apiVersion: v1
kind: Service
metadata: { name: up, namespace: bench }
spec: { ports: [{ name: http, port: 80, targetPort: http }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: up-0, namespace: bench, labels: { kubernetes.io/service-name: up } }
addressType: IPv4
ports: [{ name: http, port: ${upstreamPort}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: up, namespace: bench }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: bench.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: up, port: { number: 80 } } } }] }
`;
await writeFile(join(dir, 'all.yaml'), manifests({}));
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
const controller = await start(parsed.config, createLogger('silent'), { accessLogStdout: { write() {} } });
const port = controller.http.port;

let current = manifests({});
const swapTo = async (variant: Variant) => {
  const text = manifests(variant.config);
  if (text === current) return;
  current = text;
  const swapped = new Promise<void>((resolve) => {
    const onSwap = () => {
      unsubscribe(runtimeSwapped.name, onSwap);
      resolve();
    };
    subscribe(runtimeSwapped.name, onSwap);
  });
  await writeFile(join(dir, 'all.yaml'), text);
  await swapped;
};

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** µs of this process's CPU per request and body bytes per request, for one variant and body. */
async function measure(variant: Variant, path: string): Promise<{ us: number; bytes: number }> {
  const client = child([
    '--client-port',
    String(port),
    '--path',
    path,
    '--accept',
    variant.accept,
    '--requests',
    String(REQUESTS),
    '--concurrency',
    String(values.concurrency),
  ]);
  const before = cpuUs();
  const result = JSON.parse(await output(client)) as { bytes: number; failed: number };
  const us = (cpuUs() - before) / REQUESTS;
  if (result.failed > 0) throw new Error(`${result.failed} requests failed (${variant.name} ${path})`);
  return { us, bytes: result.bytes / REQUESTS };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const samples = new Map<string, { us: number[]; bytes: number }>();
const loadBefore = loadavg();
// one warm-up pass, not counted
for (const variant of VARIANTS) {
  await swapTo(variant);
  for (const b of BODIES) await measure(variant, b.path);
}
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of VARIANTS) {
    await swapTo(variant);
    for (const b of BODIES) {
      const m = await measure(variant, b.path);
      const key = `${variant.name}|${b.name}`;
      const entry = samples.get(key) ?? { us: [], bytes: m.bytes };
      entry.us.push(m.us);
      samples.set(key, entry);
    }
  }
}
const loadAfter = loadavg();
await controller.stop(0);
upstream.kill('SIGTERM');
await rm(dir, { recursive: true, force: true });

// what the same body compresses to in one piece (no flush per upstream chunk), for comparison
const oneShot = (variant: Variant, body: string): number => {
  if (variant.name.startsWith('gzip'))
    return gzipSync(body, { level: Number(variant.config['gzip-level']) }).length;
  if (variant.name.startsWith('brotli'))
    return brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }).length;
  return Buffer.byteLength(body);
};

const lines: string[] = [];
const say = (line = '') => lines.push(line);
say(`# Response compression: CPU per request and bytes saved (${new Date().toISOString().slice(0, 10)})`);
say();
say(
  `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ${loadAfter.map((l) => l.toFixed(2)).join(' ')} after.`,
);
say(
  `ingress-ts in one process, one data-plane thread, access log off; upstream and client (${values.concurrency} keep-alive connections) in child processes. ${REQUESTS} requests per cell, median of ${ROUNDS} interleaved rounds. CPU: the ingress-ts process's user + system time (all its threads, so libuv's pool where zlib runs) per request.`,
);
say();
say('| body | variant | CPU µs / request | + over off | body bytes sent | saved | one-piece size |');
say('|---|---|---:|---:|---:|---:|---:|');
for (const b of BODIES) {
  const off = median(samples.get(`off|${b.name}`)?.us ?? [Number.NaN]);
  for (const variant of VARIANTS) {
    const s = samples.get(`${variant.name}|${b.name}`);
    if (s === undefined) continue;
    const us = median(s.us);
    const size = Buffer.byteLength(b.body);
    const saved = 1 - s.bytes / size;
    say(
      `| ${b.name} | ${variant.name} | ${us.toFixed(1)} | ${variant.name === 'off' ? '' : `+${(us - off).toFixed(1)}`} | ${Math.round(s.bytes)} | ${variant.name === 'off' ? '' : `${(saved * 100).toFixed(0)} %`} | ${variant.name === 'off' ? '' : oneShot(variant, b.body)} |`,
    );
  }
}
say();
say(
  '"body bytes sent" is what the client received per request (the compressed body, HTTP/1.1 chunk framing excluded); "one-piece size" is the same body compressed at once (gzipSync / brotliCompressSync): the difference is the cost of the flush after each upstream chunk.',
);
const report = `${lines.join('\n')}\n`;
process.stdout.write(report);
if (!values['no-write']) {
  const file = new URL(`results/compression-${new Date().toISOString().slice(0, 10)}.md`, import.meta.url);
  await writeFile(file, report);
}
process.exit(0);
