// What a data-plane thread holds at N Ingresses (model-build.ts's clean cluster), split in two: the
// model it decodes from the bytes the main thread posts, and the runtime it compiles from it. A
// worker thread (as a data-plane thread, it starts with nothing of the build) reads its heap after
// two full collections (--expose-gc) before the model, after decoding it, and after compiling and
// serving it; a heap snapshot after each of the last two is summarised by constructor (self sizes),
// and the difference between them is what the compile added. Run with
// `node --expose-gc bench/thread-heap.ts [--ingresses N] [--top N] [--out FILE] [--keep] [--no-share]` (--keep: the
// snapshots stay in the temp folder; --no-share: the model's strings as v8.deserialize leaves them).

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize, writeHeapSnapshot } from 'node:v8';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { shareStrings } from '../lib/dataplane/worker/model-strings.ts';
import type { Model } from '../lib/model/index.ts';

interface Probe {
  bytes: Uint8Array;
  dir: string;
  /** as a data-plane thread decodes a whole model: one copy of each string (model-strings.ts) */
  share: boolean;
}

interface Reading {
  serializedMiB: number;
  beforeMiB: number;
  modelMiB: number;
  runtimeMiB: number;
  modelSnapshot: string;
  runtimeSnapshot: string;
  decodeMs: number;
  shareMs: number;
  share: boolean;
}

const MiB = 2 ** 20;

/** In the worker: decode, compile, and read the heap at each step. */
async function probeInThread(probe: Probe): Promise<Reading> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  const used = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed / MiB;
  };
  const certificate = await generateDefaultCertificate();
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: certificate,
  });
  const before = used();
  const started = performance.now();
  const model = deserialize(probe.bytes) as Model;
  const decodedAt = performance.now();
  if (probe.share) shareStrings(model);
  const sharedAt = performance.now();
  const decoded = used();
  const modelSnapshot = writeHeapSnapshot(join(probe.dir, 'model.heapsnapshot'));
  dataPlane.swap(model);
  const compiled = used();
  const runtimeSnapshot = writeHeapSnapshot(join(probe.dir, 'runtime.heapsnapshot'));
  await dataPlane.close(0);
  return {
    serializedMiB: probe.bytes.byteLength / MiB,
    beforeMiB: before,
    modelMiB: decoded - before,
    runtimeMiB: compiled - decoded,
    modelSnapshot,
    runtimeSnapshot,
    decodeMs: decodedAt - started,
    shareMs: sharedAt - decodedAt,
    share: probe.share,
  };
}

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Up to this many property names name a plain object's shape in the tables. */
const SHAPE_KEYS = 5;

/** Self size and count by constructor (objects, closures) or by kind (strings, arrays, code, …). */
function summarise(file: string): Map<string, { size: number; count: number }> {
  const { snapshot, nodes, edges, strings } = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const edgeCountAt = fields.indexOf('edge_count');
  const edgeFields = snapshot.meta.edge_fields;
  const edgeWidth = edgeFields.length;
  const edgeTypeAt = edgeFields.indexOf('type');
  const edgeNameAt = edgeFields.indexOf('name_or_index');
  const propertyType = snapshot.meta.edge_types[0].indexOf('property');
  const byName = new Map<string, { size: number; count: number }>();
  let edge = 0;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt] as number] as string;
    const name = strings[nodes[i + nameAt] as number] as string;
    const edgeCount = nodes[i + edgeCountAt] as number;
    let key = type === 'object' || type === 'closure' ? `${name} (${type})` : `(${type})`;
    if (type === 'object' && name === 'Object') {
      // a plain object is told apart by its properties (the first few, as the snapshot lists them)
      const keys: string[] = [];
      for (let e = edge; e < edge + edgeCount * edgeWidth && keys.length < SHAPE_KEYS; e += edgeWidth) {
        if (edges[e + edgeTypeAt] === propertyType)
          keys.push(strings[edges[e + edgeNameAt] as number] as string);
      }
      key = `{${keys.join(', ')}}`;
    }
    edge += edgeCount * edgeWidth;
    const entry = byName.get(key) ?? { size: 0, count: 0 };
    entry.size += nodes[i + sizeAt] as number;
    entry.count++;
    byName.set(key, entry);
  }
  return byName;
}

function report(reading: Reading, ingresses: number, top: number): string {
  const model = summarise(reading.modelSnapshot);
  const runtime = summarise(reading.runtimeSnapshot);
  const table = (rows: Array<[string, { size: number; count: number }]>) =>
    rows
      .slice(0, top)
      .map(
        ([key, { size, count }]) =>
          `| \`${key}\` | ${(size / MiB).toFixed(2)} | ${count.toLocaleString('en')} |`,
      )
      .join('\n');
  const bySize = (map: Map<string, { size: number; count: number }>) =>
    [...map].sort((a, b) => b[1].size - a[1].size);
  const added = new Map<string, { size: number; count: number }>();
  for (const [key, after] of runtime) {
    const was = model.get(key) ?? { size: 0, count: 0 };
    added.set(key, { size: after.size - was.size, count: after.count - was.count });
  }
  return `# What a data-plane thread holds at ${ingresses.toLocaleString('en')} Ingresses

- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, node ${process.version}; heap used after two full collections, in a worker thread
- the model posted: ${reading.serializedMiB.toFixed(1)} MiB serialised; deserialised in ${reading.decodeMs.toFixed(0)} ms${reading.share ? `, its strings shared in ${reading.shareMs.toFixed(0)} ms (as a thread does)` : ', its strings not shared (--no-share)'}
- heap before the model: ${reading.beforeMiB.toFixed(1)} MiB (the data plane's code, Node's own, the TypeScript stripper this probe's worker loads)
- **the decoded model: ${reading.modelMiB.toFixed(1)} MiB; the compiled runtime on top of it: ${reading.runtimeMiB.toFixed(1)} MiB**

## The heap with the model decoded, by constructor (self sizes)

| constructor or kind | MiB | count |
|---|--:|--:|
${table(bySize(model))}

## What the compile added (runtime snapshot − model snapshot)

| constructor or kind | MiB | count |
|---|--:|--:|
${table(bySize(added))}
`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string, fallback: string) => {
    const at = args.indexOf(name);
    return at === -1 ? fallback : (args[at + 1] ?? fallback);
  };
  const ingresses = Number(flag('--ingresses', '10000'));
  const top = Number(flag('--top', '25'));
  const out = flag('--out', '');
  const keep = args.includes('--keep');
  const share = !args.includes('--no-share');
  const { generateCluster } = await import('./model-build.ts');
  const { buildModel } = await import('../lib/model/index.ts');
  const bytes = serialize(buildModel(generateCluster(ingresses, false).snapshot).model);
  const dir = tmpdir();
  const worker = new Worker(new URL(import.meta.url), { workerData: { bytes, dir, share } satisfies Probe });
  const reading = await new Promise<Reading>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  const text = report(reading, ingresses, top);
  if (keep) process.stderr.write(`kept ${reading.modelSnapshot} and ${reading.runtimeSnapshot}\n`);
  else {
    rmSync(reading.modelSnapshot);
    rmSync(reading.runtimeSnapshot);
  }
  process.stdout.write(text);
  if (out !== '') writeFileSync(out, text);
}

if (isMainThread) await main();
else parentPort?.postMessage(await probeInThread(workerData as Probe));
