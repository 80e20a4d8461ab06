// The Gateway API in Kubernetes mode against the fake API server: one discovery GET decides; without
// the CRDs (404) or with discovery forbidden (403) one log line and not one more request; with them,
// the four kinds and every Namespace reach the snapshot, a change builds and a status write does not.
import t from 'tap';
import { parseFlags } from '../../../lib/config/flags.ts';
import { createLogger } from '../../../lib/log.ts';
import { start } from '../../../lib/main.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../../lib/model/index.ts';
import { gatewayApiState, gatewayWatchTargets } from '../../../lib/source/kube/gateway-sources.ts';
import { createKubeSource, type KubeSourceOptions } from '../../../lib/source/kube/source.ts';
import {
  type FakeApiServer,
  GATEWAY_GROUP,
  type KubeObject,
  startFakeApiServer,
} from '../../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0 } from '../../support/http.ts';
import { logSink } from '../../support/log-sink.ts';

t.setTimeout(60_000);

const V1 = `${GATEWAY_GROUP}/v1`;
const gatewayClass: KubeObject = {
  apiVersion: V1,
  kind: 'GatewayClass',
  metadata: { name: 'ingress-ts' },
  spec: { controllerName: DEFAULT_MODEL_OPTIONS.gatewayControllerName },
};
const gateway = (namespace: string, port = 80): KubeObject => ({
  apiVersion: V1,
  kind: 'Gateway',
  metadata: { name: 'edge', namespace },
  spec: { gatewayClassName: 'ingress-ts', listeners: [{ name: 'http', port, protocol: 'HTTP' }] },
});
const route = (namespace: string, host: string): KubeObject => ({
  apiVersion: V1,
  kind: 'HTTPRoute',
  metadata: { name: 'site', namespace },
  spec: {
    parentRefs: [{ name: 'edge' }],
    hostnames: [host],
    rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
  },
});
const grant: KubeObject = {
  apiVersion: V1,
  kind: 'ReferenceGrant',
  metadata: { name: 'from-web', namespace: 'backends' },
  spec: {
    from: [{ group: GATEWAY_GROUP, kind: 'HTTPRoute', namespace: 'web' }],
    to: [{ group: '', kind: 'Service' }],
  },
};
const namespace = (name: string, labels: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

const gatewayRequests = (api: FakeApiServer) => api.requests.filter((r) => r.path.includes(GATEWAY_GROUP));
const names = (objects: ReadonlyArray<{ metadata?: { name?: string; namespace?: string } }> | undefined) =>
  (objects ?? []).map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`).sort();

function source(api: FakeApiServer, extra: Partial<KubeSourceOptions> = {}) {
  const seen: { states: unknown[]; errors: string[]; changes: number; wake: () => void } = {
    states: [],
    errors: [],
    changes: 0,
    wake: () => {},
  };
  const kube = createKubeSource({
    kubeConfig: api.kubeConfig(),
    watchNamespace: null,
    namespaceSelector: null,
    model: DEFAULT_MODEL_OPTIONS,
    gatewayApi: true,
    backoff: { initialMs: 20, maxMs: 100 },
    onGatewayApi: (state) => seen.states.push(state),
    onWatchError: (kind) => {
      seen.errors.push(kind);
      seen.wake();
    },
    onChange: () => {
      seen.changes++;
      seen.wake();
    },
    ...extra,
  });
  return { kube, seen, next: () => new Promise<void>((resolve) => (seen.wake = resolve)) };
}

t.test('the controller on a cluster without the CRDs: one discovery GET, one log line', async (t) => {
  for (const [flags, discoveries, line] of [
    [[], 1, 1],
    [['--enable-gateway-api=false'], 0, 0],
  ] as const) {
    const api = await startFakeApiServer({
      objects: [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'IngressClass',
          metadata: { name: 'ingress-ts' },
          spec: { controller: 'ingress-ts.dev/controller' },
        },
      ],
    });
    const parsed = parseFlags([
      '--kubeconfig',
      await api.writeKubeconfig(),
      ...LOOPBACK_PORT_0,
      '--disable-leader-election',
      ...flags,
    ]);
    if (parsed.kind !== 'run') throw new Error('expected run');
    const log = logSink();
    const controller = await start(parsed.config, createLogger('info', log.stream));
    await controller.stop(0);
    await api.close();
    const requests = gatewayRequests(api);
    t.equal(
      requests.length,
      discoveries,
      `${flags.join(' ') || 'default'}: requests to the Gateway API group`,
    );
    if (discoveries === 1) {
      t.match(
        requests[0],
        { method: 'GET', path: `/apis/${V1}`, status: 404 },
        'only the discovery, answered 404',
      );
    }
    t.equal(api.count({ resource: 'namespaces' }), 0, 'no Namespace watch');
    const lines = log.lines.filter((l) => String(l.msg).includes('Gateway API'));
    t.equal(lines.length, line, 'one line says so (none when turned off)');
    if (line === 1) {
      t.match(lines[0], { level: 30, msg: 'Gateway API CRDs not installed; Gateway API support is off' });
    }
  }
});

t.test('discovery forbidden (403): off, with the reason, nothing watched', async (t) => {
  const api = await startFakeApiServer({ gatewayApi: true });
  t.teardown(() => api.close());
  api.failNext((r) => r.path === `/apis/${V1}`, { status: 403, message: 'forbidden' });
  const { kube, seen } = source(api);
  t.teardown(() => kube.stop());
  await kube.start();
  t.match(seen.states, [{ enabled: false, reason: /forbidden \(RBAC\); Gateway API support is off/ }]);
  t.notOk(kube.gatewayApi);
  t.equal(gatewayRequests(api).length, 1, 'the discovery GET only');
  t.equal(kube.snapshot().gateways, undefined, 'no Gateway API lists in the snapshot');
  t.equal(kube.snapshot().namespaces, undefined);
});

t.test('discovery that lacks a kind turns the Gateway API off and names it', async (t) => {
  t.same(gatewayApiState(404, null), {
    enabled: false,
    reason: 'Gateway API CRDs not installed; Gateway API support is off',
  });
  const state = gatewayApiState(200, {
    resources: [{ name: 'gatewayclasses' }, { name: 'gateways' }, { name: 'httproutes' }],
  });
  t.match(state, { enabled: false, reason: /does not serve referencegrants/ });
  t.equal(gatewayApiState(503, null), null, 'anything else is retried');
  t.same(
    gatewayWatchTargets('web').map((target) => target.path),
    [
      `/apis/${V1}/gatewayclasses`,
      `/apis/${V1}/namespaces/web/gateways`,
      `/apis/${V1}/namespaces/web/httproutes`,
      `/apis/${V1}/namespaces/web/referencegrants`,
      '/api/v1/namespaces',
    ],
    '--watch-namespace: the namespaced kinds there, GatewayClasses and Namespaces cluster-wide',
  );
});

t.test('installed: the kinds reach the snapshot; a change builds, a status write does not', async (t) => {
  const api = await startFakeApiServer({
    gatewayApi: true,
    objects: [
      gatewayClass,
      gateway('web'),
      route('web', 'a.test'),
      grant,
      namespace('web', { team: 'web' }),
      namespace('backends', {}),
    ],
  });
  t.teardown(() => api.close());
  const { kube, seen, next } = source(api);
  t.teardown(() => kube.stop());
  await kube.start();
  t.same(seen.states, [{ enabled: true }]);
  t.ok(kube.gatewayApi);
  const first = kube.snapshot();
  t.same(names(first.gatewayClasses), ['/ingress-ts']);
  t.same(names(first.gateways), ['web/edge']);
  t.same(names(first.httpRoutes), ['web/site']);
  t.same(names(first.referenceGrants), ['backends/from-web']);
  t.same(names(first.namespaces), ['/backends', '/web']);
  t.same(
    first.namespaces?.find((n) => n.metadata?.name === 'web')?.metadata?.labels,
    { team: 'web', 'kubernetes.io/metadata.name': 'web' },
    'with their labels',
  );
  t.equal(first.gateways?.[0]?.metadata?.generation, 1, 'metadata.generation kept');
  t.same(
    kube
      .informers()
      .map((i) => i.kind)
      .slice(-5),
    ['GatewayClass', 'Gateway', 'HTTPRoute', 'ReferenceGrant', 'Namespace'],
  );

  // a status write (the leader's own, coming back through the watch) builds nothing; the spec
  // change after it, on the same stream, does: one onChange
  const stored = api.get({ apiVersion: V1, kind: 'HTTPRoute', namespace: 'web', name: 'site' });
  api.apply({ ...stored, status: { parents: [] } } as KubeObject);
  api.apply(route('web', 'b.test'));
  while (!JSON.stringify(kube.snapshot().httpRoutes).includes('b.test')) await next();
  t.equal(seen.changes, 1, 'the spec change only');
  t.equal(kube.snapshot().httpRoutes?.[0]?.metadata?.generation, 2, 'the spec change moved the generation');

  for (const change of [
    () => api.apply(namespace('backends', { team: 'db' })),
    () => api.apply({ ...grant, spec: { ...(grant.spec as object), to: [] } }),
    () => api.apply({ ...gatewayClass, spec: { controllerName: 'example.net/other' } }),
    () => api.remove({ apiVersion: V1, kind: 'Gateway', namespace: 'web', name: 'edge' }),
  ]) {
    const before = seen.changes;
    change();
    while (seen.changes === before) await next();
  }
  t.equal(seen.changes, 5, 'every change to the kinds builds (Namespace labels, grants, classes, deletions)');
});
