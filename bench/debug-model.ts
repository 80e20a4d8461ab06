// /debug/model at scale: how big the answer is and what making it costs, for model-build.ts's
// synthetic cluster of N Ingresses (default 10,000). Run with `node bench/debug-model.ts [N ...]`.
//
// The cluster gets what the routing page shows beyond the base model: every 10th Ingress balances
// with ewma, every 10th EndpointSlice has one endpoint that is not ready. It is built, compiled by a
// DataPlane on this thread (no listener), and each step of an answer is timed in this thread's CPU
// time (process.threadCpuUsage: independent of the machine's load), median of the runs:
// - runtime: the data plane's description of its runtime (describe-runtime.ts);
// - controller: the diagnostics grouped, the not-ready endpoints and the Ingresses with their
//   annotations added from the snapshot (debug-model.ts, debug-objects.ts);
// - serialize: JSON.stringify pretty (the default answer) and compact (?compact=1);
// - gzip: zlib at its default level, of each (the server runs it on libuv's pool, once per version).
// A poll whose ETag matches costs a string comparison and is not measured.
//
// Then /debug/traffic's work with one route per Ingress, each with a 200 and a 503 series (2N
// series): a 5-second sample after requests were counted (the routes' totals) and an answer.

import { gzipSync } from 'node:zlib';
import promClient from 'prom-client';
import { DataPlane } from '../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { describeModel } from '../lib/debug-model.ts';
import { createRequestMetrics, DEFAULT_REQUEST_METRICS_OPTIONS } from '../lib/metrics/requests.ts';
import { createTrafficWindow } from '../lib/metrics/traffic.ts';
import { buildModel, DEFAULT_MODEL_OPTIONS, type Snapshot } from '../lib/model/index.ts';
import { record } from '../test/support/request-record.ts';
import { generateCluster } from './model-build.ts';

const RUNS = 5;

const cpuMs = (since: NodeJS.CpuUsage): number => {
  const used = process.threadCpuUsage(since);
  return (used.user + used.system) / 1000;
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** The cluster with ewma on every 10th Ingress and a not-ready endpoint in every 10th slice. */
function withPageData(snapshot: Snapshot): Snapshot {
  const ingresses = snapshot.ingresses.map((ingress, i) =>
    i % 10 === 0
      ? {
          ...ingress,
          metadata: {
            ...ingress.metadata,
            annotations: {
              ...ingress.metadata?.annotations,
              'nginx.ingress.kubernetes.io/load-balance': 'ewma',
            },
          },
        }
      : ingress,
  );
  const endpointSlices = snapshot.endpointSlices.map((slice, i) =>
    i % 10 === 0 && Array.isArray(slice.endpoints) && slice.endpoints.length > 0
      ? {
          ...slice,
          endpoints: [
            ...slice.endpoints.slice(1),
            { ...slice.endpoints[0], conditions: { ready: false, terminating: true } },
          ],
        }
      : slice,
  );
  return { ...snapshot, ingresses, endpointSlices };
}

interface Row {
  size: number;
  runtimeMs: number;
  controllerMs: number;
  prettyMs: number;
  compactMs: number;
  gzipPrettyMs: number;
  gzipCompactMs: number;
  prettyBytes: number;
  compactBytes: number;
  gzipPrettyBytes: number;
  gzipCompactBytes: number;
  ingresses: number;
  backends: number;
  notReady: number;
}

async function measure(size: number): Promise<Row> {
  const snapshot = withPageData(generateCluster(size, false).snapshot);
  const { model, diagnostics } = buildModel(snapshot, {});
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  dataPlane.swap(model);
  const builtFrom = { snapshot, model, options: DEFAULT_MODEL_OPTIONS };
  const times = new Map<string, number[]>();
  const note = (name: string, ms: number) => times.set(name, [...(times.get(name) ?? []), ms]);
  const time = <T>(name: string, work: () => T): T => {
    const started = process.threadCpuUsage();
    const result = work();
    note(name, cpuMs(started));
    return result;
  };
  let last: { pretty: string; compact: string; gzipPretty: Buffer; gzipCompact: Buffer } | null = null;
  let answer: ReturnType<typeof describeModel> | null = null;
  for (let run = 0; run < RUNS; run++) {
    const startedRuntime = process.threadCpuUsage();
    const runtime = await dataPlane.describe();
    note('runtime', cpuMs(startedRuntime));
    if (runtime === null) throw new Error('no runtime');
    answer = time('controller', () => describeModel(runtime, diagnostics, builtFrom));
    const pretty = time('pretty', () => JSON.stringify(answer, null, 2));
    const compact = time('compact', () => JSON.stringify(answer));
    const gzipPretty = time('gzipPretty', () => gzipSync(pretty));
    const gzipCompact = time('gzipCompact', () => gzipSync(compact));
    last = { pretty, compact, gzipPretty, gzipCompact };
  }
  await dataPlane.close();
  if (last === null || answer === null) throw new Error('no run');
  const m = (name: string) => median(times.get(name) ?? [0]);
  return {
    size,
    runtimeMs: m('runtime'),
    controllerMs: m('controller'),
    prettyMs: m('pretty'),
    compactMs: m('compact'),
    gzipPrettyMs: m('gzipPretty'),
    gzipCompactMs: m('gzipCompact'),
    prettyBytes: Buffer.byteLength(last.pretty),
    compactBytes: Buffer.byteLength(last.compact),
    gzipPrettyBytes: last.gzipPretty.length,
    gzipCompactBytes: last.gzipCompact.length,
    ingresses: Object.keys(answer.ingresses ?? {}).length,
    backends: answer.backends.length,
    notReady: answer.backends.filter((b) => b.notReady !== undefined).length,
  };
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(2);

/** thread CPU ms of a sample (routeTotals) and of an answer, with 2 series per route. */
function measureTraffic(routes: number): { sampleMs: number; answerMs: number; bytes: number } {
  const { Registry } = promClient;
  const requests = createRequestMetrics(new Registry(), {
    ...DEFAULT_REQUEST_METRICS_OPTIONS,
    perUndefinedHost: true,
  });
  let counted = 0;
  for (let i = 0; i < routes; i++) {
    for (const status of [200, 503]) {
      requests.observe(record({ host: `h${i}.test`, ingress: `ing-${i}`, status }));
      counted++;
    }
  }
  const window = createTrafficWindow({
    routeTotals: () => requests.routeTotals(),
    counted: () => counted,
    timeBuckets: requests.timeBuckets,
  });
  const samples: number[] = [];
  const answers: number[] = [];
  let bytes = 0;
  for (let run = 0; run < RUNS; run++) {
    counted++; // a request counted since: the sample reads the series
    let started = process.threadCpuUsage();
    window.tick();
    samples.push(cpuMs(started));
    started = process.threadCpuUsage();
    bytes = JSON.stringify(window.describe()).length;
    answers.push(cpuMs(started));
  }
  window.close();
  return { sampleMs: median(samples), answerMs: median(answers), bytes };
}

async function main(): Promise<void> {
  const sizes = process.argv.slice(2).map(Number);
  const rows: Row[] = [];
  for (const size of sizes.length > 0 ? sizes : [10000]) rows.push(await measure(size));
  console.log(
    '| Ingresses | backends (with notReady) | runtime ms | controller ms | pretty: MiB, ms | compact: MiB, ms | gzip pretty: MiB, ms | gzip compact: MiB, ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.ingresses} | ${r.backends} (${r.notReady}) | ${r.runtimeMs.toFixed(0)} | ${r.controllerMs.toFixed(0)} | ${mib(r.prettyBytes)}, ${r.prettyMs.toFixed(0)} | ${mib(r.compactBytes)}, ${r.compactMs.toFixed(0)} | ${mib(r.gzipPrettyBytes)}, ${r.gzipPrettyMs.toFixed(0)} | ${mib(r.gzipCompactBytes)}, ${r.gzipCompactMs.toFixed(0)} |`,
    );
  }
  console.log('\n| routes (series) | sample ms | answer ms (compact bytes) |\n|---|---|---|');
  for (const size of sizes.length > 0 ? sizes : [10000]) {
    const traffic = measureTraffic(size);
    console.log(
      `| ${size} (${size * 2}) | ${traffic.sampleMs.toFixed(1)} | ${traffic.answerMs.toFixed(1)} (${traffic.bytes}) |`,
    );
  }
}

if (import.meta.main) await main();
