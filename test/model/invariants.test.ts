// Properties every build must keep: deterministic, order-independent, hash semantics, plain data,
// input untouched, and oldest-wins on random clusters.
import fc from 'fast-check';
import t from 'tap';
import { buildModel, type Ingress, type Snapshot } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice, snapshotOf } from './helpers.ts';

const HOSTS = ['a.com', 'b.com', '*.c.com', ''];
const PATHS = ['/', '/api', '/api/', '/x', '/x/y'];
const TYPES = ['Exact', 'Prefix', 'ImplementationSpecific'];

const arbitraryIngress = fc.record({
  namespace: fc.constantFrom('default', 'team-a', 'team-b'),
  created: fc.integer({ min: 0, max: 5 }),
  paths: fc.array(
    fc.record({
      host: fc.constantFrom(...HOSTS),
      path: fc.constantFrom(...PATHS),
      type: fc.constantFrom(...TYPES),
      svc: fc.constantFrom('s1', 's2', 's3'),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  defaultBackend: fc.option(fc.constantFrom('d1', 'd2'), { nil: undefined }),
});

const arbitraryCluster = fc.uniqueArray(arbitraryIngress, { minLength: 1, maxLength: 8 }).map((specs) =>
  specs.map((spec, index) =>
    ingress(`ing-${index}`, {
      namespace: spec.namespace,
      created: spec.created,
      ...(spec.defaultBackend === undefined ? {} : { defaultBackend: `${spec.defaultBackend}:80` }),
      rules: spec.paths.map((p) => rule(p.host || undefined, path(p.path, `${p.svc}:80`, p.type))),
    }),
  ),
);

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed || 1;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

t.test('invariants: the same snapshot gives the same model, hashes and diagnostics', async (t) => {
  fc.assert(
    fc.property(arbitraryCluster, (ingresses) => {
      const snapshot = snapshotOf({ ingresses });
      const first = buildModel(snapshot);
      const second = buildModel(snapshot);
      t.strictSame(second, first);
    }),
    { numRuns: 50 },
  );
});

t.test('invariants: the order of the input lists does not matter', async (t) => {
  fc.assert(
    fc.property(arbitraryCluster, fc.integer({ min: 1, max: 1_000_000 }), (ingresses, seed) => {
      const snapshot = snapshotOf({ ingresses });
      const reordered: Snapshot = {
        ...snapshot,
        ingresses: shuffled(snapshot.ingresses, seed),
        services: shuffled(snapshot.services, seed + 1),
        endpointSlices: shuffled(snapshot.endpointSlices, seed + 2),
      };
      const a = buildModel(snapshot);
      const b = buildModel(reordered);
      t.equal(b.model.hash, a.model.hash);
      t.strictSame(b.model, a.model);
      t.strictSame(b.diagnostics, a.diagnostics);
    }),
    { numRuns: 50 },
  );
});

t.test(
  'invariants: every route belongs to the oldest Ingress that defines its host, path and type',
  async (t) => {
    fc.assert(
      fc.property(arbitraryCluster, (ingresses) => {
        const { model } = build({ ingresses });
        const order = (ing: Ingress) =>
          [
            Date.parse(ing.metadata?.creationTimestamp ?? ''),
            `${ing.metadata?.namespace}/${ing.metadata?.name}`,
          ] as const;
        for (const server of [...model.servers, model.catchAll]) {
          for (const route of server.routes) {
            // every Ingress that defines the same host + path + type (Prefix compared by element)
            const key = (p: string) =>
              route.pathType === 'Prefix' && !server.regex ? p.replace(/\/+$/, '') || '/' : p;
            const definers = ingresses.filter((ing) =>
              (ing.spec?.rules ?? []).some(
                (r) =>
                  (r.host ?? '_') === (server.hostname === '_' ? '_' : server.hostname) &&
                  (r.http?.paths ?? []).some(
                    (p) =>
                      key(p.path ?? '') === key(route.path) &&
                      (p.pathType === 'Exact' ? 'Exact' : 'Prefix') === route.pathType,
                  ),
              ),
            );
            const oldest = definers.sort((x, y) => {
              const [xs, xk] = order(x);
              const [ys, yk] = order(y);
              return xs !== ys ? xs - ys : xk > yk ? -1 : xk < yk ? 1 : 0;
            })[0];
            t.strictSame(
              route.ingress,
              { namespace: oldest?.metadata?.namespace, name: oldest?.metadata?.name },
              `${server.hostname} ${route.pathType} ${route.path}`,
            );
          }
        }
      }),
      { numRuns: 100 },
    );
  },
);

t.test('invariants: the model is plain data (structuredClone and JSON round-trip unchanged)', async (t) => {
  fc.assert(
    fc.property(arbitraryCluster, (ingresses) => {
      const { model, diagnostics } = build({ ingresses });
      t.strictSame(structuredClone(model), model);
      t.strictSame(JSON.parse(JSON.stringify(model)), model);
      t.strictSame(structuredClone(diagnostics), diagnostics);
    }),
    { numRuns: 20 },
  );
});

t.test('invariants: building never mutates the snapshot', async (t) => {
  fc.assert(
    fc.property(arbitraryCluster, (ingresses) => {
      const snapshot = deepFreeze(snapshotOf({ ingresses }));
      const before = JSON.stringify(snapshot);
      buildModel(snapshot);
      t.equal(JSON.stringify(snapshot), before);
    }),
    { numRuns: 20 },
  );
});

t.test('invariants: hashes', async (t) => {
  const ingresses = [ingress('a', { rules: [rule('a.com', path('/', 'web:80'))] })];
  const services = [service('web', [{ port: 80 }])];
  const endpoints = (addresses: string[]) => [slice('web', [{ addresses }], [{ port: 80 }])];
  const base = build({ ingresses, services, slices: endpoints(['10.0.0.1']) }).model;

  const sameAgain = build({ ingresses, services, slices: endpoints(['10.0.0.1']) }).model;
  t.equal(sameAgain.hash, base.hash, 'unchanged objects: same hash');

  const moved = build({ ingresses, services, slices: endpoints(['10.0.0.2']) }).model;
  t.not(moved.hash, base.hash, 'endpoint change: hash changes');
  t.equal(moved.routesHash, base.routesHash, 'endpoint change: routesHash stays');

  const rerouted = build({
    ingresses: [ingress('a', { rules: [rule('a.com', path('/v2', 'web:80'))] })],
    services,
    slices: endpoints(['10.0.0.1']),
  }).model;
  t.not(rerouted.routesHash, base.routesHash, 'route change: routesHash changes');
  t.not(rerouted.hash, base.hash, 'route change: hash changes');

  const touched = build({
    ingresses: [
      { ...ingresses[0], metadata: { ...ingresses[0]?.metadata, resourceVersion: '99' } } as Ingress,
    ],
    services,
    slices: endpoints(['10.0.0.1']),
  }).model;
  t.equal(touched.hash, base.hash, 'a new resourceVersion alone changes nothing');
});

t.test('invariants: references list the Services the model resolved', async (t) => {
  const { references } = build({
    ingresses: [ingress('a', { rules: [rule('a.com', path('/', 'web:80'), path('/b', 'other:80'))] })],
  });
  t.strictSame(references.services, ['default/web', 'default/other']);
});
