// What every benchmark script shares: child processes tracked and stopped by PID (also on errors,
// signals and a watchdog), a temp folder removed at the end, tool installation, CPU pinning, ports,
// readiness probes and /proc readings. Call `initHarness` once before anything else.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REPO = new URL('../..', import.meta.url).pathname;

let scriptName = 'bench';
const children = new Set<ChildProcess>();
const tempDirs: string[] = [];
let hasTaskset = false;

export function fail(code: number, message: string): never {
  process.stderr.write(`${scriptName}: ${message}\n`);
  cleanup();
  process.exit(code);
}

/** Kills every child still running (an NGINX master's workers too) and removes the temp folders. */
export function cleanup(): void {
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
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Exit handlers, signal handlers and a watchdog that ends the whole run after `watchdogMs`. */
export function initHarness(name: string, watchdogMs: number): void {
  scriptName = name;
  process.on('exit', cleanup);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => fail(130, `stopped by ${signal}`));
  }
  process.on('uncaughtException', (error) => fail(1, `error: ${error.stack ?? String(error)}`));
  process.on('unhandledRejection', (error) => fail(1, `error: ${String(error)}`));
  setTimeout(
    () => fail(1, `watchdog: the run took longer than ${watchdogMs / 60000} minutes`),
    watchdogMs,
  ).unref();
}

/** A temp folder (mode 0755: NGINX workers run as another user) removed by `cleanup`. */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** argv prefixed with `taskset -c CORES` when taskset exists; CORES is one core or a list ("0,1"). */
export const pinned = (core: number | string, argv: string[]): string[] =>
  hasTaskset ? ['taskset', '-c', String(core), ...argv] : argv;

export const isPinned = (): boolean => hasTaskset;

export interface Started {
  child: ChildProcess;
  pid: number;
  /** stdout and stderr, line by line */
  output: string[];
}

/** Starts a long-running process; its stdout and stderr lines are kept. */
export function startProcess(argv: string[], cwd = REPO, env?: NodeJS.ProcessEnv): Started {
  const [command, ...rest] = argv;
  const child = spawn(command!, rest, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) fail(1, `could not start ${argv.join(' ')}`);
  children.add(child);
  const output: string[] = [];
  let partial = '';
  const collect = (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line !== '') output.push(line);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  child.on('exit', () => {
    if (partial !== '') output.push(partial);
    children.delete(child);
  });
  return { child, pid: child.pid, output };
}

/** Sends `signal` and waits up to timeoutMs for the exit, then SIGKILL. */
export async function stopProcess(started: Started, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 5000) {
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
export async function run(argv: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  const started = startProcess(argv);
  const timer = setTimeout(() => {
    if (started.child.exitCode === null) process.kill(started.pid, 'SIGKILL');
  }, timeoutMs);
  const code = await new Promise<number | null>((resolve) => {
    if (started.child.exitCode !== null) resolve(started.child.exitCode);
    else started.child.once('exit', (c) => resolve(c));
  });
  clearTimeout(timer);
  return { code, out: started.output.join('\n') };
}

export function which(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Checks for openssl, taskset and (when `loadTools`) nginx and wrk; installs nginx and wrk with apt-get
 * when missing; exit 3 when that is impossible.
 */
export function ensureTools(loadTools = true): void {
  if (!which('openssl')) fail(3, 'openssl is missing (needed for the self-signed certificate)');
  hasTaskset = which('taskset');
  if (!loadTools || (which('nginx') && which('wrk'))) return;
  if (!which('apt-get')) fail(3, 'nginx or wrk is missing and apt-get is not available to install them');
  if (process.getuid?.() !== 0) fail(3, 'nginx or wrk is missing and installing them needs root (apt-get)');
  const install = (packages: string[]) =>
    spawnSync('apt-get', ['install', '-y', ...packages], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 300000,
    }).status === 0;
  process.stderr.write(`${scriptName}: installing nginx-light and wrk with apt-get\n`);
  let ok = install(['nginx-light', 'wrk']) || install(['nginx', 'wrk']);
  if (!ok) {
    spawnSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });
    ok = install(['nginx-light', 'wrk']) || install(['nginx', 'wrk']);
  }
  if (!ok || !which('nginx') || !which('wrk')) fail(3, 'apt-get could not install nginx and wrk');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One GET to 127.0.0.1 with the given Host; the status and body length, or null. */
export function probe(
  port: number,
  tls: boolean,
  path: string,
  host: string,
): Promise<{ status: number; bytes: number } | null> {
  return new Promise((resolve) => {
    const options = {
      host: '127.0.0.1',
      port,
      path,
      headers: { host },
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

/** Polls `check` every `everyMs` until it is true; fails the run after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 15000,
  everyMs = 100,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(everyMs);
  }
  fail(1, `${what} did not become ready within ${timeoutMs / 1000} s`);
}

/** A self-signed RSA-2048 certificate for `host` from `openssl req -x509`: tls.crt and tls.key in dir. */
export async function selfSignedCertificate(dir: string, host: string): Promise<void> {
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
      `/CN=${host}`,
      '-addext',
      `subjectAltName=DNS:${host}`,
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'tls.crt'),
    ],
    30000,
  );
  if (cert.code !== 0) fail(1, `openssl could not create the certificate:\n${cert.out}`);
}

// --- /proc -------------------------------------------------------------------------------------------

export function rssKiB(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** utime + stime in clock ticks (USER_HZ, 100 on Linux). */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The PID and its direct children (NGINX's master and workers). */
export function processTree(pid: number): number[] {
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

// --- report helpers ------------------------------------------------------------------------------------

export function median(values: readonly number[]): number {
  const sorted = [...values].filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * A distribution-free interval of at least 95 % for the median of `values`: the k-th smallest and
 * k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 2.5 %. Null with fewer than 6 values
 * (no such k). Rounds of a benchmark on a shared machine spread too widely for a mean ± deviation.
 */
export function medianInterval(values: readonly number[]): [number, number] | null {
  const sorted = [...values].filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  const n = sorted.length;
  let below = 0; // P(X <= j)
  let choose = 1; // C(n, j)
  let k = 0;
  for (let j = 0; j < n; j++) {
    below += choose / 2 ** n;
    if (below > 0.025) break;
    k = j + 1;
    choose = (choose * (n - j)) / (j + 1);
  }
  return k === 0 ? null : [sorted[k - 1]!, sorted[n - k]!];
}

/** Nearest-rank percentile (q from 0 to 1) of values already sorted ascending; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export const int = (n: number) => (Number.isNaN(n) ? 'n/a' : Math.round(n).toLocaleString('en-US'));
export const fixed = (n: number, digits: number) => (Number.isNaN(n) ? 'n/a' : n.toFixed(digits));

/** The first line a tool prints of its version. */
export function version(argv: string[]): string {
  const result = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 5000 });
  return `${result.stdout ?? ''}${result.stderr ?? ''}`.split('\n')[0]?.trim() ?? 'unknown';
}
