// The object store's relevance filter, as tables: a sequence of store operations in, and for each
// whether it may change the model (would trigger a build). Then the snapshot it serves.
import t, { type Test } from 'tap';
import type { KubeObject, ModelReferences } from '../../lib/model/index.ts';
import { ObjectStore, type StoreKind, type StoreOptions } from '../../lib/store/store.ts';

const CLASSES: StoreOptions['classes'] = {
  controllerClass: 'ingress-ts.dev/controller',
  ingressClass: 'ingress-ts',
  ingressClassByName: false,
  watchIngressWithoutClass: false,
};

let version = 0;
const rv = () => String(++version);

function ingress(name: string, className: string | null, extra: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { namespace: 'web', name, resourceVersion: rv() },
    spec: { ...(className === null ? {} : { ingressClassName: className }), ...extra },
  } as KubeObject;
}
const ingressClass = (name: string, controller: string): KubeObject =>
  ({ metadata: { name, resourceVersion: rv() }, spec: { controller } }) as KubeObject;
const service = (namespace: string, name: string, port = 80): KubeObject =>
  ({ metadata: { namespace, name, resourceVersion: rv() }, spec: { ports: [{ port }] } }) as KubeObject;
const secret = (namespace: string, name: string, value = 'a'): KubeObject =>
  ({ metadata: { namespace, name, resourceVersion: rv() }, data: { 'tls.crt': value } }) as KubeObject;
const configMap = (namespace: string, name: string): KubeObject =>
  ({ metadata: { namespace, name, resourceVersion: rv() }, data: {} }) as KubeObject;
function slice(
  name: string,
  serviceName: string,
  addresses: string[],
  extra: { ready?: boolean; label?: string; zone?: string } = {},
): KubeObject {
  return {
    metadata: {
      namespace: 'web',
      name,
      resourceVersion: rv(),
      labels: { 'kubernetes.io/service-name': serviceName, ...(extra.label ? { extra: extra.label } : {}) },
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: addresses.map((address) => ({
      addresses: [address],
      conditions: { ready: extra.ready ?? true, serving: true, terminating: false },
      ...(extra.zone ? { zone: extra.zone } : {}),
    })),
  } as KubeObject;
}
/** the same object again: same resourceVersion (a relist, a replayed event) */
const again = (object: KubeObject): KubeObject => structuredClone(object);
/** the same content under a new resourceVersion */
const bumped = (object: KubeObject): KubeObject => {
  const copy = structuredClone(object);
  (copy.metadata as { resourceVersion: string }).resourceVersion = rv();
  return copy;
};

const withSpec = (object: KubeObject, spec: unknown): KubeObject =>
  ({ ...bumped(object), spec }) as KubeObject;
let statusCount = 0;
const withStatus = (object: KubeObject): KubeObject =>
  ({
    ...bumped(object),
    status: { loadBalancer: { ingress: [{ ip: `192.0.2.${++statusCount}` }] } },
  }) as KubeObject;
const withAnnotation = (object: KubeObject): KubeObject => {
  const copy = bumped(object);
  (copy.metadata as { annotations?: Record<string, string> }).annotations = { a: 'b' };
  return copy;
};

type Step =
  | [op: 'upsert' | 'remove', kind: StoreKind, object: KubeObject, relevant: boolean, why: string]
  | [op: 'references', references: ModelReferences]
  | [op: 'namespaces', names: string[], relevant: boolean, why: string];

function run(t: Test, steps: Step[], options: Partial<StoreOptions> = {}): ObjectStore {
  const store = new ObjectStore({ classes: CLASSES, configMap: 'ingress/config', ...options });
  for (const step of steps) {
    if (step[0] === 'references') {
      store.setReferences(step[1]);
      continue;
    }
    if (step[0] === 'namespaces') {
      t.equal(store.setNamespaces(step[1]), step[2], step[3]);
      continue;
    }
    const [op, kind, object, relevant, why] = step;
    t.equal(op === 'upsert' ? store.upsert(kind, object) : store.remove(kind, object), relevant, why);
  }
  return store;
}

const names = (objects: readonly KubeObject[]) => objects.map((o) => o.metadata?.name).sort();

t.test('Ingresses: ours before or after matters; other classes and repeats do not', async (t) => {
  const owned = ingressClass('ingress-ts', 'ingress-ts.dev/controller');
  const ours = ingress('a', 'ingress-ts');
  const theirs = ingress('b', 'nginx');
  const legacy = ingress('c', null);
  (legacy.metadata as { annotations: Record<string, string> }).annotations = {
    'kubernetes.io/ingress.class': 'ingress-ts',
  };
  const moved = ingress('b', 'ingress-ts'); // b switches to our class
  const specChanged = withSpec(ours, { ingressClassName: 'ingress-ts', rules: [] });
  const statusChanged = withStatus(specChanged);
  const store = run(t, [
    ['upsert', 'IngressClass', owned, true, 'an IngressClass we own'],
    ['upsert', 'IngressClass', ingressClass('nginx', 'k8s.io/ingress-nginx'), false, 'another controller'],
    ['upsert', 'Ingress', ours, true, 'an Ingress of our class'],
    ['upsert', 'Ingress', again(ours), false, 'the same resourceVersion again'],
    ['upsert', 'Ingress', specChanged, true, 'a spec change'],
    ['upsert', 'Ingress', statusChanged, false, 'a status-only change (our own status write)'],
    ['upsert', 'Ingress', withAnnotation(statusChanged), true, 'an annotation change'],
    ['upsert', 'Ingress', theirs, false, 'an Ingress of another class'],
    ['upsert', 'Ingress', bumped(theirs), false, 'still another class'],
    ['upsert', 'Ingress', moved, true, 'moved to our class'],
    ['upsert', 'Ingress', ingress('b', 'nginx'), true, 'moved away from our class'],
    ['upsert', 'Ingress', legacy, true, 'the legacy class annotation naming us'],
    ['upsert', 'Ingress', ingress('d', null), false, 'no class, without --watch-ingress-without-class'],
    ['remove', 'Ingress', ours, true, 'one of ours deleted'],
    ['remove', 'Ingress', theirs, false, 'another class deleted'],
    ['remove', 'Ingress', ours, false, 'a delete of something unknown (a replayed DELETED)'],
  ]);
  t.same(
    names(store.snapshot().ingresses),
    ['c', 'd'],
    'every Ingress is kept, relevant or not, until deleted',
  );
  t.same(names(store.snapshot().ingressClasses), ['ingress-ts', 'nginx']);
});

t.test('IngressClasses: ownership before or after matters', async (t) => {
  run(t, [
    ['upsert', 'IngressClass', ingressClass('x', 'other'), false, 'not ours'],
    ['upsert', 'IngressClass', ingressClass('x', 'ingress-ts.dev/controller'), true, 'becomes ours'],
    ['upsert', 'IngressClass', ingressClass('x', 'other'), true, 'stops being ours'],
    ['remove', 'IngressClass', ingressClass('x', 'other'), false, 'deleted while not ours'],
    ['upsert', 'IngressClass', ingressClass('y', 'ingress-ts.dev/controller'), true, 'ours'],
    ['remove', 'IngressClass', ingressClass('y', 'ingress-ts.dev/controller'), true, 'ours deleted'],
  ]);
  run(
    t,
    [
      [
        'upsert',
        'IngressClass',
        ingressClass('ingress-ts', 'someone-else'),
        true,
        'by name (--ingress-class-by-name)',
      ],
    ],
    { classes: { ...CLASSES, ingressClassByName: true } },
  );
});

t.test('Services and Secrets matter once referenced by the last build', async (t) => {
  const references: ModelReferences = { services: ['web/api'], secrets: ['web/tls'] };
  run(t, [
    ['upsert', 'Service', service('web', 'api'), true, 'before any build, every Service counts'],
    ['upsert', 'Secret', secret('web', 'other'), true, 'before any build, every Secret counts'],
    ['references', references],
    ['upsert', 'Service', service('web', 'api', 81), true, 'a referenced Service'],
    ['upsert', 'Service', service('web', 'unused'), false, 'a Service no route uses'],
    ['upsert', 'Service', service('other', 'api'), false, 'same name, other namespace'],
    ['upsert', 'Secret', secret('web', 'tls'), true, 'a referenced Secret'],
    ['upsert', 'Secret', secret('web', 'other', 'b'), false, 'a Secret nobody names'],
    ['remove', 'Secret', secret('web', 'tls'), true, 'a referenced Secret deleted'],
    ['remove', 'Service', service('web', 'unused'), false, 'an unused Service deleted'],
    ['upsert', 'ConfigMap', configMap('ingress', 'config'), true, 'the --configmap ConfigMap'],
    ['upsert', 'ConfigMap', configMap('ingress', 'other'), false, 'any other ConfigMap'],
  ]);
});

t.test('ConfigMaps the global ConfigMap refers to (proxy-set-headers, add-headers) matter', async (t) => {
  run(t, [
    ['upsert', 'ConfigMap', configMap('ingress', 'headers'), false, 'not referenced yet'],
    ['references', { services: [], secrets: [], configMaps: ['ingress/headers'] }],
    ['upsert', 'ConfigMap', configMap('ingress', 'headers'), true, 'referenced by the last build'],
    ['remove', 'ConfigMap', configMap('ingress', 'headers'), true, 'a referenced one deleted'],
    ['upsert', 'ConfigMap', configMap('ingress', 'other'), false, 'still any other ConfigMap'],
  ]);
});

t.test('EndpointSlices: only address, port and condition changes of referenced Services', async (t) => {
  const first = slice('api-1', 'api', ['10.0.0.1']);
  const steps: Step[] = [
    ['references', { services: ['web/api'], secrets: [] }],
    ['upsert', 'EndpointSlice', first, true, 'a new slice of a referenced Service'],
    ['upsert', 'EndpointSlice', slice('api-1', 'api', ['10.0.0.1'], { label: 'x' }), false, 'labels only'],
    ['upsert', 'EndpointSlice', slice('api-1', 'api', ['10.0.0.1'], { zone: 'b' }), false, 'zone only'],
    ['upsert', 'EndpointSlice', slice('api-1', 'api', ['10.0.0.1', '10.0.0.2']), true, 'an address added'],
    [
      'upsert',
      'EndpointSlice',
      slice('api-1', 'api', ['10.0.0.1', '10.0.0.2'], { ready: false }),
      true,
      'readiness',
    ],
    [
      'upsert',
      'EndpointSlice',
      slice('db-1', 'db', ['10.0.1.1']),
      false,
      'a slice of an unreferenced Service',
    ],
    ['upsert', 'EndpointSlice', slice('db-1', 'db', ['10.0.1.2']), false, 'still unreferenced'],
    [
      'upsert',
      'EndpointSlice',
      slice('db-1', 'api', ['10.0.1.2']),
      true,
      'relabelled to a referenced Service',
    ],
    ['remove', 'EndpointSlice', slice('db-1', 'api', []), true, 'a referenced slice deleted'],
    ['remove', 'EndpointSlice', first, true, 'the first slice deleted'],
  ];
  run(t, steps);
});

t.test(
  'malformed objects (a manifest file can hold what the API server refuses) are judged, not thrown on',
  async (t) => {
    const malformed = (fields: Record<string, unknown>): KubeObject =>
      ({
        metadata: { namespace: 'web', name: 'odd-1', labels: { 'kubernetes.io/service-name': 'api' } },
        ...fields,
      }) as KubeObject;
    const steps: Step[] = [
      ['references', { services: ['web/api'], secrets: [] }],
      [
        'upsert',
        'EndpointSlice',
        malformed({ endpoints: 'nope', ports: 7 }),
        true,
        'lists that are not lists',
      ],
      [
        'upsert',
        'EndpointSlice',
        malformed({ endpoints: [null, 3], ports: [null] }),
        true,
        'items that are not objects',
      ],
      [
        'upsert',
        'IngressClass',
        { metadata: { name: 'odd' }, spec: 'x' } as KubeObject,
        false,
        'a spec that is a string',
      ],
      [
        'upsert',
        'Ingress',
        { metadata: { namespace: 'web', name: 'odd', annotations: 'x' }, spec: 3 } as unknown as KubeObject,
        false,
        'no class to be read',
      ],
    ];
    run(t, steps);
  },
);

t.test('--watch-namespace-selector: only the selected namespaces count and are served', async (t) => {
  const store = run(
    t,
    [
      ['upsert', 'Ingress', ingress('a', null), false, 'no namespace selected yet'],
      ['upsert', 'Service', service('web', 'api'), false, 'nor for Services'],
      [
        'upsert',
        'ConfigMap',
        configMap('ingress', 'config'),
        true,
        'the --configmap ConfigMap is never scoped',
      ],
      ['namespaces', ['web'], true, 'web selected'],
      ['namespaces', ['web'], false, 'the same set again'],
      ['upsert', 'Service', service('web', 'api', 81), true, 'now in scope'],
      ['upsert', 'Service', service('other', 'api'), false, 'other namespaces stay out'],
      ['upsert', 'Service', service('ingress', 'lb'), true, 'but the --publish-service Service'],
      ['upsert', 'Service', service('ingress', 'lb', 81), true, 'and its changes'],
    ],
    {
      selectNamespaces: true,
      classes: { ...CLASSES, watchIngressWithoutClass: true },
      pinnedServices: ['ingress/lb'],
    },
  );
  t.same(
    store.snapshot().services.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`),
    ['web/api', 'ingress/lb'],
    'the snapshot holds the selected namespaces only, and the --publish-service Service',
  );
  t.same(names(store.snapshot().configMaps), ['config']);
  t.equal(store.setNamespaces([]), true, 'web unselected');
  t.same(store.snapshot().ingresses, [], 'its objects leave the snapshot');
  t.equal(store.size, 5, 'but stay stored');
});

t.test('snapshot: the same object until something changes, then the latest state', async (t) => {
  const store = new ObjectStore({ classes: CLASSES, configMap: null });
  store.upsert('Service', service('web', 'api'));
  const first = store.snapshot();
  t.equal(store.snapshot(), first, 'cached');
  t.ok(Object.isFrozen(first));
  store.upsert('Secret', secret('web', 'x'));
  const second = store.snapshot();
  t.not(second, first, 'rebuilt after a change');
  t.equal(second.services, first.services, 'unchanged kinds keep their array');
  const updated = service('web', 'api', 9090);
  store.upsert('Service', updated);
  t.equal(store.snapshot().services[0], updated, 'the latest state');
});
