// Young generation per data-plane thread: RSS after load against CPU per request, for a few sizes of
// the threads' young generation (INGRESS_TS_THREAD_YOUNG_GENERATION_MB, lib/dataplane/worker/thread-heap.ts).
// One ingress-ts process per size, all started at once with ConfigMap `worker-processes` --threads
// (one Ingress, the access log to a file, metrics scraped), pinned to cores 0,1 as threads-bench.ts
// pins ×2, with wrk and the upstream NGINX on core 1. The sizes run in interleaved rounds (size A, B,
// C, …, A, B, …), so a machine loaded by other work weighs on each alike; CPU per request is
// utime+stime of the whole process (every thread) over a run ÷ its requests. RSS is read idle,
// after every run, and at the end; then each process is sent a stream of changes (one Ingress
// more each, applied when its host answers) and its main thread's heap is read through the
// inspector: with N > 1 the main thread serves no request, so its heap should stay small.
// Run with `node bench/thread-young-gen.ts [flags]` (see --help).

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { YOUNG_GENERATION_ENV } from '../lib/dataplane/worker/thread-heap.ts';
import {
  cleanup,
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  log,
  makeTempDir,
  median,
  probe,
  rssKiB,
  type Started,
  sleep,
  stopProcess,
  waitFor,
} from './support/harness.ts';
import { benchPath, plainManifests, startIngressTs } from './support/ingress-ts.ts';
import { type Inspector, type MemoryInside, memoryInside, openInspector } from './support/inspector.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { scrapedWhile, wrk, wrkCommands } from './support/wrk.ts';

const HOST = 'young.test';
const SCRAPE_MS = 5000;

interface Options {
  sizes: string[];
  threads: number;
  rounds: number;
  duration: number;
  warmup: number;
  changes: number;
  connections: number;
  out: string | null;
}

const USAGE = `Usage: node bench/thread-young-gen.ts [--sizes LIST] [--threads N] [--rounds N] [--duration S] [--warmup S] [--changes N] [--out FILE]
  --sizes LIST     young generation sizes in MiB, 0 for V8's own sizing [0,48,24,12]
  --threads N      worker-processes (2-16) [2]
  --rounds N       interleaved rounds (1-30) [5]
  --duration S     seconds per wrk run (1-60) [8]
  --warmup S       unrecorded seconds per process first (1-120) [5]
  --changes N      changes streamed to each process after the rounds (0-200) [30]
  --connections C  wrk connections [64]
  --out FILE       also write the report to FILE
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    sizes: ['0', '48', '24', '12'],
    threads: 2,
    rounds: 5,
    duration: 8,
    warmup: 5,
    changes: 30,
    connections: 64,
    out: null,
  };
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--sizes')
      options.sizes = (args[++i] ?? '').split(',').map((n) => String(bounded(arg, n, 0, 4096)));
    else if (arg === '--threads') options.threads = bounded(arg, args[++i], 2, 16);
    else if (arg === '--rounds') options.rounds = bounded(arg, args[++i], 1, 30);
    else if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 1, 120);
    else if (arg === '--changes') options.changes = bounded(arg, args[++i], 0, 200);
    else if (arg === '--connections') options.connections = bounded(arg, args[++i], 1, 4096);
    else if (arg === '--out') options.out = resolve(args[++i] ?? fail(2, '--out expects a file'));
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  return options;
}

const mib = (kib: number | null) => (kib === null ? 'n/a' : fixed(kib / 1024, 1));
const mibB = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : fixed(bytes / 2 ** 20, 1));
const label = (size: string) => (size === '0' ? "V8's default" : `${size} MiB`);

interface Contender {
  size: string;
  port: number;
  healthz: number;
  manifests: string;
  started: Started;
  command: string;
  cpu: number[];
  rps: number[];
  rssIdle: number | null;
  rssRuns: Array<number | null>;
  gc: GcCount[];
}

/** The collections of one run, every thread's: how many of each kind, and their pauses, ms. */
interface GcCount {
  requests: number;
  scavenges: number;
  markCompacts: number;
  pauseMs: number;
}

const GC_LINE = /ms: (Scavenge|Mark-Compact|Minor Mark-Sweep)\b.*?, ([\d.]+) \/ [\d.]+ ms/;

/** The --trace-gc lines printed since `from`, counted. */
function countGc(output: readonly string[], from: number, requests: number): GcCount {
  const count: GcCount = { requests, scavenges: 0, markCompacts: 0, pauseMs: 0 };
  for (let i = from; i < output.length; i++) {
    const match = GC_LINE.exec(output[i] as string);
    if (match === null) continue;
    if (match[1] === 'Mark-Compact') count.markCompacts++;
    else count.scavenges++;
    count.pauseMs += Number(match[2]);
  }
  return count;
}

/** Per 10,000 requests over every run of a contender: scavenges, mark-compacts, pause ms. */
function gcCells(counts: readonly GcCount[]): string {
  const sum = counts.reduce(
    (a, c) => ({
      requests: a.requests + c.requests,
      scavenges: a.scavenges + c.scavenges,
      markCompacts: a.markCompacts + c.markCompacts,
      pauseMs: a.pauseMs + c.pauseMs,
    }),
    { requests: 0, scavenges: 0, markCompacts: 0, pauseMs: 0 },
  );
  const per = (n: number) => fixed((n / sum.requests) * 10000, 2);
  return `${per(sum.scavenges)} | ${per(sum.markCompacts)} | ${per(sum.pauseMs)}`;
}

async function startContender(
  dir: string,
  upstreamPort: number,
  size: string,
  threads: number,
): Promise<Contender> {
  const name = `young-${size}`;
  const manifests = join(dir, name);
  mkdirSync(manifests, { recursive: true });
  const configMap = {
    'worker-processes': String(threads),
    'access-log-path': join(dir, `${name}-access.log`),
  };
  writeFileSync(join(manifests, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const { started, command } = await startIngressTs({
    manifestsDir: manifests,
    ports,
    logLevel: 'warn',
    // every isolate's collections, one line each: counted per request, they do not depend on the load
    nodeFlags: ['--inspect-port=127.0.0.1:0', '--trace-gc'],
    args: ['--configmap', 'bench/ingress-ts'],
    readyHost: HOST,
    cores: '0,1',
    readyTimeoutMs: 30000,
    env: { [YOUNG_GENERATION_ENV]: size },
  });
  return {
    size,
    port: ports.http,
    healthz: ports.healthz,
    manifests,
    started,
    command: `${YOUNG_GENERATION_ENV}=${size} ${command}`,
    cpu: [],
    rps: [],
    rssIdle: null,
    rssRuns: [],
    gc: [],
  };
}

/** One wrk run against `c` with /metrics scraped every SCRAPE_MS, as a Prometheus would. */
async function load(c: Contender, seconds: number, options: Options) {
  return scrapedWhile(c.healthz, SCRAPE_MS, () =>
    wrk(`http://127.0.0.1:${c.port}/`, options.connections, seconds, HOST, () => [c.started.pid]),
  );
}

/** `count` changes, each one more Ingress (a host of its own), each waited for until its host answers. */
async function changeStream(c: Contender, count: number): Promise<void> {
  for (let k = 0; k < count; k++) {
    const host = `change-${k}.young.test`;
    const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: change-${k}
  namespace: bench
spec:
  ingressClassName: ingress-ts
  rules:
    - host: ${host}
      http:
        paths:
${benchPath('/')}
`;
    writeFileSync(join(c.manifests, `change-${k}.yaml`), ingress);
    await waitFor(
      `change ${k} of ${c.size}`,
      async () => (await probe(c.port, false, '/', host))?.status === 200,
      30000,
      50,
    );
  }
}

interface MainHeap {
  rss: number | null;
  inside: MemoryInside;
}

async function mainHeap(c: Contender, inspector: Inspector): Promise<MainHeap> {
  return { rss: rssKiB(c.started.pid), inside: await memoryInside(inspector) };
}

const heapCells = (h: MainHeap) =>
  `${mib(h.rss)} | ${mibB(h.inside.heapUsed)} | ${mibB(h.inside.heapTotal)} | ${mibB(h.inside.spaces.new_space?.size)}`;

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  initHarness('thread-young-gen', 60 * 60 * 1000);
  ensureTools();
  if (cpus().length < 2) fail(3, 'needs 2 cores');
  const dir = makeTempDir('ingress-ts-young-gen-');
  const upstreamPort = await freePort();
  const prefix = join(dir, 'upstream');
  const upstream = await startNginx(prefix, upstreamConf(prefix, dir, [upstreamPort]), 1);
  const contenders: Contender[] = [];
  for (const size of options.sizes)
    contenders.push(await startContender(dir, upstreamPort, size, options.threads));
  await sleep(3000);
  for (const c of contenders) c.rssIdle = rssKiB(c.started.pid);
  for (const c of contenders) await load(c, options.warmup, options);
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of contenders) {
      const from = c.started.output.length;
      const r = await load(c, options.duration, options);
      c.gc.push(countGc(c.started.output, from, r.requests));
      c.cpu.push(r.cpuUsPerReq ?? Number.NaN);
      c.rps.push(r.rps);
      c.rssRuns.push(rssKiB(c.started.pid));
      log(
        `round ${round} ${label(c.size)}: ${int(r.rps)} req/s, ${fixed(r.cpuUsPerReq ?? Number.NaN, 1)} µs CPU/req, RSS ${mib(rssKiB(c.started.pid))} MiB`,
      );
    }
  }
  const baseline = contenders[0]!;
  const loadRows: string[] = [];
  const heapRows: string[] = [];
  for (const c of contenders) {
    const ratio = median(c.cpu.map((us, k) => us / baseline.cpu[k]!));
    const after = c.rssRuns.at(-1) ?? null;
    const perThread =
      after === null || c.rssIdle === null ? Number.NaN : (after - c.rssIdle) / 1024 / options.threads;
    loadRows.push(
      `| ${label(c.size)} | ${fixed(median(c.cpu), 1)} | ${c.cpu.map((v) => fixed(v, 1)).join(' / ')} | ${fixed(ratio, 3)} | ${int(median(c.rps))} | ${mib(c.rssIdle)} | ${c.rssRuns.map(mib).join(' / ')} | ${fixed(perThread, 1)} | ${gcCells(c.gc)} |`,
    );
    const inspector = await openInspector(c.started);
    const afterLoad = await mainHeap(c, inspector);
    await changeStream(c, options.changes);
    await sleep(1000);
    const afterChanges = await mainHeap(c, inspector);
    await inspector.collectGarbage();
    await sleep(1000);
    const collected = await mainHeap(c, inspector);
    inspector.close();
    heapRows.push(
      `| ${label(c.size)} | ${heapCells(afterLoad)} | ${heapCells(afterChanges)} | ${heapCells(collected)} |`,
    );
    log(
      `${label(c.size)}: main heap used after load ${mibB(afterLoad.inside.heapUsed)} MiB, after changes ${mibB(afterChanges.inside.heapUsed)} MiB`,
    );
    await stopProcess(c.started, 'SIGINT', 15000);
  }
  await stopProcess(upstream, 'SIGQUIT');
  const cpu = cpus();
  const report = `# Young generation per data-plane thread: RSS after load and CPU per request

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; 1-minute load average at the end: ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- node: ${process.version}
- one ingress-ts per size, \`worker-processes: ${options.threads}\`, pinned to cores 0,1; wrk -c${options.connections} and the upstream NGINX (1 KiB) on core 1; /metrics scraped every ${SCRAPE_MS / 1000} s; access log to a file
- ${options.warmup} s warm-up each, then ${options.rounds} interleaved rounds of ${options.duration} s; CPU is the process's (all threads) utime+stime ÷ requests; "× first" is the median of the per-round quotients against the first size of the same round
- collections: every isolate's, from \`--trace-gc\` (one line each), summed over the recorded runs; a pause is the main-thread time V8 reports for it (wall time: a busy machine lengthens it, the counts do not change)
- RSS is VmRSS of the whole process; per thread after load = (RSS after the last round − RSS idle) ÷ threads

Commands:

\`\`\`sh
${contenders.map((c) => c.command).join('\n')}
${wrkCommands.join('\n')}
\`\`\`

## Under load

| young generation | CPU µs/req (median) | per round | × first (median) | req/s (median) | RSS MiB idle | RSS MiB after each round | growth per thread MiB | scavenges per 10k requests | mark-compacts per 10k | GC pause ms per 10k |
|---|--:|---|--:|--:|--:|---|--:|--:|--:|--:|
${loadRows.join('\n')}

## The main thread (controller only) after the load and after ${options.changes} changes

Each cell group: RSS MiB | main thread heapUsed MiB | heapTotal MiB | new space MiB.

| young generation | after load: RSS | used | total | new | after changes: RSS | used | total | new | after 2 full GCs: RSS | used | total | new |
|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
${heapRows.join('\n')}
`;
  process.stdout.write(report);
  if (options.out !== null) writeFileSync(options.out, report);
  cleanup();
}

if (import.meta.main) await main();
