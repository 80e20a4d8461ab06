// Swap stall with data-plane threads: what one small change costs the threads that serve traffic,
// with N Ingresses loaded. Run with `node --expose-gc bench/swap-stall-threads.ts [N] [rounds]`
// (default 10000 2); `--threads T` (default 2), `--full` to post the whole model on every change
// (the protocol before deltas), `--idle S` to idle S seconds after the stream and read the workers'
// heaps again (what V8's own collections return), `--no-write` for stdout only.
//
// A DataPlaneThreads with T threads on loopback, loaded with model-build.ts's cluster of N Ingresses,
// and the stream of one-Ingress changes of swap-stall.ts (support/stall-changes.ts). A load thread
// sends requests over 4 keep-alive connections the whole time (to the built-in 404, so no upstream's
// latency mixes in); the kernel spreads the connections over the threads. Per change:
// - build ms: buildModel on the main thread (it serves no traffic: outside the window);
// - bytes posted: what each thread was sent (a delta, or the whole model), and whether it was a delta;
// - in each worker, the longest the change held its event loop: the prepare (deserialise, rebuild
//   from the delta, compile) and the commit (the swap) each run as one task, timed inside the thread,
//   and the thread's CPU time in its prepare (less stretched than wall time on a shared machine);
// - prepare ms and commit ms: the two phases as the main thread sees them (the commit is the extra
//   round trip of the all-or-nothing apply);
// - the p99 and max latency of the requests started from 100 ms before the apply to 100 ms after it.
// RSS (the whole process: main thread and every worker) is read after two forced GCs at ready and
// after the stream, and each worker's V8 heap (read from the main thread) beside it; after the
// stream, once more after a full collection forced in each worker: what the workers keep alive.

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import type { ApplyRecord } from '../lib/dataplane/worker/model-payloads.ts';
import { DataPlaneThreads } from '../lib/dataplane/worker/pool.ts';
import { buildModel } from '../lib/model/index.ts';
import { generateCluster } from './model-build.ts';
import { ChangeStream, KINDS, type Kind, median, memoryMiB, now } from './support/stall-changes.ts';
import type { LoadMessage, LoadOptions, WindowStats } from './support/stall-load.ts';

const args = process.argv.slice(2);
const write = !args.includes('--no-write');
const full = args.includes('--full');
const threadsAt = args.indexOf('--threads');
const idleAt = args.indexOf('--idle');
/** seconds the process idles after the stream before the last heap reading (V8's own collections) */
const idleSeconds = idleAt >= 0 ? Number(args[idleAt + 1]) : 0;
const threads = threadsAt >= 0 ? Number(args[threadsAt + 1]) : 2;
const [size = 10000, rounds = 2] = args
  .filter(
    (arg, index) =>
      !arg.startsWith('--') &&
      (threadsAt < 0 || index !== threadsAt + 1) &&
      (idleAt < 0 || index !== idleAt + 1),
  )
  .map(Number);

interface ChangeResult {
  kind: Kind;
  ingress: string;
  swap: string;
  buildMs: number;
  applyMs: number;
  record: ApplyRecord;
  window: WindowStats;
}

/** One worker's V8 heap, MiB: in use, committed (what it holds of the RSS), and off-heap buffers. */
interface WorkerHeap {
  used: number;
  committed: number;
  external: number;
}

const heapOf = (stats: {
  used_heap_size: number;
  total_heap_size: number;
  external_memory: number;
}): WorkerHeap => ({
  used: stats.used_heap_size / 2 ** 20,
  committed: stats.total_heap_size / 2 ** 20,
  external: stats.external_memory / 2 ** 20,
});

/** Each worker's heap as it is (no collection forced), and the whole process's RSS. */
async function workerHeaps(workers: readonly Worker[]): Promise<WorkerHeap[]> {
  return Promise.all(workers.map(async (worker) => heapOf(await worker.getHeapStatistics())));
}

/**
 * Forces a full collection in each worker and reads its heap after it. The main thread's gc() does
 * not reach a worker's isolate; a heap snapshot starts with a full collection in that isolate, so one
 * is taken and thrown away, a worker at a time. Building the snapshot itself mallocs hundreds of MiB
 * that the allocator keeps, so RSS read after this says nothing: read it before.
 */
async function collectWorkers(workers: readonly Worker[]): Promise<WorkerHeap[]> {
  const collected: WorkerHeap[] = [];
  for (const worker of workers) {
    for await (const _chunk of await worker.getHeapSnapshot()) {
      // read to the end and dropped: only the collection it starts is wanted
    }
    collected.push(heapOf(await worker.getHeapStatistics()));
  }
  return collected;
}

/** The longest single task a change ran in each worker: its prepare, or its commit. */
const blocks = (record: ApplyRecord): number[] =>
  record.threads.map((thread) => Math.max(thread.decodeMs + thread.compileMs, thread.commitMs));

async function main(): Promise<void> {
  const started = Date.now();
  const certificate = await generateDefaultCertificate();
  const stream = new ChangeStream(generateCluster(size, false).snapshot, certificate);
  const pool = new DataPlaneThreads({
    threads,
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: certificate,
    fullModels: full,
  });
  const first = performance.now();
  const initial = buildModel(stream.snapshot).model;
  const initialBuildMs = performance.now() - first;
  const applyStart = performance.now();
  await pool.apply(initial);
  const initialApplyMs = performance.now() - applyStart;
  const { http } = await pool.listen();
  const rssReady = await memoryMiB();
  const heapsReady = await workerHeaps(pool.workers);
  const mainReady = process.memoryUsage().heapTotal / 2 ** 20;

  const load = new Worker(new URL('./support/stall-load.ts', import.meta.url), {
    workerData: { port: http.port, host: 'unknown.example.test', connections: 4 } satisfies LoadOptions,
  });
  const windowOf = (from: number, to: number): Promise<WindowStats> =>
    new Promise((resolve) => {
      load.once('message', resolve);
      load.postMessage({ type: 'window', from, to } satisfies LoadMessage);
    });
  await sleep(500);

  const results: ChangeResult[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const [k, kind] of KINDS.entries()) {
      const ingress = stream.next(round, k);
      const buildStart = performance.now();
      const model = buildModel(stream.snapshot).model;
      const buildMs = performance.now() - buildStart;
      await sleep(100); // requests delayed by the build (the main thread also forwards records) drain first
      const from = now();
      await sleep(100);
      const applyStart = performance.now();
      const swap = await pool.apply(model);
      const applyMs = performance.now() - applyStart;
      const record = pool.lastApply as ApplyRecord;
      await sleep(100);
      const to = now();
      await sleep(100);
      const window = await windowOf(from, to);
      results.push({ kind, ingress, swap: swap.kind, buildMs, applyMs, record, window });
      process.stderr.write(
        `${kind} (${ingress}): build ${buildMs.toFixed(0)} ms, posted ${record.posted} B, worker blocks ${blocks(
          record,
        )
          .map((ms) => ms.toFixed(1))
          .join(' / ')} ms, max ${window.max.toFixed(1)} ms\n`,
      );
    }
  }
  load.postMessage({ type: 'stop' } satisfies LoadMessage);
  await new Promise((resolve) => load.once('exit', resolve));
  const rssAfter = await memoryMiB();
  const heapsAfter = await workerHeaps(pool.workers);
  let idle: { heaps: WorkerHeap[]; rss: number } | null = null;
  if (idleSeconds > 0) {
    await sleep(idleSeconds * 1000);
    idle = { heaps: await workerHeaps(pool.workers), rss: (await memoryMiB()).rss };
  }
  const mainAfter = process.memoryUsage().heapTotal / 2 ** 20;
  const collectedAfter = await collectWorkers(pool.workers);
  await pool.close(0);
  process.stdout.write(
    report(results, {
      initialBuildMs,
      initialApplyMs,
      rssReady: { ...rssReady, committed: mainReady },
      rssAfter: { ...rssAfter, committed: mainAfter },
      heaps: { ready: heapsReady, after: heapsAfter, collected: collectedAfter },
      idle,
      minutes: (Date.now() - started) / 60000,
    }),
  );
}

function report(
  results: readonly ChangeResult[],
  run: {
    initialBuildMs: number;
    initialApplyMs: number;
    rssReady: { rss: number; heap: number; committed: number };
    rssAfter: { rss: number; heap: number; committed: number };
    heaps: { ready: WorkerHeap[]; after: WorkerHeap[]; collected: WorkerHeap[] };
    idle: { heaps: WorkerHeap[]; rss: number } | null;
    minutes: number;
  },
): string {
  const f = (value: number, digits = 1): string => value.toFixed(digits);
  const heapList = (heaps: readonly WorkerHeap[]): string =>
    heaps.map((h) => `${f(h.used)} / ${f(h.committed)} (+${f(h.external)})`).join(', ');
  const kib = (bytes: number): string => (bytes / 1024).toFixed(bytes < 10240 ? 1 : 0);
  const perThread = (values: readonly number[]): string => values.map((v) => f(v)).join(' / ');
  const rows = results.map(({ record, window, ...r }) => {
    const decode = record.threads.map((thread) => thread.decodeMs);
    const compile = record.threads.map((thread) => thread.compileMs);
    const commit = record.threads.map((thread) => thread.commitMs);
    const cpu = record.threads.map((thread) => thread.cpuMs);
    const payloads = [...new Set(record.threads.map((thread) => thread.payload))].join('+');
    return `| ${r.kind} | ${r.ingress} | ${r.swap} | ${f(r.buildMs, 0)} | ${payloads} | ${kib(record.posted / record.threads.length)} | ${perThread(decode)} | ${perThread(compile)} | ${perThread(commit)} | **${perThread(blocks(record))}** | **${perThread(cpu)}** | ${f(record.prepareMs)} | ${f(record.commitMs, 2)} | ${window.requests} | ${f(window.p99)} | ${f(window.max)} |`;
  });
  const all = (pick: (r: ChangeResult) => number[]): number[] => results.flatMap(pick);
  const worstBlock = Math.max(...all((r) => blocks(r.record)));
  const cpuOf = (r: ChangeResult): number[] => r.record.threads.map((thread) => thread.cpuMs);
  const worstCpu = Math.max(...all(cpuOf));
  const medians = KINDS.map((kind) => {
    const of = results.filter((r) => r.kind === kind);
    const m = (pick: (r: ChangeResult) => number): string => f(median(of.map(pick)));
    return `| ${kind} | ${of.length} | ${m((r) => r.buildMs)} | ${m((r) => r.record.posted / r.record.threads.length / 1024)} | ${m((r) => Math.max(...blocks(r.record)))} | ${m((r) => Math.max(...cpuOf(r)))} | ${m((r) => r.record.prepareMs)} | ${m((r) => r.record.commitMs)} | ${m((r) => r.window.p99)} | ${m((r) => r.window.max)} |`;
  });
  const date = new Date().toISOString();
  const protocol = full ? 'the whole model posted to every thread on each change (`--full`)' : 'deltas';
  const text = `# Swap stall with ${threads} data-plane threads: one-Ingress changes with ${size.toLocaleString('en')} Ingresses loaded (${full ? 'whole model' : 'deltas'})

- date: ${date.replace(/\.\d+Z$/, 'Z')}
- machine: ${cpus()[0]?.model ?? 'unknown CPU'} × ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; the main thread's build, ${threads} worker threads and the load's thread share these cores, so wall times (blocks, latencies) include waiting for a core; the in-worker CPU times are what a change costs a thread
- node ${process.version}; \`node --expose-gc bench/swap-stall-threads.ts ${size} ${rounds} --threads ${threads}${full ? ' --full' : ''}${idleSeconds > 0 ? ` --idle ${idleSeconds}` : ''}\`; run time ${f(run.minutes)} min
- load average at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (above the core count, other work stretched every wall time)
- protocol: ${protocol}; a change is prepared in every thread, then committed (two phases)
- first model: build ${f(run.initialBuildMs, 0)} ms, apply ${f(run.initialApplyMs, 0)} ms (whole model to every thread); RSS at ready ${f(run.rssReady.rss)} MiB (main heap ${f(run.rssReady.heap)} MiB used, ${f(run.rssReady.committed)} committed), after the stream ${f(run.rssAfter.rss)} MiB (main heap ${f(run.rssAfter.heap)} MiB used, ${f(run.rssAfter.committed)} committed), each after two forced GCs in the main thread (they do not reach the workers)
- each worker's V8 heap, MiB used / committed (+ off-heap buffers), thread 1 / thread 2 / …: at ready ${heapList(run.heaps.ready)}; after the stream ${heapList(run.heaps.after)}${run.idle === null ? '' : `; after ${idleSeconds} s idle ${heapList(run.idle.heaps)} (RSS ${f(run.idle.rss)} MiB)`}; then after a full collection forced in each worker (a heap snapshot starts one) ${heapList(run.heaps.collected)}: what stays alive
- load: a thread of its own, 4 keep-alive connections to the built-in 404, back to back; window: the requests started from 100 ms before the apply to 100 ms after it
- **longest event-loop block of any worker over the stream: ${f(worstBlock)} ms wall; the most CPU a worker's prepare took: ${f(worstCpu)} ms** (process.threadCpuUsage inside the worker: what the change cost that thread, whatever else the machine ran)

Medians per kind of change:

| change | n | build ms | KiB posted per thread | longest worker block ms | its CPU ms | prepare ms | commit round trip ms | p99 ms | max ms |
| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |
${medians.join('\n')}

Every change (per-thread figures as thread 1 / thread 2 / …; a worker's block is the longer of its prepare task, decode + compile, and its commit task):

| change | Ingress | swap | build ms | sent | KiB per thread | decode ms | compile ms | commit ms | worker block ms | worker CPU ms | prepare ms | commit round trip ms | requests | p99 ms | max ms |
| --- | --- | --- | --: | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |
${rows.join('\n')}
`;
  if (write) {
    const dir = new URL('results', import.meta.url).pathname;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `swap-stall-threads-${date.slice(0, 10)}-${full ? 'full' : 'delta'}.md`);
    writeFileSync(file, text);
    process.stderr.write(`swap-stall-threads: written to ${file}\n`);
  }
  return text;
}

await main();
