// Rate-limit zones: the cost of one check, in ns, for the LRU zone of one thread (as ingress-ts kept
// its zones before they moved to shared memory: an lru-cache of buckets) and for the shared zone
// (lib/dataplane/access/shared-zone.ts), in one thread and with N worker threads hammering one zone
// (every check from another thread contends for the zone's lock) or each its own zone.
// Usage: node bench/zones.ts [--threads 2] [--checks 2000000] [--no-write]
import { writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { ConnectionZone, RequestZone, ZONE_MAX_ADDRESSES } from '../lib/dataplane/access/rate-limit.ts';
import { allocateZoneBuffer, zoneNow } from '../lib/dataplane/access/shared-zone.ts';

/** The zone as it was: buckets in an LRU of one thread's memory (probe, then commit). */
class LruRequestZone {
  readonly rate: number;
  readonly burst: number;
  readonly #buckets = new LRUCache<string, { excess: number; last: number }>({ max: ZONE_MAX_ADDRESSES });
  constructor(limit: number, burst: number) {
    this.rate = limit * 1000;
    this.burst = burst * 1000;
  }
  take(address: string, now: number): boolean {
    const bucket = this.#buckets.get(address);
    if (bucket === undefined) {
      this.#buckets.set(address, { excess: 0, last: now });
      return true;
    }
    const elapsed = Math.max(0, now - bucket.last);
    const excess = Math.max(0, bucket.excess - Math.floor((this.rate * elapsed) / 1000) + 1000);
    if (excess > this.burst) return false;
    bucket.excess = excess;
    bucket.last = now;
    return true;
  }
}

interface Job {
  kind: 'lru' | 'shared' | 'connections';
  checks: number;
  addresses: string[];
  buffer: SharedArrayBuffer | null;
  gate: SharedArrayBuffer | null;
}

/** ns per check of `job` in this thread */
function run(job: Job): number {
  const { addresses, checks } = job;
  const mask = addresses.length - 1;
  // a high limit: most checks are accepted and write the bucket, the costly case
  let check: (address: string, now: number) => unknown;
  if (job.kind === 'lru') {
    const zone = new LruRequestZone(1_000_000, 100);
    check = (address, now) => zone.take(address, now);
  } else if (job.kind === 'shared') {
    const zone = new RequestZone(1_000_000, 100, false, job.buffer ?? allocateZoneBuffer());
    check = (address, now) => zone.take(address, now);
  } else {
    const zone = new ConnectionZone(1_000_000, job.buffer ?? allocateZoneBuffer());
    check = (address) => {
      if (!zone.acquire(address)) return false;
      zone.release(address);
      return true;
    };
  }
  for (let i = 0; i < 100_000; i++) check(addresses[i & mask] as string, zoneNow());
  if (job.gate !== null) {
    const gate = new Int32Array(job.gate);
    Atomics.add(gate, 0, 1);
    while (Atomics.load(gate, 1) === 0) Atomics.wait(gate, 1, 0, 5);
  }
  const started = process.hrtime.bigint();
  for (let i = 0; i < checks; i++) check(addresses[i & mask] as string, zoneNow());
  return Number(process.hrtime.bigint() - started) / checks;
}

if (!isMainThread) {
  parentPort?.postMessage(run(workerData as Job));
} else {
  const args = process.argv.slice(2);
  const value = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    return at < 0 ? fallback : Number(args[at + 1]);
  };
  const threads = value('--threads', 2);
  const checks = value('--checks', 2_000_000);
  const write = !args.includes('--no-write');
  const load = loadavg();
  // 1,024 client addresses (IPv4 and IPv6) cycled through: lookups that hit
  const addresses = Array.from({ length: 1024 }, (_, i) =>
    i % 2 === 0 ? `10.${(i >> 8) & 255}.${i & 255}.17` : `2001:db8::${i.toString(16)}:1`,
  );

  // every run in fresh worker threads, so that no run's call sites are warmed (or made
  // polymorphic) by another kind's
  const inThreads = async (kind: Job['kind'], count: number, shared: boolean): Promise<number[]> => {
    const gate = new SharedArrayBuffer(8);
    const buffer = allocateZoneBuffer();
    const workers = Array.from(
      { length: count },
      () =>
        new Worker(new URL(import.meta.url), {
          workerData: { kind, checks, addresses, buffer: shared ? buffer : allocateZoneBuffer(), gate },
        }),
    );
    const results = workers.map(
      (worker) => new Promise<number>((resolve) => worker.once('message', resolve)),
    );
    const words = new Int32Array(gate);
    while (Atomics.load(words, 0) < count) await new Promise((resolve) => setTimeout(resolve, 5));
    Atomics.store(words, 1, 1);
    Atomics.notify(words, 1);
    const ns = await Promise.all(results);
    await Promise.all(workers.map((worker) => worker.terminate()));
    return ns;
  };

  const rows: [string, string][] = [];
  const alone = async (kind: Job['kind']): Promise<string> => {
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) runs.push(...(await inThreads(kind, 1, false)));
    return `${Math.min(...runs).toFixed(0)} (${runs.map((n) => n.toFixed(0)).join(', ')})`;
  };
  rows.push(['LRU zone (before), 1 thread, limit-rps check', await alone('lru')]);
  rows.push(['shared zone, 1 thread, limit-rps check', await alone('shared')]);
  rows.push(['shared zone, 1 thread, limit-connections acquire + release', await alone('connections')]);
  for (const [kind, shared, label] of [
    ['shared', true, `shared zone, ${threads} threads on ONE zone, limit-rps check`],
    ['shared', false, `shared zone, ${threads} threads each on its own zone, limit-rps check`],
    ['connections', true, `shared zone, ${threads} threads on ONE zone, acquire + release`],
  ] as const) {
    const ns = await inThreads(kind, threads, shared);
    rows.push([label, `${ns.map((n) => n.toFixed(0)).join(' / ')} (per thread)`]);
  }

  const date = new Date().toISOString().slice(0, 10);
  const report = [
    `# Rate-limit zones: ns per check (${date})`,
    '',
    `Node ${process.version}, ${availableParallelism()} CPUs, ${checks.toLocaleString('en')} checks per run over 1,024 addresses (half IPv6), ` +
      'a limit high enough that most checks are accepted (the bucket is written). Each run in fresh worker threads; 1-thread rows: best of 3 (the 3 runs).',
    '',
    `Load average when it started: ${load.map((n) => n.toFixed(1)).join(' ')}.`,
    '',
    '| zone | ns per check |',
    '| --- | --: |',
    ...rows.map(([label, ns]) => `| ${label} | ${ns} |`),
    '',
  ].join('\n');
  process.stdout.write(report);
  if (write) writeFileSync(new URL(`results/zones-${date}.md`, import.meta.url), report);
}
