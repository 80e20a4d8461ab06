// Scale benchmark: ingress-ts in standalone mode over a manifests folder of N Ingresses (default 10,
// 1,000 and 10,000), one size after another. Run with `node bench/scale-bench.ts [flags]` (see --help).
//
// For each size N: generate the folder (support/scale-manifests.ts: model-build.ts's synthetic cluster
// as ~100 YAML files, one per namespace, every endpoint on the upstream NGINX), start ingress-ts on
// core 0 at `--log-level info` and poll the first host of Ingress ⌊N/2⌋ every 10 ms until it answers
// 200 (time to first traffic), read the read/build/swap times from its JSON log, sample RSS, run wrk
// -c64 against that host (a 2 s warm-up, then R rounds of D s), sample RSS again, force two full GCs
// through the inspector (SIGUSR1 on a process started with --inspect-port=127.0.0.1:0) for the idle
// RSS, then stop it with SIGINT. wrk and the upstream NGINX (1 KiB responses) share core 1. Every
// process is stopped by PID, also on errors and signals; a watchdog sized from the flags bounds the run.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  cleanup,
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  isPinned,
  log,
  makeTempDir,
  median,
  pinned,
  probe,
  REPO,
  rssKiB,
  type Started,
  sleep,
  stopProcess,
  version,
  waitFor,
} from './support/harness.ts';
import { type LogLine, parseLogLine, startIngressTs } from './support/ingress-ts.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { type ManifestFormat, type ScaleManifests, writeScaleManifests } from './support/scale-manifests.ts';
import { errorsOf, type WrkResult, wrk, wrkCommands } from './support/wrk.ts';

const NAME = 'scale-bench';
const MAX_SIZE = 50000;
const MAX_SIZES = 6;
const CONNECTIONS = 64;
const WARMUP_SECONDS = 2;
const READY_TIMEOUT_MS = 120000;
const POLL_MS = 10;
/** the upstream's body on `/` (support/nginx.ts) */
const BODY_BYTES = 1024;

// --- flags -----------------------------------------------------------------------------------------

interface Options {
  sizes: number[];
  duration: number;
  rounds: number;
  format: ManifestFormat;
  out: string | null;
}

const USAGE = `Usage: node bench/scale-bench.ts [--sizes N,N,...] [--format json|yaml] [--duration S] [--rounds R] [--no-write]
  --sizes N,N,...  numbers of Ingresses, run in ascending order (1-${MAX_SIZE}, up to ${MAX_SIZES}) [10,1000,10000]
  --format F       manifest files as JSON Lists (what the API server sends) or multi-document YAML [json]
  --duration S     seconds per measured wrk run (1-60) [8]
  --rounds R       measured wrk runs per size (1-10) [3]
  --no-write       print the report only, do not write bench/results/scale-FORMAT-YYYY-MM-DD.md
  --help           print this text
`;

/** Argument errors come before initHarness: nothing runs yet, so nothing needs stopping. */
function usageError(message: string): never {
  process.stderr.write(`${NAME}: ${message}\n${USAGE}`);
  process.exit(2);
}

function integerFlag(flag: string, text: string | undefined, min: number, max: number): number {
  const value = Number(text);
  if (text === undefined || !/^\d+$/.test(text) || value < min || value > max) {
    usageError(
      `${flag} takes an integer from ${min} to ${max}, got ${text === undefined ? 'nothing' : `"${text}"`}`,
    );
  }
  return value;
}

function parseOptions(args: readonly string[]): Options {
  const today = new Date().toISOString().slice(0, 10);
  const options: Options = {
    sizes: [10, 1000, 10000],
    duration: 8,
    rounds: 3,
    format: 'json',
    out: '',
  };
  let write = true;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    switch (arg) {
      case '--sizes': {
        const list = args[++i];
        if (list === undefined || list === '') usageError('--sizes takes a comma-separated list');
        const sizes = list.split(',').map((part) => integerFlag('--sizes', part.trim(), 1, MAX_SIZE));
        if (new Set(sizes).size !== sizes.length) usageError('--sizes lists a size twice');
        if (sizes.length > MAX_SIZES) usageError(`--sizes takes at most ${MAX_SIZES} sizes`);
        options.sizes = sizes.sort((a, b) => a - b);
        break;
      }
      case '--duration':
        options.duration = integerFlag(arg, args[++i], 1, 60);
        break;
      case '--rounds':
        options.rounds = integerFlag(arg, args[++i], 1, 10);
        break;
      case '--format': {
        const format = args[++i];
        if (format !== 'json' && format !== 'yaml') usageError('--format takes json or yaml');
        options.format = format;
        break;
      }
      case '--no-write':
        write = false;
        break;
      case '--help':
        process.stdout.write(USAGE);
        process.exit(0);
        break;
      default:
        usageError(`unknown argument "${arg}"`);
    }
  }
  options.out = write ? join(REPO, 'bench', 'results', `scale-${options.format}-${today}.md`) : null;
  return options;
}

/**
 * Generous bounds per size: generating and starting (the readiness timeout), each wrk run plus its
 * 20 s kill margin, the settle and the stop; plus the upstream's start.
 */
function watchdogMs(options: Options): number {
  const perRun = options.duration + 20;
  const perSize = 30 + READY_TIMEOUT_MS / 1000 + WARMUP_SECONDS + 20 + options.rounds * perRun + 30;
  return (60 + options.sizes.length * perSize) * 1000;
}

// --- ingress-ts's log ---------------------------------------------------------------------------------

/** ingress-ts's log entries so far (the inspector's banner and other non-JSON lines skipped). */
function logLines(started: Started): LogLine[] {
  return started.output.map(parseLogLine).filter((line) => line !== null);
}

const numberField = (line: LogLine, field: string): number => {
  const value = line[field];
  return typeof value === 'number' ? value : Number.NaN;
};

/** Waits (pino may still be writing) for the first line with message `msg`. */
async function logLine(started: Started, msg: string): Promise<LogLine> {
  let found: LogLine | undefined;
  await waitFor(
    `the "${msg}" log line of ingress-ts`,
    async () => {
      found = logLines(started).find((line) => line.msg === msg);
      return found !== undefined;
    },
    5000,
    POLL_MS,
  );
  return found!;
}

// --- memory ----------------------------------------------------------------------------------------

/** VmHWM: the highest RSS the process has had so far, KiB. */
function peakRssKiB(pid: number): number | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const line = status.split('\n').find((entry) => entry.startsWith('VmHWM:'));
  return line === undefined ? null : Number.parseInt(line.slice('VmHWM:'.length), 10);
}

/** Two `HeapProfiler.collectGarbage` calls (full GCs) over the inspector WebSocket at `url`. */
function collectGarbage(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`the inspector at ${url} did not answer within 20 s`));
    }, 20000);
    let id = 0;
    const send = () => socket.send(JSON.stringify({ id: ++id, method: 'HeapProfiler.collectGarbage' }));
    socket.onopen = send;
    socket.onmessage = (event) => {
      const reply = JSON.parse(String(event.data)) as { id?: number };
      if (reply.id !== id) return; // an event, not our answer
      if (id < 2) send();
      else {
        clearTimeout(timer);
        socket.close();
        resolve();
      }
    };
    socket.onerror = () => {
      clearTimeout(timer);
      reject(new Error(`could not talk to the inspector at ${url}`));
    };
  });
}

/** Opens ingress-ts's inspector (SIGUSR1), forces full GCs, lets the heap shrink, reads RSS. */
async function idleRssKiB(started: Started): Promise<number | null> {
  const from = started.output.length;
  process.kill(started.pid, 'SIGUSR1');
  let url: string | undefined;
  await waitFor(
    'the inspector of ingress-ts (SIGUSR1)',
    async () => {
      url = started.output
        .slice(from)
        .map((text) => /ws:\/\/\S+/.exec(text)?.[0])
        .find((match) => match !== undefined);
      return url !== undefined;
    },
    5000,
    POLL_MS,
  );
  try {
    await collectGarbage(url!);
  } catch (error) {
    fail(1, String(error));
  }
  await sleep(1000);
  return rssKiB(started.pid);
}

// --- one size ----------------------------------------------------------------------------------------

interface SizeResult {
  size: number;
  manifests: ScaleManifests;
  command: string;
  firstTrafficMs: number;
  /** spawn → the start of reading the manifests, ms (from the log's timestamps) */
  bootMs: number;
  readMs: number;
  buildMs: number;
  swapMs: number;
  hosts: number;
  upstreams: number;
  warnings: number;
  rssReady: number | null;
  peakReady: number | null;
  rssAfterLoad: number | null;
  rssIdle: number | null;
  runs: WrkResult[];
  exitCode: number | null;
}

async function runSize(
  size: number,
  upstreamPort: number,
  dir: string,
  options: Options,
): Promise<SizeResult> {
  const manifestsDir = join(dir, `manifests-${size}`);
  await mkdir(manifestsDir);
  const manifests = writeScaleManifests(manifestsDir, size, upstreamPort, options.format);
  log(
    `N = ${int(size)}: ${manifests.files} files, ${int(manifests.objects)} objects, ${fixed(manifests.bytes / 2 ** 20, 1)} MiB; host under load ${manifests.host}`,
  );
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };

  const spawnedAt = Date.now();
  const begin = performance.now();
  const { started, command } = await startIngressTs({
    manifestsDir,
    ports,
    logLevel: 'info',
    nodeFlags: ['--inspect-port=127.0.0.1:0'],
    readyHost: manifests.host,
    readyTimeoutMs: READY_TIMEOUT_MS,
    pollMs: POLL_MS,
  });
  const firstTrafficMs = performance.now() - begin;
  const rssReady = rssKiB(started.pid);
  const peakReady = peakRssKiB(started.pid);

  const read = await logLine(started, 'manifests read');
  const applied = await logLine(started, 'configuration applied');
  const counts = ['ingresses', 'services', 'endpointSlices'] as const;
  for (const field of counts) {
    if (numberField(read, field) !== manifests[field]) {
      fail(1, `ingress-ts read ${read[field]} ${field}, the folder holds ${manifests[field]}`);
    }
  }
  const answer = await probe(ports.http, false, '/', manifests.host);
  if (answer?.status !== 200 || answer.bytes !== BODY_BYTES) {
    fail(1, `${manifests.host} answered ${JSON.stringify(answer)}, expected 200 with ${BODY_BYTES} bytes`);
  }
  const readMs = numberField(read, 'readMs');
  log(`N = ${int(size)}: first traffic after ${int(firstTrafficMs)} ms (read ${readMs} ms)`);

  const url = `http://127.0.0.1:${ports.http}/`;
  const cpu = () => [started.pid];
  await wrk(url, CONNECTIONS, WARMUP_SECONDS, manifests.host, cpu);
  const runs: WrkResult[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const result = await wrk(url, CONNECTIONS, options.duration, manifests.host, cpu);
    runs.push(result);
    log(`N = ${int(size)} round ${round}: ${int(result.rps)} req/s, p99 ${fixed(result.p99, 2)} ms`);
  }
  const rssAfterLoad = rssKiB(started.pid);
  const rssIdle = await idleRssKiB(started);

  await stopProcess(started, 'SIGINT', 10000);
  rmSync(manifestsDir, { recursive: true, force: true });
  const lines = logLines(started);
  return {
    size,
    manifests,
    command,
    firstTrafficMs,
    bootMs: numberField(read, 'time') - readMs - spawnedAt,
    readMs,
    buildMs: numberField(applied, 'buildMs'),
    swapMs: numberField(applied, 'swapMs'),
    hosts: numberField(applied, 'hosts'),
    upstreams: numberField(applied, 'upstreams'),
    warnings: lines.filter((line) => (line.level ?? 0) >= 40).length,
    rssReady,
    peakReady,
    rssAfterLoad,
    rssIdle,
    runs,
    exitCode: started.child.exitCode,
  };
}

// --- report --------------------------------------------------------------------------------------------

const mib = (kib: number | null) => (kib === null ? 'n/a' : fixed(kib / 1024, 1));
const medianOf = (runs: readonly WrkResult[], pick: (run: WrkResult) => number | null) =>
  median(runs.map(pick).filter((value): value is number => value !== null));

function mainTable(results: readonly SizeResult[]): string {
  const baseline = medianOf(results[0]!.runs, (r) => r.rps);
  const rows = results.map((r) => {
    const rps = medianOf(r.runs, (run) => run.rps);
    return [
      int(r.size),
      int(r.manifests.files),
      int(r.manifests.objects),
      int(r.firstTrafficMs),
      int(r.readMs),
      int(r.buildMs),
      int(r.swapMs),
      mib(r.rssReady),
      mib(r.rssAfterLoad),
      mib(r.rssIdle),
      int(rps),
      fixed(rps / baseline, 2),
      fixed(
        medianOf(r.runs, (run) => run.p99),
        2,
      ),
      fixed(
        medianOf(r.runs, (run) => run.cpuUsPerReq),
        1,
      ),
    ];
  });
  return markdownTable(
    [
      'Ingresses',
      'files',
      'objects',
      'first traffic ms',
      'read ms',
      'build ms',
      'swap ms',
      'RSS ready MiB',
      'RSS after load MiB',
      'RSS idle MiB',
      'req/s (median)',
      `× ${int(results[0]!.size)}`,
      'p99 ms',
      'CPU µs/req',
    ],
    rows,
  );
}

function detailTable(results: readonly SizeResult[]): string {
  const rows = results.map((r) => [
    int(r.size),
    fixed(r.manifests.bytes / 2 ** 20, 1),
    int(r.hosts),
    int(r.upstreams),
    int(r.warnings),
    int(r.bootMs),
    int(r.firstTrafficMs - r.bootMs - r.readMs - r.buildMs - r.swapMs),
    mib(r.peakReady),
    fixed(
      medianOf(r.runs, (run) => run.p50),
      2,
    ),
    r.runs.map((run) => int(run.rps)).join(' / '),
    int(r.runs.reduce((sum, run) => sum + errorsOf(run), 0)),
    int(r.runs.reduce((sum, run) => sum + run.non2xx, 0)),
  ]);
  return markdownTable(
    [
      'Ingresses',
      'files MiB',
      'hosts',
      'upstreams',
      'warnings logged',
      'boot ms',
      'rest ms',
      'peak RSS at ready MiB',
      'p50 ms',
      'req/s per round',
      'socket errors',
      'non-2xx/3xx',
    ],
    rows,
  );
}

/** All columns right-aligned. */
function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const rule = header.map(() => '--:');
  return [header, rule, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function throughputVerdict(results: readonly SizeResult[]): string {
  const smallest = results[0]!;
  const base = medianOf(smallest.runs, (r) => r.rps);
  const dropped = results.filter((r) => medianOf(r.runs, (run) => run.rps) < base * 0.9);
  if (results.length < 2) return 'Only one size was run: no throughput comparison.';
  if (dropped.length === 0) {
    return `Throughput holds: every size's median req/s is within 10% of (or above) the ${int(smallest.size)}-Ingress median.`;
  }
  return `**Throughput dropped** by more than 10% against the ${int(smallest.size)}-Ingress median at ${dropped.map((r) => int(r.size)).join(', ')} Ingresses (sizes run one after another on a shared machine: rerun before concluding).`;
}

function report(options: Options, results: readonly SizeResult[], upstreamCommand: string, minutes: string) {
  const cpu = cpus();
  const last = results.at(-1)!;
  const exits = results.filter((r) => r.exitCode !== 0);
  const pinning = isPinned()
    ? 'ingress-ts on core 0 (`taskset -c 0`), wrk and the upstream NGINX on core 1'
    : '**taskset missing: nothing pinned**';
  return `# Scale benchmark: ingress-ts with ${options.sizes.map(int).join(', ')} Ingresses

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${fixed(totalmem() / 2 ** 30, 0)} GiB
- versions: node ${process.version}; ${version(['nginx', '-v'])}; ${version(['wrk', '-v'])}
- pinning: ${pinning}
- method: per size, a fresh ingress-ts over a freshly written folder (model-build's cluster: up to 100 namespaces, one ${options.format === 'json' ? 'JSON List' : 'multi-document YAML'} file each, 2 hosts × 3 paths, 3 Services and 3 EndpointSlices per Ingress, every endpoint 127.0.0.1 on the upstream's port). First traffic is spawn → the first 200 for the first host of Ingress ⌊N/2⌋, polled every ${POLL_MS} ms; read/build/swap and the counts come from ingress-ts's log. Load: wrk -c${CONNECTIONS} against that host, a ${WARMUP_SECONDS} s unrecorded warm-up, then ${options.rounds} run(s) of ${options.duration} s; medians over runs. RSS idle is after two forced full GCs (inspector, HeapProfiler.collectGarbage) and 1 s. × ${int(results[0]!.size)} is the median req/s over that of the smallest size.
- run time: ${minutes} min

Commands (the last size; ports and folders differ per size):

\`\`\`sh
${upstreamCommand}
${last.command}
${wrkCommands.filter((c) => c.includes(`Host: ${last.manifests.host}'`)).join('\n')}
\`\`\`

${mainTable(results)}

${throughputVerdict(results)}

Details: YAML size, what the configuration holds, warning/error log lines (the build's diagnostics), where the time to first traffic went besides read/build/swap, and the per-run figures.

${detailTable(results)}
${exits.length === 0 ? '' : `\nNot stopped cleanly by SIGINT: ${exits.map((r) => `${int(r.size)} (exit ${r.exitCode})`).join(', ')}.\n`}`;
}

// --- main ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  initHarness(NAME, watchdogMs(options));
  ensureTools();
  const startedAt = Date.now();
  const dir = makeTempDir('ingress-ts-scale-bench-');
  const upstreamPort = await freePort();
  const prefix = join(dir, 'upstream');
  const upstream = await startNginx(prefix, upstreamConf(prefix, dir, [upstreamPort]), 1);
  await waitFor(
    'upstream nginx',
    async () => (await probe(upstreamPort, false, '/', 'upstream.test'))?.status === 200,
  );
  const upstreamCommand = `${pinned(1, ['nginx']).join(' ')} -p ${prefix} -c ${prefix}/nginx.conf -e …/error.log`;

  const results: SizeResult[] = [];
  for (const size of options.sizes) results.push(await runSize(size, upstreamPort, dir, options));

  await stopProcess(upstream, 'SIGQUIT');
  const text = report(options, results, upstreamCommand, fixed((Date.now() - startedAt) / 60000, 1));
  process.stdout.write(text);
  if (options.out !== null) {
    await mkdir(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, text);
    log(`written to ${options.out}`);
  }
  cleanup();
}

if (import.meta.main) await main();
