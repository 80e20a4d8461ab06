// Proxy benchmark: ingress-ts against one NGINX worker configured like ingress-nginx, with wrk on
// loopback. Method: one proxy process pinned to core 0
// (`taskset -c 0`), wrk and the upstream NGINX pinned to core 1, contenders interleaved per round
// (a b c a b c ...), medians reported. Run with `node bench/proxy-bench.ts [flags]` (see `--help`).
//
// Contenders:
// - direct: wrk straight to the upstream NGINX (no proxy): the ceiling of this setup;
// - nginx: `worker_processes 1`, an `upstream` block with `keepalive 64`, `proxy_http_version 1.1`,
//   `proxy_set_header Connection ""`, `proxy_buffering off` and the forwarded headers ingress-nginx
//   sets, no access log;
// - undici floor: bench/support/bare-proxy.ts, http.createServer + one undici Pool + dispatch() with
//   nothing else (no routing, no forwarded headers, no retries): the floor of a Node.js proxy (plain
//   HTTP scenarios only);
// - ingress-ts: `bin/ingress-ts.ts` in standalone mode over a generated manifests folder (one Ingress
//   for host bench.test, `--log-level warn`) with its default features on: per-request metrics, and
//   the access log (one line per request, ingress-nginx's default format) to a file (ConfigMap `access-log-path`);
// - ingress-ts off: the same with `--enable-metrics=false` and ConfigMap `disable-access-log: "true"`:
//   what those features cost.
// Scenarios: plain HTTP at 8 and 64 connections (1 KiB responses), TLS termination at 64 connections,
// 1 MiB responses at 64 connections; then configuration changes under load, all with wrk -c64:
// ingress-ts (a fresh instance at --log-level info) 10 s without edits as a baseline, then 1,000 model
// swaps, each a manifest edit made once the previous edit's swap was applied (alternating a route
// change and an endpoints change), wrk stopped with SIGINT after the last; NGINX 10 s with 20
// `nginx -s reload` 500 ms apart. Reported: wrk's socket errors and non-2xx/3xx for each, and for
// ingress-ts the swaps counted from its `configuration applied` log lines (full / endpoints-only,
// wall time, edit-to-applied time). Every process it starts is stopped by PID, also on errors and
// SIGINT; every run is bounded in time. Traffic stays on 127.0.0.1.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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
  percentile,
  pinned,
  probe,
  processTree,
  REPO,
  rssKiB,
  type Started,
  selfSignedCertificate,
  sleep,
  startProcess,
  stopProcess,
  version,
  waitFor,
} from './support/harness.ts';
import {
  BENCH_SERVICE_YAML,
  benchConfigMap,
  benchPath,
  benchSlice,
  INGRESS_CLASS_YAML,
  type LogLine,
  startIngressTs as launchIngressTs,
  parseLogLine,
} from './support/ingress-ts.ts';
import {
  benchUpstream,
  httpCommon,
  nginxCommon,
  ONE_MIB,
  PROXY_LOCATION,
  reloadNginx,
  startNginx,
  upstreamConf,
  writeOneMiB,
} from './support/nginx.ts';
import {
  wrkCommands as commands,
  errorsOf,
  errorText,
  wrk as runWrk,
  startWrk,
  type WrkResult,
} from './support/wrk.ts';

const HOST = 'bench.test';
/** Hard limit on the whole run; everything is stopped when it passes. */
const WATCHDOG_MS = 20 * 60 * 1000;

// --- flags -----------------------------------------------------------------------------------------

interface Options {
  duration: number;
  /** seconds of unrecorded load per contender before a scenario's rounds */
  warmup: number;
  rounds: number;
  reloadOnly: boolean;
  skipReloads: boolean;
  features: boolean;
  cpuProf: string | null;
  accessLog: string | null;
  out: string | null;
}

const USAGE = `Usage: node bench/proxy-bench.ts [--duration S] [--warmup S] [--rounds N] [--reload-only | --skip-reloads | --features] [--cpu-prof DIR] [--access-log PATH] [--no-write]
  --duration S     seconds per wrk run (1-60) [8; 10 makes the whole run ~6.5 min]
  --warmup S       unrecorded seconds per contender before each scenario (1-120) [2]
  --rounds N       interleaved rounds per scenario (1-10; 1-40 with --features) [3]
  --reload-only    only the configuration changes under load (1,000 ingress-ts swaps, 20 NGINX
                   reloads): ~4 min
  --skip-reloads   only the throughput scenarios (implies --no-write)
  --features       only what metrics and the access log cost: ingress-ts against ingress-ts off,
                   plain HTTP and TLS at 64 connections, the order alternating per round (on, off,
                   off, on, ...), then the two side by side on one core; writes
                   bench/results/features-YYYY-MM-DD.md
  --cpu-prof DIR   only profile ingress-ts (node --cpu-prof into DIR/on) under one plain -c64 run
                   after a warm-up and print the top self-time functions; with --features, ingress-ts
                   off too (DIR/off)
  --access-log PATH  where ingress-ts writes its access log (ConfigMap access-log-path) [a file in
                   the temp folder]; e.g. /dev/null to leave the file system out
  --no-write       print the report only, do not write bench/results/proxy-YYYY-MM-DD.md
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    duration: 8,
    warmup: 2,
    rounds: 3,
    reloadOnly: false,
    skipReloads: false,
    features: false,
    cpuProf: null,
    accessLog: null,
    out: join(REPO, 'bench', 'results', `proxy-${new Date().toISOString().slice(0, 10)}.md`),
  };
  let rounds: string | undefined;
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--warmup') options.warmup = bounded(arg, args[++i], 1, 120);
    else if (arg === '--rounds') rounds = args[++i];
    else if (arg === '--reload-only') options.reloadOnly = true;
    else if (arg === '--features') options.features = true;
    else if (arg === '--skip-reloads') options.skipReloads = true;
    else if (arg === '--cpu-prof') {
      const dir = args[++i];
      if (dir === undefined || dir === '') fail(2, '--cpu-prof expects a directory');
      options.cpuProf = dir;
    } else if (arg === '--access-log') {
      const path = args[++i];
      if (path === undefined || path === '') fail(2, '--access-log expects a path');
      options.accessLog = path;
    } else if (arg === '--no-write') options.out = null;
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
  if (rounds !== undefined) options.rounds = bounded('--rounds', rounds, 1, options.features ? 40 : 10);
  if (options.features && options.out !== null)
    options.out = options.out.replace(/proxy-(\d{4}-\d{2}-\d{2}\.md)$/, 'features-$1');
  return options;
}

initHarness('proxy-bench', WATCHDOG_MS);

// --- configuration files -----------------------------------------------------------------------------

interface Ports {
  upstream: number;
  upstream2: number;
  nginxHttp: number;
  nginxHttps: number;
  tsHttp: number;
  tsHttps: number;
  tsHealthz: number;
  offHttp: number;
  offHttps: number;
  offHealthz: number;
  bare: number;
}

function proxyConf(prefix: string, dir: string, ports: Ports): string {
  // As ingress-nginx renders a location: HTTP/1.1 to a keep-alive upstream pool, no buffering, the
  // forwarded headers (the same set ingress-ts sends), no access log.
  return `${nginxCommon(prefix)}
http {
${httpCommon(prefix)}  keepalive_requests 1000;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
${benchUpstream(ports.upstream)}  server {
    listen 127.0.0.1:${ports.nginxHttp} backlog=4096;
    listen 127.0.0.1:${ports.nginxHttps} ssl backlog=4096;
    server_name ${HOST};
    ssl_certificate ${dir}/tls.crt;
    ssl_certificate_key ${dir}/tls.key;
    location / {
${PROXY_LOCATION}    }
  }
}
`;
}

const indent = (text: string, spaces: number) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => ' '.repeat(spaces) + line)
    .join('\n');

interface ManifestState {
  extraPath: boolean;
  secondEndpoint: boolean;
}

/** Where the access log goes: a file (the default features), or null: off (with metrics off). */
type AccessLogFile = string | null;

/** The manifests ingress-ts serves: one Ingress for bench.test, its Service, slices, TLS, ConfigMap. */
function manifests(dir: string, ports: Ports, state: ManifestState, accessLog: AccessLogFile): string {
  const crt = readFileSync(join(dir, 'tls.crt'), 'utf8');
  const key = readFileSync(join(dir, 'tls.key'), 'utf8');
  // plain HTTP to the TLS host is not redirected (ingress-nginx's ssl-redirect key)
  const data: Record<string, string> = { 'ssl-redirect': 'false' };
  if (accessLog === null) data['disable-access-log'] = 'true';
  else data['access-log-path'] = accessLog;
  return `${INGRESS_CLASS_YAML}---
${benchConfigMap(data)}---
apiVersion: v1
kind: Secret
metadata:
  name: bench-tls
  namespace: bench
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(crt, 4)}
  tls.key: |
${indent(key, 4)}
---
${BENCH_SERVICE_YAML}---
${benchSlice('bench-0', ports.upstream)}${state.secondEndpoint ? `---\n${benchSlice('bench-1', ports.upstream2)}` : ''}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bench
  namespace: bench
spec:
  ingressClassName: ingress-ts
  tls:
    - hosts: [${HOST}]
      secretName: bench-tls
  rules:
    - host: ${HOST}
      http:
        paths:
${benchPath('/')}${state.extraPath ? `\n${benchPath('/extra')}` : ''}
`;
}

/**
 * Replaces the manifests file in one rename, so each write is one complete change; returns
 * `Date.now()` just before the rename.
 */
function writeManifests(
  dir: string,
  ports: Ports,
  manifestsDir: string,
  state: ManifestState,
  accessLog: AccessLogFile = accessLogFile(dir),
): number {
  const staging = join(dir, 'staging.yaml');
  writeFileSync(staging, manifests(dir, ports, state, accessLog));
  const at = Date.now();
  renameSync(staging, join(manifestsDir, 'bench.yaml'));
  return at;
}

/** --access-log: where the default contender's access log goes instead of a file in the temp folder */
let accessLogPath: string | null = null;

/** The default contender's access log. */
const accessLogFile = (dir: string) => accessLogPath ?? join(dir, 'access.log');

/** One wrk run against bench.test; the CPU of `cpuPids` (the proxy) is sampled around it. */
const wrk = (url: string, connections: number, seconds: number, cpuPids: () => number[]) =>
  runWrk(url, connections, seconds, HOST, cpuPids);

// --- the contenders --------------------------------------------------------------------------------

interface Env {
  dir: string;
  ports: Ports;
  upstream: Started;
  nginx: Started;
  bare: Started;
  ingressTs: Started;
  /** ingress-ts with metrics and the access log off */
  ingressTsOff: Started;
  manifestsDir: string;
  manifestsDirOff: string;
}

/**
 * ingress-ts over the bench manifests, pinned to core 0, ready once bench.test answers; `off`: the
 * instance with metrics and the access log off.
 */
async function startIngressTs(
  env: Omit<Env, 'ingressTs' | 'ingressTsOff'>,
  logLevel: string,
  nodeFlags: string[] = [],
  off = false,
) {
  const { ports } = env;
  return launchIngressTs({
    manifestsDir: off ? env.manifestsDirOff : env.manifestsDir,
    ports: off
      ? { http: ports.offHttp, https: ports.offHttps, healthz: ports.offHealthz }
      : { http: ports.tsHttp, https: ports.tsHttps, healthz: ports.tsHealthz },
    logLevel,
    nodeFlags,
    args: [
      '--configmap',
      'bench/ingress-ts',
      '--default-ssl-certificate',
      'bench/bench-tls',
      ...(off ? ['--enable-metrics=false'] : []),
    ],
    readyHost: HOST,
  });
}

async function setup(): Promise<{ env: Env; commandLines: Record<string, string> }> {
  const dir = makeTempDir('ingress-ts-proxy-bench-');
  chmodSync(dir, 0o755); // NGINX workers run as nobody/www-data and read 1m.bin
  const manifestsDir = join(dir, 'manifests');
  mkdirSync(manifestsDir);
  const manifestsDirOff = join(dir, 'manifests-off');
  mkdirSync(manifestsDirOff);
  writeOneMiB(dir);
  await selfSignedCertificate(dir, HOST);

  const ports: Ports = {
    upstream: await freePort(),
    upstream2: await freePort(),
    nginxHttp: await freePort(),
    nginxHttps: await freePort(),
    tsHttp: await freePort(),
    tsHttps: await freePort(),
    tsHealthz: await freePort(),
    offHttp: await freePort(),
    offHttps: await freePort(),
    offHealthz: await freePort(),
    bare: await freePort(),
  };
  const upstream = await startNginx(
    join(dir, 'upstream'),
    upstreamConf(join(dir, 'upstream'), dir, [ports.upstream, ports.upstream2]),
    1,
  );
  await waitFor(
    'upstream nginx',
    async () => (await probe(ports.upstream, false, '/', HOST))?.status === 200,
  );
  const nginx = await startNginx(join(dir, 'nginx'), proxyConf(join(dir, 'nginx'), dir, ports), 0);
  await waitFor('nginx proxy', async () => (await probe(ports.nginxHttp, false, '/', HOST))?.status === 200);
  const bareArgv = pinned(0, [
    process.execPath,
    'bench/support/bare-proxy.ts',
    String(ports.bare),
    String(ports.upstream),
  ]);
  const bare = startProcess(bareArgv);
  await waitFor('bare undici proxy', async () => (await probe(ports.bare, false, '/', HOST))?.status === 200);
  writeManifests(dir, ports, manifestsDir, { extraPath: false, secondEndpoint: false });
  writeManifests(dir, ports, manifestsDirOff, { extraPath: false, secondEndpoint: false }, null);
  const partial = { dir, ports, upstream, nginx, bare, manifestsDir, manifestsDirOff };
  const ts = await startIngressTs(partial, 'warn');
  const off = await startIngressTs(partial, 'warn', [], true);
  const env: Env = { ...partial, ingressTs: ts.started, ingressTsOff: off.started };

  // every contender answers 200 with the expected body sizes
  const checks: Array<[string, number, boolean, string, number]> = [
    ['direct', ports.upstream, false, '/', 1024],
    ['nginx', ports.nginxHttp, false, '/', 1024],
    ['nginx TLS', ports.nginxHttps, true, '/', 1024],
    ['nginx 1 MiB', ports.nginxHttp, false, '/1m', ONE_MIB],
    ['undici floor', ports.bare, false, '/', 1024],
    ['undici floor 1 MiB', ports.bare, false, '/1m', ONE_MIB],
    ['ingress-ts', ports.tsHttp, false, '/', 1024],
    ['ingress-ts TLS', ports.tsHttps, true, '/', 1024],
    ['ingress-ts 1 MiB', ports.tsHttp, false, '/1m', ONE_MIB],
    ['ingress-ts off', ports.offHttp, false, '/', 1024],
    ['ingress-ts off TLS', ports.offHttps, true, '/', 1024],
  ];
  for (const [name, port, tls, path, bytes] of checks) {
    const answer = await probe(port, tls, path, HOST);
    if (answer?.status !== 200 || answer.bytes !== bytes) {
      fail(1, `${name} check failed: ${JSON.stringify(answer)} (expected 200 with ${bytes} bytes)`);
    }
  }
  const prefixOf = (name: string) => join(dir, name);
  return {
    env,
    commandLines: {
      upstream: `${pinned(1, ['nginx']).join(' ')} -p ${prefixOf('upstream')} -c ${prefixOf('upstream')}/nginx.conf -e …/error.log`,
      nginx: `${pinned(0, ['nginx']).join(' ')} -p ${prefixOf('nginx')} -c ${prefixOf('nginx')}/nginx.conf -e …/error.log`,
      bare: bareArgv.join(' '),
      ingressTs: ts.command,
      ingressTsOff: off.command,
    },
  };
}

// --- scenarios ---------------------------------------------------------------------------------------

type Contender = 'direct' | 'nginx' | 'undici floor' | 'ingress-ts' | 'ingress-ts off';

interface Scenario {
  name: string;
  connections: number;
  tls: boolean;
  path: string;
  contenders: Contender[];
}

const SCENARIOS: Scenario[] = [
  {
    name: 'plain HTTP, 1 KiB, 8 connections',
    connections: 8,
    tls: false,
    path: '/',
    contenders: ['direct', 'nginx', 'undici floor', 'ingress-ts', 'ingress-ts off'],
  },
  {
    name: 'plain HTTP, 1 KiB, 64 connections',
    connections: 64,
    tls: false,
    path: '/',
    contenders: ['direct', 'nginx', 'undici floor', 'ingress-ts', 'ingress-ts off'],
  },
  {
    name: 'TLS termination, 1 KiB, 64 connections',
    connections: 64,
    tls: true,
    path: '/',
    contenders: ['nginx', 'ingress-ts', 'ingress-ts off'],
  },
  {
    name: 'plain HTTP, 1 MiB, 64 connections',
    connections: 64,
    tls: false,
    path: '/1m',
    contenders: ['direct', 'nginx', 'undici floor', 'ingress-ts', 'ingress-ts off'],
  },
];

/** --features: what metrics and the access log cost, where the proxy's own work is smallest. */
const FEATURE_SCENARIOS: Scenario[] = SCENARIOS.filter((s) => s.connections === 64 && s.path === '/').map(
  (s) => ({ ...s, contenders: ['ingress-ts', 'ingress-ts off'] }),
);

function target(env: Env, contender: Contender, scenario: Scenario): { url: string; cpu: () => number[] } {
  const scheme = scenario.tls ? 'https' : 'http';
  const { ports } = env;
  if (contender === 'direct')
    return { url: `http://127.0.0.1:${ports.upstream}${scenario.path}`, cpu: () => [] };
  if (contender === 'nginx') {
    const port = scenario.tls ? ports.nginxHttps : ports.nginxHttp;
    return { url: `${scheme}://127.0.0.1:${port}${scenario.path}`, cpu: () => processTree(env.nginx.pid) };
  }
  if (contender === 'undici floor')
    return { url: `http://127.0.0.1:${ports.bare}${scenario.path}`, cpu: () => [env.bare.pid] };
  if (contender === 'ingress-ts off') {
    const port = scenario.tls ? ports.offHttps : ports.offHttp;
    return { url: `${scheme}://127.0.0.1:${port}${scenario.path}`, cpu: () => [env.ingressTsOff.pid] };
  }
  const port = scenario.tls ? ports.tsHttps : ports.tsHttp;
  return { url: `${scheme}://127.0.0.1:${port}${scenario.path}`, cpu: () => [env.ingressTs.pid] };
}

interface ScenarioResult {
  scenario: Scenario;
  runs: Map<Contender, WrkResult[]>;
  ratios: Map<Contender, number[]>;
  /** per round: ingress-ts (metrics + access log) ÷ ingress-ts off */
  featureRatios: number[];
  /** per round: proxy CPU per request of ingress-ts off ÷ that of ingress-ts */
  featureCpuRatios: number[];
  /** per side-by-side round: ingress-ts ÷ ingress-ts off req/s, both loaded at once on one core */
  sideRatios: number[];
  /** per side-by-side round: the CPU both used, as a share of the round's wall time (1 = the core) */
  sideBusy: number[];
  /** requests wrk sent to ingress-ts in the side-by-side rounds */
  sideRequests: number;
  rssKiB: number | null;
  nginxRssKiB: number | null;
}

async function runScenario(env: Env, scenario: Scenario, options: Options): Promise<ScenarioResult> {
  const runs = new Map<Contender, WrkResult[]>(scenario.contenders.map((c) => [c, []]));
  const ratios = new Map<Contender, number[]>(scenario.contenders.map((c) => [c, []]));
  const featureRatios: number[] = [];
  const featureCpuRatios: number[] = [];
  for (const contender of scenario.contenders) {
    const { url, cpu } = target(env, contender, scenario);
    await wrk(url, scenario.connections, options.warmup, cpu); // warm-up (JIT, pools, TLS sessions), not recorded
  }
  for (let round = 1; round <= options.rounds; round++) {
    const thisRound = new Map<Contender, number>();
    const cpuThisRound = new Map<Contender, number | null>();
    // --features: on, off, then off, on, ... so that a drift of the machine favours neither
    const order =
      options.features && round % 2 === 0 ? [...scenario.contenders].reverse() : scenario.contenders;
    for (const contender of order) {
      const { url, cpu } = target(env, contender, scenario);
      const result = await wrk(url, scenario.connections, options.duration, cpu);
      runs.get(contender)!.push(result);
      thisRound.set(contender, result.rps);
      cpuThisRound.set(contender, result.cpuUsPerReq);
      log(`${scenario.name} round ${round} ${contender}: ${Math.round(result.rps)} req/s`);
    }
    const nginx = thisRound.get('nginx');
    for (const [contender, rps] of thisRound) if (nginx) ratios.get(contender)!.push(rps / nginx);
    const on = thisRound.get('ingress-ts');
    const off = thisRound.get('ingress-ts off');
    if (on !== undefined && off !== undefined && off > 0) featureRatios.push(on / off);
    const onCpu = cpuThisRound.get('ingress-ts');
    const offCpu = cpuThisRound.get('ingress-ts off');
    if (onCpu && offCpu) featureCpuRatios.push(offCpu / onCpu);
  }
  // --features, side by side: both contenders share core 0 under two wrk at once, so the scheduler
  // gives each the same CPU time and their req/s ratio is their CPU cost per request's, whatever the
  // machine's speed does meanwhile (which the rounds above, one after the other, cannot rule out)
  const sideRatios: number[] = [];
  const sideBusy: number[] = [];
  let sideRequests = 0;
  for (let round = 1; options.features && round <= options.rounds; round++) {
    const on = target(env, 'ingress-ts', scenario);
    const off = target(env, 'ingress-ts off', scenario);
    const [onRun, offRun] = await Promise.all([
      wrk(on.url, scenario.connections, options.duration, on.cpu),
      wrk(off.url, scenario.connections, options.duration, off.cpu),
    ]);
    if (offRun.rps > 0) sideRatios.push(onRun.rps / offRun.rps);
    sideRequests += onRun.requests;
    const cpuUs = (onRun.cpuUsPerReq ?? 0) * onRun.requests + (offRun.cpuUsPerReq ?? 0) * offRun.requests;
    sideBusy.push(cpuUs / (Math.max(onRun.seconds, offRun.seconds) * 1e6));
    log(
      `${scenario.name} side by side ${round}: ${Math.round(onRun.rps)} vs ${Math.round(offRun.rps)} req/s`,
    );
  }
  const workers = processTree(env.nginx.pid).slice(1);
  const nginxRss = workers.reduce((sum, pid) => sum + (rssKiB(pid) ?? 0), 0);
  return {
    scenario,
    runs,
    ratios,
    featureRatios,
    featureCpuRatios,
    sideRatios,
    sideBusy,
    sideRequests,
    rssKiB: rssKiB(env.ingressTs.pid),
    nginxRssKiB: workers.length > 0 ? nginxRss : null,
  };
}

/** One wrk run of the configuration-changes part: what changed meanwhile and what was applied. */
interface ReloadRow {
  contender: string;
  changes: string;
  wrk: WrkResult;
  applied: string;
}

/** The 1,000 ingress-ts swaps under load, from its `configuration applied` log lines. */
interface SwapStats {
  full: number;
  endpoints: number;
  /** swaps whose kind was not the one the edit asked for (a route edit that gave an endpoints swap, ...) */
  otherKind: number;
  /** first rename to the last `configuration applied`, s */
  wallSeconds: number;
  /** per edit: its rename to its `configuration applied` line, ms */
  editToApplied: number[];
  /** per swap: buildMs + swapMs of its log line */
  buildAndSwap: number[];
  warnings: number;
  warningSamples: string[];
  rssBeforeKiB: number | null;
  rssAfterKiB: number | null;
  /** 1-minute load average of the machine before and after the swaps */
  loadBefore: number;
  loadAfter: number;
}

interface ReloadResults {
  rows: ReloadRow[];
  swaps: SwapStats;
  /** req/s under the swaps / req/s of the baseline without edits */
  throughputRatio: number;
}

/** ingress-ts edits: each waits for the previous swap; even ones toggle a route, odd ones endpoints. */
const SWAPS = 1000;
/** One edit not applied within this fails the run. */
const SWAP_TIMEOUT_MS = 10000;
/** How often ingress-ts's log is checked for the swap of the latest edit. */
const SWAP_POLL_MS = 2;
/** wrk's -d during the swaps; it is stopped with SIGINT after the last one (~3 min). */
const SWAP_WRK_MAX_SECONDS = 600;
/** The baseline and the NGINX reload runs. */
const RELOAD_SECONDS = 10;
const NGINX_RELOADS = 20;

/** A `configuration applied` line's fields. */
type LogEntry = LogLine & { swap?: string; buildMs?: number; swapMs?: number };

/** ingress-ts's JSON log lines from now on, read as they arrive (`poll`). */
function watchLog(started: Started) {
  let next = started.output.length;
  const applied: LogEntry[] = [];
  const warningSamples: string[] = [];
  let warnings = 0;
  const warning = (line: string) => {
    warnings++;
    if (warningSamples.length < 3) warningSamples.push(line.slice(0, 300));
  };
  return {
    applied,
    warningSamples,
    warnings: () => warnings,
    poll(): void {
      for (; next < started.output.length; next++) {
        const line = started.output[next]!;
        const entry = parseLogLine(line) as LogEntry | null;
        if (entry === null) {
          warning(line); // not pino: a crash or a runtime warning
          continue;
        }
        if (entry.msg === 'configuration applied') applied.push(entry);
        if ((entry.level ?? 0) >= 40) warning(line);
      }
    },
  };
}

/** Nearest-rank percentile (p in 0..100). */
/**
 * Configuration changes under load. ingress-ts (a fresh instance at --log-level info, so that every
 * swap is logged): wrk -c64 10 s without edits (baseline), then wrk -c64 while the manifests are
 * edited 1,000 times, each edit once the previous one's swap was applied, wrk stopped with SIGINT
 * after the last. NGINX: wrk -c64 10 s with 20 `nginx -s reload` 500 ms apart.
 */
async function runReloads(env: Env): Promise<ReloadResults> {
  const rows: ReloadRow[] = [];
  const url = `http://127.0.0.1:${env.ports.tsHttp}/`;
  const cpu = () => [env.ingressTs.pid];

  // ingress-ts at log level info (nothing is logged per request, so info costs nothing per request);
  // the main instance stays at warn.
  await stopProcess(env.ingressTs, 'SIGINT');
  writeManifests(env.dir, env.ports, env.manifestsDir, { extraPath: false, secondEndpoint: false });
  const fresh = await startIngressTs(env, 'info');
  env.ingressTs = fresh.started;
  await wrk(url, 64, 3, () => []); // warm-up
  await sleep(1000);

  // baseline: the same instance, no edits
  const quiet = watchLog(env.ingressTs);
  const baseline = await wrk(url, 64, RELOAD_SECONDS, cpu);
  quiet.poll();
  rows.push({
    contender: 'ingress-ts',
    changes: 'none (baseline, same instance)',
    wrk: baseline,
    applied: `${quiet.applied.length} swaps; ${quiet.warnings()} warning/error log lines`,
  });
  log(`baseline: ${Math.round(baseline.rps)} req/s`);
  await sleep(1000);

  // 1,000 swaps, one at a time
  const watch = watchLog(env.ingressTs);
  const rssBeforeKiB = rssKiB(env.ingressTs.pid);
  const loadBefore = loadavg()[0]!;
  const load = startWrk(url, 64, SWAP_WRK_MAX_SECONDS, HOST, cpu);
  await sleep(500); // wrk's connections are open before the first edit
  const state: ManifestState = { extraPath: false, secondEndpoint: false };
  const editToApplied: number[] = [];
  let otherKind = 0;
  let firstEditAt = 0;
  for (let i = 0; i < SWAPS; i++) {
    const expected = i % 2 === 0 ? 'full' : 'endpoints';
    if (i % 2 === 0) state.extraPath = !state.extraPath;
    else state.secondEndpoint = !state.secondEndpoint;
    const seen = watch.applied.length;
    const editedAt = writeManifests(env.dir, env.ports, env.manifestsDir, state);
    if (i === 0) firstEditAt = editedAt;
    for (;;) {
      watch.poll();
      if (watch.applied.length > seen) break;
      if (env.ingressTs.child.exitCode !== null || env.ingressTs.child.signalCode !== null)
        fail(1, `ingress-ts exited during the swaps:\n${env.ingressTs.output.slice(-20).join('\n')}`);
      if (load.exited()) fail(1, `wrk ended before the swaps did (after ${i} of ${SWAPS})`);
      if (Date.now() - editedAt > SWAP_TIMEOUT_MS)
        fail(1, `edit ${i + 1} of ${SWAPS} (${expected}) was not applied within ${SWAP_TIMEOUT_MS / 1000} s`);
      await sleep(SWAP_POLL_MS);
    }
    const entry = watch.applied[seen]!;
    editToApplied.push((entry.time ?? Number.NaN) - editedAt);
    if (entry.swap !== expected) otherKind++;
    if ((i + 1) % 200 === 0) log(`${i + 1} swaps applied`);
  }
  const lastAppliedAt = watch.applied.at(-1)?.time ?? Number.NaN;
  const underSwaps = await load.stop();
  await sleep(500); // a swap nobody asked for would show up in the count
  watch.poll();
  const rssAfterKiB = rssKiB(env.ingressTs.pid);
  const loadAfter = loadavg()[0]!;
  const full = watch.applied.filter((e) => e.swap === 'full').length;
  const endpoints = watch.applied.filter((e) => e.swap === 'endpoints').length;
  if (watch.applied.length !== SWAPS)
    fail(
      1,
      `${SWAPS} edits gave ${watch.applied.length} \`configuration applied\` lines (${full} full, ${endpoints} endpoints-only)`,
    );
  const swaps: SwapStats = {
    full,
    endpoints,
    otherKind,
    wallSeconds: (lastAppliedAt - firstEditAt) / 1000,
    editToApplied,
    buildAndSwap: watch.applied.map((e) => (e.buildMs ?? Number.NaN) + (e.swapMs ?? Number.NaN)),
    warnings: watch.warnings(),
    warningSamples: watch.warningSamples,
    rssBeforeKiB,
    rssAfterKiB,
    loadBefore,
    loadAfter,
  };
  rows.push({
    contender: 'ingress-ts',
    changes: `${int(SWAPS)} manifest edits (route and endpoints alternating), each once the previous swap was applied`,
    wrk: underSwaps,
    applied: `${int(full + endpoints)} swaps (${int(full)} full, ${int(endpoints)} endpoints-only) in ${fixed(swaps.wallSeconds, 1)} s; ${swaps.warnings} warning/error log lines`,
  });

  // NGINX: nginx -s reload every 500 ms
  const prefix = join(env.dir, 'nginx');
  let failed = 0;
  const begin = Date.now();
  // no CPU figure: each reload replaces the workers, whose CPU time leaves with them
  const nginxLoad = wrk(`http://127.0.0.1:${env.ports.nginxHttp}/`, 64, RELOAD_SECONDS, () => []);
  for (let i = 0; i < NGINX_RELOADS; i++) {
    await sleep(Math.max(0, begin + 250 + i * 500 - Date.now()));
    if (!(await reloadNginx(prefix))) failed++;
  }
  rows.push({
    contender: 'nginx',
    changes: `${NGINX_RELOADS} \`nginx -s reload\`, one every 500 ms`,
    wrk: await nginxLoad,
    applied: `${NGINX_RELOADS - failed} reloads signalled${failed > 0 ? `, ${failed} failed` : ''}`,
  });
  return { rows, swaps, throughputRatio: underSwaps.rps / baseline.rps };
}

/** The report section of runReloads. */
function reloadSection(results: ReloadResults): string {
  const { rows, swaps } = results;
  const table = [
    '| contender | configuration changes during the run | wrk ran s | requests | req/s | p99 ms | proxy CPU µs/req | socket errors | non-2xx/3xx | applied |',
    '|---|---|--:|--:|--:|--:|--:|---|--:|---|',
    ...rows.map(
      (r) =>
        `| ${r.contender} | ${r.changes} | ${fixed(r.wrk.seconds, 1)} | ${int(r.wrk.requests)} | ${int(r.wrk.rps)} | ${fixed(r.wrk.p99, 2)} | ${r.wrk.cpuUsPerReq === null ? '–' : fixed(r.wrk.cpuUsPerReq, 1)} | ${errorsOf(r.wrk) === 0 ? '0' : errorText(r.wrk)} | ${int(r.wrk.non2xx)} | ${r.applied} |`,
    ),
  ];
  const ms = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `median ${fixed(median(values), 0)} ms, p99 ${fixed(percentile(sorted, 0.99), 0)} ms, max ${fixed(percentile(sorted, 1), 0)} ms`;
  };
  const mib = (kib: number | null) => (kib === null ? 'n/a' : `${(kib / 1024).toFixed(1)} MiB`);
  const details = [
    `- swaps applied: ${int(swaps.full + swaps.endpoints)} (${int(swaps.full)} full, ${int(swaps.endpoints)} endpoints-only)${swaps.otherKind > 0 ? `; **${swaps.otherKind} of another kind than their edit asked for**` : ''}`,
    `- wall time of the ${int(SWAPS)} swaps (first rename to the last \`configuration applied\`): ${fixed(swaps.wallSeconds, 1)} s, ${fixed(SWAPS / swaps.wallSeconds, 1)} swaps/s`,
    `- edit (rename) to its \`configuration applied\` line (pino \`time\` − \`Date.now()\` at the rename): ${ms(swaps.editToApplied)}`,
    `- build + swap inside ingress-ts (\`buildMs\` + \`swapMs\` of the line): ${ms(swaps.buildAndSwap)}`,
    `- throughput while swapping: ${fixed(results.throughputRatio, 2)} × the baseline without edits`,
    `- ingress-ts RSS before / after the swaps: ${mib(swaps.rssBeforeKiB)} / ${mib(swaps.rssAfterKiB)}`,
    `- machine load (1-minute load average) before / after the swaps: ${fixed(swaps.loadBefore, 2)} / ${fixed(swaps.loadAfter, 2)} on ${cpus().length} cores (ingress-ts, wrk and the upstream account for up to ~2; more means other processes competed)`,
    `- warning/error log lines during the swaps: ${swaps.warnings}${swaps.warningSamples.map((line) => `\n  - \`${line}\``).join('')}`,
  ];
  return `## Configuration changes under load (wrk -c64)

${table.join('\n')}

ingress-ts swaps:

${details.join('\n')}

ingress-ts runs as a fresh instance at \`--log-level info\` so that every swap is logged (it logs nothing per request). The baseline is the same instance under \`wrk -c64 -d${RELOAD_SECONDS}s\` without edits. Then wrk starts with \`-d${SWAP_WRK_MAX_SECONDS}s\` and, 0.5 s later, the manifests file is replaced (one rename each) ${int(SWAPS)} times; each edit waits until the previous one's \`configuration applied\` line was logged (polled every ${SWAP_POLL_MS} ms, ${SWAP_TIMEOUT_MS / 1000} s limit), and wrk is stopped with SIGINT after the last one (it prints its summary over the time it ran). Even edits add or remove the path \`/extra\` (a full swap), odd ones add or remove a second EndpointSlice (127.0.0.1 on the upstream's second port: an endpoints-only swap). Edit to applied includes the file watcher's 50 ms debounce and the build scheduler's 100 ms hold-off after the previous build, so it cannot be much below ~150 ms; the build + swap line is the work itself. NGINX gets ${NGINX_RELOADS} \`nginx -s reload\`, one every 500 ms, under \`wrk -c64 -d${RELOAD_SECONDS}s\`. Socket errors and non-2xx/3xx are as wrk counts them. These runs do not depend on --duration.
`;
}

// --- CPU profile --------------------------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time by function (name, file:line), from a .cpuprofile. */
function summariseProfile(file: string, top: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]!);
    const delta = profile.timeDeltas[i] ?? 0;
    if (node === undefined) continue;
    total += delta;
    const { functionName, url, lineNumber } = node.callFrame;
    const where =
      url === ''
        ? '(native)'
        : `${url.replace(`file://${REPO}`, '').replace(/^file:\/\//, '')}:${lineNumber + 1}`;
    const key = `${functionName || '(anonymous)'}\t${where}`;
    self.set(key, (self.get(key) ?? 0) + delta);
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = ['| # | function | where | self ms | self % |', '|--:|---|---|--:|--:|'];
  rows.forEach(([key, us], index) => {
    const [name, where] = key.split('\t');
    lines.push(
      `| ${index + 1} | \`${name}\` | \`${where}\` | ${(us / 1000).toFixed(0)} | ${((us / total) * 100).toFixed(1)} |`,
    );
  });
  return `Profiled ${(total / 1e6).toFixed(1)} s of samples.\n\n${lines.join('\n')}`;
}

async function runProfile(env: Env, dir: string, options: Options): Promise<string> {
  mkdirSync(dir, { recursive: true });
  // with --features, ingress-ts off is profiled too, so that the two tables can be compared
  const sides = options.features ? [false, true] : [false];
  const out: string[] = [];
  for (const off of sides) {
    const side = join(dir, off ? 'off' : 'on');
    mkdirSync(side, { recursive: true });
    const key = off ? 'ingressTsOff' : 'ingressTs';
    await stopProcess(env[key], 'SIGINT');
    const profiled = await startIngressTs(env, 'warn', ['--cpu-prof', `--cpu-prof-dir=${side}`], off);
    env[key] = profiled.started;
    const port = off ? env.ports.offHttp : env.ports.tsHttp;
    const warm = await wrk(`http://127.0.0.1:${port}/`, 64, options.warmup, () => [profiled.started.pid]);
    const started = Date.now();
    const result = await wrk(`http://127.0.0.1:${port}/`, 64, options.duration, () => [profiled.started.pid]);
    await stopProcess(env[key], 'SIGINT', 15000);
    const files = spawnSync('sh', ['-c', `ls -t ${side}/*.cpuprofile 2>/dev/null | head -1`], {
      encoding: 'utf8',
    }).stdout.trim();
    if (files === '') fail(1, `no .cpuprofile was written to ${side}`);
    const elapsed = ((Date.now() - started) / 1000).toFixed(0);
    const name = off ? 'ingress-ts off (no metrics, no access log)' : 'ingress-ts';
    out.push(
      `## CPU profile of ${name} under plain HTTP, 64 connections\n\n\`${profiled.command}\`, then a ${options.warmup} s warm-up and \`${commands.at(-1)}\`: ${Math.round(result.rps)} req/s (profiler on), ${elapsed} s of process life after the warm-up, ${int(warm.requests + result.requests)} requests in the profile. Profile: \`${files}\`.\n\n${summariseProfile(files, 15)}\n`,
    );
  }
  return out.join('\n');
}

// --- report ---------------------------------------------------------------------------------------------

function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The default contender's access log after the scenarios: one line per request wrk sent it? */
function accessLogSection(env: Env, results: ScenarioResult[]): string {
  const file = accessLogFile(env.dir);
  const counted = spawnSync('wc', ['-l', file], { encoding: 'utf8' }).stdout.trim().split(/\s+/)[0];
  const lines = Number(counted);
  const sent = results.reduce(
    (sum, r) => sum + r.sideRequests + (r.runs.get('ingress-ts') ?? []).reduce((s, w) => s + w.requests, 0),
    0,
  );
  if (!isRegularFile(file))
    return `## Access log\n\nThe default contender wrote its access log to \`${file}\` (ConfigMap \`access-log-path\`, from --access-log), which is not a regular file: its lines were not counted. wrk counted ${int(sent)} requests to it in the recorded runs.\n`;
  return `## Access log\n\nThe default contender wrote ${Number.isFinite(lines) ? int(lines) : 'n/a'} access log lines to \`${file}\` (ConfigMap \`access-log-path\`); wrk counted ${int(sent)} requests to it in the recorded runs (the warm-ups and the readiness probes are logged too, so the log holds more).\n`;
}

function scenarioTable(result: ScenarioResult): string {
  const lines = [
    '| contender | req/s (median) | × NGINX | p50 ms | p99 ms | proxy CPU µs/req | socket errors (sum) | non-2xx/3xx (sum) | req/s per round |',
    '|---|--:|--:|--:|--:|--:|--:|--:|---|',
  ];
  for (const [contender, runs] of result.runs) {
    const ratio = median(result.ratios.get(contender) ?? []);
    const cpu = runs.map((r) => r.cpuUsPerReq).filter((v): v is number => v !== null);
    lines.push(
      `| ${contender} | ${int(median(runs.map((r) => r.rps)))} | ${fixed(ratio, 2)} | ${fixed(median(runs.map((r) => r.p50)), 2)} | ${fixed(median(runs.map((r) => r.p99)), 2)} | ${cpu.length > 0 ? fixed(median(cpu), 1) : '–'} | ${int(runs.reduce((s, r) => s + errorsOf(r), 0))} | ${int(runs.reduce((s, r) => s + r.non2xx, 0))} | ${runs.map((r) => int(r.rps)).join(' / ')} |`,
    );
  }
  if (result.featureRatios.length > 0) {
    lines.push(
      '',
      `ingress-ts with metrics and access log ÷ ingress-ts off: **${fixed(median(result.featureRatios), 2)}** (median of the rounds: ${result.featureRatios.map((r) => fixed(r, 2)).join(' / ')})`,
    );
  }
  if (result.sideRatios.length > 0) {
    lines.push(
      '',
      `side by side (both on core 0 at once, one wrk -c${result.scenario.connections} each): ingress-ts ÷ ingress-ts off req/s **${fixed(median(result.sideRatios), 2)}** (median of the rounds: ${result.sideRatios.map((r) => fixed(r, 2)).join(' / ')}; CPU the two used ÷ wall time: ${result.sideBusy.map((r) => fixed(r, 2)).join(' / ')})`,
    );
  }
  if (result.featureCpuRatios.length > 0) {
    lines.push(
      '',
      `the same by proxy CPU per request (ingress-ts off's µs/req ÷ ingress-ts's): **${fixed(median(result.featureCpuRatios), 2)}** (median of the rounds: ${result.featureCpuRatios.map((r) => fixed(r, 2)).join(' / ')})`,
    );
  }
  return lines.join('\n');
}

function header(options: Options, commandLines: Record<string, string>): string {
  const cpu = cpus();
  return `# Proxy benchmark: ingress-ts vs NGINX

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB
- node: ${process.version}; ${version(['nginx', '-v'])}; ${version(['wrk', '-v'])}; ${version(['openssl', 'version'])}
- pinning: ${isPinned() ? 'proxies on core 0 (`taskset -c 0`), wrk and the upstream NGINX on core 1' : '**taskset missing: nothing pinned**'}
- contenders: ingress-ts runs with its default features (per-request metrics, and the access log in ingress-nginx's default format to ${accessLogPath === null ? 'a file' : `\`${accessLogPath}\``}); ingress-ts off is the same with \`--enable-metrics=false\` and \`disable-access-log: "true"\`
- method: each scenario starts with a ${options.warmup} s unrecorded warm-up per contender, then ${options.rounds} interleaved rounds ${options.features ? '(ingress-ts, ingress-ts off, then ingress-ts off, ingress-ts, ...: the order alternates per round)' : '(direct, nginx, undici floor, ingress-ts, ingress-ts off, direct, ...; the undici floor only in plain HTTP)'} of ${options.duration} s each${options.features ? `, then ${options.rounds} side-by-side rounds of ${options.duration} s: both contenders on core 0 at once, each under its own wrk (both wrk on core 1), so each gets half the core and the req/s ratio is the inverse ratio of their CPU cost per request, unaffected by how fast the machine runs meanwhile` : ''}; medians over rounds. × NGINX is the median of the per-round ratios. Proxy CPU is utime+stime of the proxy process (NGINX: master + worker) over the run, divided by the requests.
- upstream: NGINX, 1 worker, \`return 200\` with a 1,024-byte body (\`/\`) or a 1 MiB file (\`/1m\`, sendfile), keep-alive
- TLS: one self-signed RSA-2048 certificate from \`openssl req -x509\` for both proxies. wrk sends no SNI, so each proxy answers with its default certificate: for NGINX its only server, for ingress-ts \`--default-ssl-certificate bench/bench-tls\` (the same Secret the Ingress names for bench.test), so both serve the same certificate.

Commands:

\`\`\`sh
${commandLines.upstream}
${commandLines.nginx}
${commandLines.bare}
${commandLines.ingressTs}
${commandLines.ingressTsOff}
${commands.join('\n')}
\`\`\`
`;
}

// --- main ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  accessLogPath = options.accessLog;
  ensureTools();
  const startedAt = Date.now();
  log('starting upstream, nginx and ingress-ts');
  const { env, commandLines } = await setup();
  const sections: string[] = [];

  if (options.cpuProf !== null) {
    sections.push(await runProfile(env, options.cpuProf, options));
  } else {
    if (!options.reloadOnly) {
      const results: ScenarioResult[] = [];
      const scenarios = options.features ? FEATURE_SCENARIOS : SCENARIOS;
      for (const scenario of scenarios) results.push(await runScenario(env, scenario, options));
      const rss = [
        '| after scenario | ingress-ts RSS MiB | NGINX proxy worker RSS MiB |',
        '|---|--:|--:|',
        ...results.map(
          (r) =>
            `| ${r.scenario.name} | ${r.rssKiB === null ? 'n/a' : (r.rssKiB / 1024).toFixed(1)} | ${r.nginxRssKiB === null ? 'n/a' : (r.nginxRssKiB / 1024).toFixed(1)} |`,
        ),
      ];
      for (const r of results) sections.push(`## ${r.scenario.name}\n\n${scenarioTable(r)}\n`);
      sections.push(`## Memory\n\n${rss.join('\n')}\n`);
      sections.push(accessLogSection(env, results));
    }
    if (!options.skipReloads && !options.features) {
      log('configuration changes under load');
      sections.push(reloadSection(await runReloads(env)));
    }
  }

  await stopProcess(env.ingressTs, 'SIGINT');
  await stopProcess(env.ingressTsOff, 'SIGINT');
  await stopProcess(env.nginx, 'SIGQUIT');
  await stopProcess(env.bare, 'SIGTERM');
  await stopProcess(env.upstream, 'SIGQUIT');
  const minutes = ((Date.now() - startedAt) / 60000).toFixed(1);
  const report = `${header(options, commandLines)}\nTotal run time: ${minutes} min.\n\n${sections.join('\n')}`;
  process.stdout.write(report);
  const complete = options.features || (!options.reloadOnly && !options.skipReloads);
  if (options.out !== null && options.cpuProf === null && complete) {
    mkdirSync(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, report);
    log(`written to ${options.out}`);
  }
  cleanup();
}

if (import.meta.main) await main();
