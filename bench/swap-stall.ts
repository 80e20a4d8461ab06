// Swap stall: what one small change costs the thread that serves traffic, with N Ingresses loaded.
// Run with `node --expose-gc bench/swap-stall.ts [N] [rounds]` (default 10000 3; `--no-write` for
// stdout only).
//
// One DataPlane in this thread, on loopback, loaded with model-build.ts's cluster of N Ingresses. A
// worker thread sends requests over 4 keep-alive connections the whole time (to a host no Ingress
// names: the built-in 404 answers, so no upstream's latency mixes in). Then a stream of one-Ingress
// changes, `rounds` times each of: a path added, a backend changed, an annotation changed, a TLS host
// added (each change stays, so the cluster drifts as a real one does). Per change:
// - build ms: buildModel of the changed snapshot (the main thread's work once data-plane threads exist);
// - clone ms: structuredClone of the model, about what a data-plane thread pays to receive it;
// - compile ms: the time DataPlane.swap blocks this thread (compile and swap), and the CPU time this
//   thread spent in it (process.threadCpuUsage: less sensitive than wall time to other work on a
//   shared machine);
// - the p99 and max latency of the requests started from 100 ms before the swap to 100 ms after it,
//   and the event loop's longest delay over that window (perf_hooks.monitorEventLoopDelay). The build
//   is outside that window: with data-plane threads it no longer blocks the thread that serves.
// RSS is read after two forced GCs once the first model serves, and again after the stream.

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { buildModel, type Model, type Snapshot } from '../lib/model/index.ts';
import { generateCluster } from './model-build.ts';
import { ChangeStream, KINDS, type Kind, median, memoryMiB, now } from './support/stall-changes.ts';
import type { LoadMessage, LoadOptions, WindowStats } from './support/stall-load.ts';

const args = process.argv.slice(2);
const write = !args.includes('--no-write');
const [size = 10000, rounds = 3] = args.filter((arg) => !arg.startsWith('--')).map(Number);
interface ChangeResult {
  kind: Kind;
  ingress: string;
  buildMs: number;
  cloneMs: number;
  compileMs: number;
  compileCpuMs: number;
  /** garbage collection during the swap (PerformanceObserver 'gc' entries) */
  gcMs: number;
  swap: string;
  window: WindowStats;
  loopMaxMs: number;
}

async function main(): Promise<void> {
  const started = Date.now();
  const certificate = await generateDefaultCertificate();
  let snapshot: Snapshot = generateCluster(size, false).snapshot;
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: certificate,
  });
  const { http } = await dataPlane.listen();
  const first = performance.now();
  const initial = buildModel(snapshot).model;
  const initialBuildMs = performance.now() - first;
  const swapStart = performance.now();
  dataPlane.swap(initial);
  const initialCompileMs = performance.now() - swapStart;
  const rssReady = await memoryMiB();

  const load = new Worker(new URL('./support/stall-load.ts', import.meta.url), {
    workerData: { port: http.port, host: 'unknown.example.test', connections: 4 } satisfies LoadOptions,
  });
  const windowOf = (from: number, to: number): Promise<WindowStats> =>
    new Promise((resolve) => {
      load.once('message', resolve);
      load.postMessage({ type: 'window', from, to } satisfies LoadMessage);
    });
  await sleep(500);

  const gcs: Array<{ start: number; duration: number }> = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcs.push({ start: entry.startTime, duration: entry.duration });
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const results: ChangeResult[] = [];
  const stream = new ChangeStream(snapshot, certificate);
  for (let round = 0; round < rounds; round++) {
    for (const [k, kind] of KINDS.entries()) {
      const name = stream.next(round, k);
      snapshot = stream.snapshot;
      const buildStart = performance.now();
      const model = buildModel(snapshot).model;
      const buildMs = performance.now() - buildStart;
      const cloneStart = performance.now();
      const received: Model = structuredClone(model);
      const cloneMs = performance.now() - cloneStart;
      await sleep(100); // requests delayed by the build drain before the window opens
      const from = now();
      loop.reset();
      await sleep(100);
      const cpuStart = process.threadCpuUsage();
      const compileStart = performance.now();
      const swap = dataPlane.swap(received);
      const compileMs = performance.now() - compileStart;
      const cpu = process.threadCpuUsage(cpuStart);
      const compileCpuMs = (cpu.user + cpu.system) / 1000;
      const compileEnd = compileStart + compileMs;
      await sleep(100);
      const to = now();
      const loopMaxMs = loop.max / 1e6;
      await sleep(100);
      const window = await windowOf(from, to);
      // gc entries arrive after the fact: read them once the window is over
      const gcMs = gcs
        .filter((gc) => gc.start >= compileStart && gc.start <= compileEnd)
        .reduce((sum, gc) => sum + gc.duration, 0);
      results.push({
        kind,
        ingress: name,
        buildMs,
        cloneMs,
        gcMs,
        compileMs,
        compileCpuMs,
        swap,
        window,
        loopMaxMs,
      });
      process.stderr.write(
        `${kind} (${name}): build ${buildMs.toFixed(0)} ms, compile ${compileMs.toFixed(1)} ms, max ${window.max.toFixed(1)} ms\n`,
      );
    }
  }
  loop.disable();
  gcObserver.disconnect();
  load.postMessage({ type: 'stop' } satisfies LoadMessage);
  await new Promise((resolve) => load.once('exit', resolve));
  const rssAfter = await memoryMiB();
  await dataPlane.close(0);
  process.stdout.write(
    report(results, {
      initialBuildMs,
      initialCompileMs,
      rssReady,
      rssAfter,
      minutes: (Date.now() - started) / 60000,
    }),
  );
}

function report(
  results: readonly ChangeResult[],
  run: {
    initialBuildMs: number;
    initialCompileMs: number;
    rssReady: { rss: number; heap: number };
    rssAfter: { rss: number; heap: number };
    minutes: number;
  },
): string {
  const f = (value: number, digits = 1): string => value.toFixed(digits);
  const rows = results.map(
    (r) =>
      `| ${r.kind} | ${r.ingress} | ${r.swap} | ${f(r.buildMs, 0)} | ${f(r.cloneMs, 0)} | ${f(r.compileMs)} | ${f(r.compileCpuMs)} | ${f(r.gcMs)} | ${r.window.requests} | ${f(r.window.p50, 2)} | ${f(r.window.p99)} | ${f(r.window.max)} | ${f(r.loopMaxMs)} |`,
  );
  const medians = KINDS.map((kind) => {
    const of = results.filter((r) => r.kind === kind);
    const m = (pick: (r: ChangeResult) => number): string => f(median(of.map(pick)));
    return `| ${kind} | ${of.length} | ${m((r) => r.buildMs)} | ${m((r) => r.cloneMs)} | ${m((r) => r.compileMs)} | ${m((r) => r.compileCpuMs)} | ${m((r) => r.window.p99)} | ${m((r) => r.window.max)} | ${m((r) => r.loopMaxMs)} |`;
  });
  const cpuName = cpus()[0]?.model ?? 'unknown CPU';
  const date = new Date().toISOString();
  const text = `# Swap stall: one-Ingress changes with ${size.toLocaleString('en')} Ingresses loaded

- date: ${date.replace(/\.\d+Z$/, 'Z')}
- machine: ${cpuName} × ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB (shared with other work: figures are noisy, read the medians)
- node ${process.version}; \`node --expose-gc bench/swap-stall.ts ${size} ${rounds}\`; run time ${f(run.minutes)} min
- load average at the end: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (2 cores: above 2, every figure is stretched)
- first model: build ${f(run.initialBuildMs, 0)} ms, compile ${f(run.initialCompileMs, 0)} ms; RSS at ready ${f(run.rssReady.rss)} MiB (heap in use ${f(run.rssReady.heap)} MiB), after the stream ${f(run.rssAfter.rss)} MiB (heap ${f(run.rssAfter.heap)} MiB), each after two forced GCs
- load: a worker thread, 4 keep-alive connections to the built-in 404, back to back; window: the requests started from 100 ms before the swap to 100 ms after it

Medians per kind of change:

| change | n | build ms | clone ms | compile ms | compile CPU ms | p99 ms | max ms | loop delay max ms |
| --- | --: | --: | --: | --: | --: | --: | --: | --: |
${medians.join('\n')}

Every change:

| change | Ingress | swap | build ms | clone ms | compile ms | compile CPU ms | GC in it ms | requests | p50 ms | p99 ms | max ms | loop delay max ms |
| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |
${rows.join('\n')}
`;
  if (write) {
    const dir = new URL('results', import.meta.url).pathname;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `swap-stall-${date.slice(0, 10)}.md`);
    writeFileSync(file, text);
    process.stderr.write(`swap-stall: written to ${file}\n`);
  }
  return text;
}

await main();
