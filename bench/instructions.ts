// Per-core cost in instructions: each contender (the bare Node proxy of bench/support/bare-proxy.ts,
// ingress-ts with worker-processes 1 and its defaults, and ingress-ts without its access log and/or
// metrics) runs under valgrind's callgrind, which counts the instructions every thread of the process
// executes in user space. CPU time per request spreads 2× between rounds on a shared VM; an
// instruction count does not depend on what else the machine runs. After a warm-up, the counters are
// zeroed (`callgrind_control -z`), a fixed number of 1 KiB GETs is sent by an undici client in this
// process (outside valgrind), and the counters are dumped (`callgrind_control -d`): instructions ÷
// requests. Several windows per contender show how well the figure repeats. With --functions, the
// last window of each contender is split by function and by object (JIT code has no symbol: it is
// counted as one row). Run with `node bench/instructions.ts [flags]` (see --help).

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { type Dispatcher, Pool } from 'undici';
import { FLUSH_DELAY_ENV } from '../lib/access-log.ts';
import {
  ensureTools,
  fail,
  fixed,
  freePort,
  initHarness,
  int,
  log,
  makeTempDir,
  median,
  pinned,
  probe,
  run,
  type Started,
  sleep,
  startProcess,
  stopProcess,
  waitFor,
  which,
} from './support/harness.ts';
import { ingressTsArgv, plainManifests } from './support/ingress-ts.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';

const HOST = 'bench.test';
const WATCHDOG_MS = 90 * 60 * 1000;
// under valgrind a process is 20-60× slower: its start and first requests take a while
const READY_MS = 900_000;

interface Options {
  requests: number;
  warmup: number;
  windows: number;
  connections: number;
  idle: number;
  only: string[] | null;
  compare: string | null;
  functions: number;
  keep: string | null;
  out: string | null;
  core: number;
  logFlushMs: number;
}

// Two of V8's habits follow the clock, and under valgrind every clock-driven rate falls 20-60×, so
// both are changed for every contender alike: the memory reducer starts full collections when the
// allocation rate per second falls (they ran in every window, and natively do not run for minutes
// under this load); and optimising compiles run on background threads that valgrind, which runs one
// thread at a time, schedules late, so they were still running thousands of requests after the
// warm-up (the main thread running unoptimised code meanwhile). Compiled on the main thread when
// triggered, they are done within the warm-up. The young generation is left to V8: pinning it
// (--min-semi-space-size=16) made ingress-ts promote 2.5-3.5 MB per scavenge, natively too, where
// V8's own sizing promotes ~0.1 MB (bench/README.md, "Instructions per request").
const V8_FLAGS = ['--no-memory-reducer', '--no-concurrent-recompilation', '--no-concurrent-osr'];

// The access log writes its lines in batches, when 128 KiB are waiting or 100 ms after the first
// line (lib/access-log.ts). A core proxying natively (~8,000 requests/s) fills a batch (~770 default
// lines) within the 100 ms; under valgrind (~25 requests/s) a batch would carry 2-3 lines, each
// paying a timer and a write through libuv's pool that natively ~770 lines share. So the log's delay
// is lengthened for the measure (an environment variable for measurement only): batches are written
// when full, as on a busy core. `--log-flush-ms 100` measures production's timer as it is.
const LOG_FLUSH_MS = 60_000;

const CONTENDERS = ['floor', 'ingress-ts', 'no-log', 'no-metrics', 'neither'] as const;

const USAGE = `Usage: node bench/instructions.ts [--requests N] [--warmup N] [--windows W] [--connections C] [--idle S] [--only LIST] [--compare CHECKOUT] [--functions N] [--keep DIR] [--log-flush-ms MS] [--out FILE]
  --requests N        requests per measured window [4000]
  --warmup N          unmeasured requests first [12000]
  --windows W         measured windows per contender (1-20) [3]
  --connections C     client connections (keep-alive) [8]
  --idle S            seconds of an idle window per contender: what its timers cost per second [5]
  --only LIST         contenders, comma-separated, of ${CONTENDERS.join(',')} [all]
  --compare CHECKOUT  also ingress-ts of another checkout (e.g. an export of an older commit)
  --functions N       rows of the by-function table of each contender's last window [0: none]
  --core N            the core valgrind runs on; the upstream runs on another [0]
  --keep DIR          keep the callgrind dumps in DIR (for callgrind_annotate)
  --log-flush-ms MS   the access log's batch delay (measurement only): 100 is production's, which
                      under valgrind's ~25 requests/s makes each line pay a batch [60000: batches fill]
  --out FILE          also write the report to FILE (stdout only by default)
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    requests: 4000,
    warmup: 12000,
    windows: 3,
    connections: 8,
    idle: 5,
    only: null,
    compare: null,
    functions: 0,
    keep: null,
    out: null,
    core: 0,
    logFlushMs: LOG_FLUSH_MS,
  };
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  const text = (flag: string, value: string | undefined): string => {
    if (value === undefined || value === '') fail(2, `${flag} expects a value`);
    return value;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--requests') options.requests = bounded(arg, args[++i], 100, 1_000_000);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 0, 1_000_000);
    else if (arg === '--windows') options.windows = bounded(arg, args[++i], 1, 20);
    else if (arg === '--connections') options.connections = bounded(arg, args[++i], 1, 256);
    else if (arg === '--core') options.core = bounded(arg, args[++i], 0, 1023);
    else if (arg === '--idle') options.idle = bounded(arg, args[++i], 0, 60);
    else if (arg === '--functions') options.functions = bounded(arg, args[++i], 0, 200);
    else if (arg === '--log-flush-ms') options.logFlushMs = bounded(arg, args[++i], 1, 3_600_000);
    else if (arg === '--only') {
      const list = text(arg, args[++i]).split(',');
      for (const name of list)
        if (!(CONTENDERS as readonly string[]).includes(name)) fail(2, `--only: unknown contender "${name}"`);
      options.only = list;
    } else if (arg === '--compare') options.compare = resolve(text(arg, args[++i]));
    else if (arg === '--keep') options.keep = resolve(text(arg, args[++i]));
    else if (arg === '--out') options.out = resolve(text(arg, args[++i]));
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  return options;
}

initHarness('instructions', WATCHDOG_MS);

// --- callgrind ----------------------------------------------------------------------------------------

interface Counted {
  /** instructions of every thread in the window */
  total: number;
  /** of which V8's optimising compilers (Maglev, TurboFan), on their own threads */
  compiler: number;
  /** of which V8's garbage collector (scavenges, marking, sweeping) */
  gc: number;
  /** self instructions by function (`object: function`), when asked for */
  byFunction: Map<string, number>;
  byObject: Map<string, number>;
}

/** The newest dump callgrind wrote for `pid` in `dir` (`cg.PID.out.K`, K counting up). */
function newestDump(dir: string, pid: number): string | null {
  const prefix = `cg.${pid}.out.`;
  const parts = readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .map((f) => Number(f.slice(prefix.length)))
    .filter((k) => Number.isInteger(k));
  if (parts.length === 0) return null;
  return join(dir, `${prefix}${Math.max(...parts)}`);
}

/** A name of a callgrind dump, compressed as `(id) name` on first use and `(id)` after. */
function expand(names: Map<string, string>, value: string): string {
  const match = /^\((\d+)\)(?: (.*))?$/.exec(value);
  if (match === null) return value;
  if (match[2] !== undefined) names.set(match[1]!, match[2]);
  return names.get(match[1]!) ?? value;
}

/** The object a function's code belongs to, shortened: JIT code has none (`???`). */
function objectName(path: string): string {
  if (path === '???' || path === '') return '(JIT code: no symbol)';
  const base = path.slice(path.lastIndexOf('/') + 1);
  return base === 'node' ? 'node (V8, libuv, llhttp, OpenSSL, Node C++)' : base;
}

/** V8's optimising compilers: their work ends during a native warm-up, under valgrind it goes on. */
const COMPILER = /v8::internal::(?:compiler|maglev)::/;
/** V8's garbage collector, by the functions that do its work. */
const GC =
  /v8::internal::(?:Scaveng|[A-Za-z]*Marking|MarkCompact|Sweeper|Heap::|HeapObject::SizeFromMap|BodyDescriptorBase::IteratePointers|\(anonymous namespace\)::IterateObjectCache|RootScavengeVisitor|MemoryAllocator|Evacuat)|heap::base::/;

/**
 * Reads a callgrind dump (events: Ir only): the total, and with `split` the self cost by function
 * and by object. A cost line right after `calls=` is the callee's inclusive cost, not self cost.
 */
function readDump(file: string, split: boolean): Counted {
  const text = readFileSync(file, 'utf8');
  const totals = /^(?:totals|summary): (\d+)/m.exec(text);
  const counted: Counted = {
    total: totals ? Number(totals[1]) : Number.NaN,
    compiler: 0,
    gc: 0,
    byFunction: new Map(),
    byObject: new Map(),
  };
  const obNames = new Map<string, string>();
  const fnNames = new Map<string, string>();
  let ob = '???';
  let fn = '???';
  let afterCalls = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('ob=')) ob = expand(obNames, line.slice(3));
    else if (line.startsWith('fn=')) fn = expand(fnNames, line.slice(3));
    else if (line.startsWith('cob=')) expand(obNames, line.slice(4));
    else if (line.startsWith('cfn=')) expand(fnNames, line.slice(4));
    else if (line.startsWith('calls=')) afterCalls = true;
    else if (/^[0-9+\-*]/.test(line)) {
      if (afterCalls) {
        afterCalls = false;
        continue;
      }
      const fields = line.split(' ');
      const cost = Number(fields[1] ?? 0);
      if (!(cost > 0)) continue;
      if (COMPILER.test(fn)) counted.compiler += cost;
      else if (GC.test(fn)) counted.gc += cost;
      if (!split) continue;
      const object = objectName(ob);
      const key = object.startsWith('(JIT') ? object : `${object}: ${fn}`;
      counted.byFunction.set(key, (counted.byFunction.get(key) ?? 0) + cost);
      counted.byObject.set(object, (counted.byObject.get(object) ?? 0) + cost);
    }
  }
  return counted;
}

async function control(...args: [...string[], number]): Promise<void> {
  const argv = ['callgrind_control', ...args.map(String)];
  const result = await run(argv, 60_000);
  if (result.code !== 0) fail(1, `${argv.join(' ')} failed:\n${result.out}`);
}

// --- load ---------------------------------------------------------------------------------------------

/**
 * One GET, sent again once when a kept-alive connection was closed under it: the floor's Node
 * server closes connections idle for 5 s, and a window can begin after a longer pause (the idle
 * window, callgrind_control). The few instructions of the lost attempt stay in the window.
 */
async function get(pool: Pool): Promise<Dispatcher.ResponseData> {
  try {
    return await pool.request({ path: '/', method: 'GET', headers: { host: HOST } });
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code !== 'ECONNRESET' &&
      (error as NodeJS.ErrnoException).code !== 'UND_ERR_SOCKET'
    )
      throw error;
    return pool.request({ path: '/', method: 'GET', headers: { host: HOST } });
  }
}

/**
 * Exactly `requests` GETs over the pool's keep-alive connections, `connections` at a time; fails on
 * any non-200. One pool serves the warm-up and every window: a window opening and closing its own
 * connections would count their setup and teardown (and the compiles they trigger) in it.
 */
async function send(pool: Pool, requests: number, connections: number): Promise<number> {
  let left = requests;
  const started = Date.now();
  const loop = async () => {
    while (left > 0) {
      left--;
      const answer = await get(pool);
      const body = await answer.body.arrayBuffer();
      if (answer.statusCode !== 200 || body.byteLength < 1024)
        fail(1, `a request got ${answer.statusCode} with ${body.byteLength} bytes`);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return Date.now() - started;
}

// --- contenders ----------------------------------------------------------------------------------------

interface Contender {
  name: string;
  port: number;
  argv: string[];
  env?: NodeJS.ProcessEnv;
}

function valgrind(dir: string, argv: string[]): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    // V8 writes and rewrites its JIT code on the heap
    '--smc-check=all-non-file',
    '--dump-instr=no',
    // no instrumentation (and so 3-5× less slowdown) through the start and the warm-up
    '--instr-atstart=no',
    `--callgrind-out-file=${join(dir, 'cg.%p.out')}`,
    ...argv,
  ];
}

async function ingressTs(
  name: string,
  dir: string,
  upstreamPort: number,
  checkout: string | undefined,
  withoutLog: boolean,
  withoutMetrics: boolean,
  logFlushMs: number,
): Promise<Contender> {
  const slug = name.replace(/\W+/g, '-');
  const manifestsDir = join(dir, `manifests-${slug}`);
  mkdirSync(manifestsDir, { recursive: true });
  const configMap: Record<string, string> = {
    'worker-processes': '1',
    'access-log-path': join(dir, `${slug}-access.log`),
  };
  if (withoutLog) configMap['disable-access-log'] = 'true';
  writeFileSync(join(manifestsDir, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  const argv = ingressTsArgv({
    manifestsDir,
    ports,
    logLevel: 'warn',
    nodeFlags: V8_FLAGS,
    readyHost: HOST,
    args: ['--configmap', 'bench/ingress-ts', ...(withoutMetrics ? ['--enable-metrics=false'] : [])],
    ...(checkout === undefined ? {} : { checkout }),
  });
  return { name, port: ports.http, argv, env: { ...process.env, [FLUSH_DELAY_ENV]: String(logFlushMs) } };
}

interface Measured {
  name: string;
  /** instructions per request of each window, the optimising compilers' left out */
  perRequest: number[];
  compilerPerRequest: number[];
  gcPerRequest: number[];
  idlePerSecond: number;
  windowMs: number[];
  last: Counted | null;
}

async function measure(c: Contender, dir: string, options: Options): Promise<Measured> {
  const dumps = join(dir, `dumps-${c.name.replace(/\W+/g, '-')}`);
  mkdirSync(dumps, { recursive: true });
  log(`${c.name}: starting under callgrind`);
  const started: Started = startProcess(pinned(options.core, valgrind(dumps, c.argv)), undefined, c.env);
  await waitFor(
    c.name,
    async () => {
      if (started.child.exitCode !== null) fail(1, `${c.name} exited:\n${started.output.join('\n')}`);
      return (await probe(c.port, false, '/', HOST))?.status === 200;
    },
    READY_MS,
    1000,
  );
  log(`${c.name}: ready; warming up with ${options.warmup} requests`);
  const pool = new Pool(`http://127.0.0.1:${c.port}`, { connections: options.connections, pipelining: 1 });
  if (options.warmup > 0) await send(pool, options.warmup, options.connections);
  await control('-i', 'on', started.pid);
  // the code is translated again with instrumentation: a few requests before anything is counted
  await send(pool, Math.min(options.warmup, 500), options.connections);
  const measured: Measured = {
    name: c.name,
    perRequest: [],
    compilerPerRequest: [],
    gcPerRequest: [],
    idlePerSecond: Number.NaN,
    windowMs: [],
    last: null,
  };
  if (options.idle > 0) {
    await control('-z', started.pid);
    await sleep(options.idle * 1000);
    await control('-d', started.pid);
    measured.idlePerSecond = readDump(newestDump(dumps, started.pid)!, false).total / options.idle;
  }
  for (let w = 1; w <= options.windows; w++) {
    await control('-z', started.pid);
    const ms = await send(pool, options.requests, options.connections);
    await control('-d', started.pid);
    const last = w === options.windows && options.functions > 0;
    const counted = readDump(newestDump(dumps, started.pid)!, last);
    if (last) measured.last = counted;
    const perRequest = (counted.total - counted.compiler) / options.requests;
    measured.perRequest.push(perRequest);
    measured.compilerPerRequest.push(counted.compiler / options.requests);
    measured.gcPerRequest.push(counted.gc / options.requests);
    measured.windowMs.push(ms);
    log(
      `${c.name} window ${w}: ${int(perRequest)} instructions/request, compilers ${int(counted.compiler / options.requests)}, GC ${int(counted.gc / options.requests)} (${ms} ms)`,
    );
  }
  await pool.close();
  await stopProcess(started, 'SIGINT', 60_000);
  if (options.keep !== null) {
    mkdirSync(options.keep, { recursive: true });
    for (const f of readdirSync(dumps))
      writeFileSync(join(options.keep, `${c.name.replace(/\W+/g, '-')}-${f}`), readFileSync(join(dumps, f)));
  }
  return measured;
}

// --- report ----------------------------------------------------------------------------------------------

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const spread = (values: readonly number[]) => (Math.max(...values) - Math.min(...values)) / mean(values);

function row(m: Measured, floor: Measured | undefined): string {
  // the median window: the first after the warm-up may still run code that is being optimised
  const perRequest = median(m.perRequest);
  const ratio = floor === undefined ? Number.NaN : median(floor.perRequest) / perRequest;
  return `| ${m.name} | ${int(perRequest)} | ${m.perRequest.map((v) => int(v)).join(' / ')} | ${fixed(spread(m.perRequest) * 100, 2)} % | ${int(median(m.gcPerRequest))} | ${m.compilerPerRequest.map((v) => int(v)).join(' / ')} | ${int(m.idlePerSecond)} | ${fixed(ratio, 3)} |`;
}

function functionTable(m: Measured, top: number): string {
  const counted = m.last!;
  const total = counted.total;
  const rows = (map: Map<string, number>, limit: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(
        ([key, cost], k) =>
          `| ${k + 1} | \`${key.replaceAll('|', '\\|').slice(0, 160)}\` | ${fixed((cost / total) * 100, 2)} |`,
      )
      .join('\n');
  return `### ${m.name}: the last window by object and by function (self instructions)

| # | object | % |
|--:|---|--:|
${rows(counted.byObject, 12)}

| # | function | % |
|--:|---|--:|
${rows(counted.byFunction, top)}
`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  ensureTools();
  if (!which('valgrind') || !which('callgrind_control'))
    fail(3, 'valgrind (with callgrind_control) is missing');
  const dir = makeTempDir('ingress-ts-instructions-');
  const upstreamPort = await freePort();
  const upstream = await startNginx(
    join(dir, 'upstream'),
    upstreamConf(join(dir, 'upstream'), dir, [upstreamPort]),
    options.core === 0 ? 1 : 0,
  );
  const wanted = (name: string) => options.only === null || options.only.includes(name);
  const contenders: Contender[] = [];
  if (wanted('floor')) {
    const port = await freePort();
    contenders.push({
      name: 'node floor',
      port,
      argv: [
        process.execPath,
        ...V8_FLAGS,
        'bench/support/bare-proxy.ts',
        String(port),
        String(upstreamPort),
      ],
    });
  }
  if (wanted('ingress-ts'))
    contenders.push(
      await ingressTs('ingress-ts', dir, upstreamPort, undefined, false, false, options.logFlushMs),
    );
  if (options.compare !== null)
    contenders.push(
      await ingressTs(
        `ingress-ts (${options.compare})`,
        dir,
        upstreamPort,
        options.compare,
        false,
        false,
        options.logFlushMs,
      ),
    );
  if (wanted('no-log'))
    contenders.push(
      await ingressTs(
        'ingress-ts, no access log',
        dir,
        upstreamPort,
        undefined,
        true,
        false,
        options.logFlushMs,
      ),
    );
  if (wanted('no-metrics'))
    contenders.push(
      await ingressTs(
        'ingress-ts, no metrics',
        dir,
        upstreamPort,
        undefined,
        false,
        true,
        options.logFlushMs,
      ),
    );
  if (wanted('neither'))
    contenders.push(
      await ingressTs('ingress-ts, neither', dir, upstreamPort, undefined, true, true, options.logFlushMs),
    );
  // one at a time: valgrind serialises a process's threads on one core, and two of them would share it
  const results: Measured[] = [];
  for (const c of contenders) results.push(await measure(c, dir, options));
  await stopProcess(upstream, 'SIGQUIT');
  const floor = results.find((m) => m.name === 'node floor');
  const sections = [
    `# Instructions per proxied request (valgrind callgrind, every thread, user space)

- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, node ${process.version}, valgrind ${(await run(['valgrind', '--version'], 10_000)).out.trim()}, ${cpus()[0]?.model ?? '?'} × ${cpus().length}; load average at the end ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- each contender alone under callgrind on core ${options.core}, upstream NGINX (1 KiB) on another; ${int(options.warmup)} requests of warm-up, then ${options.windows} windows of ${int(options.requests)} GETs over ${options.connections} keep-alive connections (undici, outside valgrind); the access log's batch delay ${options.logFlushMs === 100 ? "100 ms, production's (under valgrind 2-3 lines a batch)" : `${int(options.logFlushMs)} ms (batches written when full, as on a busy core)`}

| contender | instructions/request (median window) | per window | spread | of which GC | optimising compilers (left out), per window | idle instructions/s | floor ÷ this |
|---|--:|---|--:|--:|---|--:|--:|
${results.map((m) => row(m, floor)).join('\n')}
`,
  ];
  if (options.functions > 0) for (const m of results) sections.push(functionTable(m, options.functions));
  const report = sections.join('\n');
  process.stdout.write(report);
  if (options.out !== null) writeFileSync(options.out, report);
}

if (import.meta.main) await main();
