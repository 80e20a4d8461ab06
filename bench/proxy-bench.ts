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

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';

const HOST = 'bench.test';
const REPO = new URL('..', import.meta.url).pathname;
/** the upstream's small body: 1,023 bytes plus the "\n" written in upstreamConf = 1 KiB */
const BODY_1K = 'x'.repeat(1023);
const ONE_MIB = 1024 * 1024;
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

// --- processes: every child is tracked and stopped by PID --------------------------------------------

const children = new Set<ChildProcess>();
let tempDir: string | null = null;

function fail(code: number, message: string): never {
  process.stderr.write(`proxy-bench: ${message}\n`);
  cleanup();
  process.exit(code);
}

function cleanup(): void {
  for (const child of children) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      // an NGINX master first (or it respawns the workers), then its workers, or they would outlive it
      for (const pid of processTree(child.pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }
  children.clear();
  if (tempDir !== null) {
    rmSync(tempDir, { recursive: true, force: true });
    tempDir = null;
  }
}

process.on('exit', cleanup);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => fail(130, `stopped by ${signal}`));
}
process.on('uncaughtException', (error) => fail(1, `error: ${error.stack ?? String(error)}`));
process.on('unhandledRejection', (error) => fail(1, `error: ${String(error)}`));
setTimeout(
  () => fail(1, `watchdog: the run took longer than ${WATCHDOG_MS / 60000} minutes`),
  WATCHDOG_MS,
).unref();

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let hasTaskset = false;
/** argv prefixed with `taskset -c CORE` when taskset exists. */
const pinned = (core: number, argv: string[]): string[] =>
  hasTaskset ? ['taskset', '-c', String(core), ...argv] : argv;

interface Started {
  child: ChildProcess;
  pid: number;
  output: string[];
}

/** Starts a long-running process; its stdout and stderr lines are kept. */
function startProcess(argv: string[], cwd = REPO): Started {
  const [command, ...rest] = argv;
  const child = spawn(command!, rest, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) fail(1, `could not start ${argv.join(' ')}`);
  children.add(child);
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line !== '') output.push(line);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  child.on('exit', () => children.delete(child));
  return { child, pid: child.pid, output };
}

/** Sends `signal` and waits up to timeoutMs for the exit, then SIGKILL. */
async function stopProcess(started: Started, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 5000) {
  const { child } = started;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(started.pid, signal);
  const timer = sleep(timeoutMs).then(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(started.pid, 'SIGKILL');
  });
  await Promise.race([exited, timer]);
  await exited;
}

/** Runs a short command to completion, bounded in time. */
async function run(argv: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  const started = startProcess(argv);
  const timer = setTimeout(() => {
    if (started.child.exitCode === null) process.kill(started.pid, 'SIGKILL');
  }, timeoutMs);
  const code = await new Promise<number | null>((resolve) => started.child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, out: started.output.join('\n') };
}

function which(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Installs nginx and wrk with apt-get when missing; exit 3 when that is impossible. */
function ensureTools(): void {
  if (!which('openssl')) fail(3, 'openssl is missing (needed for the self-signed certificate)');
  hasTaskset = which('taskset');
  if (which('nginx') && which('wrk')) return;
  if (!which('apt-get')) fail(3, 'nginx or wrk is missing and apt-get is not available to install them');
  if (process.getuid?.() !== 0) fail(3, 'nginx or wrk is missing and installing them needs root (apt-get)');
  const install = (packages: string[]) =>
    spawnSync('apt-get', ['install', '-y', ...packages], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 300000,
    }).status === 0;
  process.stderr.write('proxy-bench: installing nginx-light and wrk with apt-get\n');
  let ok = install(['nginx-light', 'wrk']) || install(['nginx', 'wrk']);
  if (!ok) {
    spawnSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });
    ok = install(['nginx-light', 'wrk']) || install(['nginx', 'wrk']);
  }
  if (!ok || !which('nginx') || !which('wrk')) fail(3, 'apt-get could not install nginx and wrk');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One GET to 127.0.0.1 with Host: bench.test; the status and body length, or null. */
function probe(port: number, tls: boolean, path = '/'): Promise<{ status: number; bytes: number } | null> {
  return new Promise((resolve) => {
    const options = {
      host: '127.0.0.1',
      port,
      path,
      headers: { host: HOST },
      rejectUnauthorized: false,
      agent: false as const,
      timeout: 2000,
    };
    const req = (tls ? https : http).get(options, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(100);
  }
  fail(1, `${what} did not become ready within ${timeoutMs / 1000} s`);
}

// --- /proc -------------------------------------------------------------------------------------------

function rssKiB(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** utime + stime in clock ticks (USER_HZ, 100 on Linux). */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The PID and its direct children (NGINX's master and workers). */
function processTree(pid: number): number[] {
  const pids = [pid];
  try {
    for (const entry of spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .stdout.split('\n')
      .map((line) => Number(line.trim()))) {
      if (entry > 0) pids.push(entry);
    }
  } catch {
    // ps missing: the master alone
  }
  return pids;
}

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

function nginxCommon(prefix: string): string {
  return `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
`;
}

function httpCommon(prefix: string): string {
  return `  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 75s;
`;
}

function upstreamConf(prefix: string, dir: string, ports: Ports): string {
  // keepalive_requests is raised so that neither the proxies' pooled connections nor wrk's are closed
  // every 1,000 requests by the upstream (ingress-nginx's own upstream-keepalive-requests is 10,000).
  return `${nginxCommon(prefix)}
http {
${httpCommon(prefix)}  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${ports.upstream} backlog=4096;
    listen 127.0.0.1:${ports.upstream2} backlog=4096;
    location = /1m { alias ${dir}/1m.bin; }
    location / { return 200 "${BODY_1K}\\n"; }
  }
}
`;
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

// --- wrk -----------------------------------------------------------------------------------------------

interface WrkResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: { connect: number; read: number; write: number; timeout: number };
  non2xx: number;
  /** CPU time of the proxy process(es) per request, µs (null for direct) */
  cpuUsPerReq: number | null;
  raw: string;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  if (unit === 'us') return n / 1000;
  if (unit === 'ms') return n;
  if (unit === 's') return n * 1000;
  if (unit === 'm') return n * 60000;
  return Number.NaN;
}

function parseWrk(out: string): Omit<WrkResult, 'cpuUsPerReq' | 'raw'> {
  const latency = (pct: string) => {
    const m = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? toMs(m[1]!, m[2]!) : Number.NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const requests = /(\d+) requests in/.exec(out);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    requests: requests ? Number(requests[1]) : 0,
    rps: rps ? Number(rps[1]) : 0,
    p50: latency('50'),
    p99: latency('99'),
    errors: {
      connect: sock ? Number(sock[1]) : 0,
      read: sock ? Number(sock[2]) : 0,
      write: sock ? Number(sock[3]) : 0,
      timeout: sock ? Number(sock[4]) : 0,
    },
    non2xx: non2xx ? Number(non2xx[1]) : 0,
  };
}

const wrkArgv = (url: string, connections: number, seconds: number) => [
  'wrk',
  '-t1',
  `-c${connections}`,
  `-d${seconds}s`,
  '--latency',
  '-H',
  `Host: ${HOST}`,
  url,
];

const commands: string[] = [];

/** One wrk run on core 1; the CPU of `cpuPids` (the proxy) is sampled around it. */
async function wrk(url: string, connections: number, seconds: number, cpuPids: () => number[]) {
  const argv = pinned(1, wrkArgv(url, connections, seconds));
  const command = argv.join(' ').replace(`Host: ${HOST}`, `'Host: ${HOST}'`);
  if (!commands.includes(command)) commands.push(command);
  const pids = cpuPids();
  const before = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);
  const { code, out } = await run(argv, (seconds + 20) * 1000);
  const after = cpuPids().reduce((sum, pid) => sum + cpuTicks(pid), 0);
  if (code !== 0) fail(1, `wrk failed (exit ${code}): ${argv.join(' ')}\n${out}`);
  const parsed = parseWrk(out);
  const cpuUsPerReq =
    pids.length === 0 || parsed.requests === 0 ? null : ((after - before) * 10000) / parsed.requests;
  return { ...parsed, cpuUsPerReq, raw: out } satisfies WrkResult;
}

// --- the contenders --------------------------------------------------------------------------------

interface Env {
  dir: string;
  ports: Ports;
  upstream: Started;
  nginx: Started;
  ingressTs: Started;
  manifestsDir: string;
}

async function startNginx(prefix: string, conf: string, core: number): Promise<Started> {
  mkdirSync(prefix, { recursive: true });
  const confPath = join(prefix, 'nginx.conf');
  writeFileSync(confPath, conf);
  const test = await run(
    ['nginx', '-t', '-q', '-p', prefix, '-c', confPath, '-e', join(prefix, 'error.log')],
    10000,
  );
  if (test.code !== 0) fail(1, `nginx -t failed for ${confPath}:\n${test.out}`);
  return startProcess(pinned(core, ['nginx', '-p', prefix, '-c', confPath, '-e', join(prefix, 'error.log')]));
}

function ingressTsArgv(manifestsDir: string, ports: Ports, logLevel: string, extra: string[] = []): string[] {
  return [
    process.execPath,
    ...extra,
    'bin/ingress-ts.ts',
    '--manifests',
    manifestsDir,
    '--http-port',
    String(ports.tsHttp),
    '--https-port',
    String(ports.tsHttps),
    '--healthz-port',
    String(ports.tsHealthz),
    '--bind-address',
    '127.0.0.1',
    '--configmap',
    'bench/ingress-ts',
    '--default-ssl-certificate',
    'bench/bench-tls',
    '--log-level',
    logLevel,
  ];
}

async function startIngressTs(env: Omit<Env, 'ingressTs'>, logLevel: string, extra: string[] = []) {
  const argv = pinned(0, ingressTsArgv(env.manifestsDir, env.ports, logLevel, extra));
  const started = startProcess(argv);
  await waitFor('ingress-ts', async () => {
    if (started.child.exitCode !== null) fail(1, `ingress-ts exited:\n${started.output.join('\n')}`);
    const answer = await probe(env.ports.tsHttp, false);
    return answer?.status === 200;
  });
  return { started, command: argv.join(' ') };
}

async function setup(): Promise<{ env: Env; commandLines: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), 'ingress-ts-proxy-bench-'));
  tempDir = dir;
  chmodSync(dir, 0o755); // NGINX workers run as nobody/www-data and read 1m.bin
  const manifestsDir = join(dir, 'manifests');
  mkdirSync(manifestsDir);
  writeFileSync(join(dir, '1m.bin'), Buffer.alloc(ONE_MIB, 'y'), { mode: 0o644 });
  const cert = await run(
    [
      'openssl',
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '30',
      '-subj',
      `/CN=${HOST}`,
      '-addext',
      `subjectAltName=DNS:${HOST}`,
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'tls.crt'),
    ],
    30000,
  );
  if (cert.code !== 0) fail(1, `openssl could not create the certificate:\n${cert.out}`);

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
    upstreamConf(join(dir, 'upstream'), dir, ports),
    1,
  );
  await waitFor('upstream nginx', async () => (await probe(ports.upstream, false))?.status === 200);
  const nginx = await startNginx(join(dir, 'nginx'), proxyConf(join(dir, 'nginx'), dir, ports), 0);
  await waitFor('nginx proxy', async () => (await probe(ports.nginxHttp, false))?.status === 200);
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
    const answer = await probe(port, tls, path);
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

function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
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
    const reload = await run(
      [
        'nginx',
        '-p',
        prefix,
        '-c',
        join(prefix, 'nginx.conf'),
        '-e',
        join(prefix, 'error.log'),
        '-s',
        'reload',
      ],
      5000,
    );
    if (reload.code !== 0) failed++;
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

// --- report --------------------------------------------------------------------------------------------

function median(values: readonly number[]): number {
  const sorted = [...values].filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const int = (n: number) => (Number.isNaN(n) ? 'n/a' : Math.round(n).toLocaleString('en-US'));
const fixed = (n: number, digits: number) => (Number.isNaN(n) ? 'n/a' : n.toFixed(digits));
const errorsOf = (r: WrkResult) => r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout;
const errorText = (r: WrkResult) =>
  `connect ${r.errors.connect}, read ${r.errors.read}, write ${r.errors.write}, timeout ${r.errors.timeout}`;

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

function version(argv: string[]): string {
  const result = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 5000 });
  return `${result.stdout ?? ''}${result.stderr ?? ''}`.split('\n')[0]?.trim() ?? 'unknown';
}

function header(options: Options, commandLines: Record<string, string>): string {
  const cpu = cpus();
  return `# Proxy benchmark: ingress-ts vs NGINX

- date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}
- machine: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB
- node: ${process.version}; ${version(['nginx', '-v'])}; ${version(['wrk', '-v'])}; ${version(['openssl', 'version'])}
- pinning: ${hasTaskset ? 'proxies on core 0 (`taskset -c 0`), wrk and the upstream NGINX on core 1' : '**taskset missing: nothing pinned**'}
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
