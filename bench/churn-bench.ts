// Configuration churn under load: 10,000 swaps of the data plane, alternating full and
// endpoints-only, while wrk -c64 sends requests through it; failed requests, memory (RSS, heap after
// a forced GC), open sockets and timers before and after, swaps per second.
//
// The swaps are driven in process: this script runs a DataPlane (lib/dataplane) itself and calls
// `swap(buildModel(snapshot).model)` 10,000 times, yielding to the event loop (setImmediate) after
// each swap so requests are served between them. A standalone ingress-ts reached through its
// manifests folder cannot go faster than its build scheduler (100 ms hold-off after a build) and
// file watcher: under 10 swaps/s, so 10,000 swaps would take over 15 min (proxy-bench.ts does 1,000 that
// way). The data plane and the swap are the same code; only the source (file watcher, scheduler,
// logging) is left out. The snapshots are test/support/churn.ts's four-step cycle: endpoints-only
// (a second EndpointSlice on the upstream's second port added), full (the path /extra added),
// endpoints-only (the second slice removed), full (/extra removed).
//
// Pinning as in the other benchmarks: this process (the data plane) on core 0, wrk and the NGINX
// upstream on core 1.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { buildModel } from '../lib/model/index.ts';
import { activeResources, CHURN_HOST, churnKind, churnSnapshot } from '../test/support/churn.ts';
import {
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  isPinned,
  log,
  makeTempDir,
  probe,
  REPO,
  sleep,
  stopProcess,
  version,
  waitFor,
} from './support/harness.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { errorsOf, errorText, startWrk, type WrkResult, wrk, wrkCommands } from './support/wrk.ts';

const USAGE = `usage: node --expose-gc bench/churn-bench.ts [--swaps N] [--no-write]

  --swaps N    swaps under load (default 10000; a multiple of 4, so the last configuration is the first)
  --no-write   print the report only, do not write bench/results/churn-YYYY-MM-DD.md
`;

const WATCHDOG_MS = 15 * 60 * 1000;
const CONNECTIONS = 64;
/** wrk without swaps before the churn: warms the JIT, the pools and the heap */
const WARMUP_SECONDS = 10;
/** wrk without swaps after the warm-up, before the *before* reading: RSS under this load reaches its
 * level first, so the growth measured is the swaps', not the first minute of traffic's */
const BASELINE_SECONDS = 60;
/** wrk's -d during the swaps; it is stopped with SIGINT after the last one */
const CHURN_WRK_MAX_SECONDS = 600;
/** how often RSS is sampled during the swaps */
const RSS_SAMPLE_MS = 100;

interface Options {
  swaps: number;
  out: string | null;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    swaps: 10_000,
    out: join(REPO, 'bench', 'results', `churn-${new Date().toISOString().slice(0, 10)}.md`),
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--no-write') options.out = null;
    else if (arg === '--swaps') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 4 || n % 4 !== 0)
        fail(2, `--swaps wants a multiple of 4 ≥ 4\n${USAGE}`);
      options.swaps = n;
    } else if (arg === '--help' || arg === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}

initHarness('churn-bench', WATCHDOG_MS);

const gc = (globalThis as { gc?: () => void }).gc;

/** Forced full GCs (when --expose-gc), then RSS and heap used, bytes. */
function memory(): { rss: number; heapUsed: number; heapTotal: number; external: number } {
  if (gc !== undefined) for (let i = 0; i < 3; i++) gc();
  const usage = process.memoryUsage();
  return {
    rss: usage.rss,
    heapUsed: gc === undefined ? Number.NaN : usage.heapUsed,
    heapTotal: usage.heapTotal,
    external: usage.external,
  };
}

/** Where the resident memory is, bytes: V8's heap by space, and the rest of /proc/self/smaps. */
interface MemoryMap {
  /** V8's committed pages by space (new, old, code, large_object, ...) */
  v8: Record<string, number>;
  /** the main thread's malloc arena ([heap]) */
  brk: number;
  /** anonymous mappings that are not V8's heap: other threads' malloc arenas, WebAssembly memory, ... */
  otherAnonymous: number;
  /** mapped files: the node binary, libraries */
  files: number;
}

function memoryMap(): MemoryMap {
  const v8: Record<string, number> = {};
  let v8Total = 0;
  for (const space of getHeapSpaceStatistics()) {
    v8[space.space_name.replace(/_space$/, '')] = space.physical_space_size;
    v8Total += space.physical_space_size;
  }
  let brk = 0;
  let anonymous = 0;
  let files = 0;
  let kind: 'brk' | 'anonymous' | 'file' = 'anonymous';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping !== null) {
      const name = mapping[1] ?? '';
      kind = name === '[heap]' ? 'brk' : name.startsWith('/') ? 'file' : 'anonymous';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss === null) continue;
    const bytes = Number(rss[1]) * 1024;
    if (kind === 'brk') brk += bytes;
    else if (kind === 'file') files += bytes;
    else anonymous += bytes;
  }
  return { v8, brk, otherAnonymous: Math.max(0, anonymous - v8Total), files };
}

/** Open file descriptors by kind: socket, pipe, anon_inode:[eventpoll], a file path... */
function openFds(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`).replace(/:\[\d+\]$/, '');
    } catch {
      continue; // the descriptor readdir itself used, closed by now
    }
    if (target.startsWith('/')) target = 'file';
    counts[target] = (counts[target] ?? 0) + 1;
  }
  return counts;
}
const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
const vmHwmKiB = (): number =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
const mib = (bytes: number) => `${fixed(bytes / 2 ** 20, 1)} MiB`;
const load1 = () => loadavg()[0]!;

interface Reading {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  fds: Record<string, number>;
  resources: Record<string, number>;
  /** client connections open on the data plane */
  clientConnections: number;
  map: MemoryMap;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  ensureTools();
  if (gc === undefined) log('global.gc is missing (run with node --expose-gc): heap figures are n/a');
  // this process is the proxy under test: core 0, as ingress-ts in the other benchmarks
  if (isPinned()) spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });

  const dir = makeTempDir('churn-bench-');
  const ports: [number, number] = [await freePort(), await freePort()];
  const upstream = await startNginx(
    join(dir, 'upstream'),
    upstreamConf(join(dir, 'upstream'), dir, ports),
    1,
  );
  for (const port of ports)
    await waitFor(
      `the upstream on ${port}`,
      async () => (await probe(port, false, '/', 'upstream'))?.status === 200,
    );

  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  const { http } = await dataPlane.listen();
  dataPlane.swap(buildModel(churnSnapshot(0, ports)).model);
  const url = `http://127.0.0.1:${http.port}/`;

  /** Once wrk is gone: no client connection left, then forced GCs. */
  const reading = async (): Promise<Reading> => {
    for (let i = 0; i < 500 && dataPlane.stats.active > 0; i++) await sleep(10);
    return {
      ...memory(),
      fds: openFds(),
      resources: activeResources(),
      clientConnections: dataPlane.stats.active,
      map: memoryMap(),
    };
  };

  log(`warm-up: wrk -c${CONNECTIONS} ${WARMUP_SECONDS} s without swaps`);
  const warmup = await wrk(url, CONNECTIONS, WARMUP_SECONDS, CHURN_HOST, () => [process.pid]);
  if (warmup.requests === 0 || warmup.non2xx > 0 || errorsOf(warmup) > 0)
    fail(
      1,
      `the warm-up run failed: ${warmup.requests} requests, ${warmup.non2xx} non-2xx, ${errorText(warmup)}`,
    );
  const start = await reading();
  log(`baseline: wrk -c${CONNECTIONS} ${BASELINE_SECONDS} s without swaps`);
  const baseline = await wrk(url, CONNECTIONS, BASELINE_SECONDS, CHURN_HOST, () => [process.pid]);
  const before = await reading();
  const loadBefore = load1();

  log(`${int(options.swaps)} swaps under wrk -c${CONNECTIONS}`);
  const load = startWrk(url, CONNECTIONS, CHURN_WRK_MAX_SECONDS, CHURN_HOST, () => [process.pid]);
  await sleep(500); // wrk connected and sending
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, RSS_SAMPLE_MS);
  const kinds = { full: 0, endpoints: 0, unchanged: 0 };
  let otherKind = 0;
  const trend: TrendPoint[] = [];
  let requestsBefore = dataPlane.stats.requests;
  const started = performance.now();
  for (let step = 1; step <= options.swaps; step++) {
    const kind = dataPlane.swap(buildModel(churnSnapshot(step, ports)).model);
    kinds[kind]++;
    if (kind !== churnKind(step)) otherKind++;
    if (step % (options.swaps / 4) === 0) {
      const { rss, heapUsed } = process.memoryUsage();
      trend.push({ step, rss, heapUsed, seconds: (performance.now() - started) / 1000 });
      log(`${int(step)} swaps`);
    }
    if (load.exited()) fail(1, `wrk ended before the swaps did (after ${step} of ${options.swaps})`);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const churnSeconds = (performance.now() - started) / 1000;
  const requestsDuring = dataPlane.stats.requests - requestsBefore;
  const churn = await load.stop();
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  const loadAfter = load1();
  const after = await reading();

  // once more without swaps: the throughput with the final (= first) configuration
  requestsBefore = dataPlane.stats.requests;
  const final = await wrk(url, CONNECTIONS, WARMUP_SECONDS, CHURN_HOST, () => [process.pid]);
  const settled = await reading();

  await dataPlane.close();
  await stopProcess(upstream);

  const report = render({
    options,
    warmup,
    baseline,
    churn,
    final,
    start,
    before,
    after,
    settled,
    peakRss,
    vmHwm: vmHwmKiB() * 1024,
    kinds,
    otherKind,
    trend,
    churnSeconds,
    requestsDuring,
    loadBefore,
    loadAfter,
  });
  process.stdout.write(report);
  if (options.out !== null) {
    mkdirSync(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, report);
    log(`wrote ${options.out}`);
  }
  const failed = errorsOf(churn) + churn.non2xx;
  process.exit(failed > 0 || otherKind > 0 ? 1 : 0);
}

/** RSS and heap used (no forced GC) at a quarter, half, ... of the swaps */
interface TrendPoint {
  step: number;
  seconds: number;
  rss: number;
  heapUsed: number;
}

interface Results {
  options: Options;
  warmup: WrkResult;
  baseline: WrkResult;
  churn: WrkResult;
  final: WrkResult;
  start: Reading;
  before: Reading;
  after: Reading;
  settled: Reading;
  peakRss: number;
  vmHwm: number;
  kinds: { full: number; endpoints: number; unchanged: number };
  otherKind: number;
  trend: TrendPoint[];
  churnSeconds: number;
  requestsDuring: number;
  loadBefore: number;
  loadAfter: number;
}

const resourceText = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, n]) => `${type} ${n}`)
    .join(', ');

function mapTable(readings: [string, Reading][]): string {
  const spaces = [...new Set(readings.flatMap(([, reading]) => Object.keys(reading.map.v8)))].filter(
    (space) => readings.some(([, reading]) => (reading.map.v8[space] ?? 0) >= 2 ** 20),
  );
  const header = [
    'reading',
    ...spaces.map((space) => `V8 ${space}`),
    'malloc [heap]',
    'other anonymous',
    'files',
  ];
  return [
    `| ${header.join(' | ')} |`,
    `| --- | ${header
      .slice(1)
      .map(() => '--:')
      .join(' | ')} |`,
    ...readings.map(
      ([label, { map }]) =>
        `| ${label} | ${[...spaces.map((space) => map.v8[space] ?? 0), map.brk, map.otherAnonymous, map.files].map(mib).join(' | ')} |`,
    ),
  ].join('\n');
}

function render(r: Results): string {
  const growth = (r.after.rss - r.before.rss) / r.before.rss;
  const failed = errorsOf(r.churn) + r.churn.non2xx;
  const cpu = cpus();
  const row = (label: string, reading: Reading) =>
    `| ${label} | ${mib(reading.rss)} | ${mib(reading.heapUsed)} | ${mib(reading.heapTotal)} | ${mib(reading.external)} | ${total(reading.fds)} (${resourceText(reading.fds)}) | ${reading.clientConnections} | ${resourceText(reading.resources)} |`;
  return `# Churn: ${int(r.options.swaps)} swaps under load

- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; Node ${process.version}; ${version(['wrk', '--version'])}; ${version(['nginx', '-v'])}
- node flags: \`${[...process.execArgv, ...(process.env.NODE_OPTIONS ? [process.env.NODE_OPTIONS] : [])].join(' ') || 'none'}\` (V8 heap limits change the RSS figures: see bench/README.md)
- pinning: ${isPinned() ? 'data plane (this process) on core 0, wrk and the NGINX upstream on core 1' : 'none (taskset missing)'}
- load average (1 min) before / after the swaps: ${fixed(r.loadBefore, 2)} / ${fixed(r.loadAfter, 2)} on ${cpu.length} cores (this bench accounts for ~2; more means other processes competed)
- wrk: ${wrkCommands.map((c) => `\`${c}\``).join(', ')}

## Summary

| figure | value |
| --- | --- |
| swaps | ${int(r.kinds.full + r.kinds.endpoints + r.kinds.unchanged)} (${int(r.kinds.full)} full, ${int(r.kinds.endpoints)} endpoints-only, ${int(r.kinds.unchanged)} unchanged; ${r.otherKind} of another kind than their step) |
| swaps per second | ${fixed(r.options.swaps / r.churnSeconds, 0)} (${fixed(r.churnSeconds, 1)} s, each \`buildModel\` + \`swap\` + one event-loop turn) |
| requests during the swaps | ${int(r.churn.requests)} (wrk), ${int(r.requestsDuring)} received while swapping; ${fixed(r.churn.rps, 0)} req/s vs ${fixed(r.warmup.rps, 0)} in the warm-up without swaps |
| **failed requests** | **${int(failed)}** (socket errors: ${errorText(r.churn)}; non-2xx: ${r.churn.non2xx}) |
| RSS before / after / peak | ${mib(r.before.rss)} / ${mib(r.after.rss)} / ${mib(r.peakRss)} (sampled every ${RSS_SAMPLE_MS} ms; VmHWM over the whole run ${mib(r.vmHwm)}) |
| **RSS growth** (after vs before) | **${fixed(growth * 100, 1)} %** (target < 10 %); vs *start* (right after the warm-up): ${fixed(((r.after.rss - r.start.rss) / r.start.rss) * 100, 1)} % |
| heap used after forced GC before / after | ${mib(r.before.heapUsed)} / ${mib(r.after.heapUsed)} |
| open fds before / after | ${total(r.before.fds)} / ${total(r.after.fds)} |
| latency p50 / p99 during the swaps | ${fixed(r.churn.p50, 2)} / ${fixed(r.churn.p99, 2)} ms (warm-up: ${fixed(r.warmup.p50, 2)} / ${fixed(r.warmup.p99, 2)} ms) |

## Readings

Each reading is taken with wrk stopped, once the data plane has no client connection left, after three
forced full GCs. *start*: after the ${WARMUP_SECONDS} s warm-up; *before*: after a further
${BASELINE_SECONDS} s of wrk without swaps (${fixed(r.baseline.rps, 0)} req/s,
${int(errorsOf(r.baseline) + r.baseline.non2xx)} failed: ${errorText(r.baseline)}, non-2xx ${r.baseline.non2xx}), so that RSS has reached its level under this
load before the swaps start; *after*: after the swaps;
*settled*: after a further ${WARMUP_SECONDS} s of wrk without swaps (${fixed(r.final.rps, 0)} req/s,
${int(errorsOf(r.final) + r.final.non2xx)} failed), a control: how RSS moves under load without swaps.
Open fds are \`/proc/self/fd\` by kind; the sockets are the two listeners and the pooled upstream
connections (the upstream's NGINX keeps them for 75 s). Active resources are
\`process.getActiveResourcesInfo()\` by type, which lists referenced handles only: undici unreferences
a pooled connection while it is idle, so idle upstream connections show in the fds, not here;
ProcessWrap and PipeWrap are this bench's own children (NGINX, wrk); Timeout counts the Node timers.

| reading | RSS | heap used | heap total | external | open fds | client connections | active resources |
| --- | --: | --: | --: | --: | --: | --: | --- |
${row('start', r.start)}
${row('before', r.before)}
${row('after', r.after)}
${row('settled', r.settled)}

Where the resident memory is at each reading: V8's committed heap by space
(\`v8.getHeapSpaceStatistics()\`), then \`/proc/self/smaps\`: the main malloc arena (\`[heap]\`), other
anonymous memory (other threads' malloc arenas, WebAssembly memory; V8's heap taken out) and mapped
files.

${mapTable([
  ['start', r.start],
  ['before', r.before],
  ['after', r.after],
  ['settled', r.settled],
])}

During the swaps (no forced GC, so heap used includes garbage not yet collected):

| swaps | s | RSS | heap used |
| --: | --: | --: | --: |
${r.trend.map((p) => `| ${int(p.step)} | ${fixed(p.seconds, 1)} | ${mib(p.rss)} | ${mib(p.heapUsed)} |`).join('\n')}

## How

The data plane runs in this process (core 0) with HTTP on a loopback port; the upstream is one NGINX
worker answering 1 KiB on two ports (core 1). wrk -c${CONNECTIONS} (core 1) sends \`GET /\` with
\`Host: ${CHURN_HOST}\`, first for ${WARMUP_SECONDS} + ${BASELINE_SECONDS} s without swaps, then during the swaps (stopped with
SIGINT after the last one). Each swap builds the model of the next step of a four-step cycle from its
Kubernetes objects and calls \`DataPlane.swap\`, then yields to the event loop once (setImmediate), so
the swaps take the process's time in turns with the requests. Steps alternate endpoints-only (a
second EndpointSlice, the upstream's second port, added then removed: its peer's pool is retired)
and full (the path /extra added then removed); ${int(r.options.swaps)} is a multiple of four, so the
final configuration is the first one. A failed request is a wrk socket error or a non-2xx/3xx
response.
`;
}

await main();
