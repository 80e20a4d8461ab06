// An incremental compile (over the previous runtime, keeping the compiled servers whose content and
// inputs are unchanged) must behave exactly as a compile from scratch. Over many random cluster
// changes A → B, B is compiled both ways and every host × path of a request set must resolve to the
// same server settings and the same action (upstream, balancer kind and peers, settings, access
// policy, auth, rewrites, canary, custom errors). The kept pieces must also be wired into the new
// runtime: every balancer a route holds is the runtime's balancer of that upstream (endpoint updates
// reach it), every rate-limit zone is one the runtime hands to the next compile.
import fc from 'fast-check';
import { RE2JS } from 're2js';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import type { BalancerEnv } from '../../lib/dataplane/upstream/balancer.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import type { ConfigMap, Ingress, Model } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, tlsSecret } from '../model/helpers.ts';

// ~10 s of CPU for the random runs: tap's default 30 s is too tight when the machine is shared
t.setTimeout(120_000);

const env: BalancerEnv = { random: () => 0, now: () => 0 };
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: env,
  ewmaStore: createEwmaStore(),
};

const HOSTS = ['a.com', 'b.com', 'c.com', '*.w.com'];
const PATHS = ['/', '/api', '/api/', '/x', '/x/(y)'];
const ANNOTATIONS: ReadonlyArray<Record<string, string>> = [
  {},
  { 'use-regex': 'true', 'rewrite-target': '/$1' },
  { 'limit-rps': '5' },
  { 'limit-connections': '3', 'whitelist-source-range': '10.0.0.0/8' },
  { 'custom-http-errors': '404,503', 'default-backend': 's3' },
  { 'proxy-read-timeout': '7', 'proxy-body-size': '1m' },
  { affinity: 'cookie' },
  { 'upstream-hash-by': '$request_uri' },
  { 'load-balance': 'ewma' },
  { 'permanent-redirect': 'https://elsewhere.example/' },
  { 'server-alias': 'alias.com', 'ssl-redirect': 'false' },
  { 'configuration-snippet': 'more_set_headers "X: y";' },
  { 'enable-cors': 'true' },
  { 'app-root': '/app', 'from-to-www-redirect': 'true' },
];
const REQUEST_PATHS = ['/', '/api', '/api/v', '/x', '/x/y', '/zzz'];
const REQUESTS = [
  ...[...HOSTS.map((h) => h.replace('*', 'x')), 'alias.com', 'www.a.com', 'unknown.com'].flatMap((host) =>
    REQUEST_PATHS.map((p) => [host, p] as const),
  ),
];

const arbitraryIngress = fc.record({
  namespace: fc.constantFrom('default', 'team'),
  created: fc.integer({ min: 0, max: 5 }),
  annotations: fc.constantFrom(...ANNOTATIONS),
  canary: fc.boolean(),
  tls: fc.boolean(),
  paths: fc.array(
    fc.record({
      host: fc.constantFrom(...HOSTS),
      path: fc.constantFrom(...PATHS),
      type: fc.constantFrom('Exact', 'Prefix', 'ImplementationSpecific'),
      svc: fc.constantFrom('s1', 's2', 's3'),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});
type IngressSpec = typeof arbitraryIngress extends fc.Arbitrary<infer T> ? T : never;

function ingressOf(spec: IngressSpec, index: number): Ingress {
  const nginx: Record<string, string> = { ...spec.annotations };
  if (spec.canary) Object.assign(nginx, { canary: 'true', 'canary-weight': '30' });
  const hosts = [...new Set(spec.paths.map((p) => p.host))];
  return ingress(`ing-${index}`, {
    namespace: spec.namespace,
    created: spec.created,
    nginx,
    ...(spec.tls ? { tls: [{ hosts: [hosts[0] ?? 'a.com'], secretName: 'tls' }] } : {}),
    rules: spec.paths.map((p) => rule(p.host, path(p.path, `${p.svc}:80`, p.type))),
  });
}

const arbitraryConfig = fc.constantFrom<Record<string, string> | null>(
  null,
  { 'proxy-connect-timeout': '3' },
  { 'custom-http-errors': '502', 'ssl-redirect': 'false' },
);

/** A cluster: Ingress specs (null: removed) and a ConfigMap. */
const arbitraryCluster = fc.record({
  ingresses: fc.array(fc.option(arbitraryIngress, { nil: null }), { minLength: 1, maxLength: 6 }),
  config: arbitraryConfig,
});

/** B from A: some Ingresses replaced, removed or added, maybe another ConfigMap. */
const arbitraryChange = fc.record({
  edits: fc.array(fc.record({ at: fc.nat(7), to: fc.option(arbitraryIngress, { nil: null }) }), {
    minLength: 1,
    maxLength: 3,
  }),
  config: fc.option(arbitraryConfig, { nil: undefined }),
});

type Cluster = { ingresses: Array<IngressSpec | null>; config: Record<string, string> | null };

function configMap(data: Record<string, string>): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'ingress', name: 'ingress-ts' },
    data,
  };
}

function modelOf(cluster: Cluster): Model {
  const ingresses = cluster.ingresses.flatMap((spec, i) => (spec === null ? [] : [ingressOf(spec, i)]));
  return build(
    {
      ingresses,
      secrets: [tlsSecret('tls', pem('a-example')), tlsSecret('tls', pem('a-example'), 'team')],
      configMaps: cluster.config === null ? [] : [configMap(cluster.config)],
    },
    { configMap: 'ingress/ingress-ts' },
  ).model;
}

function changed(
  cluster: Cluster,
  change: { edits: Array<{ at: number; to: IngressSpec | null }>; config?: Cluster['config'] },
): Cluster {
  const ingresses = [...cluster.ingresses];
  for (const edit of change.edits) ingresses[edit.at % (ingresses.length + 1)] = edit.to;
  return {
    ingresses: ingresses.map((spec) => spec ?? null),
    config: change.config === undefined ? cluster.config : change.config,
  };
}

/** What a compiled value does, comparable across runtimes: balancers by kind and peers, classes by name and fields. */
function canon(value: unknown, depth = 0, peers = true): unknown {
  if (typeof value === 'function') return '[function]';
  if (value === null || typeof value !== 'object') return value;
  if (depth > 12) return '[deep]';
  if (value instanceof RE2JS) return { re2: value.pattern() };
  if (value instanceof Set) return { set: [...value].map((v) => canon(v, depth + 1, peers)) };
  if (value instanceof Map) return { map: [...value].map(([k, v]) => [k, canon(v, depth + 1, peers)]) };
  if (Array.isArray(value)) return value.map((v) => canon(v, depth + 1, peers));
  if ('pick' in value && 'peers' in value && 'kind' in value) {
    const balancer = value as { kind: string; peers: ReadonlyArray<{ key: string }> };
    return peers ? { balancer: balancer.kind, peers: balancer.peers.map((p) => p.key) } : balancer.kind;
  }
  const proto = Object.getPrototypeOf(value);
  const out: Record<string, unknown> =
    proto === Object.prototype || proto === null ? {} : { class: proto.constructor?.name };
  for (const [key, child] of Object.entries(value)) out[key] = canon(child, depth + 1, peers);
  return out;
}

/** What each request of REQUESTS meets: the server's settings and the matched action. */
function behaviour(runtime: Runtime, peers = true): unknown[] {
  return REQUESTS.map(([host, requestPath]) => {
    const server = runtime.hosts.lookup(host);
    const { paths, ...settings } = server;
    const match = paths.match(requestPath);
    return canon({ host, requestPath, settings, match }, 0, peers);
  });
}

/**
 * Every name of the host table with what it serves (settings and each path's match): a patched table
 * must hold the very names and entries a table built from scratch holds, wildcards included.
 */
function hostTable(runtime: Runtime, peers = true): unknown[] {
  return [...runtime.hosts.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, server]) => {
      const { paths, ...settings } = server;
      return canon({ name, settings, matches: REQUEST_PATHS.map((p) => paths.match(p)) }, 0, peers);
    });
}

/** What the next compile keeps besides the servers: the claims on names, stateful servers, passthrough. */
function index(runtime: Runtime): unknown {
  const { claims, stateful, passthroughs } = runtime.reuse;
  const sorted = (map: ReadonlyMap<string, unknown>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    aliases: sorted(claims.aliases),
    wwwFrom: sorted(claims.wwwFrom),
    stateful: [...stateful.keys()].sort(),
    passthroughs,
    servers: [...runtime.reuse.servers.keys()].sort(),
  };
}

/** Balancers and zones that routes hold must be the runtime's own. */
function wiringProblems(runtime: Runtime): string[] {
  const problems: string[] = [];
  const zones = new Set(runtime.rateLimitZones.values());
  const seen = new Set<object>();
  const walk = (value: unknown, depth: number): void => {
    if (value === null || typeof value !== 'object' || seen.has(value) || depth > 12) return;
    seen.add(value);
    if (value instanceof RE2JS || value instanceof Map || value instanceof Set) return;
    const record = value as Record<string, unknown>;
    if (typeof record.upstream === 'string' && record.balancer !== undefined && record.balancer !== null) {
      if (runtime.balancers.get(record.upstream) !== record.balancer)
        problems.push(`balancer of ${record.upstream}`);
      for (const peer of (record.balancer as { peers: Array<{ key: string }> }).peers)
        if (!runtime.peerKeys.has(peer.key)) problems.push(`peer ${peer.key} of ${record.upstream}`);
      return;
    }
    if ('limits' in record && record.limits !== null && typeof record.limits === 'object') {
      const limits = record.limits as Record<string, unknown>;
      for (const key of ['rps', 'rpm', 'connections'])
        if (limits[key] !== null && limits[key] !== undefined && !zones.has(limits[key] as never))
          problems.push(`zone ${key}`);
    }
    for (const child of Object.values(record)) walk(child, depth + 1);
  };
  for (const [host] of REQUESTS) {
    const server = runtime.hosts.lookup(host);
    for (const [, p] of REQUESTS) walk(server.paths.match(p), 0);
  }
  return problems;
}

t.test('incremental compile = compile from scratch, over random changes', async (t) => {
  let kept = 0;
  fc.assert(
    fc.property(arbitraryCluster, arbitraryChange, arbitraryChange, (a, change, next) => {
      const b = changed(a, change);
      const c = changed(b, next);
      const runtimeA = compileRuntime(modelOf(a), null, deps);
      // balancers are shared and take new endpoints in place (documented): A is compared without peers
      const served = (runtime: Runtime) => ({
        behaviour: behaviour(runtime, false),
        hosts: hostTable(runtime, false),
        index: index(runtime),
      });
      const servedA = served(runtimeA);
      // each model as a data-plane thread receives it: a structured clone, sharing no object
      const modelB = structuredClone(modelOf(b));
      const incremental = compileRuntime(modelB, runtimeA, deps);
      const fresh = compileRuntime(modelB, null, deps);
      if (!t.strictSame(behaviour(incremental), behaviour(fresh), 'B: same behaviour')) return false;
      if (!t.strictSame(hostTable(incremental), hostTable(fresh), 'B: the same host table')) return false;
      if (!t.strictSame(index(incremental), index(fresh), 'B: the same reuse index')) return false;
      if (!t.strictSame(wiringProblems(incremental), [], 'B: wired into its runtime')) return false;
      if (!t.strictSame([...incremental.backendTlsIds].sort(), [...fresh.backendTlsIds].sort())) return false;
      for (const [host, record] of incremental.reuse.servers)
        if (runtimeA.reuse.servers.get(host)?.compiled === record.compiled) kept++;
      // and once more, from the incremental runtime (kept servers kept again, endpoints moved)
      const modelC = structuredClone(modelOf(c));
      const servedB = served(incremental);
      const again = compileRuntime(modelC, incremental, deps);
      const freshC = compileRuntime(modelC, null, deps);
      if (!t.strictSame(behaviour(again), behaviour(freshC), 'C: same behaviour')) return false;
      if (!t.strictSame(hostTable(again), hostTable(freshC), 'C: the same host table')) return false;
      if (!t.strictSame(index(again), index(freshC), 'C: the same reuse index')) return false;
      // A served while B and C were compiled over it (a discarded prepare): it must not have moved
      if (!t.strictSame(served(incremental), servedB, 'B: untouched by the compile over it')) return false;
      if (!t.strictSame(served(runtimeA), servedA, 'A: untouched by the compiles over it')) return false;
      return t.strictSame(wiringProblems(again), [], 'C: wired into its runtime');
    }),
    { numRuns: 150 },
  );
  t.ok(kept > 20, `compiled servers were kept (${kept} times)`);
});

const site = (
  name: string,
  host: string,
  created: number,
  nginx: Record<string, string> = {},
  extra = '/s2',
): Ingress =>
  ingress(name, { created, nginx, rules: [rule(host, path('/', 's1:80'), path(extra, 's2:80'))] });
const compiledOf = (runtime: Runtime, host: string) => runtime.reuse.servers.get(host)?.compiled;

t.test('what a one-Ingress change keeps, and what it does not', async (t) => {
  const world = (ingresses: Ingress[], config: Record<string, string> | null = null) =>
    structuredClone(
      build(
        { ingresses, configMaps: config === null ? [] : [configMap(config)] },
        { configMap: 'ingress/ingress-ts' },
      ).model,
    );
  const a = compileRuntime(
    world([site('a', 'a.com', 1), site('b', 'b.com', 2), site('c', 'c.com', 3, { 'load-balance': 'ewma' })]),
    null,
    deps,
  );
  const b = compileRuntime(
    world([
      site('a', 'a.com', 1),
      site('b', 'b.com', 2, {}, '/new'),
      site('c', 'c.com', 3, { 'load-balance': 'ewma' }),
    ]),
    a,
    deps,
  );
  t.equal(compiledOf(b, 'a.com'), compiledOf(a, 'a.com'), 'an unchanged host keeps its compiled server');
  t.equal(compiledOf(b, 'c.com'), compiledOf(a, 'c.com'));
  t.not(compiledOf(b, 'b.com'), compiledOf(a, 'b.com'), 'the changed host is compiled again');
  t.equal(b.hosts.lookup('b.com').paths.match('/new').locationPath, '/new');
  t.equal(b.balancers, a.balancers, 'no upstream and no endpoint changed: the balancers map is kept');

  // a.com is unchanged, but its upstream s1 now balances by EWMA: the first Ingress using an
  // upstream decides its load-balance, and Ingress `z` (older) now does
  const c = compileRuntime(
    world([
      site('z', 'z.com', 0, { 'load-balance': 'ewma' }),
      site('a', 'a.com', 1),
      site('b', 'b.com', 2, {}, '/new'),
      site('c', 'c.com', 3, { 'load-balance': 'ewma' }),
    ]),
    b,
    deps,
  );
  t.not(compiledOf(c, 'a.com'), compiledOf(b, 'a.com'), 'a host whose upstream changed is compiled again');
  const action = c.hosts.lookup('a.com').paths.match('/').value;
  t.equal(action.type === 'proxy' ? action.target.balancer.kind : null, 'ewma');
  t.equal(action.type === 'proxy' ? action.target.balancer : null, c.balancers.get('default-s1-80'));

  const d = compileRuntime(
    world(
      [
        site('z', 'z.com', 0, { 'load-balance': 'ewma' }),
        site('a', 'a.com', 1),
        site('b', 'b.com', 2, {}, '/new'),
        site('c', 'c.com', 3, { 'load-balance': 'ewma' }),
      ],
      { 'proxy-connect-timeout': '3' },
    ),
    c,
    deps,
  );
  t.not(compiledOf(d, 'c.com'), compiledOf(c, 'c.com'), 'a ConfigMap change compiles every host');
  const settings = d.hosts.lookup('c.com').paths.match('/').value;
  t.equal(settings.type === 'proxy' ? settings.target.connectTimeoutMs : null, 3000);
});
