// Scaling benchmark: NGINX with N workers against ingress-ts with N data-plane threads (ConfigMap
// `worker-processes: N`), both writing an access log, on the same cores, with the floor of a Node
// proxy beside them (bench/support/bare-proxy.ts in N worker threads sharing the port by reusePort,
// no log, no metrics). Method: for each N of --threads, one NGINX (`worker_processes N`), one bare
// Node proxy and one ingress-ts are started pinned to the first N cores of --cores; the upstream
// NGINX and wrk are pinned to --load-cores. ingress-ts runs with its image's environment (the
// Containerfile's ENV lines: glibc's malloc threshold changes its RSS). All contenders run for the
// whole benchmark; each round runs wrk against each in turn (nginx ×1, node floor ×1, ingress-ts ×1,
// nginx ×2, ...), medians of the rounds are reported. Reported per contender: req/s, × NGINX and ×
// the floor with the same N, p99, proxy CPU µs per request, RSS; then the scaling N-over-1 of each
// against the targets of the data-plane threads work. Run with `node bench/threads-bench.ts [flags]`
// (see `--help`).

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
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
  processTree,
  REPO,
  rssKiB,
  type Started,
  startProcess,
  stopProcess,
  version,
  waitFor,
} from './support/harness.ts';
import { imageEnv, plainManifests, startIngressTs } from './support/ingress-ts.ts';
import {
  benchUpstream,
  httpCommon,
  nginxCommon,
  PROXY_LOCATION,
  startNginx,
  upstreamConf,
} from './support/nginx.ts';
import { errorsOf, type WrkPlacement, type WrkResult, wrk, wrkCommands } from './support/wrk.ts';

const HOST = 'bench.test';
/** Hard limit on the whole run; everything is stopped when it passes. */
const WATCHDOG_MS = 30 * 60 * 1000;

// --- flags -----------------------------------------------------------------------------------------

interface Options {
  /** the proxies' cores; N threads run on the first N */
  cores: number[];
  /** wrk's and the upstream's cores */
  loadCores: number[];
  threads: number[];
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  out: string | null;
}

const USAGE = `Usage: node bench/threads-bench.ts [--cores LIST] [--load-cores LIST] [--threads LIST] [--duration S] [--warmup S] [--rounds N] [--connections C] [--no-write]
  --cores LIST       cores for the proxies, e.g. 0,1 or 0-3; N threads (workers) run on the first N
                     [all cores but the last when there are more than 2, else 0,1]
  --load-cores LIST  cores for wrk and the upstream NGINX [the cores not in --cores, else the last core]
  --threads LIST     thread (worker) counts to compare, ascending, starting with 1 [1,2]
  --duration S       seconds per wrk run (1-60) [8]
  --warmup S         unrecorded seconds per contender before the rounds (1-60) [2]
  --rounds N         interleaved rounds (1-10) [3]
  --connections C    wrk connections (1-4096) [64]
  --no-write         print the report only, do not write bench/results/threads-YYYY-MM-DD.md
`;

/** "0,1", "0-3" or "0,2-3" as a list of cores; each must exist on this machine. */
function coreList(flag: string, text: string | undefined): number[] {
  if (text === undefined || text === '') fail(2, `${flag} expects a core list such as 0,1 or 0-3`);
  const all = cpus().length;
  const out: number[] = [];
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) fail(2, `${flag}: "${part}" is not a core or a range`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let core = from; core <= to; core++) {
      if (core >= all) fail(2, `${flag}: core ${core} does not exist (${all} cores)`);
      if (!out.includes(core)) out.push(core);
    }
  }
  if (out.length === 0) fail(2, `${flag} is empty`);
  return out;
}

function defaultCores(): { cores: number[]; loadCores: number[] } {
  const all = [...Array(cpus().length).keys()];
  if (all.length === 1) return { cores: [0], loadCores: [0] };
  // on 2 cores the proxies need both for N=2, so the load shares core 1 with them
  if (all.length === 2) return { cores: [0, 1], loadCores: [1] };
  return { cores: all.slice(0, -1), loadCores: all.slice(-1) };
}

function parseOptions(args: readonly string[]): Options {
  const defaults = defaultCores();
  const options: Options = {
    ...defaults,
    threads: [1, 2],
    duration: 8,
    warmup: 2,
    rounds: 3,
    connections: 64,
    out: join(REPO, 'bench', 'results', `threads-${new Date().toISOString().slice(0, 10)}.md`),
  };
  let loadCoresGiven = false;
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--cores') options.cores = coreList(arg, args[++i]);
    else if (arg === '--load-cores') {
      options.loadCores = coreList(arg, args[++i]);
      loadCoresGiven = true;
    } else if (arg === '--threads') {
      const list = (args[++i] ?? '').split(',').map((n) => bounded(arg, n, 1, 256));
      if (list[0] !== 1 || list.some((n, k) => k > 0 && n <= list[k - 1]!))
        fail(2, '--threads expects ascending counts starting with 1, e.g. 1,2 or 1,2,4');
      options.threads = list;
    } else if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 1, 60);
    else if (arg === '--rounds') options.rounds = bounded(arg, args[++i], 1, 10);
    else if (arg === '--connections') options.connections = bounded(arg, args[++i], 1, 4096);
    else if (arg === '--no-write') options.out = null;
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  if (!loadCoresGiven) {
    const free = [...Array(cpus().length).keys()].filter((c) => !options.cores.includes(c));
    options.loadCores = free.length > 0 ? free : [options.cores.at(-1)!];
  }
  const most = options.threads.at(-1)!;
  if (most > options.cores.length)
    fail(2, `--threads ${most} needs ${most} cores in --cores (${options.cores.join(',')})`);
  return options;
}

initHarness('threads-bench', WATCHDOG_MS);

// --- the contenders --------------------------------------------------------------------------------

/**
 * NGINX as ingress-nginx renders a location (HTTP/1.1 to a keep-alive upstream pool, no buffering,
 * the forwarded headers) with `workers` workers and ingress-nginx's default access log format
 * (`log-format-upstream`) to a file; `$proxy_upstream_name` is the name ingress-nginx gives the
 * backend, set with `set` as its Lua would.
 */
function proxyConf(prefix: string, workers: number, port: number, upstream: number): string {
  return `${nginxCommon(prefix, workers)}
http {
${httpCommon(prefix).replace('  access_log off;\n', '')}  keepalive_requests 1000;
  log_format upstreaminfo '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $request_id';
  access_log ${prefix}/access.log upstreaminfo;
${benchUpstream(upstream)}  server {
    listen 127.0.0.1:${port} backlog=4096 reuseport;
    server_name ${HOST};
    location / {
      set $proxy_upstream_name "bench-bench-80";
      set $proxy_alternative_upstream_name "";
${PROXY_LOCATION}    }
  }
}
`;
}

type ContenderKind = 'nginx' | 'node floor' | 'ingress-ts';

interface Contender {
  name: string;
  kind: ContenderKind;
  threads: number;
  cores: string;
  port: number;
  started: Started;
  command: string;
  /** null for the floor, which writes none */
  accessLog: string | null;
  /** the processes whose CPU is the proxy's: NGINX's master and workers, or the Node process */
  pids: () => number[];
}

async function startContenders(dir: string, options: Options, upstreamPort: number): Promise<Contender[]> {
  const contenders: Contender[] = [];
  for (const n of options.threads) {
    const cores = options.cores.slice(0, n).join(',');
    const prefix = join(dir, `nginx-${n}`);
    const nginxPort = await freePort();
    const nginx = await startNginx(prefix, proxyConf(prefix, n, nginxPort, upstreamPort), cores);
    contenders.push({
      name: `nginx ×${n}`,
      kind: 'nginx',
      threads: n,
      cores,
      port: nginxPort,
      started: nginx,
      command: `${pinned(cores, ['nginx']).join(' ')} -p ${prefix} -c ${prefix}/nginx.conf (worker_processes ${n})`,
      accessLog: join(prefix, 'access.log'),
      pids: () => processTree(nginx.pid),
    });
    contenders.push(await startFloor(n, cores, upstreamPort));
    const manifestsDir = join(dir, `manifests-${n}`);
    mkdirSync(manifestsDir, { recursive: true });
    const accessLog = join(dir, `ingress-ts-${n}-access.log`);
    const configMap = { 'worker-processes': String(n), 'access-log-path': accessLog };
    writeFileSync(join(manifestsDir, 'bench.yaml'), plainManifests({ host: HOST, upstreamPort, configMap }));
    const ports = { http: await freePort(), https: await freePort(), healthz: await freePort() };
    // as the image runs it (its malloc setting): the RSS per thread is the shipped one
    const env = imageEnv();
    const ts = await startIngressTs({
      manifestsDir,
      ports,
      logLevel: 'warn',
      args: ['--configmap', 'bench/ingress-ts'],
      readyHost: HOST,
      cores,
      readyTimeoutMs: 30000,
      env,
    });
    contenders.push({
      name: `ingress-ts ×${n}`,
      kind: 'ingress-ts',
      threads: n,
      cores,
      port: ports.http,
      started: ts.started,
      command: `${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')} ${ts.command} (ConfigMap worker-processes: "${n}")`,
      accessLog,
      pids: () => [ts.started.pid],
    });
  }
  return contenders;
}

/** The bare Node proxy with `threads` worker threads on `reusePort` (served on the main thread for 1). */
async function startFloor(threads: number, cores: string, upstreamPort: number): Promise<Contender> {
  const port = await freePort();
  const argv = pinned(cores, [
    process.execPath,
    'bench/support/bare-proxy.ts',
    String(port),
    String(upstreamPort),
    String(threads),
  ]);
  const started = startProcess(argv);
  await waitFor('the bare Node proxy', async () => {
    if (started.child.exitCode !== null) fail(1, `bare-proxy.ts exited:\n${started.output.join('\n')}`);
    return (await probe(port, false, '/', HOST))?.status === 200;
  });
  return {
    name: `node floor ×${threads}`,
    kind: 'node floor',
    threads,
    cores,
    port,
    started,
    command: `${argv.join(' ')} (${threads === 1 ? 'served on the main thread' : `${threads} worker threads, reusePort`})`,
    accessLog: null,
    pids: () => [started.pid],
  };
}

// --- rounds ----------------------------------------------------------------------------------------

interface Measured {
  contender: Contender;
  runs: WrkResult[];
  /** per round: req/s ÷ the NGINX with the same N */
  ratios: number[];
  /** per round: req/s ÷ the bare Node proxy with the same N */
  floorRatios: number[];
  /** per round: req/s ÷ the same kind with one thread */
  scaling: number[];
  /** after all contenders started, before any load */
  idleRssKiB: number | null;
  rssKiB: number | null;
}

/** RSS of the proxy's processes summed (NGINX: master + workers), KiB. */
function proxyRss(contender: Contender): number | null {
  const values = contender
    .pids()
    .map(rssKiB)
    .filter((v): v is number => v !== null);
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0);
}

async function measure(contenders: Contender[], options: Options): Promise<Measured[]> {
  const placement: WrkPlacement = {
    cores: options.loadCores.join(','),
    threads: options.loadCores.length,
  };
  const load = (c: Contender, seconds: number) =>
    wrk(`http://127.0.0.1:${c.port}/`, options.connections, seconds, HOST, c.pids, placement);
  const measured = contenders.map(
    (contender): Measured => ({
      contender,
      runs: [],
      ratios: [],
      floorRatios: [],
      scaling: [],
      idleRssKiB: proxyRss(contender),
      rssKiB: null,
    }),
  );
  for (const c of contenders) await load(c, options.warmup); // JIT, pools, thread start: not recorded
  for (let round = 1; round <= options.rounds; round++) {
    const rps = new Map<string, number>();
    for (const m of measured) {
      const result = await load(m.contender, options.duration);
      m.runs.push(result);
      rps.set(m.contender.name, result.rps);
      log(`round ${round} ${m.contender.name}: ${Math.round(result.rps)} req/s`);
    }
    for (const m of measured) {
      const { kind, threads } = m.contender;
      const own = rps.get(m.contender.name)!;
      const nginx = rps.get(`nginx ×${threads}`);
      const floor = rps.get(`node floor ×${threads}`);
      const one = rps.get(`${kind} ×1`);
      if (nginx) m.ratios.push(own / nginx);
      if (floor) m.floorRatios.push(own / floor);
      if (one) m.scaling.push(own / one);
    }
  }
  for (const m of measured) m.rssKiB = proxyRss(m.contender);
  return measured;
}

// --- report ---------------------------------------------------------------------------------------------

const mib = (kib: number | null) => (kib === null || Number.isNaN(kib) ? 'n/a' : (kib / 1024).toFixed(1));
const pass = (ok: boolean) => (ok ? 'met' : '**not met**');

function resultsTable(measured: Measured[]): string {
  const lines = [
    '| contender | cores | req/s (median) | × NGINX same N | × Node floor same N | p99 ms | proxy CPU µs/req | RSS MiB idle / after | socket errors (sum) | non-2xx/3xx (sum) | req/s per round |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  for (const { contender, runs, ratios, floorRatios, idleRssKiB: idle, rssKiB: rss } of measured) {
    const cpu = runs.map((r) => r.cpuUsPerReq).filter((v): v is number => v !== null);
    lines.push(
      `| ${contender.name} | ${contender.cores} | ${int(median(runs.map((r) => r.rps)))} | ${fixed(median(ratios), 2)} | ${fixed(median(floorRatios), 2)} | ${fixed(median(runs.map((r) => r.p99)), 2)} | ${cpu.length > 0 ? fixed(median(cpu), 1) : '–'} | ${mib(idle)} / ${mib(rss)} | ${int(runs.reduce((s, r) => s + errorsOf(r), 0))} | ${int(runs.reduce((s, r) => s + r.non2xx, 0))} | ${runs.map((r) => int(r.rps)).join(' / ')} |`,
    );
  }
  return lines.join('\n');
}

function targets(measured: Measured[], options: Options): string {
  const find = (kind: string, n: number) =>
    measured.find((m) => m.contender.kind === kind && m.contender.threads === n)!;
  const lines: string[] = [];
  const tsOne = find('ingress-ts', 1);
  const oneRatio = median(tsOne.ratios);
  lines.push(
    `- one thread ≥ 0.35 × one NGINX worker, both writing access logs: ${fixed(oneRatio, 2)} × (median of the rounds: ${tsOne.ratios.map((r) => fixed(r, 2)).join(' / ')}): ${pass(oneRatio >= 0.35)}`,
  );
  for (const n of options.threads) {
    const ts = find('ingress-ts', n);
    const floorRatio = median(ts.floorRatios);
    const floorScale = median(find('node floor', n).scaling);
    lines.push(
      `- ${n} thread${n === 1 ? '' : 's'}: ingress-ts (metrics and access log on) ≥ 0.9 × the bare Node floor (neither): ${fixed(floorRatio, 2)} × (per round: ${ts.floorRatios.map((r) => fixed(r, 2)).join(' / ')}): ${pass(floorRatio >= 0.9)}${n === 1 ? '' : `; the floor's own ${n}-over-1: ${fixed(floorScale, 2)}`}`,
    );
  }
  for (const n of options.threads.slice(1)) {
    const ts = find('ingress-ts', n);
    const nginx = find('nginx', n);
    const tsScale = median(ts.scaling);
    const nginxScale = median(nginx.scaling);
    // per round, so that a drift of the machine between rounds does not enter the comparison
    const relative = median(ts.scaling.map((s, k) => s / (nginx.scaling[k] ?? Number.NaN)));
    lines.push(
      `- ${n} threads ≥ 0.8 × ${n} × one thread: ingress-ts ×${n} ÷ ×1 = ${fixed(tsScale, 2)} (target ${fixed(0.8 * n, 2)}): ${pass(tsScale >= 0.8 * n)}; NGINX ×${n} ÷ ×1 = ${fixed(nginxScale, 2)} in the same setup (per round: ingress-ts ${ts.scaling.map((r) => fixed(r, 2)).join(' / ')}; NGINX ${nginx.scaling.map((r) => fixed(r, 2)).join(' / ')})`,
      `- ingress-ts's ${n}-over-1 within 10% of NGINX's: ${fixed(relative, 2)} × NGINX's scaling (median of the per-round quotients; target ≥ 0.90): ${pass(relative >= 0.9)}`,
    );
    lines.push(rssPerThread(ts, tsOne, find('nginx', 1), nginx, n));
  }
  return lines.join('\n');
}

/**
 * RSS per added thread after the rounds (the target), and idle; NGINX's per added worker beside it.
 * ingress-ts with one thread serves on the main thread; with N > 1, N worker threads serve and the
 * main thread keeps the controller, so going from 1 to N adds N isolates: each one's cost is shown too.
 */
function rssPerThread(ts: Measured, tsOne: Measured, nginxOne: Measured, nginx: Measured, n: number): string {
  const added = (many: number | null, one: number | null, by: number) =>
    many === null || one === null ? Number.NaN : (many - one) / by;
  const after = added(ts.rssKiB, tsOne.rssKiB, n - 1);
  return `- RSS per added thread < 40 MiB: after the rounds (${mib(ts.rssKiB)} − ${mib(tsOne.rssKiB)}) ÷ ${n - 1} = ${mib(after)} MiB: ${Number.isNaN(after) ? 'n/a' : pass(after < 40 * 1024)}; idle, before any load: ${mib(added(ts.idleRssKiB, tsOne.idleRssKiB, n - 1))} MiB. Per worker thread (÷ ${n}: with N > 1 the data plane leaves the main thread for ${n} workers): ${mib(added(ts.rssKiB, tsOne.rssKiB, n))} MiB after, ${mib(added(ts.idleRssKiB, tsOne.idleRssKiB, n))} MiB idle. NGINX per added worker after the rounds: ${mib(added(nginx.rssKiB, nginxOne.rssKiB, n - 1))} MiB`;
}

function accessLogs(measured: Measured[], warmup: number): string {
  const lines = measured.flatMap(({ contender, runs }) => {
    if (contender.accessLog === null) return [];
    const counted = spawnSync('wc', ['-l', contender.accessLog], { encoding: 'utf8' }).stdout ?? '';
    const lines = Number(counted.trim().split(/\s+/)[0]);
    const count = counted === '' || !Number.isFinite(lines) ? 'n/a' : int(lines);
    const sent = runs.reduce((s, r) => s + r.requests, 0);
    return `- ${contender.name}: ${count} lines; wrk counted ${int(sent)} requests in the recorded runs (the ${warmup} s warm-up and the readiness probes are logged too)`;
  });
  return lines.join('\n');
}

function header(options: Options, contenders: Contender[], upstreamCommand: string): string {
  const cpu = cpus();
  const shared = options.loadCores.filter((c) => options.cores.includes(c));
  const overlap =
    shared.length === 0
      ? 'the load generator and the upstream have cores of their own'
      : `**the load shares core ${shared.join(',')} with the proxies** whenever N reaches it (on a 2-core machine there is no other way: with N=2 the proxies need both cores). There, wrk and the upstream take CPU from the proxy, so N-thread throughput is below what N free cores give, for NGINX and ingress-ts alike: compare the two scalings with each other, not with N`;
  return `# Scaling benchmark: NGINX N workers vs ingress-ts N threads

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; 1-minute load average at the end: ${fixed(loadavg()[0] ?? Number.NaN, 2)}
- node: ${process.version}; ${version(['nginx', '-v'])}; ${version(['wrk', '-v'])}
- pinning: ${isPinned() ? `N threads (workers) on the first N of cores ${options.cores.join(',')}; wrk (-t${options.loadCores.length}) and the upstream NGINX on ${options.loadCores.join(',')}; ${overlap}` : '**taskset missing: nothing pinned**'}
- contenders: NGINX with \`worker_processes N\` (\`listen … reuseport\`, as ingress-nginx renders it with its default \`reuse-port: true\`), ingress-nginx's location settings and its default access log format to a file; the Node floor, \`bench/support/bare-proxy.ts\` (\`http.createServer\` + one undici Pool + \`dispatch()\`, no routing, no forwarded headers, no access log, no metrics) on the main thread for N = 1, in N worker threads listening with \`reusePort\` for N > 1; ingress-ts in standalone mode with ConfigMap \`worker-processes: N\`, its default features (per-request metrics, the access log in ingress-nginx's default format to a file)
- method: a ${options.warmup} s unrecorded warm-up per contender, then ${options.rounds} interleaved round(s), each running ${contenders.map((c) => c.name).join(', ')} in that order, with \`wrk -c${options.connections}\` for ${options.duration} s each; medians over rounds. × NGINX and N-over-1 are medians of per-round ratios. Proxy CPU is utime+stime of the proxy (NGINX: master + workers; the floor and ingress-ts: the process, all its threads) over the run, divided by the requests. RSS idle (all contenders started, before the warm-up) and after the rounds: NGINX master + workers summed (shared pages counted in each), the floor and ingress-ts the process.
- upstream: NGINX, one worker per load core, \`return 200\` with a 1,024-byte body, keep-alive

Commands:

\`\`\`sh
${upstreamCommand}
${contenders.map((c) => c.command).join('\n')}
${wrkCommands.join('\n')}
\`\`\`
`;
}

// --- main ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  ensureTools();
  const startedAt = Date.now();
  const dir = makeTempDir('ingress-ts-threads-bench-');
  const upstreamPort = await freePort();
  const prefix = join(dir, 'upstream');
  const loadCores = options.loadCores.join(',');
  const upstreamText = upstreamConf(prefix, dir, [upstreamPort]).replace(
    'worker_processes 1;',
    `worker_processes ${options.loadCores.length};`,
  );
  const upstream = await startNginx(prefix, upstreamText, loadCores);
  const upstreamCommand = `${pinned(loadCores, ['nginx']).join(' ')} -p ${prefix} -c ${prefix}/nginx.conf`;
  log(`starting ${options.threads.length * 3} contenders`);
  const contenders = await startContenders(dir, options, upstreamPort);
  const measured = await measure(contenders, options);
  const stopSignal = { nginx: 'SIGQUIT', 'node floor': 'SIGTERM', 'ingress-ts': 'SIGINT' } as const;
  for (const c of contenders) await stopProcess(c.started, stopSignal[c.kind], 15000);
  await stopProcess(upstream, 'SIGQUIT');
  const minutes = ((Date.now() - startedAt) / 60000).toFixed(1);
  const report = `${header(options, contenders, upstreamCommand)}
Total run time: ${minutes} min.

## Results (plain HTTP, 1 KiB, ${options.connections} connections)

${resultsTable(measured)}

## Against the targets

${targets(measured, options)}

## Access logs

${accessLogs(measured, options.warmup)}
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
