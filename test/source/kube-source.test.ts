// The Kubernetes source against the fake API server: what it watches, the synced gate, and that
// only relevant changes call onChange (counted exactly: onChange is called once per relevant event,
// before any scheduler coalescing).
import t from 'tap';
import { DEFAULT_MODEL_OPTIONS } from '../../lib/model/index.ts';
import { createKubeSource, type KubeSource, watchTargets } from '../../lib/source/kube/source.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';

const meta = (name: string, namespace = 'web', labels?: Record<string, string>) => ({
  name,
  namespace,
  ...(labels ? { labels } : {}),
});
const ingressClass: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name: 'ingress-ts' },
  spec: { controller: DEFAULT_MODEL_OPTIONS.controllerClass },
};
const ingress = (name: string, className: string, namespace = 'web'): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: meta(name, namespace),
  spec: { ingressClassName: className, rules: [{ host: `${name}.test` }] },
});
const service = (name: string, port = 80): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: meta(name),
  spec: { ports: [{ port }] },
});
const secret = (name: string, value: string, type = 'kubernetes.io/tls'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta(name),
  type,
  data: { 'tls.crt': value },
});
const slice = (serviceName: string, address: string): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: meta(`${serviceName}-1`, 'web', { 'kubernetes.io/service-name': serviceName }),
  addressType: 'IPv4',
  ports: [{ port: 8080 }],
  endpoints: [{ addresses: [address], conditions: { ready: true } }],
});
const namespace = (name: string, labels: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

const names = (objects: ReadonlyArray<{ metadata?: { name?: string } }>) =>
  objects.map((o) => o.metadata?.name).sort();

t.test('watch targets follow the flags', async (t) => {
  const model = { ...DEFAULT_MODEL_OPTIONS, configMap: 'ingress/config' };
  const all = watchTargets({ watchNamespace: null, namespaceSelector: null, model });
  t.same(
    all.map((w) => [w.kind, w.path, w.labelSelector, w.fieldSelector]),
    [
      ['IngressClass', '/apis/networking.k8s.io/v1/ingressclasses', undefined, undefined],
      ['Ingress', '/apis/networking.k8s.io/v1/ingresses', undefined, undefined],
      ['Service', '/api/v1/services', undefined, undefined],
      ['EndpointSlice', '/apis/discovery.k8s.io/v1/endpointslices', undefined, undefined],
      ['Secret', '/api/v1/secrets', undefined, 'type!=helm.sh/release.v1'],
      ['ConfigMap', '/api/v1/configmaps', undefined, undefined],
    ],
  );
  const elsewhere = watchTargets({ watchNamespace: 'web', namespaceSelector: null, model });
  t.same(
    elsewhere.filter((w) => w.kind === 'ConfigMap').map((w) => w.path),
    ['/api/v1/namespaces/web/configmaps', '/api/v1/namespaces/ingress/configmaps'],
    'ConfigMaps of the namespace served and of the --configmap namespace',
  );
  const streams = watchTargets({
    watchNamespace: 'web',
    namespaceSelector: null,
    model: { ...model, tcpServicesConfigMap: 'edge/tcp', udpServicesConfigMap: 'ingress/udp' },
  });
  t.same(
    streams.filter((w) => w.kind === 'ConfigMap').map((w) => w.path),
    [
      '/api/v1/namespaces/web/configmaps',
      '/api/v1/namespaces/ingress/configmaps',
      '/api/v1/namespaces/edge/configmaps',
    ],
    'and of the TCP/UDP services ConfigMaps, each namespace once',
  );
  const one = watchTargets({ watchNamespace: 'web', namespaceSelector: null, model: DEFAULT_MODEL_OPTIONS });
  t.same(
    one.map((w) => w.path),
    [
      '/apis/networking.k8s.io/v1/ingressclasses',
      '/apis/networking.k8s.io/v1/namespaces/web/ingresses',
      '/api/v1/namespaces/web/services',
      '/apis/discovery.k8s.io/v1/namespaces/web/endpointslices',
      '/api/v1/namespaces/web/secrets',
      '/api/v1/namespaces/web/configmaps',
    ],
    '--watch-namespace: namespaced paths, IngressClasses stay cluster-wide',
  );
  const published = watchTargets({
    watchNamespace: 'web',
    namespaceSelector: null,
    model: DEFAULT_MODEL_OPTIONS,
    watchedServices: ['ingress/edge-controller', 'web/also-served'],
  });
  t.same(
    published.filter((w) => w.kind === 'Service').map((w) => [w.path, w.fieldSelector]),
    [
      ['/api/v1/namespaces/web/services', undefined],
      ['/api/v1/namespaces/ingress/services', 'metadata.name=edge-controller'],
    ],
    '--publish-service in another namespace: that Service watched by name',
  );
  t.equal(
    watchTargets({
      watchNamespace: null,
      namespaceSelector: null,
      model: DEFAULT_MODEL_OPTIONS,
      watchedServices: ['ingress/lb'],
    }).filter((w) => w.kind === 'Service').length,
    1,
    'every namespace watched: no second watch',
  );
  const selected = watchTargets({
    watchNamespace: null,
    namespaceSelector: 'team=web',
    model: DEFAULT_MODEL_OPTIONS,
  });
  t.same(selected.at(-1), {
    kind: 'Namespace',
    store: 'Namespace',
    path: '/api/v1/namespaces',
    labelSelector: 'team=web',
  });
});

t.test('synced gate, then onChange only for relevant changes', async (t) => {
  const api = await startFakeApiServer({
    objects: [
      ingressClass,
      ingress('site', 'ingress-ts'),
      service('api'),
      slice('api', '10.0.0.1'),
      secret('tls', 'a'),
      secret('release', 'x', 'helm.sh/release.v1'),
    ],
  });
  t.teardown(() => api.close());
  let changes = 0;
  let wake: () => void = () => {};
  const source: KubeSource = createKubeSource({
    kubeConfig: api.kubeConfig(),
    watchNamespace: null,
    namespaceSelector: null,
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => {
      changes++;
      wake();
    },
  });
  t.teardown(() => source.stop());
  await source.start();
  t.equal(changes, 0, 'the initial lists call no onChange (the first build follows start())');
  const first = source.snapshot();
  t.same(names(first.ingresses), ['site']);
  t.same(names(first.secrets), ['tls'], 'Helm release Secrets are filtered out by the server');
  t.same(
    source.informers().map((i) => [i.kind, i.synced]),
    ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret', 'ConfigMap'].map((k) => [k, true]),
  );
  source.setReferences({ services: ['web/api'], secrets: ['web/tls'] });

  // On each stream an irrelevant change, then a relevant one (same stream: ordered after it).
  api.apply(ingress('theirs', 'nginx'));
  api.apply(ingress('mine', 'ingress-ts'));
  api.apply(service('unused'));
  api.apply(service('api', 81));
  api.apply(slice('unused', '10.0.9.9'));
  api.apply(slice('api', '10.0.0.2'));
  api.apply(secret('other', 'b'));
  api.apply(secret('tls', 'c'));
  const arrived = () => {
    const s = source.snapshot();
    return (
      names(s.ingresses).includes('mine') &&
      s.services.some((o) => o.metadata?.name === 'api' && JSON.stringify(o).includes('81')) &&
      s.endpointSlices.some((o) => JSON.stringify(o).includes('10.0.0.2')) &&
      s.secrets.some((o) => o.metadata?.name === 'tls' && JSON.stringify(o).includes('"c"'))
    );
  };
  while (!arrived()) await new Promise<void>((resolve) => (wake = resolve));
  t.equal(changes, 4, 'one onChange per relevant change, none for the irrelevant ones');
  t.same(names(source.snapshot().services), ['api', 'unused'], 'irrelevant objects are stored all the same');
});

t.test('a slow API server: start() waits for the slowest first list', async (t) => {
  const api = await startFakeApiServer({
    objects: [ingressClass, ingress('site', 'ingress-ts'), secret('tls', 'a')],
  });
  t.teardown(() => api.close());
  api.delayNext({ verb: 'list', resource: 'secrets' }, 300);
  const source = createKubeSource({
    kubeConfig: api.kubeConfig(),
    watchNamespace: null,
    namespaceSelector: null,
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => {},
  });
  t.teardown(() => source.stop());
  let started = false;
  const starting = source.start().then(() => {
    started = true;
  });
  const ingresses = await api.waitForRequest({ verb: 'watch', resource: 'ingresses' });
  t.ok(ingresses, 'the other kinds are listed and watched meanwhile');
  t.notOk(started, 'not synced while the Secret list is pending: no build from a partial cluster');
  await starting;
  t.same(names(source.snapshot().secrets), ['tls'], 'synced with the Secrets in');
});

t.test('--watch-namespace-selector: the namespaces the server selects, as they come and go', async (t) => {
  const api = await startFakeApiServer({
    objects: [
      ingressClass,
      namespace('web', { team: 'web' }),
      namespace('db', { team: 'db' }),
      ingress('site', 'ingress-ts', 'web'),
      ingress('data', 'ingress-ts', 'db'),
    ],
  });
  t.teardown(() => api.close());
  let wake: () => void = () => {};
  const source = createKubeSource({
    kubeConfig: api.kubeConfig(),
    watchNamespace: null,
    namespaceSelector: 'team=web',
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => wake(),
  });
  t.teardown(() => source.stop());
  await source.start();
  t.same(names(source.snapshot().ingresses), ['site'], 'only the selected namespace');
  api.apply(namespace('db', { team: 'web' }));
  while (!names(source.snapshot().ingresses).includes('data')) await new Promise<void>((r) => (wake = r));
  t.same(names(source.snapshot().ingresses), ['data', 'site'], 'a namespace that gains the label joins');
  api.apply(namespace('web', { team: 'other' }));
  while (names(source.snapshot().ingresses).includes('site')) await new Promise<void>((r) => (wake = r));
  t.same(names(source.snapshot().ingresses), ['data'], 'one that loses it leaves');
});

t.test('managedFields and kubectl last-applied copies are not kept, listed or watched', async (t) => {
  const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
  const applied = (object: KubeObject, marker: string): KubeObject => ({
    ...object,
    metadata: {
      ...object.metadata,
      annotations: {
        'nginx.ingress.kubernetes.io/use-regex': 'true',
        [LAST_APPLIED]: `{"kind":"${object.kind}","marker":"${marker}"}\n`,
      },
      managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', fieldsV1: { marker } }],
    },
  });
  const api = await startFakeApiServer({
    objects: [
      ingressClass,
      applied(ingress('site', 'ingress-ts'), 'listed'),
      applied(secret('tls', 'a'), 'a'),
    ],
  });
  t.teardown(() => api.close());
  let wake: () => void = () => {};
  const source = createKubeSource({
    kubeConfig: api.kubeConfig(),
    watchNamespace: null,
    namespaceSelector: null,
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => wake(),
  });
  t.teardown(() => source.stop());
  await source.start();
  api.apply(applied(ingress('mine', 'ingress-ts'), 'watched'));
  while (!names(source.snapshot().ingresses).includes('mine')) await new Promise<void>((r) => (wake = r));
  const snapshot = source.snapshot();
  for (const object of [...snapshot.ingresses, ...snapshot.secrets]) {
    const metadata = object.metadata as Record<string, unknown>;
    const label = object.metadata?.name ?? '';
    t.notOk('managedFields' in metadata, `${label}: no managedFields`);
    t.same(
      object.metadata?.annotations,
      { 'nginx.ingress.kubernetes.io/use-regex': 'true' },
      `${label}: the other annotations stay, the last-applied copy does not`,
    );
    t.ok(object.metadata?.uid && object.metadata.resourceVersion, `${label}: uid and resourceVersion stay`);
  }
  t.notMatch(JSON.stringify(snapshot), /marker/, 'nothing of either is left anywhere in the snapshot');
});
