// Per-core cost of the data plane: CPU µs per request of ingress-ts on one thread (worker-processes: 1,
// metrics on and scraped every 5 s, the access log in its default format to a file) against the bare
// Node proxy (bench/support/bare-proxy.ts), both pinned to core 0, with the upstream NGINX and wrk on
// core 1. CPU per request (utime+stime ÷ requests), not req/s, is the figure: it holds on a machine
// shared with other work, where req/s does not. Contenders run in interleaved rounds (floor,
// ingress-ts, [ingress-ts of --compare], floor, ...); medians over rounds. With --cpu-prof DIR, each
// contender is then restarted under `node --cpu-prof` for one more run, and the self time of its
// profile is summed by function and by module; with --perf DIR, under `perf record`, summed by symbol
// (V8's and node's C++ and the kernel's too). Run with `node bench/hot-path.ts [flags]` (see --help).

import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
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
  medianInterval,
  pinned,
  probe,
  REPO,
  run,
  type Started,
  sleep,
  startProcess,
  stopProcess,
  waitFor,
  which,
} from './support/harness.ts';
import { plainManifests, startIngressTs } from './support/ingress-ts.ts';
import { startNginx, upstreamConf } from './support/nginx.ts';
import { scrapedWhile, wrk } from './support/wrk.ts';

const HOST = 'bench.test';
const WATCHDOG_MS = 30 * 60 * 1000;
const SCRAPE_MS = 5000;

interface Options {
  rounds: number;
  duration: number;
  warmup: number;
  connections: number;
  cpuProf: string | null;
  perf: string | null;
  gc: boolean;
  compare: string | null;
  features: boolean;
  top: number;
  out: string | null;
}

const USAGE = `Usage: node bench/hot-path.ts [--rounds N] [--duration S] [--warmup S] [--connections C] [--cpu-prof DIR] [--perf DIR] [--gc] [--compare CHECKOUT] [--top N] [--out FILE]
  --rounds N          interleaved rounds (1-30) [5]
  --duration S        seconds per wrk run (1-60) [5]
  --warmup S          unrecorded seconds per contender first (1-120) [10]
  --connections C     wrk connections [64]
  --cpu-prof DIR      afterwards, one profiled run per contender (node --cpu-prof into DIR/<contender>)
  --perf DIR          afterwards, one run per contender under perf record (into DIR): self time by symbol,
                      JavaScript, node's C++, V8's builtins and the kernel alike
  --gc                afterwards, one run per contender under node --trace-gc-nvp: what its scavenges keep
  --compare CHECKOUT  also run ingress-ts from another checkout (e.g. an export of an older commit)
  --features          also run ingress-ts without the access log, without metrics, and without both
  --top N             rows of each profile table [15]
  --out FILE          also write the report to FILE (stdout only by default)
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    rounds: 5,
    duration: 5,
    warmup: 10,
    connections: 64,
    cpuProf: null,
    perf: null,
    gc: false,
    compare: null,
    features: false,
    top: 15,
    out: null,
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
    if (arg === '--rounds') options.rounds = bounded(arg, args[++i], 1, 30);
    else if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 1, 120);
    else if (arg === '--connections') options.connections = bounded(arg, args[++i], 1, 4096);
    else if (arg === '--top') options.top = bounded(arg, args[++i], 1, 100);
    else if (arg === '--cpu-prof') options.cpuProf = resolve(text(arg, args[++i]));
    else if (arg === '--perf') options.perf = resolve(text(arg, args[++i]));
    else if (arg === '--compare') options.compare = resolve(text(arg, args[++i]));
    else if (arg === '--features') options.features = true;
    else if (arg === '--gc') options.gc = true;
    else if (arg === '--out') options.out = resolve(text(arg, args[++i]));
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  return options;
}

initHarness('hot-path', WATCHDOG_MS);

// --- contenders ------------------------------------------------------------------------------------

interface Contender {
  name: string;
  port: number;
  /** the healthz port whose /metrics is scraped during runs, or null (the floor has none) */
  metricsPort: number | null;
  /** starts the process, with extra node flags (--cpu-prof) when given */
  start: (nodeFlags: string[]) => Promise<Started>;
  started: Started | null;
}

function floorContender(port: number, upstreamPort: number): Contender {
  return {
    name: 'node floor',
    port,
    metricsPort: null,
    started: null,
    async start(nodeFlags) {
      const argv = pinned(0, [
        process.execPath,
        ...nodeFlags,
        'bench/support/bare-proxy.ts',
        String(port),
        String(upstreamPort),
      ]);
      const started = startProcess(argv);
      await waitFor('the bare Node proxy', async () => (await probe(port, false, '/', HOST))?.status === 200);
      return started;
    },
  };
}

/** What an ingress-ts contender leaves out: its access log, its metrics (both on by default). */
interface Without {
  accessLog?: boolean;
  metrics?: boolean;
}

async function ingressTsContender(
  name: string,
  dir: string,
  upstreamPort: number,
  checkout: string | undefined,
  without: Without = {},
): Promise<Contender> {
  const manifestsDir = join(dir, `manifests-${name.replace(/\W+/g, '-')}`);
  mkdirSync(manifestsDir, { recursive: true });
  const accessLog = join(dir, `${name.replace(/\W+/g, '-')}-access.log`);
  const configMap: Record<string, string> = { 'worker-processes': '1', 'access-log-path': accessLog };
  if (without.accessLog === true) configMap['disable-access-log'] = 'true';
  const metrics = without.metrics !== true;
  writeFileSync(join(manifestsDir, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
  const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
  return {
    name,
    port: ports.http,
    metricsPort: metrics ? ports.healthz : null,
    started: null,
    async start(nodeFlags) {
      const ts = await startIngressTs({
        manifestsDir,
        ports,
        logLevel: 'warn',
        nodeFlags,
        args: ['--configmap', 'bench/ingress-ts', ...(metrics ? [] : ['--enable-metrics=false'])],
        readyHost: HOST,
        cores: 0,
        readyTimeoutMs: 30000,
        ...(checkout === undefined ? {} : { checkout }),
      });
      return ts.started;
    },
  };
}

async function load(c: Contender, seconds: number, options: Options) {
  const started = c.started!;
  return scrapedWhile(c.metricsPort, SCRAPE_MS, () =>
    wrk(`http://127.0.0.1:${c.port}/`, options.connections, seconds, HOST, () => [started.pid]),
  );
}

// --- profiles -------------------------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  /** µs on the monotonic clock process.hrtime reads */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The module a frame belongs to: a package, a lib/ file, a node: internal, or the VM's own. */
function moduleOf(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  const own = /\/(lib\/.*|bench\/.*|bin\/.*)$/.exec(path);
  if (own) return own[1]!;
  return path.startsWith('node:') ? path : path;
}

/** Self time by function and by module of the samples taken within [fromUs, toUs] (hrtime µs). */
function profileTables(file: string, top: number, requests: number, fromUs: number, toUs: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busy = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) continue;
    if (node === undefined || node.callFrame.functionName === '(idle)') continue;
    busy += delta;
    const { functionName, url, lineNumber } = node.callFrame;
    const where =
      url === '' ? '' : ` ${url.replace(`file://${REPO}`, '').replace(/^file:\/\//, '')}:${lineNumber + 1}`;
    const key = `${functionName || '(anonymous)'}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + delta);
    const module = moduleOf(url, functionName);
    byModule.set(module, (byModule.get(module) ?? 0) + delta);
  }
  const table = (title: string, map: Map<string, number>) => {
    const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
    const lines = [`| # | ${title} | self ms | % of busy | µs/request |`, '|--:|---|--:|--:|--:|'];
    rows.forEach(([key, us], k) => {
      lines.push(
        `| ${k + 1} | \`${key}\` | ${fixed(us / 1000, 0)} | ${fixed((us / busy) * 100, 1)} | ${fixed(us / requests, 2)} |`,
      );
    });
    return lines.join('\n');
  };
  return `Busy (not idle) samples of the recorded run: ${fixed(busy / 1e6, 1)} s, ${fixed(busy / requests, 1)} µs per request (the profiler's own overhead included).\n\n${table('function', byFunction)}\n\n${table('module', byModule)}`;
}

// --- young-generation collections ------------------------------------------------------------------

/** One `--trace-gc-nvp` line's name=value pairs. */
function nvp(line: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const m of line.matchAll(/(\w[\w.]*)=(\S+)/g)) pairs.set(m[1]!, m[2]!);
  return pairs;
}

/**
 * One run of `c` under `node --trace-gc-nvp` after its warm-up: its scavenges (how often, how much
 * each kept alive and promoted, their pauses) and its full collections. A request that is over should
 * be garbage for the next scavenge: what survives one is the requests in flight and not much more.
 */
async function gcRun(c: Contender, options: Options): Promise<string> {
  if (c.started !== null) await stopProcess(c.started, 'SIGINT', 15000);
  c.started = await c.start(['--trace-gc-nvp']);
  await load(c, options.warmup, options);
  const from = c.started.output.length;
  const run = await load(c, options.duration, options);
  const lines = c.started.output.slice(from);
  await stopProcess(c.started, 'SIGINT', 15000);
  c.started = null;
  const scavenges = lines.map(nvp).filter((pairs) => pairs.get('gc') === 's');
  const full = lines.map(nvp).filter((pairs) => pairs.get('gc') === 'mc' || pairs.get('gc') === 'ms').length;
  const of = (key: string) => scavenges.map((pairs) => Number(pairs.get(key) ?? Number.NaN));
  const mib = (bytes: number) => fixed(bytes / 2 ** 20, 2);
  const promoted = of('promoted').reduce((sum, bytes) => sum + bytes, 0);
  const per10k = (n: number) => fixed((n / run.requests) * 10000, 1);
  return `| ${c.name} | ${int(run.requests)} | ${per10k(scavenges.length)} | ${mib(median(of('new_space_survived')))} | ${mib(median(of('promoted')))} | ${int(promoted / run.requests)} | ${fixed(median(of('pause')), 1)} | ${per10k(full)} |`;
}

async function profileRun(c: Contender, dir: string, options: Options): Promise<string> {
  const side = join(dir, c.name.replace(/\W+/g, '-'));
  mkdirSync(side, { recursive: true });
  if (c.started !== null) await stopProcess(c.started, 'SIGINT', 15000);
  c.started = await c.start(['--cpu-prof', `--cpu-prof-dir=${side}`]);
  await load(c, options.warmup, options);
  const from = Number(process.hrtime.bigint() / 1000n);
  const run = await load(c, options.duration, options);
  const to = Number(process.hrtime.bigint() / 1000n);
  await stopProcess(c.started, 'SIGINT', 15000);
  c.started = null;
  const files = readdirSync(side).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) fail(1, `no .cpuprofile written to ${side}`);
  const file = join(side, files.sort().at(-1)!);
  // the recorded run's window, so that two profiles can be compared on the same requests later
  writeFileSync(`${file}.window.json`, JSON.stringify({ fromUs: from, toUs: to, requests: run.requests }));
  return `### ${c.name}\n\n${int(run.rps)} req/s under the profiler, ${fixed(run.cpuUsPerReq ?? Number.NaN, 1)} µs CPU per request in the recorded run; profile \`${file}\`.\n\n${profileTables(file, options.top, run.requests, from, to)}\n`;
}

// --- perf -------------------------------------------------------------------------------------------

/**
 * One run of `c` under `perf record` (cpu-clock samples of all its threads, the kernel's part
 * included) after its warm-up; node names JIT frames through --perf-basic-prof-only-functions. The
 * report is self time by symbol, turned into µs per request with the run's own CPU per request:
 * where --cpu-prof shows "(garbage collector)" and "(program)", this names the scavenger, the parser's
 * C++ and the syscalls.
 */
async function perfRun(c: Contender, dir: string, options: Options): Promise<string> {
  const data = join(dir, `${c.name.replace(/\W+/g, '-')}.perf.data`);
  if (c.started !== null) await stopProcess(c.started, 'SIGINT', 15000);
  c.started = await c.start(['--perf-basic-prof-only-functions']);
  const pid = c.started.pid;
  await load(c, options.warmup, options);
  const recorder = startProcess([
    'perf',
    'record',
    '-q',
    '-e',
    'cpu-clock',
    '-F',
    '4999',
    '-p',
    String(pid),
    '-o',
    data,
  ]);
  // perf prints nothing once it is attached; give it a moment before the load starts
  await sleep(500);
  const recorded = await load(c, options.duration, options);
  await stopProcess(recorder, 'SIGINT', 15000);
  const report = await run(
    [
      'perf',
      'report',
      '-i',
      data,
      '--stdio',
      '--no-children',
      '--sort',
      'dso,sym',
      '-t',
      '\t',
      '--percent-limit',
      '0.02',
    ],
    120_000,
  );
  await stopProcess(c.started, 'SIGINT', 15000);
  c.started = null;
  // the JIT's names are in node's map file, gone with it: the whole report is kept beside the data
  writeFileSync(`${data}.txt`, report.out);
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
  const perRequest = recorded.cpuUsPerReq ?? Number.NaN;
  const rows: string[] = [];
  for (const line of report.out.split('\n')) {
    const m = /^\s*([\d.]+)%\s*\t([^\t]*)\t(.*)$/.exec(line);
    if (m === null || rows.length >= options.top) continue;
    const share = Number(m[1]);
    const symbol = m[3]!
      .replace(/^\[[.k]\]\s*/, '')
      .trim()
      .replace(/\|/g, '\\|');
    rows.push(
      `| ${rows.length + 1} | \`${symbol.slice(0, 110)}\` | ${m[2]!.trim()} | ${fixed(share, 1)} | ${fixed((share / 100) * perRequest, 2)} |`,
    );
  }
  return `### ${c.name}\n\n${int(recorded.rps)} req/s under perf, ${fixed(perRequest, 1)} µs CPU per request; \`${data}\`.\n\n| # | symbol | object | % of samples | µs/request |\n|--:|---|---|--:|--:|\n${rows.join('\n')}\n`;
}

// --- main -------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  ensureTools();
  if (cpus().length < 2) fail(3, 'needs 2 cores: the proxies on core 0, the load on core 1');
  const dir = makeTempDir('ingress-ts-hot-path-');
  const upstreamPort = await freePort();
  const upstream = await startNginx(
    join(dir, 'upstream'),
    upstreamConf(join(dir, 'upstream'), dir, [upstreamPort]),
    1,
  );
  const contenders = [
    floorContender(await freePort(), upstreamPort),
    await ingressTsContender('ingress-ts', dir, upstreamPort, undefined),
  ];
  if (options.compare !== null)
    contenders.push(
      await ingressTsContender(`ingress-ts (${options.compare})`, dir, upstreamPort, options.compare),
    );
  if (options.features) {
    const variants: Array<[string, Without]> = [
      ['ingress-ts, no access log', { accessLog: true }],
      ['ingress-ts, no metrics', { metrics: true }],
      ['ingress-ts, neither', { accessLog: true, metrics: true }],
    ];
    for (const [name, without] of variants)
      contenders.push(await ingressTsContender(name, dir, upstreamPort, undefined, without));
  }
  for (const c of contenders) c.started = await c.start([]);
  for (const c of contenders) await load(c, options.warmup, options);
  const cpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const rps = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of contenders) {
      const r = await load(c, options.duration, options);
      cpu.get(c.name)!.push(r.cpuUsPerReq ?? Number.NaN);
      rps.get(c.name)!.push(r.rps);
      log(
        `round ${round} ${c.name}: ${int(r.rps)} req/s, ${fixed(r.cpuUsPerReq ?? Number.NaN, 1)} µs CPU/req`,
      );
    }
  }
  const floor = cpu.get('node floor')!;
  const rows = contenders.map((c) => {
    const own = cpu.get(c.name)!;
    const quotients = own.map((us, k) => floor[k]! / us);
    const interval = medianInterval(quotients);
    const within = interval === null ? '–' : `${fixed(interval[0], 2)}–${fixed(interval[1], 2)}`;
    return `| ${c.name} | ${fixed(median(own), 1)} | ${own.map((v) => fixed(v, 1)).join(' / ')} | ${fixed(median(quotients), 2)} | ${within} | ${int(median(rps.get(c.name)!))} |`;
  });
  const sections = [
    `# Hot path: CPU per request, ingress-ts (one thread, metrics scraped every ${SCRAPE_MS / 1000} s, access log to a file) vs the bare Node proxy

- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, node ${process.version}, ${cpus()[0]?.model ?? '?'} × ${cpus().length}; load average at the end ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- proxies on core 0, upstream NGINX (1 KiB) and wrk -c${options.connections} on core 1; ${options.warmup} s warm-up each, ${options.rounds} interleaved rounds of ${options.duration} s

| contender | CPU µs/req (median) | per round | floor ÷ this (by CPU, median of rounds) | its 95 % interval (6 rounds or more) | req/s (median) |
|---|--:|---|--:|--:|--:|
${rows.join('\n')}
`,
  ];
  if (options.gc) {
    const rows: string[] = [];
    for (const c of contenders) rows.push(await gcRun(c, options));
    sections.push(`## Young-generation collections (node --trace-gc-nvp, one ${options.duration} s run each after ${options.warmup} s of warm-up)

| contender | requests | scavenges per 10k requests | survived per scavenge, MiB (median) | promoted per scavenge, MiB (median) | promoted B per request | scavenge pause ms (median) | full collections per 10k requests |
|---|--:|--:|--:|--:|--:|--:|--:|
${rows.join('\n')}
`);
  }
  if (options.cpuProf !== null) {
    mkdirSync(options.cpuProf, { recursive: true });
    sections.push(
      `## CPU profiles (one ${options.duration} s run each, after ${options.warmup} s of warm-up)\n`,
    );
    for (const c of contenders) sections.push(await profileRun(c, options.cpuProf, options));
  }
  if (options.perf !== null) {
    if (!which('perf')) fail(3, '--perf needs perf (Debian: linux-perf)');
    mkdirSync(options.perf, { recursive: true });
    sections.push(
      `## perf: self time by symbol (one ${options.duration} s run each, after ${options.warmup} s of warm-up)\n`,
    );
    for (const c of contenders) sections.push(await perfRun(c, options.perf, options));
  }
  for (const c of contenders) if (c.started !== null) await stopProcess(c.started, 'SIGINT', 15000);
  await stopProcess(upstream, 'SIGQUIT');
  const report = sections.join('\n');
  process.stdout.write(report);
  if (options.out !== null) writeFileSync(options.out, report);
  cleanup();
}

if (import.meta.main) await main();
