// Memory benchmark: where ingress-ts's resident memory goes. Three parts, each with fresh ingress-ts
// processes in standalone mode, pinned to core 0 (wrk and the upstream NGINX on core 1):
// 1. threads: one small model (one Ingress) with ConfigMap `worker-processes` N for each N of
//    --threads; RSS 3 s after the first 200, then after two forced full GCs. Per added thread is
//    reported two ways: from N=1 (where the data plane moves off the main thread) and between the
//    larger counts (the cost of one more worker alone).
// 2. load: one thread (`worker-processes: 1`), wrk -c64 in --stages stages of --stage-seconds; after
//    each, the requests so far, RSS and the heap as the process sees it (process.memoryUsage and V8's
//    heap spaces, through the inspector), and the heap after two full GCs half-way and at the end.
//    What survives a full GC growing with the requests is a leak; RSS that rises with the young
//    generation and the old space's garbage and falls back after a full GC is the heap settling.
// 3. scale: --ingresses Ingresses (support/scale-manifests.ts, with the managedFields and kubectl's
//    last-applied annotation a cluster adds unless --plain-objects), one process per --scale-threads
//    value (`worker-processes`, default 1); RSS at the first 200, 20 s
//    later (the collection ingress-ts starts after its first build has handed the pages back by then)
//    and after two forced full GCs, the heap inside, and with --snapshot FILE a heap snapshot then.
// Run with `node bench/memory.ts [flags]` (see --help).

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
  probe,
  REPO,
  rssKiB,
  type Started,
  sleep,
  stopProcess,
  waitFor,
} from './support/harness.ts';
import { benchConfigMap, parseLogLine, plainManifests, startIngressTs } from './support/ingress-ts.ts';
import { type MemoryInside, memoryInside, openInspector } from './support/inspector.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { writeScaleManifests } from './support/scale-manifests.ts';
import { smapsBreakdown } from './support/smaps.ts';
import { wrk, wrkCommands } from './support/wrk.ts';

const HOST = 'memory.test';
const CONNECTIONS = 64;
const SETTLE_MS = 3000;
/** at scale: long enough for the collection started after the first build and its memory reducer */
const SCALE_SETTLE_MS = 20000;

interface Options {
  threads: number[];
  stages: number;
  stageSeconds: number;
  ingresses: number;
  /** worker-processes values of the scale part */
  scaleThreads: number[];
  snapshot: string | null;
  /** the scale part's objects without managedFields and kubectl's last-applied annotation */
  plainObjects: boolean;
  env: Record<string, string>;
  checkout: string | undefined;
  parts: Set<string>;
  out: string | null;
}

const USAGE = `Usage: node bench/memory.ts [--parts threads,load,scale] [--threads LIST] [--stages N] [--stage-seconds S] [--ingresses N] [--scale-threads LIST] [--snapshot FILE] [--plain-objects] [--env K=V] [--checkout DIR] [--no-write]
  --parts LIST       which parts to run [threads,load,scale]
  --threads LIST     worker-processes values for the threads part, ascending, starting with 1 [1,2,4]
  --stages N         wrk stages of the load part (2-20) [6]
  --stage-seconds S  seconds per stage (1-120) [10]
  --ingresses N      Ingresses of the scale part (10-50000) [10000]
  --scale-threads L  worker-processes values of the scale part, one process each [1]
  --snapshot FILE    write a heap snapshot of the scale part's process after its GCs
  --plain-objects    the scale part's objects without the managedFields and the kubectl
                     last-applied annotation a cluster adds (as before 2026-11-26's thread-rss)
  --env K=V          a variable for every ingress-ts's environment (repeatable), e.g. MALLOC_ARENA_MAX=2
  --checkout DIR     run the ingress-ts checked out in DIR (e.g. the commit before a change)
  --no-write         print the report only, do not write bench/results/memory-YYYY-MM-DD.md
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    threads: [1, 2, 4],
    stages: 6,
    stageSeconds: 10,
    ingresses: 10000,
    scaleThreads: [1],
    snapshot: null,
    plainObjects: false,
    env: {},
    checkout: undefined,
    parts: new Set(['threads', 'load', 'scale']),
    out: join(REPO, 'bench', 'results', `memory-${new Date().toISOString().slice(0, 10)}.md`),
  };
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--threads') {
      const list = (args[++i] ?? '').split(',').map((n) => bounded(arg, n, 1, 64));
      if (list[0] !== 1 || list.some((n, k) => k > 0 && n <= list[k - 1]!))
        fail(2, '--threads expects ascending counts starting with 1, e.g. 1,2,4');
      options.threads = list;
    } else if (arg === '--parts') {
      const parts = (args[++i] ?? '').split(',');
      if (parts.some((p) => !['threads', 'load', 'scale'].includes(p)))
        fail(2, '--parts takes threads, load and scale');
      options.parts = new Set(parts);
    } else if (arg === '--stages') options.stages = bounded(arg, args[++i], 2, 20);
    else if (arg === '--stage-seconds') options.stageSeconds = bounded(arg, args[++i], 1, 120);
    else if (arg === '--ingresses') options.ingresses = bounded(arg, args[++i], 10, 50000);
    else if (arg === '--scale-threads')
      options.scaleThreads = (args[++i] ?? '').split(',').map((n) => bounded(arg, n, 1, 64));
    else if (arg === '--snapshot') options.snapshot = args[++i] ?? fail(2, '--snapshot expects a file');
    else if (arg === '--checkout')
      options.checkout = resolve(args[++i] ?? fail(2, '--checkout expects a directory'));
    else if (arg === '--plain-objects') options.plainObjects = true;
    else if (arg === '--env') {
      const pair = args[++i] ?? '';
      const eq = pair.indexOf('=');
      if (eq <= 0) fail(2, '--env expects NAME=VALUE');
      options.env[pair.slice(0, eq)] = pair.slice(eq + 1);
    } else if (arg === '--no-write') options.out = null;
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  return options;
}

const mib = (bytesOrKib: number | null, unit: 'B' | 'KiB' = 'KiB') =>
  bytesOrKib === null ? 'n/a' : fixed(bytesOrKib / (unit === 'B' ? 2 ** 20 : 1024), 1);

interface Context {
  dir: string;
  /** variables added to every ingress-ts's environment (--env) */
  env: Record<string, string>;
  /** another checkout of ingress-ts to run (--checkout) */
  checkout: string | undefined;
  upstreamPort: number;
  commands: string[];
}

/** A fresh ingress-ts over `manifestsDir` with the inspector port armed (opened later by SIGUSR1). */
async function start(
  context: Context,
  manifestsDir: string,
  readyHost: string,
  readyTimeoutMs = 30000,
  logLevel = 'warn',
  cores: number | string = 0,
): Promise<Started> {
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const { started, command } = await startIngressTs({
    manifestsDir,
    ports,
    logLevel,
    nodeFlags: ['--inspect-port=127.0.0.1:0'],
    args: ['--configmap', 'bench/ingress-ts'],
    readyHost,
    readyTimeoutMs,
    cores,
    env: context.env,
    checkout: context.checkout,
  });
  const shown = [...Object.entries(context.env).map(([k, v]) => `${k}=${v}`), command].join(' ');
  if (!context.commands.includes(shown)) context.commands.push(shown);
  (started as Started & { port: number }).port = ports.http;
  return started;
}

function plainFolder(context: Context, name: string, configMap: Record<string, string>): string {
  const dir = join(context.dir, name);
  mkdirSync(dir, { recursive: true });
  const data = { 'access-log-path': join(context.dir, `${name}-access.log`), ...configMap };
  writeFileSync(
    join(dir, 'bench.yaml'),
    plainManifests({ host: HOST, upstreamPort: context.upstreamPort, configMap: data }),
  );
  return dir;
}

/** RSS now, then after two full GCs and 1 s; the heap inside after them. */
async function settled(started: Started) {
  const rss = rssKiB(started.pid);
  const inspector = await openInspector(started);
  await inspector.collectGarbage();
  await sleep(1000);
  const inside = await memoryInside(inspector);
  return { rss, rssAfterGc: rssKiB(started.pid), inside, inspector };
}

// --- 1. threads ------------------------------------------------------------------------------------

interface ThreadsRow {
  threads: number;
  rss: number | null;
  rssAfterGc: number | null;
  mainHeap: number;
}

async function threadsPart(context: Context, options: Options): Promise<string> {
  const rows: ThreadsRow[] = [];
  for (const n of options.threads) {
    const folder = plainFolder(context, `threads-${n}`, { 'worker-processes': String(n) });
    const started = await start(context, folder, HOST);
    await sleep(SETTLE_MS);
    const { rss, rssAfterGc, inside, inspector } = await settled(started);
    inspector.close();
    rows.push({ threads: n, rss, rssAfterGc, mainHeap: inside.heapUsed });
    log(`threads ${n}: RSS ${mib(rss)} MiB, after GC ${mib(rssAfterGc)} MiB`);
    await stopProcess(started, 'SIGINT', 10000);
  }
  const one = rows[0]!;
  const lines = [
    '| worker-processes | RSS MiB (3 s after ready) | RSS MiB after 2 full GCs | main thread heapUsed MiB | per added thread from 1, MiB | per added thread from the previous row, MiB |',
    '|--:|--:|--:|--:|--:|--:|',
  ];
  rows.forEach((row, k) => {
    const previous = rows[k - 1];
    const perFromOne =
      k === 0 || row.rssAfterGc === null || one.rssAfterGc === null
        ? '–'
        : mib((row.rssAfterGc - one.rssAfterGc) / (row.threads - 1));
    const perFromPrevious =
      previous === undefined ||
      row.rssAfterGc === null ||
      previous.rssAfterGc === null ||
      previous.threads === 1
        ? '–'
        : mib((row.rssAfterGc - previous.rssAfterGc) / (row.threads - previous.threads));
    lines.push(
      `| ${row.threads} | ${mib(row.rss)} | ${mib(row.rssAfterGc)} | ${mib(row.mainHeap, 'B')} | ${perFromOne} | ${perFromPrevious} |`,
    );
  });
  return lines.join('\n');
}

// --- 2. load ---------------------------------------------------------------------------------------

async function loadPart(context: Context, options: Options): Promise<string> {
  const folder = plainFolder(context, 'load', { 'worker-processes': '1' });
  const started = await start(context, folder, HOST);
  const port = (started as Started & { port: number }).port;
  await sleep(SETTLE_MS);
  const inspector = await openInspector(started);
  const row = (label: string, requests: number, inside: MemoryInside) => {
    const young = inside.spaces.new_space;
    return `| ${label} | ${int(requests)} | ${mib(rssKiB(started.pid))} | ${mib(inside.heapTotal, 'B')} | ${mib(inside.heapUsed, 'B')} | ${young === undefined ? 'n/a' : mib(young.size, 'B')} | ${mib(inside.spaces.old_space?.used ?? null, 'B')} | ${mib(inside.external, 'B')} | ${mib(inside.arrayBuffers, 'B')} |`;
  };
  const lines = [
    '| moment | requests so far | RSS MiB | heapTotal MiB | heapUsed MiB | new space MiB | old space used MiB | external MiB | arrayBuffers MiB |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    row('idle, before load', 0, await memoryInside(inspector)),
  ];
  let requests = 0;
  for (let stage = 1; stage <= options.stages; stage++) {
    const result = await wrk(`http://127.0.0.1:${port}/`, CONNECTIONS, options.stageSeconds, HOST, () => [
      started.pid,
    ]);
    requests += result.requests;
    lines.push(row(`after stage ${stage}`, requests, await memoryInside(inspector)));
    log(`load stage ${stage}: ${int(requests)} requests, RSS ${mib(rssKiB(started.pid))} MiB`);
    if (stage === Math.ceil(options.stages / 2)) {
      // what survives a full GC after half the requests and after all of them: a leak grows between the two
      await inspector.collectGarbage();
      lines.push(row(`after stage ${stage}, 2 full GCs`, requests, await memoryInside(inspector)));
    }
  }
  await inspector.collectGarbage();
  await sleep(1000);
  lines.push(row('after 2 full GCs and 1 s', requests, await memoryInside(inspector)));
  inspector.close();
  await stopProcess(started, 'SIGINT', 10000);
  return lines.join('\n');
}

// --- 3. scale --------------------------------------------------------------------------------------

async function scalePart(context: Context, options: Options, threads: number): Promise<string> {
  const dir = join(context.dir, `scale-${threads}`);
  mkdirSync(dir);
  const manifests = writeScaleManifests(
    dir,
    options.ingresses,
    context.upstreamPort,
    'json',
    !options.plainObjects,
  );
  writeFileSync(join(dir, 'configmap.yaml'), benchConfigMap({ 'worker-processes': String(threads) }));
  log(`scale: ${int(manifests.ingresses)} Ingresses written (${mib(manifests.bytes, 'B')} MiB), starting`);
  const spawned = performance.now();
  const started = await start(context, dir, manifests.host, 180000, 'info', threads > 1 ? '0,1' : 0);
  const firstTrafficMs = performance.now() - spawned;
  const ready = rssKiB(started.pid);
  await sleep(SCALE_SETTLE_MS);
  const collected = started.output
    .map(parseLogLine)
    .some((line) => line?.msg === 'heap collected after the first build');
  const { rss, rssAfterGc, inside, inspector } = await settled(started);
  const maps = smapsBreakdown(started.pid);
  if (options.snapshot !== null) {
    await inspector.heapSnapshot(options.snapshot);
    log(`heap snapshot written to ${options.snapshot}`);
  }
  inspector.close();
  await stopProcess(started, 'SIGINT', 10000);
  return [
    '| Ingresses | manifests MiB | first 200 after ms | collection started after the first build | RSS MiB at the first 200 | RSS MiB 20 s later | RSS MiB after 2 full GCs | heapUsed MiB | external MiB | arrayBuffers MiB |',
    '|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    `| ${int(manifests.ingresses)} | ${mib(manifests.bytes, 'B')} | ${int(firstTrafficMs)} | ${collected ? 'yes' : 'no'} | ${mib(ready)} | ${mib(rss)} | ${mib(rssAfterGc)} | ${mib(inside.heapUsed, 'B')} | ${mib(inside.external, 'B')} | ${mib(inside.arrayBuffers, 'B')} |`,
    '',
    "After the GCs, RSS by kind of mapping (bench/support/smaps.ts), MiB; the heap is the main thread's V8 heap committed:",
    '',
    '| files | brk heap (malloc main arena) | malloc thread arenas (count) | other anonymous (V8 heaps, large malloc blocks, thread stacks) | main V8 heap committed |',
    '|--:|--:|--:|--:|--:|',
    `| ${mib(maps?.files ?? null)} | ${mib(maps?.brkHeap ?? null)} | ${mib(maps?.arenas ?? null)} (${maps?.arenaCount ?? 'n/a'}) | ${mib(maps?.otherAnon ?? null)} | ${mib(inside.heapTotal, 'B')} |`,
  ].join('\n');
}

// --- main ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  initHarness('memory', 60 * 60 * 1000);
  ensureTools();
  const dir = makeTempDir('ingress-ts-memory-');
  const upstreamPort = await freePort();
  const prefix = join(dir, 'upstream');
  const upstream = await startNginx(prefix, upstreamConf(prefix, dir, [upstreamPort]), 1);
  await waitFor('upstream nginx', async () => (await probe(upstreamPort, false, '/', HOST))?.status === 200);
  const context: Context = { dir, upstreamPort, env: options.env, checkout: options.checkout, commands: [] };
  const sections: string[] = [];
  if (options.parts.has('threads'))
    sections.push(
      `## Idle RSS by data-plane threads (one Ingress)\n\n${await threadsPart(context, options)}`,
    );
  if (options.parts.has('load'))
    sections.push(
      `## Under load, one thread (wrk -c${CONNECTIONS}, ${options.stages} × ${options.stageSeconds} s)\n\n${await loadPart(context, options)}`,
    );
  if (options.parts.has('scale'))
    for (const threads of options.scaleThreads)
      sections.push(
        `## At ${int(options.ingresses)} Ingresses, \`worker-processes: ${threads}\`${threads > 1 ? ' (cores 0,1)' : ''}\n\n${await scalePart(context, options, threads)}`,
      );
  await stopProcess(upstream, 'SIGQUIT');
  const cpu = cpus();
  const report = `# Memory benchmark

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; 1-minute load average at the end: ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- node: ${process.version}
- RSS is VmRSS of the whole ingress-ts process (all its threads) from /proc; the heap figures are the main thread's, read through the inspector (SIGUSR1 with --inspect-port=127.0.0.1:0, ~0.1 MiB)

Commands:

\`\`\`sh
${context.commands.join('\n')}
${wrkCommands.join('\n')}
\`\`\`

${sections.join('\n\n')}
`;
  process.stdout.write(report);
  if (options.out !== null) {
    mkdirSync(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, report);
    log(`written to ${options.out}`);
  }
  cleanup();
}

if (import.meta.main) await main();
