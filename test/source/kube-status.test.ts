// Ingress status: which addresses are published (a table over Service shapes and flags), and the
// writer against the fake API server: only our Ingresses, nothing rewritten when already right, a
// 409 retried.
import t from 'tap';
import {
  DEFAULT_MODEL_OPTIONS,
  EMPTY_SNAPSHOT,
  type KubeObject,
  type Snapshot,
} from '../../lib/model/index.ts';
import { createStatusWriter, publishedAddresses } from '../../lib/source/kube/status.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';

const snapshotWith = (objects: Partial<Snapshot>): Snapshot => ({ ...EMPTY_SNAPSHOT, ...objects });

const publishService = (spec: Record<string, unknown>, status?: Record<string, unknown>): KubeObject =>
  ({ metadata: { namespace: 'ingress', name: 'lb' }, spec, ...(status ? { status } : {}) }) as KubeObject;

t.test('published addresses: ingress-nginx’s choice per Service type, or the flag', async (t) => {
  const cases: Array<[string, KubeObject | null, string[] | null, unknown]> = [
    [
      'LoadBalancer: its ingress entries (IP or host name) and external IPs, sorted',
      publishService(
        { type: 'LoadBalancer', clusterIP: '10.0.0.9', externalIPs: ['203.0.113.7'] },
        { loadBalancer: { ingress: [{ ip: '198.51.100.2' }, { hostname: 'lb.example.com' }] } },
      ),
      null,
      [{ ip: '198.51.100.2' }, { ip: '203.0.113.7' }, { hostname: 'lb.example.com' }],
    ],
    [
      'LoadBalancer still pending: nothing yet',
      publishService({ type: 'LoadBalancer', clusterIP: '10.0.0.9' }, { loadBalancer: {} }),
      null,
      [],
    ],
    [
      'NodePort: external IPs',
      publishService({ type: 'NodePort', clusterIP: '10.0.0.9', externalIPs: ['203.0.113.8'] }),
      null,
      [{ ip: '203.0.113.8' }],
    ],
    [
      'NodePort without external IPs: the cluster IP',
      publishService({ type: 'NodePort', clusterIP: '10.0.0.9' }),
      null,
      [{ ip: '10.0.0.9' }],
    ],
    ['ClusterIP', publishService({ type: 'ClusterIP', clusterIP: '10.0.0.9' }), null, [{ ip: '10.0.0.9' }]],
    ['headless: nothing', publishService({ type: 'ClusterIP', clusterIP: 'None' }), null, []],
    [
      'ExternalName: the name',
      publishService({ type: 'ExternalName', externalName: 'edge.example.net' }),
      null,
      [{ hostname: 'edge.example.net' }],
    ],
    ['the Service does not exist: nothing is written', null, null, null],
    [
      '--publish-status-address wins, IPs and names told apart, duplicates dropped',
      publishService({ type: 'ClusterIP', clusterIP: '10.0.0.9' }),
      ['2001:db8::1', 'ingress.example.com', '192.0.2.1', '192.0.2.1'],
      [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }, { hostname: 'ingress.example.com' }],
    ],
  ];
  for (const [name, service, flag, expected] of cases) {
    const snapshot = snapshotWith({ services: service ? [service] : [] });
    t.same(
      publishedAddresses(snapshot, { publishService: 'ingress/lb', publishStatusAddress: flag }),
      expected,
      name,
    );
  }
  t.equal(
    publishedAddresses(snapshotWith({}), { publishService: null, publishStatusAddress: null }),
    null,
    'no flag: nothing to publish',
  );
});

t.test('the writer: our Ingresses only, once, and a conflict retried', async (t) => {
  const ingressClass = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'ingress-ts' },
    spec: { controller: DEFAULT_MODEL_OPTIONS.controllerClass },
  };
  const ingress = (name: string, className: string) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: 'web' },
    spec: { ingressClassName: className, rules: [{ host: `${name}.test` }] },
  });
  const api = await startFakeApiServer({
    objects: [
      ingressClass,
      ingress('a', 'ingress-ts'),
      ingress('b', 'ingress-ts'),
      ingress('other', 'nginx'),
    ],
  });
  t.teardown(() => api.close());
  const written: string[] = [];
  const errors: unknown[] = [];
  const writer = createStatusWriter({
    kubeConfig: api.kubeConfig(),
    publishService: null,
    publishStatusAddress: ['192.0.2.10'],
    classes: DEFAULT_MODEL_OPTIONS,
    onWritten: (ingress) => written.push(ingress),
    onError: (_ingress, error) => errors.push(error),
  });
  const snapshot = () =>
    snapshotWith({
      ingressClasses: api.list('IngressClass') as KubeObject[],
      ingresses: api.list('Ingress') as KubeObject[],
    });
  const statusOf = (name: string) =>
    (api.get({ kind: 'Ingress', namespace: 'web', name })?.status as { loadBalancer?: unknown } | undefined)
      ?.loadBalancer;

  // the first status write of a is refused once with 409, as if someone wrote meanwhile
  api.failNext({ verb: 'update', resource: 'ingresses', subresource: 'status', name: 'a' }, { status: 409 });
  await writer.update(snapshot());
  t.same(errors, []);
  t.same(written.sort(), ['web/a', 'web/b']);
  t.same(statusOf('a'), { ingress: [{ ip: '192.0.2.10' }] });
  t.same(statusOf('b'), { ingress: [{ ip: '192.0.2.10' }] });
  t.same(statusOf('other') ?? {}, {}, 'another class is left alone');
  t.equal(api.count({ verb: 'update', subresource: 'status', name: 'a' }), 2, 'the 409 was retried');

  const writes = api.count({ verb: 'update', subresource: 'status' });
  await writer.update(snapshot());
  t.equal(api.count({ verb: 'update', subresource: 'status' }), writes, 'already right: not written again');
  const reads = api.count({ verb: 'get', subresource: 'status' });
  t.equal(reads, 3, 'and not even read (the snapshot says it is right)');
});
