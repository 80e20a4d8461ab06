// Model scale benchmark: how long `buildModel` takes, and how much heap it holds, for synthetic
// clusters of N Ingresses. Run with `node --expose-gc bench/model-build.ts [N ...]` (default: 1000
// 10000). Deterministic: the same N always yields the same cluster and the same model hash.
//
// Cluster shape, per Ingress i (class ingress-ts, namespace team-NN, one of 100):
// - 2 hosts: app-i.team-NN.example.test and api.app-i.team-NN.example.test;
// - 3 paths per host: one Prefix, one Exact, one ImplementationSpecific;
// - 3 Services (web, api, static) shared by the two hosts: each Service backs one path of each host;
//   web and api are referenced by port number, static by port name;
// - one EndpointSlice per Service with 3 ready endpoints;
// - annotations: use-regex "false" on all, server-alias on ~5%, proxy-body-size (not supported by
//   ingress-ts, so a warning) on ~20%;
// - creationTimestamp one second apart in index order, every 10th Ingress tied with the previous one;
//   the object lists are shuffled so the build has to sort.
// The "conflicting" clusters also make every 10th Ingress re-declare, from another namespace, the
// first host and paths of an Ingress 5 older: two exact host+path conflicts and one Prefix that
// matches the same requests (/static/ vs /static).

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  type BuildResult,
  buildModel,
  type EndpointSlice,
  type HTTPIngressPath,
  type Ingress,
  type IngressClass,
  type Service,
  type Snapshot,
} from '../lib/model/index.ts';

const RESULTS_DIR = new URL('results', import.meta.url).pathname;

const DEFAULT_SIZES = [1000, 10000];
const MAX_SIZE = 200000;
const NAMESPACES = 100;
const EPOCH_SECONDS = Date.parse('2026-01-01T00:00:00Z') / 1000;
const PREFIX = 'nginx.ingress.kubernetes.io';
/** timed runs per case, fewer for big clusters */
const runsFor = (size: number): number => (size <= 10000 ? 5 : size <= 50000 ? 3 : 2);
/** stop timing a case once its timed runs have used this much (at least one run is always made) */
const CASE_BUDGET_MS = 15000;

// --- deterministic synthetic cluster ---------------------------------------------------------------

/** mulberry32: a tiny seeded PRNG, so the cluster is the same on every run. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const a = items[i]!;
    items[i] = items[j]!;
    items[j] = a;
  }
  return items;
}

const pad = (value: number, width: number): string => String(value).padStart(width, '0');
const namespaceOf = (index: number): string => `team-${pad(index % NAMESPACES, 2)}`;
const appOf = (index: number): string => `app-${index}`;
const hostsOf = (index: number): [string, string] => {
  const domain = `${appOf(index)}.${namespaceOf(index)}.example.test`;
  return [domain, `api.${domain}`];
};
const timestamp = (seconds: number): string =>
  new Date((EPOCH_SECONDS + seconds) * 1000).toISOString().replace('.000Z', 'Z');

function ipv4(counter: number): string {
  return `10.${(counter >>> 16) & 255}.${(counter >>> 8) & 255}.${counter & 255}`;
}

type Tier = 'web' | 'api' | 'static';
const TIERS: readonly Tier[] = ['web', 'api', 'static'];

function httpPath(path: string, pathType: string, service: string, tier: Tier): HTTPIngressPath {
  const port = tier === 'static' ? { name: 'http' } : { number: 80 };
  return { path, pathType, backend: { service: { name: service, port } } };
}

export interface Cluster {
  snapshot: Snapshot;
  /** how many Ingresses re-declare an older Ingress's host and paths */
  conflicting: number;
}

export function generateCluster(size: number, withConflicts: boolean): Cluster {
  const random = prng(0x1e55 ^ size ^ (withConflicts ? 0x9e3779b9 : 0));
  const ingresses: Ingress[] = [];
  const services: Service[] = [];
  const endpointSlices: EndpointSlice[] = [];
  let uid = 0;
  let address = 1;
  let conflicting = 0;
  const meta = (namespace: string, name: string, created: string) => ({
    namespace,
    name,
    uid: `00000000-0000-4000-8000-${pad(++uid, 12)}`,
    resourceVersion: String(100000 + uid),
    creationTimestamp: created,
  });

  for (let i = 0; i < size; i++) {
    const namespace = namespaceOf(i);
    const app = appOf(i);
    const created = timestamp(i % 10 === 1 ? i - 1 : i); // every 10th ties with its predecessor
    const service = (tier: Tier) => `${app}-${tier}`;

    for (const tier of TIERS) {
      const name = service(tier);
      services.push({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { ...meta(namespace, name, created), labels: { app, tier } },
        spec: {
          type: 'ClusterIP',
          clusterIP: ipv4(0x800000 + services.length),
          ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
        },
      });
      const endpoints = [0, 1, 2].map((replica) => ({
        addresses: [ipv4(address++)],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: `node-${(i + replica) % 50}`,
        targetRef: { kind: 'Pod', namespace, name: `${name}-${pad(replica, 3)}` },
      }));
      endpointSlices.push({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          ...meta(namespace, `${name}-${pad(Math.floor(random() * 100000), 5)}`, created),
          labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'bench' },
        },
        addressType: 'IPv4',
        ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        endpoints,
      });
    }

    const annotations: Record<string, string> = { [`${PREFIX}/use-regex`]: 'false' };
    const roll = random();
    if (roll < 0.05) annotations[`${PREFIX}/server-alias`] = `www.${app}.${namespace}.example.test`;
    else if (roll < 0.25) annotations[`${PREFIX}/proxy-body-size`] = '8m';

    const [first, second] = hostsOf(i);
    let firstRule = {
      host: first,
      http: {
        paths: [
          httpPath('/', 'Prefix', service('web'), 'web'),
          httpPath('/api/v1/status', 'Exact', service('api'), 'api'),
          httpPath('/static', 'ImplementationSpecific', service('static'), 'static'),
        ],
      },
    };
    if (withConflicts && i % 10 === 9) {
      // Re-declare the first host of Ingress i-5 (older, another namespace) with the same paths.
      conflicting++;
      firstRule = {
        host: hostsOf(i - 5)[0],
        http: {
          paths: [
            httpPath('/', 'Prefix', service('web'), 'web'),
            httpPath('/api/v1/status', 'Exact', service('api'), 'api'),
            httpPath('/static/', 'ImplementationSpecific', service('static'), 'static'),
          ],
        },
      };
    }
    ingresses.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { ...meta(namespace, app, created), annotations },
      spec: {
        ingressClassName: 'ingress-ts',
        rules: [
          firstRule,
          {
            host: second,
            http: {
              paths: [
                httpPath('/v1', 'Prefix', service('api'), 'api'),
                httpPath('/healthz', 'Exact', service('web'), 'web'),
                httpPath('/docs', 'ImplementationSpecific', service('static'), 'static'),
              ],
            },
          },
        ],
      },
    });
  }

  const ingressClasses: IngressClass[] = [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'ingress-ts' },
      spec: { controller: 'ingress-ts.dev/controller' },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'nginx' },
      spec: { controller: 'k8s.io/ingress-nginx' },
    },
  ];
  return {
    snapshot: {
      ingresses: shuffle(ingresses, random),
      ingressClasses,
      services: shuffle(services, random),
      endpointSlices: shuffle(endpointSlices, random),
      secrets: [],
      configMaps: [],
    },
    conflicting,
  };
}

// --- measurement -------------------------------------------------------------------------------------

const collect = globalThis.gc;

/** heapUsed after a full GC, or null when node was started without --expose-gc. */
function settledHeap(): number | null {
  if (collect === undefined) return null;
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

function timed<T>(run: () => T): { value: T; ms: number } {
  const start = performance.now();
  const value = run();
  return { value, ms: performance.now() - start };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function countRoutes(result: BuildResult): number {
  let routes = result.model.catchAll.routes.length;
  for (const server of result.model.servers) routes += server.routes.length;
  return routes;
}

function countByCode(result: BuildResult): string {
  const counts = new Map<string, number>();
  for (const diagnostic of result.diagnostics) {
    counts.set(diagnostic.code, (counts.get(diagnostic.code) ?? 0) + 1);
  }
  return [...counts].map(([code, count]) => `${code} ${count}`).join(', ') || 'none';
}

interface CaseResult {
  size: number;
  withConflicts: boolean;
  conflicting: number;
  services: number;
  slices: number;
  servers: number;
  routes: number;
  upstreams: number;
  diagnostics: number;
  diagnosticsByCode: string;
  generateMs: number;
  warmupMs: number;
  runs: number[];
  secondBuildMs: number;
  snapshotBytes: number | null;
  modelBytes: number | null;
  hashesEqual: boolean;
}

function runCase(size: number, withConflicts: boolean): CaseResult {
  const before = settledHeap();
  const generated = timed(() => generateCluster(size, withConflicts));
  const { snapshot, conflicting } = generated.value;
  const withSnapshot = settledHeap();

  // Keep only the hash of the warm-up build, so the heap figure below counts one model.
  const warmup = timed(() => buildModel(snapshot).model.hash);
  const hash = warmup.value;
  let result: BuildResult | null = null;
  const runs: number[] = [];
  let stable = true;
  const wanted = runsFor(size);
  while (runs.length < wanted) {
    result = null; // let the previous result go before building the next one
    const run = timed(() => buildModel(snapshot));
    runs.push(run.ms);
    result = run.value;
    if (result.model.hash !== hash) stable = false;
    if (runs.reduce((sum, ms) => sum + ms, 0) > CASE_BUDGET_MS) break;
  }
  const held = result!;
  const withModel = settledHeap();

  // A second build from a fresh, identical snapshot: same cost, same hash.
  const again = generateCluster(size, withConflicts).snapshot;
  const second = timed(() => buildModel(again));

  return {
    size,
    withConflicts,
    conflicting,
    services: snapshot.services.length,
    slices: snapshot.endpointSlices.length,
    servers: held.model.servers.length,
    routes: countRoutes(held),
    upstreams: Object.keys(held.model.upstreams).length,
    diagnostics: held.diagnostics.length,
    diagnosticsByCode: countByCode(held),
    generateMs: generated.ms,
    warmupMs: warmup.ms,
    runs,
    secondBuildMs: second.ms,
    snapshotBytes: before === null || withSnapshot === null ? null : withSnapshot - before,
    modelBytes: withSnapshot === null || withModel === null ? null : withModel - withSnapshot,
    hashesEqual:
      stable && second.value.model.hash === hash && second.value.model.routesHash === held.model.routesHash,
  };
}

// --- output ------------------------------------------------------------------------------------------

function table(header: string[], rows: string[][], alignRight: boolean[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, 3, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    `| ${cells
      .map((cell, column) =>
        alignRight[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join(' | ')} |`;
  const dashes = widths.map((width, column) =>
    alignRight[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width),
  );
  const rule = `| ${dashes.join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

const integer = (value: number): string => value.toLocaleString('en-US');
const ms = (value: number): string => value.toFixed(1);
const mib = (bytes: number | null): string => (bytes === null ? 'n/a' : (bytes / 1048576).toFixed(1));

function mainTable(results: readonly CaseResult[]): string {
  return table(
    [
      'Ingresses',
      'routes',
      'upstreams',
      'diagnostics',
      'build min ms',
      'build median ms',
      'heap snapshot MiB',
      'heap model MiB',
    ],
    results.map((r) => [
      integer(r.size),
      integer(r.routes),
      integer(r.upstreams),
      integer(r.diagnostics),
      ms(Math.min(...r.runs)),
      ms(median(r.runs)),
      mib(r.snapshotBytes),
      mib(r.modelBytes),
    ]),
    [true, true, true, true, true, true, true, true],
  );
}

function detailTable(results: readonly CaseResult[]): string {
  return table(
    [
      'case',
      'Ingresses',
      'conflicting',
      'Services',
      'EndpointSlices',
      'hosts',
      'generate ms',
      'warm-up ms',
      'timed runs',
      'identical snapshot ms',
      'hash equal',
      'diagnostics by code',
    ],
    results.map((r) => [
      r.withConflicts ? 'conflicts' : 'clean',
      integer(r.size),
      integer(r.conflicting),
      integer(r.services),
      integer(r.slices),
      integer(r.servers),
      ms(r.generateMs),
      ms(r.warmupMs),
      String(r.runs.length),
      ms(r.secondBuildMs),
      r.hashesEqual ? 'yes' : 'NO',
      r.diagnosticsByCode,
    ]),
    [false, true, true, true, true, true, true, true, true, true, false, false],
  );
}

function parseSizes(args: readonly string[]): number[] {
  if (args.length === 0) return DEFAULT_SIZES;
  return args.map((arg) => {
    const size = Number(arg);
    if (!Number.isInteger(size) || size < 1 || size > MAX_SIZE) {
      console.error(`model-build: "${arg}" is not a number of Ingresses between 1 and ${MAX_SIZE}`);
      process.exit(2);
    }
    return size;
  });
}

function main(): void {
  const args = process.argv.slice(2);
  const write = !args.includes('--no-write');
  const sizes = parseSizes(args.filter((arg) => arg !== '--no-write'));
  const report: string[] = [];
  const say = (text: string) => {
    report.push(text);
    console.log(text);
  };
  const cpu = cpus();
  say('# buildModel scale benchmark\n');
  say(`- date: ${new Date().toISOString().slice(0, 10)}`);
  say(`- node: ${process.version} (${process.platform} ${process.arch})`);
  say(`- cpu: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length}`);
  say(
    collect === undefined
      ? '- gc: global.gc is missing (run node with --expose-gc); heap figures are not reported'
      : '- gc: forced (--expose-gc); heap figures are heapUsed deltas after a full GC',
  );
  const plan = sizes.map((size) => `${integer(size)}: ${runsFor(size)}`).join(', ');
  say(`- timed builds per case: ${plan} (after one warm-up build)\n`);

  // Compile the build's code paths once, so the first measured case does not pay for the JIT.
  buildModel(generateCluster(200, true).snapshot);

  const clean: CaseResult[] = [];
  const conflicting: CaseResult[] = [];
  for (const size of sizes) {
    clean.push(runCase(size, false));
    conflicting.push(runCase(size, true));
  }
  const all = [...clean, ...conflicting];

  say('## Clean cluster\n');
  say(`${mainTable(clean)}\n`);
  say('## With ~10% of Ingresses conflicting with older ones\n');
  say(`${mainTable(conflicting)}\n`);
  say('## Details\n');
  say(`${detailTable(all)}\n`);

  const bad = all.filter((r) => !r.hashesEqual);
  if (bad.length === 0) {
    say('Model hashes are equal across all runs and the identical-snapshot rebuild of every case.');
  } else {
    const which = bad.map((r) => `${integer(r.size)} (${r.withConflicts ? 'conflicts' : 'clean'})`);
    say(`Model hashes DIFFER between builds of identical snapshots for: ${which.join(', ')}.`);
    process.exitCode = 1;
  }
  if (write) {
    const file = join(RESULTS_DIR, `model-${new Date().toISOString().slice(0, 10)}.md`);
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(file, `${report.join('\n')}\n`);
    process.stderr.write(`model-build: written to ${file}\n`);
  }
}

if (import.meta.main) main();
