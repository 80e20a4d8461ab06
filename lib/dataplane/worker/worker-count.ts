// How many data-plane threads `worker-processes` asks for. A number is taken as it is; `auto` is
// the container's CPU quota when its cgroup sets one, else the CPUs this process may run on, as
// ingress-nginx computes it for NGINX's worker_processes: cgroup v2 when `cgroup.controllers`
// exists (`cpu.max`: "<quota> <period>" or "max"), v1 otherwise (`cpu/cpu.cfs_quota_us` and
// `cpu/cpu.cfs_period_us`, -1 meaning no quota); the quota rounded up to whole CPUs. This reads
// the machine, so it lives outside the model, which keeps `auto` as it is.

import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { WorkerProcesses } from '../../model/index.ts';

export interface WorkerCountOptions {
  /** where the cgroup filesystem is mounted (tests: a folder of fake files); default /sys/fs/cgroup */
  cgroupRoot?: string;
  /** CPUs this process may run on; default os.availableParallelism() */
  parallelism?: () => number;
}

/** The number of data-plane threads for `worker-processes`: at least 1. */
export function resolveWorkerCount(value: WorkerProcesses, options: WorkerCountOptions = {}): number {
  if (value !== 'auto') return Math.max(1, Math.floor(value));
  const quota = cgroupCpuQuota(options.cgroupRoot ?? '/sys/fs/cgroup');
  return Math.max(1, quota ?? (options.parallelism ?? availableParallelism)());
}

/** The cgroup's CPU quota in whole CPUs (rounded up), or null when none is set or none is readable. */
export function cgroupCpuQuota(root: string): number | null {
  let quota: number | null;
  let period: number | null;
  if (existsSync(join(root, 'cgroup.controllers'))) {
    const fields = readText(join(root, 'cpu.max'))?.trim().split(/\s+/) ?? [];
    if (fields[0] === undefined || fields[0] === '' || fields[0] === 'max') return null;
    quota = integer(fields[0]);
    // the kernel writes both; ingress-nginx takes a missing period as the default 100 ms
    period = fields[1] === undefined ? 100_000 : integer(fields[1]);
  } else {
    quota = integer(readText(join(root, 'cpu', 'cpu.cfs_quota_us'))?.trim());
    period = integer(readText(join(root, 'cpu', 'cpu.cfs_period_us'))?.trim());
  }
  if (quota === null || period === null || quota < 0 || period <= 0) return null;
  return Math.ceil(quota / period);
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function integer(text: string | undefined): number | null {
  return text !== undefined && /^-?\d+$/.test(text) ? Number(text) : null;
}
