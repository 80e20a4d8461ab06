// The store with the Gateway API kinds, as tables: when a change to them builds, that they reach the
// snapshot only once the Gateway API is on, and that a Service or Secret only an HTTPRoute or a
// Gateway names builds through the build's references like any other (hand-made references: the
// build records the lookups of its Gateway half as it does an Ingress's).
import t, { type Test } from 'tap';
import type { KubeObject, ModelReferences } from '../../../lib/model/index.ts';
import { ObjectStore, type StoreKind } from '../../../lib/store/store.ts';

const CLASSES = {
  controllerClass: 'ingress-ts.dev/controller',
  ingressClass: 'ingress-ts',
  ingressClassByName: false,
  watchIngressWithoutClass: false,
};

let version = 0;
const object = (namespace: string, name: string, fields: Record<string, unknown> = {}): KubeObject =>
  ({
    metadata: {
      ...(namespace === '' ? {} : { namespace }),
      name,
      resourceVersion: String(++version),
      generation: 1,
    },
    ...fields,
  }) as KubeObject;
const again = (o: KubeObject, change: (copy: Record<string, unknown>) => void = () => {}): KubeObject => {
  const copy = structuredClone(o) as Record<string, unknown> & KubeObject;
  (copy.metadata as { resourceVersion: string }).resourceVersion = String(++version);
  change(copy);
  return copy;
};

type Step =
  | [op: 'upsert' | 'remove', kind: StoreKind, object: KubeObject, relevant: boolean, why: string]
  | [op: 'references', references: ModelReferences]
  | [op: 'namespaces', names: string[]];

function run(t: Test, store: ObjectStore, steps: Step[]): void {
  for (const step of steps) {
    if (step[0] === 'references') store.setReferences(step[1]);
    else if (step[0] === 'namespaces') store.setNamespaces(step[1]);
    else {
      const [op, kind, o, relevant, why] = step;
      t.equal(op === 'upsert' ? store.upsert(kind, o) : store.remove(kind, o), relevant, why);
    }
  }
}

t.test('Gateway API kinds: a change to what the build reads builds; a status write does not', async (t) => {
  const store = new ObjectStore({ classes: CLASSES, configMap: null, gatewayApi: true });
  const route = object('web', 'site', { spec: { hostnames: ['a.test'] } });
  const routeStatus = again(route, (c) => {
    c.status = { parents: [] };
  });
  const routeSpec = again(routeStatus, (c) => {
    c.spec = { hostnames: ['b.test'] };
    (c.metadata as { generation: number }).generation = 2;
  });
  const gatewayClass = object('', 'ingress-ts', { spec: { controllerName: 'x.dev/y' } });
  const namespace = object('', 'web', {});
  run(t, store, [
    ['upsert', 'HTTPRoute', route, true, 'a new HTTPRoute'],
    ['upsert', 'HTTPRoute', route, false, 'the same resourceVersion again'],
    ['upsert', 'HTTPRoute', routeStatus, false, 'its status only (the leader wrote it)'],
    ['upsert', 'HTTPRoute', routeSpec, true, 'its spec'],
    ['upsert', 'GatewayClass', gatewayClass, true, 'any GatewayClass (the build checks the controllerName)'],
    ['upsert', 'Gateway', object('infra', 'edge', { spec: {} }), true, 'a Gateway'],
    ['upsert', 'ReferenceGrant', object('backends', 'grant', { spec: {} }), true, 'a ReferenceGrant'],
    ['upsert', 'Namespace', namespace, true, 'a Namespace'],
    [
      'upsert',
      'Namespace',
      again(namespace, (c) => {
        (c.metadata as { labels: Record<string, string> }).labels = { team: 'web' };
      }),
      true,
      'its labels (allowedRoutes selectors)',
    ],
    ['remove', 'HTTPRoute', routeSpec, true, 'a deleted HTTPRoute'],
  ]);
  const snapshot = store.snapshot();
  t.same(
    [
      snapshot.gatewayClasses,
      snapshot.gateways,
      snapshot.httpRoutes,
      snapshot.referenceGrants,
      snapshot.namespaces,
    ].map((list) => list?.length),
    [1, 1, 0, 1, 1],
  );
  t.equal(snapshot.gateways?.[0]?.metadata?.generation, 1, 'metadata.generation kept');
});

t.test('off until enableGatewayApi: stored, not in the snapshot, no build', async (t) => {
  const store = new ObjectStore({ classes: CLASSES, configMap: null });
  run(t, store, [['upsert', 'Gateway', object('infra', 'edge'), false, 'the Gateway API is off']]);
  const off = store.snapshot();
  t.notOk('gateways' in off, 'no Gateway API lists at all');
  t.notOk('namespaces' in off);
  store.enableGatewayApi();
  const on = store.snapshot();
  t.not(on, off, 'a new snapshot');
  t.same(
    on.gateways?.map((g) => g.metadata?.name),
    ['edge'],
    'what was stored before',
  );
  t.same(on.httpRoutes, [], 'empty lists: the CRDs are installed');
});

t.test('--watch-namespace-selector scopes the namespaced kinds, not classes or Namespaces', async (t) => {
  const store = new ObjectStore({
    classes: CLASSES,
    configMap: null,
    gatewayApi: true,
    selectNamespaces: true,
  });
  run(t, store, [
    ['namespaces', ['web']],
    ['upsert', 'HTTPRoute', object('other', 'r'), false, 'an HTTPRoute outside the selection'],
    ['upsert', 'HTTPRoute', object('web', 'r'), true, 'one inside'],
    ['upsert', 'GatewayClass', object('', 'c'), true, 'GatewayClasses are cluster-scoped'],
    ['upsert', 'Namespace', object('', 'other'), true, 'every Namespace counts (their labels)'],
  ]);
  const snapshot = store.snapshot();
  t.same(
    snapshot.httpRoutes?.map((r) => r.metadata?.namespace),
    ['web'],
  );
  t.same(
    snapshot.namespaces?.map((n) => n.metadata?.name),
    ['other'],
  );
});

t.test('a Service or Secret only an HTTPRoute or Gateway names builds through the references', async (t) => {
  const store = new ObjectStore({ classes: CLASSES, configMap: null, gatewayApi: true });
  const routeBackend = object('backends', 'api', { spec: { ports: [{ port: 80 }] } });
  const listenerSecret = object('infra', 'edge-tls', { data: {} });
  run(t, store, [
    ['upsert', 'HTTPRoute', object('web', 'site', { spec: {} }), true, 'the route'],
    ['upsert', 'Service', routeBackend, true, 'before the first build every Service counts'],
    // what the build of the route looked up: its backendRef's Service, its Gateway's certificate
    ['references', { services: ['backends/api'], secrets: ['infra/edge-tls'] }],
    [
      'upsert',
      'Service',
      again(routeBackend, (c) => {
        c.spec = { ports: [{ port: 81 }] };
      }),
      true,
      'the backendRef Service changed',
    ],
    ['upsert', 'Secret', listenerSecret, true, "the listener's certificateRef Secret"],
    ['upsert', 'Service', object('backends', 'unused'), false, 'a Service nothing names'],
    ['upsert', 'Secret', object('infra', 'unused'), false, 'a Secret nothing names'],
  ]);
});
