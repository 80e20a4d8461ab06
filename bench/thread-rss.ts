// Where a data-plane thread's resident memory goes after load, and whether it comes back when idle.
// One ingress-ts per variant (an environment such as MALLOC_ARENA_MAX=2, or none), all started at
// once with ConfigMap `worker-processes` --threads (one Ingress, the access log to a file, /metrics
// scraped), pinned to cores 0,1, wrk and the upstream NGINX on core 1. The variants run in
// interleaved rounds, so a machine loaded by other work weighs on each alike; CPU per request is
// utime+stime of the whole process ÷ requests. After the rounds every process idles for --idle
// seconds and is read at a few moments: RSS, RSS by kind of mapping (support/smaps.ts: files,
// malloc's main arena and its thread arenas, other anonymous memory, which holds V8's heaps), and,
// through the inspector's NodeWorker domain, each worker's V8 heap spaces, external and array-buffer
// memory. Run with `node bench/thread-rss.ts [flags]` (see --help).

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
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
  rssKiB,
  type Started,
  sleep,
  stopProcess,
} from './support/harness.ts';
import { plainManifests, startIngressTs } from './support/ingress-ts.ts';
import { type Inspector, type MemoryInside, memoryInWorkers, openInspector } from './support/inspector.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { type SmapsBreakdown, smapsBreakdown } from './support/smaps.ts';
import { scrapedWhile, wrk, wrkCommands } from './support/wrk.ts';

const HOST = 'thread-rss.test';
const SCRAPE_MS = 5000;

interface Variant {
  label: string;
  env: Record<string, string>;
  /** another checkout of ingress-ts to run (label@DIR) */
  checkout?: string;
}

interface Options {
  variants: Variant[];
  threads: number;
  rounds: number;
  duration: number;
  warmup: number;
  idle: number[];
  connections: number;
  out: string | null;
}

const USAGE = `Usage: node bench/thread-rss.ts [--variants LIST] [--threads N] [--rounds N] [--duration S] [--warmup S] [--idle LIST] [--out FILE]
  --variants LIST  ;-separated label=ENV=VALUE,ENV=VALUE (or just a label: no variable);
                   label@DIR runs the checkout in DIR (e.g. the commit before a change)
                   [default;arena-2=MALLOC_ARENA_MAX=2]
  --threads N      worker-processes (2-16) [2]
  --rounds N       interleaved rounds (1-30) [4]
  --duration S     seconds per wrk run (1-60) [8]
  --warmup S       unrecorded seconds per process first (1-120) [5]
  --idle LIST      seconds after the last round at which every process is read [0,10,30,60]
  --connections C  wrk connections [64]
  --out FILE       also write the report to FILE
`;

function parseVariant(text: string): Variant {
  const [label, ...assignments] = text.split('=');
  const env: Record<string, string> = {};
  // label=A=1,B=2: the first '=' ends the label; the rest is a list of assignments
  for (const pair of assignments.join('=').split(',').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) fail(2, `--variants: "${pair}" is not ENV=VALUE`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if (!label) fail(2, `--variants: "${text}" has no label`);
  const at = label.indexOf('@');
  if (at === -1) return { label, env };
  return { label: label.slice(0, at), env, checkout: resolve(label.slice(at + 1)) };
}

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    variants: [parseVariant('default'), parseVariant('arena-2=MALLOC_ARENA_MAX=2')],
    threads: 2,
    rounds: 4,
    duration: 8,
    warmup: 5,
    idle: [0, 10, 30, 60],
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
    if (arg === '--variants') options.variants = (args[++i] ?? '').split(';').map(parseVariant);
    else if (arg === '--threads') options.threads = bounded(arg, args[++i], 2, 16);
    else if (arg === '--rounds') options.rounds = bounded(arg, args[++i], 1, 30);
    else if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 1, 120);
    else if (arg === '--idle')
      options.idle = (args[++i] ?? '').split(',').map((n) => bounded(arg, n, 0, 600));
    else if (arg === '--connections') options.connections = bounded(arg, args[++i], 1, 4096);
    else if (arg === '--out') options.out = resolve(args[++i] ?? fail(2, '--out expects a file'));
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  if (options.idle.some((s, k) => k > 0 && s <= options.idle[k - 1]!))
    fail(2, '--idle expects ascending seconds');
  return options;
}

const mib = (kib: number | null | undefined) =>
  kib === null || kib === undefined ? 'n/a' : fixed(kib / 1024, 1);
const mibB = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : fixed(bytes / 2 ** 20, 1));
const envText = (env: Record<string, string>) =>
  Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

interface Reading {
  at: string;
  rss: number | null;
  smaps: SmapsBreakdown | null;
  workers: MemoryInside[];
}

interface Contender {
  variant: Variant;
  port: number;
  healthz: number;
  started: Started;
  command: string;
  inspector: Inspector | null;
  cpu: number[];
  rps: number[];
  readings: Reading[];
}

async function startContender(dir: string, upstreamPort: number, variant: Variant, threads: number) {
  const manifests = join(dir, variant.label);
  mkdirSync(manifests, { recursive: true });
  const configMap = {
    'worker-processes': String(threads),
    'access-log-path': join(dir, `${variant.label}-access.log`),
  };
  writeFileSync(join(manifests, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const { started, command } = await startIngressTs({
    manifestsDir: manifests,
    ports,
    logLevel: 'warn',
    nodeFlags: ['--inspect-port=127.0.0.1:0'],
    args: ['--configmap', 'bench/ingress-ts'],
    readyHost: HOST,
    cores: '0,1',
    readyTimeoutMs: 30000,
    env: variant.env,
    checkout: variant.checkout,
  });
  const contender: Contender = {
    variant,
    port: ports.http,
    healthz: ports.healthz,
    started,
    command: `${envText(variant.env)} ${command}`.trim(),
    inspector: null,
    cpu: [],
    rps: [],
    readings: [],
  };
  return contender;
}

async function load(c: Contender, seconds: number, options: Options) {
  return scrapedWhile(c.healthz, SCRAPE_MS, () =>
    wrk(`http://127.0.0.1:${c.port}/`, options.connections, seconds, HOST, () => [c.started.pid]),
  );
}

async function read(c: Contender, at: string, withWorkers: boolean): Promise<void> {
  let workers: MemoryInside[] = [];
  if (withWorkers) {
    c.inspector ??= await openInspector(c.started);
    workers = await memoryInWorkers(c.inspector);
  }
  c.readings.push({ at, rss: rssKiB(c.started.pid), smaps: smapsBreakdown(c.started.pid), workers });
}

/** Sum over the workers of one heap figure, MiB. */
function workerSum(r: Reading, pick: (m: MemoryInside) => number | undefined): string {
  if (r.workers.length === 0) return '–';
  return mibB(r.workers.reduce((sum, m) => sum + (pick(m) ?? 0), 0));
}

function readingRow(c: Contender, r: Reading): string {
  const s = r.smaps;
  const space = (name: string) => (m: MemoryInside) => m.spaces[name]?.size;
  return `| ${c.variant.label} | ${r.at} | ${mib(r.rss)} | ${mib(s?.files)} | ${mib(s?.brkHeap)} | ${mib(s?.arenas)} (${s?.arenaCount ?? 'n/a'}) | ${mib(s?.otherAnon)} | ${workerSum(r, (m) => m.heapTotal)} | ${workerSum(r, space('new_space'))} | ${workerSum(r, space('old_space'))} | ${workerSum(r, (m) => m.spaces.old_space?.used)} | ${workerSum(r, space('code_space'))} | ${workerSum(r, (m) => m.external)} | ${workerSum(r, (m) => m.arrayBuffers)} |`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  initHarness('thread-rss', 60 * 60 * 1000);
  ensureTools();
  if (cpus().length < 2) fail(3, 'needs 2 cores');
  const dir = makeTempDir('ingress-ts-thread-rss-');
  const upstreamPort = await freePort();
  const prefix = join(dir, 'upstream');
  const upstream = await startNginx(prefix, upstreamConf(prefix, dir, [upstreamPort]), 1);
  const contenders: Contender[] = [];
  for (const variant of options.variants)
    contenders.push(await startContender(dir, upstreamPort, variant, options.threads));
  await sleep(3000);
  for (const c of contenders) await read(c, 'idle, before load', false);
  for (const c of contenders) await load(c, options.warmup, options);
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of contenders) {
      const r = await load(c, options.duration, options);
      c.cpu.push(r.cpuUsPerReq ?? Number.NaN);
      c.rps.push(r.rps);
      log(
        `round ${round} ${c.variant.label}: ${int(r.rps)} req/s, ${fixed(r.cpuUsPerReq ?? Number.NaN, 1)} µs CPU/req, RSS ${mib(rssKiB(c.started.pid))} MiB`,
      );
    }
  }
  const stopped = performance.now();
  for (const seconds of options.idle) {
    const wait = stopped + seconds * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    for (const c of contenders) await read(c, `${seconds} s after the load`, true);
    log(
      `idle ${seconds} s: ${contenders.map((c) => `${c.variant.label} ${mib(rssKiB(c.started.pid))} MiB`).join(', ')}`,
    );
  }
  const baseline = contenders[0]!;
  const loadRows = contenders.map((c) => {
    const ratio = median(c.cpu.map((us, k) => us / baseline.cpu[k]!));
    const idle = c.readings[0]?.rss ?? null;
    const after = c.readings[1]?.rss ?? null;
    const last = c.readings.at(-1)?.rss ?? null;
    const per = (rss: number | null) =>
      rss === null || idle === null ? 'n/a' : fixed((rss - idle) / 1024 / options.threads, 1);
    return `| ${c.variant.label} | ${fixed(median(c.cpu), 1)} | ${c.cpu.map((v) => fixed(v, 1)).join(' / ')} | ${fixed(ratio, 3)} | ${int(median(c.rps))} | ${mib(idle)} | ${mib(after)} | ${per(after)} | ${mib(last)} | ${per(last)} |`;
  });
  const readingRows = contenders.flatMap((c) => c.readings.map((r) => readingRow(c, r)));
  for (const c of contenders) {
    c.inspector?.close();
    await stopProcess(c.started, 'SIGINT', 15000);
  }
  await stopProcess(upstream, 'SIGQUIT');
  const cpu = cpus();
  const report = `# Data-plane threads: RSS after load, where it is, and what idling gives back

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; 1-minute load average at the end: ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- node: ${process.version}
- one ingress-ts per variant, \`worker-processes: ${options.threads}\`, pinned to cores 0,1; wrk -c${options.connections} and the upstream NGINX (1 KiB) on core 1; /metrics scraped every ${SCRAPE_MS / 1000} s; access log to a file
- ${options.warmup} s warm-up each, then ${options.rounds} interleaved rounds of ${options.duration} s; CPU is the process's (all threads) utime+stime ÷ requests; "× first" is the median of the per-round quotients against the first variant of the same round
- RSS is VmRSS of the whole process; by mapping from /proc/PID/smaps (bench/support/smaps.ts); the workers' figures are summed over the ${options.threads} data-plane threads (v8.getHeapSpaceStatistics and process.memoryUsage in each, through the inspector)

Commands:

\`\`\`sh
${contenders.map((c) => c.command).join('\n')}
${wrkCommands.join('\n')}
\`\`\`

## Under load

| variant | CPU µs/req (median) | per round | × first (median) | req/s (median) | RSS MiB idle | RSS MiB after load | growth per thread MiB | RSS MiB after ${options.idle.at(-1)} s idle | growth per thread then, MiB |
|---|--:|---|--:|--:|--:|--:|--:|--:|--:|
${loadRows.join('\n')}

## Where it is

Workers' columns: the sum over the data-plane threads (V8 heap committed, new space, old space committed and used, code space, external, array buffers). Malloc arenas: resident MiB (how many).

| variant | when | RSS | files | brk heap (main arena) | malloc arenas | other anonymous | workers' heap | new space | old space | old used | code | external | arrayBuffers |
|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
${readingRows.join('\n')}
`;
  process.stdout.write(report);
  if (options.out !== null) writeFileSync(options.out, report);
  cleanup();
}

if (import.meta.main) await main();
