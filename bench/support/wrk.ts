// wrk runs pinned to core 1, parsed, with the CPU time of the process under test sampled around them.

import { cpuTicks, fail, pinned, run } from './harness.ts';

export interface WrkResult {
  requests: number;
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

/** Every distinct wrk command line run so far, for the report. */
export const wrkCommands: string[] = [];

/** One wrk run on core 1 with `Host: host`; the CPU of `cpuPids` is sampled around it. */
export async function wrk(
  url: string,
  connections: number,
  seconds: number,
  host: string,
  cpuPids: () => number[],
): Promise<WrkResult> {
  const argv = pinned(1, [
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    '-H',
    `Host: ${host}`,
    url,
  ]);
  const command = argv.join(' ').replace(`Host: ${host}`, `'Host: ${host}'`);
  if (!wrkCommands.includes(command)) wrkCommands.push(command);
  const pids = cpuPids();
  const before = pids.reduce((sum, pid) => sum + cpuTicks(pid), 0);
  const { code, out } = await run(argv, (seconds + 20) * 1000);
  const after = cpuPids().reduce((sum, pid) => sum + cpuTicks(pid), 0);
  if (code !== 0) fail(1, `wrk failed (exit ${code}): ${argv.join(' ')}\n${out}`);
  const parsed = parseWrk(out);
  const cpuUsPerReq =
    pids.length === 0 || parsed.requests === 0 ? null : ((after - before) * 10000) / parsed.requests;
  return { ...parsed, cpuUsPerReq, raw: out };
}

export const errorsOf = (r: WrkResult) =>
  r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout;
export const errorText = (r: WrkResult) =>
  `connect ${r.errors.connect}, read ${r.errors.read}, write ${r.errors.write}, timeout ${r.errors.timeout}`;
