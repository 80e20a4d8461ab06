// The main thread's build of one change: what `buildModel` costs when one Ingress (or one
// EndpointSlice) changed in a cluster of N, with the caches the controller keeps from build to build
// (BuildCaches) and from scratch (fresh caches, what every build paid before the per-Ingress reuse).
// Run with `node --expose-gc bench/model-change.ts [N ...]` (default 1000 10000); flags:
//   --rounds R        rounds of the five changes (default 3)
//   --cpu-prof F      a CPU profile of the cached change builds only, written to F.<N>.cpuprofile
//   --no-scratch      skip the from-scratch builds (faster; no equality check)
//   --out F           also write the report to F (never overwrites: exits 2 when F exists)
//
// Per change, the same snapshot is built twice: through the long-lived caches, then with fresh ones;
// both results must be equal (model hash, routes hash, diagnostics in order) or the script exits 1.
// CPU is the thread's (process.threadCpuUsage), which other work on a shared machine stretches less
// than wall time. The heap the caches hold is read after forced GCs (two builds' worth of state
// otherwise mixes in): the heap with the last result and the caches, then with the caches dropped.

import { existsSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import {
  type BuildCaches,
  type BuildResult,
  buildModel,
  createBuildCaches,
  type EndpointSlice,
} from '../lib/model/index.ts';
import { generateCluster } from './model-build.ts';
import { ChangeStream, KINDS, median } from './support/stall-changes.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const rounds = Number(flag('--rounds') ?? 3);
const profileFile = flag('--cpu-prof');
const outFile = flag('--out');
const scratch = !args.includes('--no-scratch');
const valued = new Set(['--rounds', '--cpu-prof', '--out']);
const sizes = args.filter((arg, i) => !arg.startsWith('--') && !valued.has(args[i - 1] ?? '')).map(Number);
if (sizes.length === 0) sizes.push(1000, 10000);
if (outFile !== undefined && existsSync(outFile)) {
  console.error(`model-change: ${outFile} exists; results files are never overwritten`);
  process.exit(2);
}

const ENDPOINTS = 'endpoints moved';
const CHANGES = [...KINDS, ENDPOINTS] as const;
type Change = (typeof CHANGES)[number];

/** A pod of one Service replaced: an endpoints-only change. */
function moveEndpoint(stream: ChangeStream, round: number): void {
  const slices = [...stream.snapshot.endpointSlices];
  const index = (round * 7919 + 13) % slices.length;
  const slice = structuredClone(slices[index]) as EndpointSlice;
  const first = slice.endpoints?.[0];
  if (first !== undefined) first.addresses = [`10.250.${round % 250}.${(round * 13) % 250}`];
  slices[index] = slice;
  stream.snapshot = { ...stream.snapshot, endpointSlices: slices };
}

const cpuSince = (since: NodeJS.CpuUsage): number => {
  const { user, system } = process.threadCpuUsage(since);
  return (user + system) / 1000;
};

function measured(run: () => BuildResult): { result: BuildResult; cpuMs: number; wallMs: number } {
  const wall = performance.now();
  const cpu = process.threadCpuUsage();
  const result = run();
  return { result, cpuMs: cpuSince(cpu), wallMs: performance.now() - wall };
}

function sameBuild(a: BuildResult, b: BuildResult): boolean {
  return (
    a.model.hash === b.model.hash &&
    a.model.routesHash === b.model.routesHash &&
    isDeepStrictEqual(a.diagnostics, b.diagnostics) &&
    isDeepStrictEqual(a.references, b.references)
  );
}

const heapMiB = (): number => {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

interface Row {
  change: Change;
  cachedCpu: number;
  cachedWall: number;
  scratchCpu: number;
  scratchWall: number;
}

interface SizeResult {
  size: number;
  firstCpu: number;
  firstWall: number;
  rows: Row[];
  cachesMiB: number;
}

async function runSize(size: number, certificate: { certPem: string; keyPem: string }): Promise<SizeResult> {
  const stream = new ChangeStream(generateCluster(size, false).snapshot, certificate);
  // dropped before the last heap reading, so the difference is what the caches hold
  const kept: { caches: BuildCaches | null } = { caches: createBuildCaches() };
  const cached = (): BuildResult => buildModel(stream.snapshot, {}, kept.caches ?? undefined);
  const first = measured(cached);
  let last: BuildResult | null = first.result;
  // one warm-up change of each kind, so the JIT has seen the cached paths before the timed ones
  for (const [k, change] of CHANGES.entries()) {
    if (change === ENDPOINTS) moveEndpoint(stream, 1000);
    else stream.next(1000, k);
    last = cached();
  }
  const session = new Session();
  if (profileFile !== undefined) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
  }
  const rows: Row[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const [k, change] of CHANGES.entries()) {
      if (change === ENDPOINTS) moveEndpoint(stream, round);
      else stream.next(round, k);
      last = null;
      globalThis.gc?.();
      if (profileFile !== undefined) await session.post('Profiler.start');
      const viaCaches = measured(cached);
      if (profileFile !== undefined) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(`${profileFile}.${size}.${round}-${k}.cpuprofile`, JSON.stringify(profile));
      }
      let scratchCpu = Number.NaN;
      let scratchWall = Number.NaN;
      if (scratch) {
        globalThis.gc?.();
        const fresh = measured(() => buildModel(stream.snapshot, {}, createBuildCaches()));
        if (!sameBuild(viaCaches.result, fresh.result)) {
          console.error(`model-change: ${change} at ${size}: the cached build differs from a fresh one`);
          process.exit(1);
        }
        scratchCpu = fresh.cpuMs;
        scratchWall = fresh.wallMs;
      }
      last = viaCaches.result;
      rows.push({
        change,
        cachedCpu: viaCaches.cpuMs,
        cachedWall: viaCaches.wallMs,
        scratchCpu,
        scratchWall,
      });
      process.stderr.write(
        `${size} ${change}: cached ${viaCaches.cpuMs.toFixed(1)} ms CPU, scratch ${scratchCpu.toFixed(1)} ms CPU\n`,
      );
    }
  }
  session.disconnect();
  const withCaches = heapMiB();
  kept.caches = null;
  const withoutCaches = heapMiB();
  if (last === null) throw new Error('no build');
  return {
    size,
    firstCpu: first.cpuMs,
    firstWall: first.wallMs,
    rows,
    cachesMiB: withCaches - withoutCaches,
  };
}

async function main(): Promise<void> {
  const certificate = await generateDefaultCertificate();
  const loadBefore = loadavg();
  const results: SizeResult[] = [];
  for (const size of sizes) results.push(await runSize(size, certificate));
  const loadAfter = loadavg();
  const f = (v: number): string => (Number.isNaN(v) ? '–' : v.toFixed(1));
  const lines = [
    `model-change: node ${process.version}, ${rounds} rounds of ${CHANGES.length} changes per size, load average ${loadBefore
      .map((l) => l.toFixed(2))
      .join(' ')} before, ${loadAfter.map((l) => l.toFixed(2)).join(' ')} after`,
    '',
    '| Ingresses | change | n | cached CPU ms, median (max) | cached wall ms, median | scratch CPU ms, median (max) | scratch wall ms, median | scratch ÷ cached (CPU) |',
    '| --: | --- | --: | --: | --: | --: | --: | --: |',
  ];
  for (const r of results) {
    for (const change of CHANGES) {
      const of = r.rows.filter((row) => row.change === change);
      const m = (pick: (row: Row) => number): number => median(of.map(pick));
      const x = (pick: (row: Row) => number): number => Math.max(...of.map(pick));
      lines.push(
        `| ${r.size.toLocaleString('en-US')} | ${change} | ${of.length} | ${f(m((row) => row.cachedCpu))} (${f(x((row) => row.cachedCpu))}) | ${f(m((row) => row.cachedWall))} | ${f(m((row) => row.scratchCpu))} (${f(x((row) => row.scratchCpu))}) | ${f(m((row) => row.scratchWall))} | ${f(m((row) => row.scratchCpu) / m((row) => row.cachedCpu))} |`,
      );
    }
  }
  lines.push(
    '',
    '| Ingresses | first build CPU ms | first build wall ms | heap the caches hold, MiB (after GCs) |',
  );
  lines.push('| --: | --: | --: | --: |');
  for (const r of results) {
    lines.push(
      `| ${r.size.toLocaleString('en-US')} | ${f(r.firstCpu)} | ${f(r.firstWall)} | ${globalThis.gc === undefined ? 'n/a (no --expose-gc)' : f(r.cachesMiB)} |`,
    );
  }
  const report = `${lines.join('\n')}\n`;
  process.stdout.write(report);
  if (outFile !== undefined) writeFileSync(outFile, report, { flag: 'wx' });
}

await main();
