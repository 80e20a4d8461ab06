// Regex-mode hosts on a full swap: what a change elsewhere in the cluster costs a host whose paths are
// all regexes (use-regex, or a rewrite-target on one of its paths). Every full swap builds the model
// (which compiles each regex-mode path to refuse those RE2 cannot take) and compiles the runtime (which
// matches with them). Run with `node bench/regex-swap.ts [paths] [length] [rounds]` (default 1000 1000 5):
// one host with `paths` regex paths of about `length` characters (every tenth one refused by RE2, as in
// the bad-input corpus), and a second Ingress whose path changes every round, so each round is a full
// swap. Prints build and compile milliseconds per round; round 0 is the first build.
//
// The caches are wired as lib/main.ts wires them on one thread: the build's path-regex cache is handed
// to the data plane's compile. With `--own-caches` the compile keeps its own, as a data-plane worker
// thread will: its first compile pays for every pattern again, later full swaps reuse its own.

import { performance } from 'node:perf_hooks';
import { beforeCompile, createRuntimeCaches } from '../lib/dataplane/caches.ts';
import { generateDefaultCertificate } from '../lib/dataplane/listening/sni.ts';
import { compileRuntime, type Runtime } from '../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../lib/dataplane/upstream/balancers/ewma.ts';
import { buildModel, createBuildCaches, type Ingress, type Snapshot } from '../lib/model/index.ts';

const args = process.argv.slice(2);
const ownCaches = args.includes('--own-caches');
const [paths = 1000, length = 1000, rounds = 5] = args.filter((arg) => !arg.startsWith('--')).map(Number);

const backend = { service: { name: 'web', port: { number: 80 } } };
const ingress = (name: string, created: string, host: string, list: string[], regex: boolean): Ingress => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name,
    namespace: 'bench',
    creationTimestamp: created,
    annotations: regex ? { 'nginx.ingress.kubernetes.io/use-regex': 'true' } : {},
  },
  spec: {
    ingressClassName: 'ingress-ts',
    rules: [{ host, http: { paths: list.map((path) => ({ path, pathType: 'Prefix', backend })) } }],
  },
});
const regexPaths = Array.from(
  { length: paths },
  (_, i) => `/${i}${i % 10 === 0 ? '(?!x)' : '(a|aa)*'}${'b'.repeat(Math.max(0, length - 10))}`,
);
const snapshot = (round: number): Snapshot =>
  ({
    ingresses: [
      ingress('regex', '2026-01-01T00:00:00Z', 'regex.example', regexPaths, true),
      ingress('other', '2026-01-01T00:00:01Z', 'other.example', [`/v${round}`], false),
    ],
    ingressClasses: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'ingress-ts' },
        spec: { controller: 'ingress-ts.dev/controller' },
      },
    ],
    services: [],
    endpointSlices: [],
    secrets: [],
    configMaps: [],
  }) as unknown as Snapshot;

const buildCaches = createBuildCaches();
const runtimeCaches = createRuntimeCaches(ownCaches ? undefined : buildCaches.pathRegexes);
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { now: () => performance.now(), random: Math.random },
  ewmaStore: createEwmaStore(),
  caches: runtimeCaches,
};
console.log(
  `one host, ${paths} regex paths of ~${length} characters; a change on another host each round; ${
    ownCaches ? 'the compile keeps its own regex cache' : "the compile shares the build's regex cache"
  }`,
);
let runtime: Runtime | null = null;
for (let round = 0; round < rounds; round++) {
  const started = performance.now();
  const { model } = buildModel(snapshot(round), {}, buildCaches);
  const built = performance.now();
  beforeCompile(runtimeCaches, runtime, model);
  runtime = compileRuntime(model, runtime, deps);
  const compiled = performance.now();
  console.log(
    `round ${round}: build ${(built - started).toFixed(0)} ms, compile ${(compiled - built).toFixed(0)} ms`,
  );
}
