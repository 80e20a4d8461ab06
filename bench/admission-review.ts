// Admission review cost at scale: the CPU one webhook review takes on the controller's thread, for
// the synthetic clusters of model-build.ts (1,000 and 10,000 Ingresses by default, ~10% of them
// conflicting). Run with `node bench/admission-review.ts [N ...] [--no-write]`.
//
// Per cluster, four kinds of candidate, 200 reviews each (after 20 warm-up reviews):
// - update: a stored Ingress with one annotation changed (its hosts are shared by nothing but the
//   conflicting Ingresses);
// - new host: a new Ingress on a host nobody serves;
// - conflict: a new Ingress on the host and path of a stored one (refused);
// - sticky: a new Ingress with session affinity on a Service many Ingresses share.
// Measured: thread CPU per review (process.threadCpuUsage over the batch, so the load of other
// processes does not count; wall-clock figures are given too, and do), the Ingresses built, and
// once per cluster: the index (first, then after one Ingress changed), the groups of the other kinds
// after one EndpointSlice changed (what the first review after an endpoint change pays), and one full
// build for comparison.

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { createRelatedIndex } from '../lib/admission/related.ts';
import { type ReviewInput, relatedIndexFor, reviewIngress, type Verdict } from '../lib/admission/review.ts';
import { createScopeIndexes, scopedSnapshot } from '../lib/admission/scope.ts';
import {
  buildModel,
  createBuildCaches,
  DEFAULT_MODEL_OPTIONS,
  type Ingress,
  type Snapshot,
} from '../lib/model/index.ts';
import { generateCluster } from './model-build.ts';

const RESULTS_DIR = new URL('results', import.meta.url).pathname;
const REVIEWS = 200;
const WARM_UP = 20;
const PREFIX = 'nginx.ingress.kubernetes.io';

const cpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const clone = (ingress: Ingress): Ingress => structuredClone(ingress);

function candidates(snapshot: Snapshot, kind: string, i: number): ReviewInput {
  const stored = snapshot.ingresses[(i * 7919) % snapshot.ingresses.length] as Ingress;
  const object = clone(stored);
  const metadata = object.metadata ?? {};
  if (kind === 'update') {
    metadata.annotations = { ...metadata.annotations, [`${PREFIX}/proxy-read-timeout`]: String(30 + i) };
    return { operation: 'UPDATE', object, oldObject: stored, namespace: metadata.namespace ?? '' };
  }
  object.metadata = {
    ...metadata,
    name: `review-${kind.replace(' ', '-')}-${i}`,
    creationTimestamp: '2027-01-01T00:00:00Z',
  };
  if (kind === 'new host') {
    for (const rule of object.spec?.rules ?? []) rule.host = `new-${i}.${rule.host}`;
  }
  if (kind === 'sticky') {
    for (const rule of object.spec?.rules ?? []) rule.host = `sticky-${i}.${rule.host}`;
    object.metadata.annotations = { ...object.metadata.annotations, [`${PREFIX}/affinity`]: 'cookie' };
  }
  return { operation: 'CREATE', object, oldObject: null, namespace: metadata.namespace ?? '' };
}

interface Row {
  kind: string;
  /** thread CPU of the batch over its reviews (the CPU clock ticks too coarsely for one review) */
  cpuMs: number;
  medianMs: number;
  p95Ms: number;
  tested: number;
  allowed: number;
}

function measure(snapshot: Snapshot, kind: string): Row {
  const caches = createBuildCaches();
  const index = relatedIndexFor(snapshot, DEFAULT_MODEL_OPTIONS, null);
  const scope = createScopeIndexes();
  const context = {
    snapshot,
    options: DEFAULT_MODEL_OPTIONS,
    index,
    caches,
    scope,
    now: '2027-01-01T00:00:00Z',
  };
  for (let i = 0; i < WARM_UP; i++) reviewIngress(candidates(snapshot, kind, i + 10_000), context);
  const times: number[] = [];
  const tested: number[] = [];
  let allowed = 0;
  const inputs = Array.from({ length: REVIEWS }, (_, i) => candidates(snapshot, kind, i));
  const batch = cpuMs();
  for (const input of inputs) {
    const started = performance.now();
    const verdict: Verdict = reviewIngress(input, context);
    times.push(performance.now() - started);
    tested.push(verdict.tested);
    if (verdict.allowed) allowed++;
  }
  return {
    kind,
    cpuMs: (cpuMs() - batch) / REVIEWS,
    medianMs: percentile(times, 50),
    p95Ms: percentile(times, 95),
    tested: percentile(tested, 50),
    allowed,
  };
}

function main(): void {
  const args = process.argv.slice(2);
  const write = !args.includes('--no-write');
  const sizes = args.filter((a) => a !== '--no-write').map(Number);
  const report: string[] = [];
  const say = (text: string) => {
    report.push(text);
    console.log(text);
  };
  say('# Admission review benchmark\n');
  say(`- date: ${new Date().toISOString().slice(0, 10)}`);
  say(`- node: ${process.version}; cpu: ${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}`);
  say(
    `- load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  say(`- ${REVIEWS} reviews per kind after ${WARM_UP} warm-up ones; CPU of this thread per review\n`);
  for (const size of sizes.length > 0 ? sizes : [1000, 10000]) {
    const { snapshot } = generateCluster(size, true);
    say(`## ${size} Ingresses\n`);
    // the first index reads every Ingress (and pays for the JIT); after a change only the changed one
    let before = cpuMs();
    const index = createRelatedIndex(snapshot.ingresses, snapshot.ingressClasses, DEFAULT_MODEL_OPTIONS);
    const indexMs = cpuMs() - before;
    // after one Ingress changed: the index is patched with the objects that differ
    const changed = [...snapshot.ingresses];
    changed[0] = clone(changed[0] as Ingress);
    before = cpuMs();
    index.patched(changed);
    const reindexMs = cpuMs() - before;
    before = cpuMs();
    buildModel(snapshot, DEFAULT_MODEL_OPTIONS);
    const fullMs = cpuMs() - before;
    say(`- index of the Ingresses, the first review (every Ingress read): ${indexMs.toFixed(1)} ms CPU`);
    say(
      `- index again after one Ingress changed (the first review after a change of the Ingress list): ${reindexMs.toFixed(1)} ms CPU`,
    );
    // an endpoint change: a new list of EndpointSlices with one object replaced
    const scope = createScopeIndexes();
    const one = [snapshot.ingresses[0] as Ingress];
    scopedSnapshot(snapshot, one, DEFAULT_MODEL_OPTIONS, scope);
    const slices = [...snapshot.endpointSlices];
    slices[0] = structuredClone(slices[0] as (typeof slices)[number]);
    before = cpuMs();
    scopedSnapshot({ ...snapshot, endpointSlices: slices }, one, DEFAULT_MODEL_OPTIONS, scope);
    const slicesMs = cpuMs() - before;
    say(
      `- the other kinds' groups after one EndpointSlice changed (${snapshot.endpointSlices.length} slices): ${slicesMs.toFixed(1)} ms CPU`,
    );
    say(
      `- one full build, for comparison: ${fullMs.toFixed(0)} ms CPU (${snapshot.ingresses.length} Ingresses)\n`,
    );
    say(
      '| candidate | CPU per review (mean) | wall median | wall p95 | Ingresses built (median) | allowed |',
    );
    say('|---|---:|---:|---:|---:|---:|');
    for (const kind of ['update', 'new host', 'conflict', 'sticky']) {
      const row = measure(snapshot, kind);
      say(
        `| ${row.kind} | ${row.cpuMs.toFixed(2)} ms | ${row.medianMs.toFixed(2)} ms | ${row.p95Ms.toFixed(2)} ms | ${row.tested} | ${row.allowed}/${REVIEWS} |`,
      );
    }
    say('');
  }
  say(
    `- load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (write) {
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `admission-review-${new Date().toISOString().slice(0, 10)}.md`);
    writeFileSync(file, `${report.join('\n')}\n`);
    process.stderr.write(`admission-review: written to ${file}\n`);
  }
}

if (import.meta.main) main();
