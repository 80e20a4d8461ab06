// A data-plane thread rebuilds each model from the one it serves plus a delta (model-delta.ts). Over
// random sequences of cluster changes (Ingresses added, edited, removed; endpoints moved; TLS Secrets
// swapped; the ConfigMap changed), previous + delta must deep-equal the model the build made, key
// order included, and a thread that joins mid-stream (the whole model, then deltas) must hold the
// same models as one that saw every change.
import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import {
  DeltaBaseError,
  diffModel,
  keysOf,
  orderOf,
  patchModel,
} from '../../../lib/dataplane/worker/model-delta.ts';
import type { ConfigMap, Ingress, Model } from '../../../lib/model/index.ts';
import { build, ingress, path, pem, rule, service, slice, tlsSecret } from '../../model/helpers.ts';

// ~10 s of CPU for the random runs: tap's default 30 s is too tight when the machine is shared
t.setTimeout(120_000);

const HOSTS = ['a.com', 'b.com', 'c.com', '*.w.com', 'd.com'];
const PATHS = ['/', '/api', '/x', '/x/(y)'];
const SERVICES = ['s1', 's2', 's3', 's4'];
const ADDRESSES = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
const ANNOTATIONS: ReadonlyArray<Record<string, string>> = [
  {},
  { 'use-regex': 'true', 'rewrite-target': '/$1' },
  { 'limit-rps': '5' },
  { affinity: 'cookie' },
  { 'upstream-hash-by': '$request_uri' },
  { 'load-balance': 'ewma' },
  { 'server-alias': 'alias.com' },
  { 'custom-http-errors': '404', 'default-backend': 's4' },
];
const PEMS = ['a-example', 'wildcard-example', 'other'];

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
      svc: fc.constantFrom(...SERVICES),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});
type IngressSpec = typeof arbitraryIngress extends fc.Arbitrary<infer T> ? T : never;

interface Cluster {
  ingresses: Array<IngressSpec | null>;
  /** per service, its ready addresses */
  endpoints: Record<string, string[]>;
  certificate: string;
  config: Record<string, string> | null;
}

const arbitraryEndpoints = fc.subarray(ADDRESSES);
const arbitraryConfig = fc.constantFrom<Record<string, string> | null>(
  null,
  { 'proxy-connect-timeout': '3' },
  { 'load-balance': 'ewma' },
);
const arbitraryCluster: fc.Arbitrary<Cluster> = fc.record({
  ingresses: fc.array(fc.option(arbitraryIngress, { nil: null }), { minLength: 1, maxLength: 6 }),
  endpoints: fc.record(Object.fromEntries(SERVICES.map((s) => [s, arbitraryEndpoints]))),
  certificate: fc.constantFrom(...PEMS),
  config: arbitraryConfig,
});
/** One change: an Ingress replaced, added or removed, or endpoints moved, or the TLS Secret or ConfigMap changed. */
const arbitraryChange = fc.oneof(
  fc.record({ at: fc.nat(7), to: fc.option(arbitraryIngress, { nil: null }) }),
  fc.record({ service: fc.constantFrom(...SERVICES), addresses: arbitraryEndpoints }),
  fc.record({ certificate: fc.constantFrom(...PEMS) }),
  fc.record({ config: arbitraryConfig }),
);
type Change = typeof arbitraryChange extends fc.Arbitrary<infer T> ? T : never;

function changed(cluster: Cluster, change: Change): Cluster {
  if ('at' in change) {
    const ingresses = [...cluster.ingresses];
    ingresses[change.at % (ingresses.length + 1)] = change.to;
    return { ...cluster, ingresses: ingresses.map((spec) => spec ?? null) };
  }
  if ('service' in change)
    return { ...cluster, endpoints: { ...cluster.endpoints, [change.service]: change.addresses } };
  if ('certificate' in change) return { ...cluster, certificate: change.certificate };
  return { ...cluster, config: change.config };
}

function ingressOf(spec: IngressSpec, index: number): Ingress {
  const nginx: Record<string, string> = { ...spec.annotations };
  if (spec.canary) Object.assign(nginx, { canary: 'true', 'canary-weight': '30' });
  const hosts = [...new Set(spec.paths.map((p) => p.host))];
  return ingress(`ing-${index}`, {
    namespace: spec.namespace,
    created: spec.created,
    nginx,
    ...(spec.tls ? { tls: [{ hosts: [hosts[0] ?? 'a.com'], secretName: 'tls' }] } : {}),
    rules: spec.paths.map((p) => rule(p.host, path(p.path, `${p.svc}:80`))),
  });
}

function configMap(data: Record<string, string>): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'ingress', name: 'ingress-ts' },
    data,
  };
}

/** The model as a thread receives it: decoded from bytes, sharing nothing with the build. */
function modelOf(cluster: Cluster): Model {
  const namespaces = ['default', 'team'];
  const model = build(
    {
      ingresses: cluster.ingresses.flatMap((spec, i) => (spec === null ? [] : [ingressOf(spec, i)])),
      services: namespaces.flatMap((ns) =>
        SERVICES.map((s) => service(s, [{ port: 80, targetPort: 80 }], ns)),
      ),
      slices: namespaces.flatMap((ns) =>
        SERVICES.map((s) =>
          slice(s, [{ addresses: cluster.endpoints[s] ?? [] }], [{ port: 80 }], { namespace: ns }),
        ),
      ),
      secrets: namespaces.map((ns) => tlsSecret('tls', pem(cluster.certificate), ns)),
      configMaps: cluster.config === null ? [] : [configMap(cluster.config)],
      autoBackends: false,
    },
    { configMap: 'ingress/ingress-ts' },
  ).model;
  return deserialize(serialize(model)) as Model;
}

/** Deep equality with the order of every record's keys (upstreams, certificates, hashes) checked too. */
function sameModel(t: Test, actual: Model, expected: Model, message: string): boolean {
  return (
    t.strictSame(actual, expected, message) &&
    t.strictSame(
      Object.keys(actual.upstreams),
      Object.keys(expected.upstreams),
      `${message}: upstream order`,
    ) &&
    t.strictSame(
      Object.keys(actual.contentHashes?.upstreams ?? {}),
      Object.keys(expected.contentHashes?.upstreams ?? {}),
      `${message}: upstream hash order`,
    ) &&
    t.strictSame(
      Object.keys(actual.certificates),
      Object.keys(expected.certificates),
      `${message}: certificates`,
    )
  );
}

t.test('previous + delta = the model, over random change sequences', async (t) => {
  let small = 0;
  let steps = 0;
  fc.assert(
    fc.property(
      arbitraryCluster,
      fc.array(arbitraryChange, { minLength: 1, maxLength: 8 }),
      fc.nat(8),
      (first, changes, joinAt) => {
        let cluster = first;
        let held = modelOf(cluster);
        // a thread that starts mid-stream: the whole model at `joinAt`, deltas after
        let late: Model | null = null;
        for (const [index, change] of changes.entries()) {
          cluster = changed(cluster, change);
          const next = modelOf(cluster);
          const delta = diffModel(held, next);
          if (delta === null) return t.fail('models from the build carry content hashes');
          // what crosses to the thread: serialised bytes
          const sent = deserialize(serialize(delta)) as typeof delta;
          const served = deserialize(serialize(held)) as Model;
          const rebuilt = patchModel(held, sent);
          if (!sameModel(t, rebuilt, next, `change ${index}`)) return false;
          // the model served meanwhile (and kept if the prepare is discarded) is left as it was
          if (!sameModel(t, held, served, `change ${index}: the served model is untouched`)) return false;
          if (late !== null) {
            const lateModel = patchModel(late, diffModel(late, next) ?? sent);
            if (!sameModel(t, lateModel, rebuilt, `the late thread at change ${index}`)) return false;
            late = lateModel;
          } else if (index === joinAt) {
            late = deserialize(serialize(next)) as Model;
          }
          steps++;
          if (delta.servers.changed.length + delta.upstreams.changed.length < next.servers.length) small++;
          held = rebuilt;
        }
        return true;
      },
    ),
    { numRuns: 200 },
  );
  t.ok(small > steps / 4, `deltas carried less than the whole model (${small} of ${steps})`);
});

t.test('an unchanged model is an empty delta; an endpoints move carries that upstream alone', async (t) => {
  const cluster: Cluster = {
    ingresses: [
      {
        namespace: 'default',
        created: 1,
        annotations: {},
        canary: false,
        tls: false,
        paths: [
          { host: 'a.com', path: '/', svc: 's1' },
          { host: 'b.com', path: '/', svc: 's2' },
        ],
      },
    ],
    endpoints: { s1: ['10.0.0.1'], s2: ['10.0.0.2'], s3: [], s4: [] },
    certificate: 'a-example',
    config: null,
  };
  const a = modelOf(cluster);
  const same = diffModel(a, modelOf(cluster));
  t.strictSame(
    [same?.servers.changed, same?.upstreams.changed, same?.certificates.changed, same?.catchAll],
    [[], [], [], null],
  );
  const moved = modelOf({ ...cluster, endpoints: { ...cluster.endpoints, s2: ['10.0.0.3'] } });
  const delta = diffModel(a, moved);
  t.strictSame(
    delta?.upstreams.changed.map(([name]) => name),
    ['default-s2-80'],
  );
  t.strictSame(delta?.servers.changed, []);
  t.equal(delta?.routesHash, a.routesHash, 'routes unchanged: the thread updates endpoints in place');
  if (delta === null) {
    t.fail('no delta');
    return;
  }
  const rebuilt = patchModel(a, delta);
  t.equal(rebuilt.servers[0], a.servers[0], 'unchanged servers are the very objects the thread held');
});

t.test('a path pointed at another Service in use: no upstream moves, the record is shared', async (t) => {
  const spec = (paths: IngressSpec['paths'], created: number): IngressSpec => ({
    namespace: 'default',
    created,
    annotations: {},
    canary: false,
    tls: false,
    paths,
  });
  const cluster: Cluster = {
    ingresses: [
      spec(
        [
          { host: 'a.com', path: '/', svc: 's3' },
          { host: 'a.com', path: '/x', svc: 's1' },
        ],
        1,
      ),
      spec([{ host: 'b.com', path: '/', svc: 's2' }], 2),
      spec([{ host: 'c.com', path: '/', svc: 's3' }], 3),
    ],
    endpoints: { s1: ['10.0.0.1'], s2: ['10.0.0.2'], s3: ['10.0.0.3'], s4: [] },
    certificate: 'a-example',
    config: null,
  };
  const a = modelOf(cluster);
  // a.com/ now goes to s2: in first-use order s3 would move behind s1 and s2
  const first = cluster.ingresses[0] as IngressSpec;
  const moved = spec([{ host: 'a.com', path: '/', svc: 's2' }, ...first.paths.slice(1)], 1);
  const b = modelOf({ ...cluster, ingresses: [moved, ...cluster.ingresses.slice(1)] });
  const delta = diffModel(a, b);
  if (delta === null) {
    t.fail('no delta');
    return;
  }
  t.strictSame(
    delta.servers.changed.map(([hostname]) => hostname),
    ['a.com'],
  );
  t.strictSame([delta.upstreams.changed, delta.upstreams.removed], [[], []]);
  t.equal(delta.upstreams.order, null, 'the same upstream names in the same order');
  const rebuilt = patchModel(a, delta);
  t.equal(rebuilt.upstreams, a.upstreams, 'the thread keeps the record it held, no rebuild');
  sameModel(t, rebuilt, b, 'rebuilt');
});

t.test('a delta for another model is refused', async (t) => {
  const a = modelOf({ ingresses: [], endpoints: {}, certificate: 'a-example', config: null });
  const b = modelOf({
    ingresses: [],
    endpoints: {},
    certificate: 'a-example',
    config: { 'load-balance': 'ewma' },
  });
  const delta = diffModel(a, b);
  t.ok(delta);
  if (delta === null) return;
  let refused: unknown = null;
  try {
    patchModel(b, delta);
  } catch (error) {
    refused = error;
  }
  t.ok(refused instanceof DeltaBaseError, 'the thread serves another model');
  t.throws(() => patchModel(null, delta), { code: 'DATAPLANE_DELTA_BASE_MISMATCH' });
  const { contentHashes: _, ...byHand } = a;
  t.equal(diffModel(byHand, b), null, 'a model without content hashes: only the whole model will do');
});

t.test('key order: runs of the previous keys and added keys', async (t) => {
  const cases: Array<[string[], string[], Array<string | [number, number]>]> = [
    [['a', 'b', 'c'], ['a', 'b', 'c'], [[0, 3]]],
    [
      ['a', 'c', 'e'],
      ['a', 'b', 'c', 'd', 'e'],
      [[0, 1], 'b', [1, 1], 'd', [2, 1]],
    ],
    [
      ['a', 'b', 'c', 'd'],
      ['a', 'd', 'b', 'c'],
      [
        [0, 1],
        [3, 1],
        [1, 2],
      ],
    ],
    [
      ['x', 'a'],
      ['a', 'm'],
      [[1, 1], 'm'],
    ],
    [['x'], [], []],
  ];
  for (const [previous, next, expected] of cases) {
    const order = orderOf(new Map(previous.map((key, index) => [key, index])), next);
    t.strictSame(order, expected, `${previous} → ${next}`);
    t.strictSame(keysOf(order, previous), next, 'and back');
  }
});
