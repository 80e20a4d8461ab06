// Proxy benchmark: ingress-ts against one NGINX worker configured like ingress-nginx, with wrk on
// loopback. Method of /work/shared/reference/perf-baseline.md: one proxy process pinned to core 0
// (`taskset -c 0`), wrk and the upstream NGINX pinned to core 1, contenders interleaved per round
// (a b c a b c ...), medians reported. Run with `node bench/proxy-bench.ts [flags]` (see `--help`).
//
// Contenders:
// - direct: wrk straight to the upstream NGINX (no proxy): the ceiling of this setup;
// - nginx: `worker_processes 1`, an `upstream` block with `keepalive 64`, `proxy_http_version 1.1`,
//   `proxy_set_header Connection ""`, `proxy_buffering off` and the forwarded headers ingress-nginx
//   sets, no access log;
// - ingress-ts: `bin/ingress-ts.ts` in standalone mode over a generated manifests folder (one Ingress
//   for host bench.test, `--log-level warn`).
// Scenarios: plain HTTP at 8 and 64 connections (1 KiB responses), TLS termination at 64 connections,
// 1 MiB responses at 64 connections; then configuration changes under load (manifest rewrites for
// ingress-ts, `nginx -s reload` for NGINX). Every process it starts is stopped by PID, also on errors
// and SIGINT; every run is bounded in time. Traffic stays on 127.0.0.1.

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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
  processTree,
  REPO,
  rssKiB,
  type Started,
  selfSignedCertificate,
  sleep,
  stopProcess,
  version,
  waitFor,
} from './support/harness.ts';
import { startIngressTs as launchIngressTs } from './support/ingress-ts.ts';
import {
  httpCommon,
  nginxCommon,
  ONE_MIB,
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
  type WrkResult,
} from './support/wrk.ts';

const HOST = 'bench.test';
/** Hard limit on the whole run; everything is stopped when it passes. */
const WATCHDOG_MS = 20 * 60 * 1000;

// --- flags -----------------------------------------------------------------------------------------

interface Options {
  duration: number;
  rounds: number;
  reloadOnly: boolean;
  cpuProf: string | null;
  out: string | null;
}

const USAGE = `Usage: node bench/proxy-bench.ts [--duration S] [--rounds N] [--reload-only] [--cpu-prof DIR] [--no-write]
  --duration S     seconds per wrk run (1-60) [8; 10 makes the whole run ~6.5 min]
  --rounds N       interleaved rounds per scenario (1-10) [3]
  --reload-only    only the configuration-changes-under-load scenario
  --cpu-prof DIR   only profile ingress-ts (node --cpu-prof into DIR) under one plain -c64 run and
                   print the top self-time functions
  --no-write       print the report only, do not write bench/results/proxy-YYYY-MM-DD.md
`;

function parseOptions(args: readonly string[]): Options {
  const options: Options = {
    duration: 8,
    rounds: 3,
    reloadOnly: false,
    cpuProf: null,
    out: join(REPO, 'bench', 'results', `proxy-${new Date().toISOString().slice(0, 10)}.md`),
  };
  const bounded = (flag: string, value: string | undefined, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      fail(2, `${flag} expects an integer from ${min} to ${max}`);
    return n;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--duration') options.duration = bounded(arg, args[++i], 1, 60);
    else if (arg === '--rounds') options.rounds = bounded(arg, args[++i], 1, 10);
    else if (arg === '--reload-only') options.reloadOnly = true;
    else if (arg === '--cpu-prof') {
      const dir = args[++i];
      if (dir === undefined || dir === '') fail(2, '--cpu-prof expects a directory');
      options.cpuProf = dir;
    } else if (arg === '--no-write') options.out = null;
    else if (arg === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fail(2, `unknown argument "${arg}"\n${USAGE}`);
  }
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
}

function proxyConf(prefix: string, dir: string, ports: Ports): string {
  // As ingress-nginx renders a location: HTTP/1.1 to a keep-alive upstream pool, no buffering, the
  // forwarded headers (the same set ingress-ts sends), no access log.
  return `${nginxCommon(prefix)}
http {
${httpCommon(prefix)}  keepalive_requests 1000;
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_cache shared:SSL:10m;
  upstream bench {
    server 127.0.0.1:${ports.upstream};
    keepalive 64;
    keepalive_requests 10000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${ports.nginxHttp} backlog=4096;
    listen 127.0.0.1:${ports.nginxHttps} ssl backlog=4096;
    server_name ${HOST};
    ssl_certificate ${dir}/tls.crt;
    ssl_certificate_key ${dir}/tls.key;
    location / {
      proxy_pass http://bench;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Request-ID $request_id;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Port $server_port;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Scheme $scheme;
      proxy_set_header X-Scheme $scheme;
      proxy_buffering off;
      proxy_connect_timeout 5s;
    }
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

/** The manifests ingress-ts serves: one Ingress for bench.test, its Service, slices, TLS, ConfigMap. */
function manifests(dir: string, ports: Ports, state: ManifestState): string {
  const crt = readFileSync(join(dir, 'tls.crt'), 'utf8');
  const key = readFileSync(join(dir, 'tls.key'), 'utf8');
  const path = (p: string) => `          - path: ${p}
            pathType: Prefix
            backend:
              service:
                name: bench
                port:
                  number: 80`;
  const slice = (name: string, port: number) => `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}
  namespace: bench
  labels:
    kubernetes.io/service-name: bench
addressType: IPv4
ports:
  - name: http
    port: ${port}
    protocol: TCP
endpoints:
  - addresses: ["127.0.0.1"]
    conditions:
      ready: true
`;
  return `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: ingress-ts
spec:
  controller: ingress-ts.dev/controller
---
# plain HTTP to a TLS host is not redirected (ingress-nginx's ssl-redirect key)
apiVersion: v1
kind: ConfigMap
metadata:
  name: ingress-ts
  namespace: bench
data:
  ssl-redirect: "false"
---
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
apiVersion: v1
kind: Service
metadata:
  name: bench
  namespace: bench
spec:
  ports:
    - name: http
      port: 80
      targetPort: http
${slice('bench-0', ports.upstream)}${state.secondEndpoint ? slice('bench-1', ports.upstream2) : ''}---
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
${path('/')}${state.extraPath ? `\n${path('/extra')}` : ''}
`;
}

/** Replaces the manifests file in one rename, so each write is one complete change. */
function writeManifests(dir: string, ports: Ports, manifestsDir: string, state: ManifestState): void {
  const staging = join(dir, 'staging.yaml');
  writeFileSync(staging, manifests(dir, ports, state));
  renameSync(staging, join(manifestsDir, 'bench.yaml'));
}

/** One wrk run against bench.test; the CPU of `cpuPids` (the proxy) is sampled around it. */
const wrk = (url: string, connections: number, seconds: number, cpuPids: () => number[]) =>
  runWrk(url, connections, seconds, HOST, cpuPids);

// --- the contenders --------------------------------------------------------------------------------

interface Env {
  dir: string;
  ports: Ports;
  upstream: Started;
  nginx: Started;
  ingressTs: Started;
  manifestsDir: string;
}

/** ingress-ts over the bench manifests, pinned to core 0, ready once bench.test answers. */
async function startIngressTs(env: Omit<Env, 'ingressTs'>, logLevel: string, nodeFlags: string[] = []) {
  return launchIngressTs({
    manifestsDir: env.manifestsDir,
    ports: { http: env.ports.tsHttp, https: env.ports.tsHttps, healthz: env.ports.tsHealthz },
    logLevel,
    nodeFlags,
    args: ['--configmap', 'bench/ingress-ts', '--default-ssl-certificate', 'bench/bench-tls'],
    readyHost: HOST,
  });
}

async function setup(): Promise<{ env: Env; commandLines: Record<string, string> }> {
  const dir = makeTempDir('ingress-ts-proxy-bench-');
  chmodSync(dir, 0o755); // NGINX workers run as nobody/www-data and read 1m.bin
  const manifestsDir = join(dir, 'manifests');
  mkdirSync(manifestsDir);
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
  writeManifests(dir, ports, manifestsDir, { extraPath: false, secondEndpoint: false });
  const partial = { dir, ports, upstream, nginx, manifestsDir };
  const ts = await startIngressTs(partial, 'warn');
  const env: Env = { ...partial, ingressTs: ts.started };

  // every contender answers 200 with the expected body sizes
  const checks: Array<[string, number, boolean, string, number]> = [
    ['direct', ports.upstream, false, '/', 1024],
    ['nginx', ports.nginxHttp, false, '/', 1024],
    ['nginx TLS', ports.nginxHttps, true, '/', 1024],
    ['nginx 1 MiB', ports.nginxHttp, false, '/1m', ONE_MIB],
    ['ingress-ts', ports.tsHttp, false, '/', 1024],
    ['ingress-ts TLS', ports.tsHttps, true, '/', 1024],
    ['ingress-ts 1 MiB', ports.tsHttp, false, '/1m', ONE_MIB],
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
      ingressTs: ts.command,
    },
  };
}

// --- scenarios ---------------------------------------------------------------------------------------

type Contender = 'direct' | 'nginx' | 'ingress-ts';

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
    contenders: ['direct', 'nginx', 'ingress-ts'],
  },
  {
    name: 'plain HTTP, 1 KiB, 64 connections',
    connections: 64,
    tls: false,
    path: '/',
    contenders: ['direct', 'nginx', 'ingress-ts'],
  },
  {
    name: 'TLS termination, 1 KiB, 64 connections',
    connections: 64,
    tls: true,
    path: '/',
    contenders: ['nginx', 'ingress-ts'],
  },
  {
    name: 'plain HTTP, 1 MiB, 64 connections',
    connections: 64,
    tls: false,
    path: '/1m',
    contenders: ['direct', 'nginx', 'ingress-ts'],
  },
];

function target(env: Env, contender: Contender, scenario: Scenario): { url: string; cpu: () => number[] } {
  const scheme = scenario.tls ? 'https' : 'http';
  const { ports } = env;
  if (contender === 'direct')
    return { url: `http://127.0.0.1:${ports.upstream}${scenario.path}`, cpu: () => [] };
  if (contender === 'nginx') {
    const port = scenario.tls ? ports.nginxHttps : ports.nginxHttp;
    return { url: `${scheme}://127.0.0.1:${port}${scenario.path}`, cpu: () => processTree(env.nginx.pid) };
  }
  const port = scenario.tls ? ports.tsHttps : ports.tsHttp;
  return { url: `${scheme}://127.0.0.1:${port}${scenario.path}`, cpu: () => [env.ingressTs.pid] };
}

interface ScenarioResult {
  scenario: Scenario;
  runs: Map<Contender, WrkResult[]>;
  ratios: Map<Contender, number[]>;
  rssKiB: number | null;
  nginxRssKiB: number | null;
}

async function runScenario(env: Env, scenario: Scenario, options: Options): Promise<ScenarioResult> {
  const runs = new Map<Contender, WrkResult[]>(scenario.contenders.map((c) => [c, []]));
  const ratios = new Map<Contender, number[]>(scenario.contenders.map((c) => [c, []]));
  for (const contender of scenario.contenders) {
    const { url, cpu } = target(env, contender, scenario);
    await wrk(url, scenario.connections, 2, cpu); // warm-up (JIT, pools, TLS sessions), not recorded
  }
  for (let round = 1; round <= options.rounds; round++) {
    const thisRound = new Map<Contender, number>();
    for (const contender of scenario.contenders) {
      const { url, cpu } = target(env, contender, scenario);
      const result = await wrk(url, scenario.connections, options.duration, cpu);
      runs.get(contender)!.push(result);
      thisRound.set(contender, result.rps);
      log(`${scenario.name} round ${round} ${contender}: ${Math.round(result.rps)} req/s`);
    }
    const nginx = thisRound.get('nginx');
    for (const [contender, rps] of thisRound) if (nginx) ratios.get(contender)!.push(rps / nginx);
  }
  const workers = processTree(env.nginx.pid).slice(1);
  const nginxRss = workers.reduce((sum, pid) => sum + (rssKiB(pid) ?? 0), 0);
  return {
    scenario,
    runs,
    ratios,
    rssKiB: rssKiB(env.ingressTs.pid),
    nginxRssKiB: workers.length > 0 ? nginxRss : null,
  };
}

interface ReloadResult {
  contender: string;
  changes: string;
  wrk: WrkResult;
  detail: string;
}

/** wrk -c64 for 10 s while the configuration changes: manifest rewrites / nginx -s reload. */
async function runReloads(env: Env): Promise<ReloadResult[]> {
  const seconds = 10;
  const results: ReloadResult[] = [];

  // ingress-ts: a separate instance at log level info, so that each swap is logged and counted
  // (there are no per-request logs, so info costs nothing per request). The main instance stays at warn.
  await stopProcess(env.ingressTs, 'SIGINT');
  writeManifests(env.dir, env.ports, env.manifestsDir, { extraPath: false, secondEndpoint: false });
  const fresh = await startIngressTs(env, 'info');
  env.ingressTs = fresh.started;
  await wrk(`http://127.0.0.1:${env.ports.tsHttp}/`, 64, 3, () => []); // warm-up
  await sleep(1500);
  // 100 rewrites ~100 ms apart (the debounce and hold-off can merge some), then 40 rewrites 250 ms
  // apart (each one becomes its own swap).
  const state: ManifestState = { extraPath: false, secondEndpoint: false };
  for (const { writes, every } of [
    { writes: 100, every: 100 },
    { writes: 40, every: 250 },
  ]) {
    const firstLine = env.ingressTs.output.length;
    const load = wrk(`http://127.0.0.1:${env.ports.tsHttp}/`, 64, seconds, () => [env.ingressTs.pid]);
    const begin = Date.now();
    for (let i = 0; i < writes; i++) {
      await sleep(Math.max(0, begin + 50 + i * every - Date.now()));
      if (i % 2 === 0) state.extraPath = !state.extraPath;
      else state.secondEndpoint = !state.secondEndpoint;
      writeManifests(env.dir, env.ports, env.manifestsDir, state);
    }
    const tsResult = await load;
    await sleep(1500); // let the last write be applied before counting
    const swaps = { full: 0, endpoints: 0 };
    let warnings = 0;
    for (const line of env.ingressTs.output.slice(firstLine)) {
      try {
        const entry = JSON.parse(line) as { msg?: string; swap?: string; level?: number };
        if (entry.msg === 'configuration applied' && entry.swap === 'full') swaps.full++;
        else if (entry.msg === 'configuration applied' && entry.swap === 'endpoints') swaps.endpoints++;
        if ((entry.level ?? 0) >= 40) warnings++;
      } catch {
        warnings++;
      }
    }
    results.push({
      contender: 'ingress-ts',
      changes: `${writes} manifest rewrites, one every ${every} ms (route and endpoints alternating)`,
      wrk: tsResult,
      detail: `${swaps.full + swaps.endpoints} swaps applied (${swaps.full} full, ${swaps.endpoints} endpoints-only); ${warnings} warning/error log lines`,
    });
  }

  // NGINX: nginx -s reload every 500 ms
  const prefix = join(env.dir, 'nginx');
  const reloads = 20;
  let failed = 0;
  const begin = Date.now();
  const nginxLoad = wrk(`http://127.0.0.1:${env.ports.nginxHttp}/`, 64, seconds, () =>
    processTree(env.nginx.pid),
  );
  for (let i = 0; i < reloads; i++) {
    await sleep(Math.max(0, begin + 250 + i * 500 - Date.now()));
    if (!(await reloadNginx(prefix))) failed++;
  }
  const nginxResult = await nginxLoad;
  results.push({
    contender: 'nginx',
    changes: `${reloads} \`nginx -s reload\`, one every 500 ms`,
    wrk: nginxResult,
    detail: `${reloads - failed} reloads signalled${failed > 0 ? `, ${failed} failed` : ''}`,
  });
  return results;
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
  await stopProcess(env.ingressTs, 'SIGINT');
  const profiled = await startIngressTs(env, 'warn', ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  env.ingressTs = profiled.started;
  const started = Date.now();
  const result = await wrk(`http://127.0.0.1:${env.ports.tsHttp}/`, 64, options.duration, () => [
    env.ingressTs.pid,
  ]);
  await stopProcess(env.ingressTs, 'SIGINT', 15000);
  const files = spawnSync('sh', ['-c', `ls -t ${dir}/*.cpuprofile 2>/dev/null | head -1`], {
    encoding: 'utf8',
  }).stdout.trim();
  if (files === '') fail(1, `no .cpuprofile was written to ${dir}`);
  const elapsed = ((Date.now() - started) / 1000).toFixed(0);
  return `## CPU profile of ingress-ts under plain HTTP, 64 connections\n\n\`${profiled.command}\`, then \`${commands.at(-1)}\`: ${Math.round(result.rps)} req/s (profiler on), ${elapsed} s of process life after start-up. Profile: \`${files}\`.\n\n${summariseProfile(files, 15)}\n`;
}

// --- report ---------------------------------------------------------------------------------------------

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
  return lines.join('\n');
}

function header(options: Options, commandLines: Record<string, string>): string {
  const cpu = cpus();
  return `# Proxy benchmark: ingress-ts vs NGINX

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB
- node: ${process.version}; ${version(['nginx', '-v'])}; ${version(['wrk', '-v'])}; ${version(['openssl', 'version'])}
- pinning: ${isPinned() ? 'proxies on core 0 (`taskset -c 0`), wrk and the upstream NGINX on core 1' : '**taskset missing: nothing pinned**'}
- method: each scenario starts with a 2 s unrecorded warm-up per contender, then ${options.rounds} interleaved rounds (direct, nginx, ingress-ts, direct, ...) of ${options.duration} s each; medians over rounds. × NGINX is the median of the per-round ratios. Proxy CPU is utime+stime of the proxy process (NGINX: master + worker) over the run, divided by the requests.
- upstream: NGINX, 1 worker, \`return 200\` with a 1,024-byte body (\`/\`) or a 1 MiB file (\`/1m\`, sendfile), keep-alive
- TLS: one self-signed RSA-2048 certificate from \`openssl req -x509\` for both proxies. wrk sends no SNI, so each proxy answers with its default certificate: for NGINX its only server, for ingress-ts \`--default-ssl-certificate bench/bench-tls\` (the same Secret the Ingress names for bench.test), so both serve the same certificate.

Commands:

\`\`\`sh
${commandLines.upstream}
${commandLines.nginx}
${commandLines.ingressTs}
${commands.join('\n')}
\`\`\`
`;
}

// --- main ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
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
      for (const scenario of SCENARIOS) results.push(await runScenario(env, scenario, options));
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
    }
    log('configuration changes under load');
    const reloads = await runReloads(env);
    const lines = [
      '| contender | changes during the 10 s run | req/s | p99 ms | socket errors | non-2xx/3xx | applied |',
      '|---|---|--:|--:|---|--:|---|',
      ...reloads.map(
        (r) =>
          `| ${r.contender} | ${r.changes} | ${int(r.wrk.rps)} | ${fixed(r.wrk.p99, 2)} | ${errorText(r.wrk)} | ${int(r.wrk.non2xx)} | ${r.detail} |`,
      ),
    ];
    sections.push(
      `## Configuration changes under load (wrk -c64, 10 s)\n\n${lines.join('\n')}\n\nThe ingress-ts run uses a fresh instance at \`--log-level info\` so that every swap is logged and counted (ingress-ts logs nothing per request). Each rewrite replaces the manifests file with one rename. Even rewrites add or remove the path \`/extra\` (a full swap), odd ones add or remove a second EndpointSlice (127.0.0.1 on the upstream's second port, an endpoints-only swap). The file watcher debounces for 50 ms and the build scheduler holds off 100 ms after each build, so rewrites ~100 ms apart can be merged into one swap (a merged route + endpoints change is one full swap); the applied column counts the swaps. At 250 ms apart every rewrite is its own swap. Configuration changes under load always run 10 s, whatever --duration says.\n`,
    );
  }

  await stopProcess(env.ingressTs, 'SIGINT');
  await stopProcess(env.nginx, 'SIGQUIT');
  await stopProcess(env.upstream, 'SIGQUIT');
  const minutes = ((Date.now() - startedAt) / 60000).toFixed(1);
  const report = `${header(options, commandLines)}\nTotal run time: ${minutes} min.\n\n${sections.join('\n')}`;
  process.stdout.write(report);
  if (options.out !== null && options.cpuProf === null && !options.reloadOnly) {
    mkdirSync(join(REPO, 'bench', 'results'), { recursive: true });
    writeFileSync(options.out, report);
    log(`written to ${options.out}`);
  }
  cleanup();
}

if (import.meta.main) await main();
