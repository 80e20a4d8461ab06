// A build through caches kept from earlier builds (BuildCaches: Ingresses checked once, upstreams
// resolved once, the object indexes patched, the upstream order kept) must equal a build from
// scratch: the model, the diagnostics in their order and the references. Random sequences of changes
// as a store makes them (objects replaced in place in their list, deleted, appended; the ConfigMap and
// the options changed), snapshots in another order, and trial builds of a snapshot with one Ingress
// replaced (as the admission webhook makes them) through the same caches.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { SortedNames } from '../../lib/model/build-memo.ts';
import {
  type BuildCaches,
  type BuildResult,
  buildModel,
  type ConfigMap,
  createBuildCaches,
  type EndpointSlice,
  type Ingress,
  type KubeObject,
  type ModelOptions,
  type Secret,
  type Service,
  type Snapshot,
} from '../../lib/model/index.ts';
import { IngressOrder, sortIngresses } from '../../lib/model/order.ts';
import { ingress, ingressClass, path, pem, rule, service, slice, tlsSecret } from './helpers.ts';

t.setTimeout(240_000);

const HOSTS = ['a.com', 'b.com', '*.w.com', ''];
const PATHS = ['/', '/api', '/api/', '/x/(y)', '/(a)\\1'];
const SERVICES = ['s1', 's2', 's3', 'gone'];
const ANNOTATIONS: ReadonlyArray<Record<string, string>> = [
  {},
  { 'use-regex': 'true' },
  { affinity: 'cookie', 'session-cookie-name': 'one' },
  { affinity: 'cookie', 'session-cookie-name': 'two', 'affinity-mode': 'persistent' },
  { 'affinity-mode': 'balanced' },
  { 'auth-type': 'basic', 'auth-secret': 'htpasswd' },
  { 'custom-headers': 'headers' },
  { 'server-alias': 'b.com,alias.com', 'from-to-www-redirect': 'true' },
  { 'ssl-passthrough': 'true' },
  { 'default-backend': 's2', 'custom-http-errors': '503' },
  { 'service-upstream': 'true' },
  { 'upstream-hash-by': '$request_uri', 'load-balance': 'ewma' },
  { 'configuration-snippet': 'more_set_headers "X: y";' },
  { 'proxy-body-size': '8m', 'proxy-read-timeout': 'evil' },
  { 'auth-tls-secret': 'default/tls', 'proxy-ssl-secret': 'default/tls' },
  { 'permanent-redirect': 'https://user:secret@elsewhere.example/' },
  { 'rewrite-targte': '/' },
];

const arbitraryIngress = fc.record({
  namespace: fc.constantFrom('default', 'team'),
  created: fc.integer({ min: 0, max: 4 }),
  annotations: fc.constantFrom(...ANNOTATIONS),
  canary: fc.constantFrom(null, 'weight', 'header'),
  tls: fc.boolean(),
  defaultBackend: fc.option(fc.constantFrom(...SERVICES), { nil: undefined }),
  paths: fc.array(
    fc.record({
      host: fc.constantFrom(...HOSTS),
      path: fc.constantFrom(...PATHS),
      type: fc.constantFrom('Exact', 'Prefix', 'ImplementationSpecific'),
      svc: fc.constantFrom(...SERVICES),
      port: fc.constantFrom('80', 'http', '81'),
    }),
    { minLength: 0, maxLength: 3 },
  ),
});
type IngressSpec = typeof arbitraryIngress extends fc.Arbitrary<infer T> ? T : never;

function ingressOf(spec: IngressSpec, slot: number): Ingress {
  const nginx: Record<string, string> = { ...spec.annotations };
  if (spec.canary === 'weight') Object.assign(nginx, { canary: 'true', 'canary-weight': '30' });
  if (spec.canary === 'header') Object.assign(nginx, { canary: 'true', 'canary-by-header': 'x-canary' });
  const hosts = spec.paths.map((p) => p.host).filter((h) => h !== '');
  return ingress(`ing-${slot}`, {
    namespace: spec.namespace,
    created: spec.created,
    nginx,
    ...(spec.defaultBackend === undefined ? {} : { defaultBackend: `${spec.defaultBackend}:80` }),
    ...(spec.tls ? { tls: [{ hosts: [hosts[0] ?? 'a.com'], secretName: 'tls' }] } : {}),
    rules: spec.paths.map((p) =>
      rule(p.host === '' ? undefined : p.host, path(p.path, `${p.svc}:${p.port}`, p.type)),
    ),
  });
}

const arbitraryService = fc.record({
  name: fc.constantFrom(...SERVICES),
  namespace: fc.constantFrom('default', 'team'),
  shape: fc.constantFrom('named', 'unnamed', 'external', 'external-local', 'no-ports'),
});
function serviceOf(spec: typeof arbitraryService extends fc.Arbitrary<infer T> ? T : never): Service {
  if (spec.shape === 'external' || spec.shape === 'external-local') {
    const target = spec.shape === 'external' ? 'api.example.net' : 'localhost';
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: spec.name, namespace: spec.namespace },
      spec: { type: 'ExternalName', externalName: target, ports: [{ port: 80, targetPort: 443 }] },
    };
  }
  const ports =
    spec.shape === 'named'
      ? [{ port: 80, targetPort: 8080, name: 'http' }]
      : spec.shape === 'unnamed'
        ? [{ port: 80, targetPort: 8080 }]
        : [];
  const made = service(spec.name, ports, spec.namespace);
  return { ...made, spec: { ...made.spec, clusterIP: '10.96.0.10' } };
}

const arbitrarySlice = fc.record({
  service: fc.constantFrom(...SERVICES),
  namespace: fc.constantFrom('default', 'team'),
  suffix: fc.constantFrom('a', 'b'),
  addresses: fc.array(fc.constantFrom('10.0.0.1', '10.0.0.2', '10.0.0.3', 'not-an-ip'), { maxLength: 3 }),
  ready: fc.option(fc.boolean(), { nil: undefined }),
  port: fc.constantFrom(8080, 9090),
  named: fc.boolean(),
});
function sliceOf(spec: typeof arbitrarySlice extends fc.Arbitrary<infer T> ? T : never): EndpointSlice {
  return slice(
    spec.service,
    spec.addresses.map((a) => ({
      addresses: [a],
      ...(spec.ready === undefined ? {} : { ready: spec.ready }),
    })),
    [{ port: spec.port, ...(spec.named ? { name: 'http' } : {}) }],
    { name: `${spec.service}-${spec.suffix}`, namespace: spec.namespace },
  );
}

const HTPASSWD = 'alice:$apr1$Jw1v6Q8E$0mP8y1m3oD3Pqe4S9yEpB/\n';
function secretOf(name: string, namespace: string, variant: number): Secret {
  if (name === 'htpasswd') {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace },
      data: { auth: Buffer.from(variant === 0 ? HTPASSWD : 'bob:plain\n').toString('base64') },
    };
  }
  return tlsSecret(name, pem(variant === 0 ? 'a-example' : 'wildcard-example'), namespace);
}

const CONFIGS: ReadonlyArray<Record<string, string> | null> = [
  null,
  {},
  { 'annotation-value-word-blocklist': 'evil' },
  { 'annotations-risk-level': 'Medium' },
  { 'load-balance': 'ewma', 'allow-snippet-annotations': 'true' },
  { 'global-allowed-response-headers': 'X-Team', 'allow-cross-namespace-resources': 'true' },
  { 'proxy-set-headers': 'default/headers', 'ssl-redirect': 'false' },
];

const OPTIONS: ReadonlyArray<Partial<ModelOptions>> = [
  {},
  { disableSvcExternalName: true },
  { defaultBackendService: 'default/s1', enableSslPassthrough: true },
  { disableCatchAll: true },
];

const arbitraryStep = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant('ingress' as const), slot: fc.nat(5), spec: arbitraryIngress }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('delete-ingress' as const), slot: fc.nat(5) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('touch-ingress' as const), slot: fc.nat(5) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('service' as const), spec: arbitraryService }), weight: 2 },
  {
    arbitrary: fc.record({
      op: fc.constant('delete-service' as const),
      name: fc.constantFrom(...SERVICES),
      namespace: fc.constantFrom('default', 'team'),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ op: fc.constant('slice' as const), spec: arbitrarySlice }), weight: 3 },
  {
    arbitrary: fc.record({
      op: fc.constant('delete-slice' as const),
      name: fc.constantFrom(...SERVICES.flatMap((s) => [`${s}-a`, `${s}-b`])),
      namespace: fc.constantFrom('default', 'team'),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('secret' as const),
      name: fc.constantFrom('tls', 'htpasswd'),
      namespace: fc.constantFrom('default', 'team'),
      variant: fc.nat(1),
      remove: fc.boolean(),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('headers' as const),
      namespace: fc.constantFrom('default', 'team'),
      value: fc.option(fc.constantFrom('a', 'b'), { nil: null }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ op: fc.constant('config' as const), index: fc.nat(CONFIGS.length - 1) }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ op: fc.constant('options' as const), index: fc.nat(OPTIONS.length - 1) }),
    weight: 2,
  },
  { arbitrary: fc.record({ op: fc.constant('shuffle' as const), seed: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({ op: fc.constant('trial' as const), slot: fc.nat(5), spec: arbitraryIngress }),
    weight: 2,
  },
);
type Step = typeof arbitraryStep extends fc.Arbitrary<infer T> ? T : never;

const keyOf = (o: KubeObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** Lists kept as the store keeps them: an object replaced stays in its place, a new one is appended. */
class World {
  readonly lists = {
    ingresses: new Map<string, Ingress>(),
    services: new Map<string, Service>(),
    endpointSlices: new Map<string, EndpointSlice>(),
    secrets: new Map<string, Secret>(),
    configMaps: new Map<string, ConfigMap>(),
  };
  options: Partial<ModelOptions> = { configMap: 'ingress/ingress-ts' };
  order: number | null = null;

  put<K extends keyof World['lists']>(
    list: K,
    object: NonNullable<ReturnType<World['lists'][K]['get']>>,
  ): void {
    (this.lists[list] as Map<string, KubeObject>).set(keyOf(object), object);
  }

  snapshot(): Snapshot {
    const listOf = <T>(map: Map<string, T>): T[] => {
      const items = [...map.values()];
      if (this.order === null) return items;
      // another order than the store's: a snapshot built by hand, or by a trial
      let seed = this.order;
      for (let i = items.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        const j = seed % (i + 1);
        [items[i], items[j]] = [items[j] as T, items[i] as T];
      }
      return items;
    };
    return {
      ingresses: listOf(this.lists.ingresses),
      ingressClasses: [ingressClass('ingress-ts')],
      services: listOf(this.lists.services),
      endpointSlices: listOf(this.lists.endpointSlices),
      secrets: listOf(this.lists.secrets),
      configMaps: listOf(this.lists.configMaps),
    };
  }
}

function configMap(namespace: string, name: string, data: Record<string, string>): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name }, data };
}

/** A first world: a few of everything, so the steps change something that is used. */
function seeded(): World {
  const world = new World();
  for (const [i, svc] of ['s1', 's2', 's3'].entries()) {
    world.put(
      'services',
      serviceOf({ name: svc, namespace: 'default', shape: i === 2 ? 'unnamed' : 'named' }),
    );
    world.put(
      'endpointSlices',
      sliceOf({
        service: svc,
        namespace: 'default',
        suffix: 'a',
        addresses: ['10.0.0.1', '10.0.0.2'],
        ready: undefined,
        port: 8080,
        named: true,
      }),
    );
  }
  world.put('secrets', secretOf('tls', 'default', 0));
  world.put('secrets', secretOf('htpasswd', 'default', 0));
  world.put('configMaps', configMap('default', 'headers', { 'X-Team': 'a' }));
  // one Ingress per annotation set, which every later ConfigMap or options change meets
  for (const [k, annotations] of ANNOTATIONS.entries()) {
    const seed = ingressOf(
      {
        namespace: k % 3 === 0 ? 'team' : 'default',
        created: k % 4,
        annotations,
        canary: k % 5 === 4 ? 'weight' : null,
        tls: k % 2 === 0,
        defaultBackend: k % 7 === 3 ? 's2' : undefined,
        paths: [
          {
            host: HOSTS[k % 4] ?? '',
            path: PATHS[k % 5] ?? '/',
            type: 'Prefix',
            svc: SERVICES[k % 4] ?? 's1',
            port: k % 3 === 0 ? 'http' : '80',
          },
        ],
      },
      100 + k,
    );
    world.put('ingresses', seed);
  }
  return world;
}

function apply(world: World, step: Step): void {
  const { lists } = world;
  switch (step.op) {
    case 'ingress':
      world.put('ingresses', ingressOf(step.spec, step.slot));
      break;
    case 'delete-ingress':
      for (const key of lists.ingresses.keys()) {
        if (key.endsWith(`/ing-${step.slot}`) || key.endsWith(`/ing-${100 + step.slot * 3}`))
          lists.ingresses.delete(key);
      }
      break;
    case 'touch-ingress':
      for (const [key, object] of lists.ingresses) {
        if (key.endsWith(`/ing-${step.slot}`)) lists.ingresses.set(key, structuredClone(object));
      }
      break;
    case 'service':
      world.put('services', serviceOf(step.spec));
      break;
    case 'delete-service':
      lists.services.delete(`${step.namespace}/${step.name}`);
      break;
    case 'slice':
      world.put('endpointSlices', sliceOf(step.spec));
      break;
    case 'delete-slice':
      lists.endpointSlices.delete(`${step.namespace}/${step.name}`);
      break;
    case 'secret':
      if (step.remove) lists.secrets.delete(`${step.namespace}/${step.name}`);
      else world.put('secrets', secretOf(step.name, step.namespace, step.variant));
      break;
    case 'headers':
      if (step.value === null) lists.configMaps.delete(`${step.namespace}/headers`);
      else world.put('configMaps', configMap(step.namespace, 'headers', { 'X-Team': step.value }));
      break;
    case 'config': {
      const data = CONFIGS[step.index] ?? null;
      if (data === null) lists.configMaps.delete('ingress/ingress-ts');
      else world.put('configMaps', configMap('ingress', 'ingress-ts', data));
      break;
    }
    case 'options':
      world.options = { configMap: 'ingress/ingress-ts', ...OPTIONS[step.index] };
      break;
    case 'shuffle':
      world.order = step.seed % 3 === 0 ? null : step.seed;
      break;
    case 'trial':
      break;
  }
}

function differences(t: Test, cached: BuildResult, fresh: BuildResult, what: string): boolean {
  if (
    isDeepStrictEqual(cached.model, fresh.model) &&
    isDeepStrictEqual(cached.diagnostics, fresh.diagnostics) &&
    isDeepStrictEqual(cached.references, fresh.references)
  ) {
    return false;
  }
  t.strictSame(cached.diagnostics, fresh.diagnostics, `${what}: diagnostics`);
  t.strictSame(cached.references, fresh.references, `${what}: references`);
  t.strictSame(cached.model, fresh.model, `${what}: model`);
  return true;
}

function run(t: Test, steps: readonly Step[], caches: BuildCaches): boolean {
  const world = seeded();
  for (const [i, step] of steps.entries()) {
    apply(world, step);
    let snapshot = world.snapshot();
    if (step.op === 'trial') {
      // one Ingress replaced in the snapshot the next build also gets, built through the same caches
      const trial = ingressOf(step.spec, step.slot);
      const ingresses = snapshot.ingresses.filter((o) => keyOf(o) !== keyOf(trial));
      const trialSnapshot = { ...snapshot, ingresses: [...ingresses, trial] };
      const cached = buildModel(trialSnapshot, world.options, caches);
      const fresh = buildModel(trialSnapshot, world.options);
      if (differences(t, cached, fresh, `step ${i} (trial)`)) return false;
      snapshot = world.snapshot();
    }
    const cached = buildModel(snapshot, world.options, caches);
    const fresh = buildModel(snapshot, world.options);
    if (differences(t, cached, fresh, `step ${i} (${step.op})`)) return false;
  }
  return true;
}

t.test('random changes: the build through kept caches equals the build from scratch', async (t) => {
  fc.assert(
    fc.property(fc.array(arbitraryStep, { minLength: 1, maxLength: 30 }), (steps) =>
      run(t, steps, createBuildCaches()),
    ),
    { numRuns: 150, seed: Number(process.env.BUILD_REUSE_SEED ?? 20261126) },
  );
});

t.test('one cache for every sequence: nothing one world left behind leaks into the next', async (t) => {
  const caches = createBuildCaches();
  fc.assert(
    fc.property(fc.array(arbitraryStep, { minLength: 1, maxLength: 15 }), (steps) => run(t, steps, caches)),
    { numRuns: 60, seed: 7 },
  );
});

t.test('names kept in order from build to build equal the names sorted', async (t) => {
  const kept = new SortedNames();
  const name = fc.constantFrom(
    'a',
    'b',
    'b.a',
    'B',
    'c-1',
    'c-10',
    'c-2',
    'é',
    'z',
    '',
    '*.w',
    'x'.repeat(3),
  );
  fc.assert(
    fc.property(
      fc.array(fc.uniqueArray(fc.oneof(name, fc.string()), { maxLength: 90 }), { maxLength: 8 }),
      (sets) => {
        for (const set of sets) {
          const names = new Map(set.map((n) => [n, true]));
          const sorted = [...names.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
          if (!isDeepStrictEqual([...kept.of(names)], sorted)) {
            t.strictSame(kept.of(names), sorted);
            return false;
          }
        }
        return true;
      },
    ),
    { numRuns: 300, seed: 11 },
  );
});

t.test('Ingresses kept in order from build to build equal the Ingresses sorted', async (t) => {
  const order = new IngressOrder();
  // same creation second for many, one namespace/name twice (a hand-made snapshot): ties
  const universe = Array.from({ length: 14 }, (_, i) =>
    ingress(i === 13 ? 'ing-0' : `ing-${i}`, { namespace: i % 3 === 0 ? 'team' : 'default', created: i % 4 }),
  );
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.nat(universe.length - 1), { maxLength: 20 }), { maxLength: 8 }),
      (lists) => {
        for (const list of lists) {
          const ingresses = list.map((i) => universe[i] as Ingress);
          const kept = order.sort(ingresses);
          const sorted = sortIngresses(ingresses);
          if (kept.length !== sorted.length || kept.some((ing, i) => ing !== sorted[i])) {
            t.strictSame(kept, sorted);
            return false;
          }
        }
        return true;
      },
    ),
    { numRuns: 400, seed: 13 },
  );
});
