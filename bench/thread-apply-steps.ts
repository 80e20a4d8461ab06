// One data-plane thread's share of a one-Ingress change, step by step, in this thread: the main
// thread's diff and serialise, then what a worker runs (deserialise, rebuild the model from the
// delta, compile, commit), each step's CPU time read with process.threadCpuUsage. Run with
// `node --expose-gc bench/thread-apply-steps.ts [N] [rounds]` (default 10000 3); `--cpu-prof-steps F`
// writes a CPU profile of the worker's steps only (the build and the first compile left out) to F.
//
// swap-stall-threads.ts measures the same change across real threads under load; this one says
// where the time goes, free of the other threads and the load (the same steps, the same code).

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg } from 'node:os';
import { deserialize, serialize } from 'node:v8';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { diffModel, type ModelDelta, patchModel } from '../lib/dataplane/worker/model-delta.ts';
import { buildModel, type EndpointSlice, type Model } from '../lib/model/index.ts';
import { generateCluster } from './model-build.ts';
import { ChangeStream, KINDS, median } from './support/stall-changes.ts';

const args = process.argv.slice(2);
const profileAt = args.indexOf('--cpu-prof-steps');
const profileFile = profileAt >= 0 ? args[profileAt + 1] : undefined;
const [size = 10000, rounds = 3] = args
  .filter((arg, index) => !arg.startsWith('--') && (profileAt < 0 || index !== profileAt + 1))
  .map(Number);

const STEPS = ['diff', 'serialize', 'deserialize', 'patch', 'prepare', 'commit'] as const;
type Step = (typeof STEPS)[number];

/** Not one of swap-stall's changes: a pod of one Service replaced (an endpoints-only change). */
const ENDPOINTS = 'endpoints moved';

function moveEndpoint(stream: ChangeStream, round: number): void {
  const slices = [...stream.snapshot.endpointSlices];
  const index = (round * 7919) % slices.length;
  const slice = structuredClone(slices[index]) as EndpointSlice;
  const first = slice.endpoints?.[0];
  if (first !== undefined) first.addresses = [`10.250.${round % 250}.${(round * 13) % 250}`];
  slices[index] = slice;
  stream.snapshot = { ...stream.snapshot, endpointSlices: slices };
}

const cpuMs = (since: NodeJS.CpuUsage): number => {
  const { user, system } = process.threadCpuUsage(since);
  return (user + system) / 1000;
};

async function main(): Promise<void> {
  const certificate = await generateDefaultCertificate();
  const stream = new ChangeStream(generateCluster(size, false).snapshot, certificate);
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: certificate,
  });
  let served: Model = buildModel(stream.snapshot).model;
  dataPlane.swap(served);
  globalThis.gc?.();
  const session = new Session();
  if (profileFile !== undefined) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
  }
  const rows: Array<{ kind: string; ms: Record<Step, number>; total: number; bytes: number }> = [];
  for (let round = 0; round < rounds; round++) {
    for (const [k, kind] of [...KINDS, ENDPOINTS].entries()) {
      if (kind === ENDPOINTS) moveEndpoint(stream, round);
      else stream.next(round, k);
      const model = buildModel(stream.snapshot).model;
      globalThis.gc?.();
      if (profileFile !== undefined) await session.post('Profiler.start');
      const ms = {} as Record<Step, number>;
      let at = process.threadCpuUsage();
      const step = (name: Step): void => {
        ms[name] = cpuMs(at);
        at = process.threadCpuUsage();
      };
      const delta = diffModel(served, model) as ModelDelta;
      step('diff');
      const bytes = serialize(delta);
      step('serialize');
      const decoded = deserialize(bytes) as ModelDelta;
      step('deserialize');
      const patched = patchModel(dataPlane.current?.model ?? null, decoded);
      step('patch');
      const prepared = dataPlane.prepare(patched);
      step('prepare');
      dataPlane.commit(prepared);
      step('commit');
      if (profileFile !== undefined) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(`${profileFile}.${round}-${k}.cpuprofile`, JSON.stringify(profile));
      }
      served = model;
      const total = ms.deserialize + ms.patch + ms.prepare + ms.commit;
      rows.push({ kind, ms, total, bytes: bytes.byteLength });
      process.stderr.write(
        `${kind}: ${STEPS.map((s) => `${s} ${ms[s].toFixed(1)}`).join(', ')}; worker ${total.toFixed(1)} ms\n`,
      );
    }
  }
  await dataPlane.close(0);
  const f = (v: number): string => v.toFixed(1);
  const lines = [
    `thread-apply-steps: ${size} Ingresses, ${rounds} rounds, node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
    '',
    `| change | n | KiB | ${STEPS.join(' | ')} | worker total (deserialize..commit) |`,
    `| --- | --: | --: | ${STEPS.map(() => '--:').join(' | ')} | --: |`,
    ...[...KINDS, ENDPOINTS].map((kind) => {
      const of = rows.filter((r) => r.kind === kind);
      const m = (pick: (r: (typeof rows)[number]) => number): string => f(median(of.map(pick)));
      return `| ${kind} | ${of.length} | ${m((r) => r.bytes / 1024)} | ${STEPS.map((s) => m((r) => r.ms[s])).join(' | ')} | **${m((r) => r.total)}** (max ${f(Math.max(...of.map((r) => r.total)))}) |`;
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
