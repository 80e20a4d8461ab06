// Diagnostics → Kubernetes Events on the fake API server: written once per new diagnostic, on the
// right object (with its uid, for kubectl describe), again when a fixed problem comes back, and
// rate-limited per object.
import t from 'tap';
import type { Diagnostic } from '../../lib/model/index.ts';
import { createEventRecorder } from '../../lib/source/kube/events.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';

const conflict: Diagnostic = {
  kind: 'Ingress',
  namespace: 'web',
  name: 'newer',
  severity: 'warning',
  code: 'PATH_CONFLICT',
  message: 'path / on host a.example lost to web/older (older)',
};
const classProblem: Diagnostic = {
  kind: 'IngressClass',
  namespace: '',
  name: 'ingress-ts',
  severity: 'info',
  code: 'INGRESS_EMPTY',
  message: 'an info on a cluster-scoped object',
};

interface CoreEvent {
  metadata: { name: string; namespace: string };
  involvedObject: { kind: string; namespace?: string; name: string; uid?: string; apiVersion?: string };
  reason: string;
  message: string;
  type: string;
  count: number;
  source: { component: string };
}

t.test('one Event per new diagnostic, on the object concerned', async (t) => {
  const api = await startFakeApiServer();
  t.teardown(() => api.close());
  const recorder = createEventRecorder({
    kubeConfig: api.kubeConfig(),
    identity: 'pod-a',
    uidOf: (kind, namespace, name) => (kind === 'Ingress' ? `uid-${namespace}-${name}` : undefined),
  });
  const events = () => api.list('Event') as unknown as CoreEvent[];

  recorder.report([conflict, classProblem]);
  await recorder.idle();
  t.equal(events().length, 2);
  const [first] = events().filter((e) => e.involvedObject.kind === 'Ingress');
  t.match(first, {
    metadata: { namespace: 'web', name: /^newer\.[a-z0-9]{5}$/ },
    involvedObject: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      namespace: 'web',
      name: 'newer',
      uid: 'uid-web-newer',
    },
    reason: 'PATH_CONFLICT',
    message: conflict.message,
    type: 'Warning',
    count: 1,
    source: { component: 'ingress-ts' },
  });
  const [cluster] = events().filter((e) => e.involvedObject.kind === 'IngressClass');
  t.match(cluster, { metadata: { namespace: 'default' }, type: 'Normal' }, 'cluster-scoped: in default');

  recorder.report([conflict, classProblem]);
  recorder.report([conflict]);
  await recorder.idle();
  t.equal(events().length, 2, 'the same diagnostics at later builds: no new Events');

  recorder.report([conflict, classProblem]);
  await recorder.idle();
  t.equal(events().length, 3, 'a diagnostic that went away and came back is reported again');
});

t.test('a flapping object is rate-limited; other objects are not', async (t) => {
  const api = await startFakeApiServer();
  t.teardown(() => api.close());
  let clock = 0;
  const recorder = createEventRecorder({
    kubeConfig: api.kubeConfig(),
    identity: 'pod-a',
    uidOf: () => undefined,
    now: () => clock,
    burst: 3,
    refillMs: 1000,
  });
  for (let i = 0; i < 10; i++) {
    recorder.report([{ ...conflict, message: `flap ${i}` }]); // a new diagnostic every build
    recorder.report([]);
  }
  recorder.report([{ ...conflict, name: 'calm', message: 'once' }]);
  await recorder.idle();
  const byName = (name: string) =>
    (api.list('Event') as unknown as CoreEvent[]).filter((e) => e.involvedObject.name === name).length;
  t.equal(byName('newer'), 3, 'the burst, then nothing');
  t.equal(byName('calm'), 1, 'another object still gets its Event');
  t.equal(recorder.dropped, 7);
  clock += 2000; // two refills
  recorder.report([{ ...conflict, message: 'after a while' }]);
  await recorder.idle();
  t.equal(byName('newer'), 4, 'the bucket refills over time');
});

t.test(
  'Gateway API objects: their Events name the group and version kubectl describe looks for',
  async (t) => {
    const api = await startFakeApiServer();
    t.teardown(() => api.close());
    const recorder = createEventRecorder({
      kubeConfig: api.kubeConfig(),
      identity: 'pod-a',
      uidOf: (kind) => (kind === 'HTTPRoute' ? 'uid-route' : undefined),
    });
    const diagnostics: Diagnostic[] = [
      { ...conflict, kind: 'HTTPRoute', name: 'store', code: 'HTTPROUTE_INVALID' },
      { ...conflict, kind: 'Gateway', name: 'edge', code: 'GATEWAY_INVALID' },
    ];
    recorder.report(diagnostics);
    await recorder.idle();
    const events = api.list('Event') as unknown as CoreEvent[];
    t.match(
      events.find((e) => e.involvedObject.kind === 'HTTPRoute'),
      { involvedObject: { apiVersion: 'gateway.networking.k8s.io/v1', name: 'store', uid: 'uid-route' } },
    );
    t.match(
      events.find((e) => e.involvedObject.kind === 'Gateway'),
      {
        involvedObject: { apiVersion: 'gateway.networking.k8s.io/v1', name: 'edge' },
        reason: 'GATEWAY_INVALID',
      },
    );
  },
);
