// wrk runs pinned to core 1 (or the cores given), parsed, with the CPU time of the process under test sampled around them:
// `wrk` for a fixed duration, `startWrk` for a run stopped with SIGINT when the caller is done (wrk
// then prints its usual summary, over the time it actually ran).

import { get } from 'node:http';
import { cpuTicks, fail, pinned, run, sleep, startProcess } from './harness.ts';

export interface WrkResult {
  requests: number;
  /** how long wrk ran, s (from "N requests in 2.01s") */
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  errors: { connect: number; read: number; write: number; timeout: number };
  non2xx: number;
  /** CPU time of the measured process(es) per request, µs (null when none was measured) */
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

export function parseWrk(out: string): Omit<WrkResult, 'cpuUsPerReq' | 'raw'> {
  const latency = (pct: string) => {
    const m = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? toMs(m[1]!, m[2]!) : Number.NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const requests = /(\d+) requests in ([\d.]+)(us|ms|s|m)\b/.exec(out);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    requests: requests ? Number(requests[1]) : 0,
    seconds: requests ? toMs(requests[2]!, requests[3]!) / 1000 : Number.NaN,
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

/** Every distinct wrk command line run so far, for the report. */
export const wrkCommands: string[] = [];

/** Where wrk runs and with how many threads; the default is core 1, one thread. */
export interface WrkPlacement {
  cores: number | string;
  threads: number;
}

const CORE_1: WrkPlacement = { cores: 1, threads: 1 };

/** `taskset -c 1 wrk -t1 -cN -dDs --latency -H 'Host: host' url`, recorded in `wrkCommands`. */
function wrkArgv(
  url: string,
  connections: number,
  seconds: number,
  host: string,
  placement: WrkPlacement,
): string[] {
  const argv = pinned(placement.cores, [
    'wrk',
    `-t${placement.threads}`,
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    '-H',
    `Host: ${host}`,
    url,
  ]);
  const command = argv.join(' ').replace(`Host: ${host}`, `'Host: ${host}'`);
  if (!wrkCommands.includes(command)) wrkCommands.push(command);
  return argv;
}

/** The parsed output plus the CPU ticks of the measured processes spent over the run, per request. */
function result(out: string, pids: number[], ticks: number): WrkResult {
  const parsed = parseWrk(out);
  const cpuUsPerReq = pids.length === 0 || parsed.requests === 0 ? null : (ticks * 10000) / parsed.requests;
  return { ...parsed, cpuUsPerReq, raw: out };
}

const ticksOf = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);

/** One wrk run on core 1 (or `placement`) with `Host: host`; the CPU of `cpuPids` is sampled around it. */
export async function wrk(
  url: string,
  connections: number,
  seconds: number,
  host: string,
  cpuPids: () => number[],
  placement: WrkPlacement = CORE_1,
): Promise<WrkResult> {
  const argv = wrkArgv(url, connections, seconds, host, placement);
  const pids = cpuPids();
  const before = ticksOf(pids);
  const { code, out } = await run(argv, (seconds + 20) * 1000);
  const after = ticksOf(cpuPids());
  if (code !== 0) fail(1, `wrk failed (exit ${code}): ${argv.join(' ')}\n${out}`);
  return result(out, pids, after - before);
}

export interface RunningWrk {
  /** true once wrk has exited (stopped, or its `-d` ran out) */
  exited(): boolean;
  /** SIGINT (wrk stops and prints its summary), then the parsed result; fails the run if wrk does not exit 0. */
  stop(): Promise<WrkResult>;
}

/**
 * Starts wrk on core 1 with `Host: host` and `-d<maxSeconds>s`, to be ended with `stop()`; the CPU of
 * `cpuPids` is sampled from now until it exits. It is killed 20 s after maxSeconds at the latest.
 */
export function startWrk(
  url: string,
  connections: number,
  maxSeconds: number,
  host: string,
  cpuPids: () => number[],
): RunningWrk {
  const argv = wrkArgv(url, connections, maxSeconds, host, CORE_1);
  const pids = cpuPids();
  const before = ticksOf(pids);
  const started = startProcess(argv);
  let after: number | null = null;
  const exit = new Promise<number | null>((resolve) => {
    // 'close', not 'exit': by then all of wrk's output has been read
    started.child.once('close', (code) => {
      after ??= ticksOf(cpuPids());
      resolve(code);
    });
  });
  const exited = () => started.child.exitCode !== null || started.child.signalCode !== null;
  const killer = setTimeout(
    () => {
      if (!exited()) process.kill(started.pid, 'SIGKILL');
    },
    (maxSeconds + 20) * 1000,
  );
  killer.unref();
  return {
    exited,
    async stop() {
      if (!exited()) {
        after = ticksOf(cpuPids()); // the load ends now; the proxy's CPU after this is not the run's
        process.kill(started.pid, 'SIGINT');
        const timedOut = await Promise.race([exit.then(() => false), sleep(10000).then(() => true)]);
        if (timedOut) fail(1, `wrk did not exit within 10 s of SIGINT: ${argv.join(' ')}`);
      }
      const code = await exit;
      clearTimeout(killer);
      const out = started.output.join('\n');
      if (code !== 0) fail(1, `wrk failed (exit ${code}): ${argv.join(' ')}\n${out}`);
      return result(out, pids, (after ?? ticksOf(cpuPids())) - before);
    },
  };
}

export const errorsOf = (r: WrkResult) =>
  r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout;
export const errorText = (r: WrkResult) =>
  `connect ${r.errors.connect}, read ${r.errors.read}, write ${r.errors.write}, timeout ${r.errors.timeout}`;

/**
 * GET /metrics on `port` every `everyMs` while `work` lasts, as a Prometheus would (more often than
 * its default); null: no scrapes.
 */
export async function scrapedWhile<T>(
  port: number | null,
  everyMs: number,
  work: () => Promise<T>,
): Promise<T> {
  if (port === null) return work();
  const scrape = () =>
    get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => res.resume()).on(
      'error',
      () => {},
    );
  const timer = setInterval(scrape, everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
