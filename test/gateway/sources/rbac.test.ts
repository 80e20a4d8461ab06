// RBAC and the Gateway API: a cluster that serves the CRDs while the controller's role lacks the rules
// for them (or for Namespaces) must still serve its Ingresses. A 403 on the first list of one of those
// kinds turns the Gateway API off with one error line; a 403 once they were listed (RBAC removed while
// running) keeps the last objects and is retried.
import t from 'tap';
import { echoServer } from '../../../examples/demo-backends.ts';
import { parseFlags } from '../../../lib/config/flags.ts';
import { createLogger } from '../../../lib/log.ts';
import { start } from '../../../lib/main.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../../lib/model/index.ts';
import { createKubeSource } from '../../../lib/source/kube/source.ts';
import {
  type FakeApiServer,
  GATEWAY_GROUP,
  type KubeObject,
  type RbacRule,
  startFakeApiServer,
} from '../../support/fake-apiserver.ts';
import { get, LOOPBACK_PORT_0, listen } from '../../support/http.ts';
import { ingressObject, webCluster } from '../../support/kube-objects.ts';
import { logSink } from '../../support/log-sink.ts';

t.setTimeout(60_000);

const V1 = `${GATEWAY_GROUP}/v1`;
const allow = (groups: string[], resources: string[], verbs: RbacRule['verbs'] = ['list', 'watch']) => ({
  apiGroups: groups,
  resources,
  verbs,
});
/** What an Ingress-only role grants (the chart's rules before the Gateway API). */
const INGRESS_RULES: RbacRule[] = [
  allow(['networking.k8s.io'], ['ingresses', 'ingressclasses']),
  allow([''], ['services', 'secrets', 'configmaps']),
  allow(['discovery.k8s.io'], ['endpointslices']),
  allow([''], ['events'], ['create', 'patch']),
];
const GATEWAY_KINDS = ['gatewayclasses', 'gateways', 'httproutes', 'referencegrants'];

const route = (host: string): KubeObject => ({
  apiVersion: V1,
  kind: 'HTTPRoute',
  metadata: { name: 'site', namespace: 'web' },
  spec: { parentRefs: [{ name: 'edge' }], hostnames: [host] },
});
const cluster = (port: number): KubeObject[] => [
  ...webCluster(port),
  ingressObject('site', 'site.test'),
  route('route.test'),
];

const gatewayLists = (api: FakeApiServer) =>
  api.requests.filter((r) => r.path.includes(GATEWAY_GROUP) && r.path !== `/apis/${V1}`);

t.test('CRDs served, no rules for them: Ingresses served, one error line, nothing more asked', async (t) => {
  const backend = echoServer('web');
  const port = await listen(backend);
  t.teardown(() => new Promise((resolve) => backend.close(resolve)));
  const api = await startFakeApiServer({ gatewayApi: true, rbac: INGRESS_RULES, objects: cluster(port) });
  t.teardown(() => api.close());
  const parsed = parseFlags([
    '--kubeconfig',
    await api.writeKubeconfig(),
    ...LOOPBACK_PORT_0,
    '--disable-leader-election',
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const log = logSink();
  // without the fix the informers retry their 403s forever and this never resolves
  const controller = await start(parsed.config, createLogger('info', log.stream));
  t.teardown(() => controller.stop(0));
  t.equal((await get(controller.http.port, 'site.test', '/')).status, 200, 'the Ingress is served');
  t.equal((await get(controller.healthz.port, 'localhost', '/healthz')).status, 200, 'ready');

  const lines = log.lines.filter((l) => String(l.msg).includes('Gateway API'));
  t.equal(lines.length, 1, 'one line about the Gateway API');
  t.match(lines[0], {
    level: 50,
    verb: 'list',
    apiGroup: GATEWAY_GROUP,
    resource: /^(gatewayclasses|gateways|httproutes|referencegrants)$/,
    kind: /^(GatewayClass|Gateway|HTTPRoute|ReferenceGrant)$/,
    msg: /^no permission to list \w+\.gateway\.networking\.k8s\.io \(RBAC: list and watch on \w+ in API group "gateway\.networking\.k8s\.io"\); Gateway API support is off until a restart$/,
    err: { message: /is forbidden/ },
  });
  t.notOk(
    log.lines.some((l) => /watching .* failed; retrying/.test(String(l.msg))),
    'no retry warnings for the refused lists',
  );

  // a later change is built and served, and the Gateway API is not asked again
  const asked = gatewayLists(api).length;
  t.ok(
    gatewayLists(api).every((r) => r.verb === 'list' && r.status === 403),
    'the lists were refused; no watch',
  );
  const applied = log.next(/^configuration applied$/);
  api.apply(ingressObject('later', 'later.test'));
  await applied;
  t.equal((await get(controller.http.port, 'later.test', '/')).status, 200, 'a later Ingress is served');
  t.equal(gatewayLists(api).length, asked, 'no Gateway API request since');
});

function source(api: FakeApiServer) {
  const seen = { states: [] as unknown[], errors: [] as string[], wake: () => {} };
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
    onChange: () => seen.wake(),
  });
  t.teardown(() => kube.stop());
  return { kube, seen, next: () => new Promise<void>((resolve) => (seen.wake = resolve)) };
}

t.test('Namespaces forbidden: off, the kinds already listed dropped from the snapshot', async (t) => {
  const api = await startFakeApiServer({
    gatewayApi: true,
    rbac: [...INGRESS_RULES, allow([GATEWAY_GROUP], GATEWAY_KINDS)],
    objects: [route('a.test')],
  });
  t.teardown(() => api.close());
  const { kube, seen } = source(api);
  await kube.start();
  t.match(seen.states, [
    {
      enabled: false,
      reason: /^no permission to list namespaces \(RBAC: list and watch on namespaces in API group ""\)/,
      forbidden: { kind: 'Namespace', resource: 'namespaces', apiGroup: '' },
    },
  ]);
  t.equal(seen.states.length, 1, 'said once');
  t.notOk(kube.gatewayApi);
  const snapshot = kube.snapshot();
  for (const list of ['gatewayClasses', 'gateways', 'httpRoutes', 'referenceGrants', 'namespaces'] as const) {
    t.equal(snapshot[list], undefined, `no ${list} in the snapshot`);
  }
  t.same(
    kube.informers().map((i) => i.kind),
    ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret', 'ConfigMap'],
    'the Gateway API informers are gone',
  );
  t.same(seen.errors, [], 'not reported as a watch failure');
});

t.test('RBAC removed while running: the last objects stay, the watch retries until allowed', async (t) => {
  const rules = [...INGRESS_RULES, allow([GATEWAY_GROUP], GATEWAY_KINDS), allow([''], ['namespaces'])];
  const api = await startFakeApiServer({ gatewayApi: true, rbac: rules, objects: [route('a.test')] });
  t.teardown(() => api.close());
  const { kube, seen, next } = source(api);
  await kube.start();
  t.same(seen.states, [{ enabled: true }], 'on once listed');
  api.rbac = INGRESS_RULES;
  api.cutWatches();
  while (!seen.errors.includes('HTTPRoute')) await next();
  t.ok(kube.gatewayApi, 'still on');
  t.same(
    kube.snapshot().httpRoutes?.map((r) => r.metadata?.name),
    ['site'],
    'the last HTTPRoutes kept',
  );
  t.equal(seen.states.length, 1, 'nothing more said');
  api.rbac = rules;
  api.apply(route('b.test'));
  while (!JSON.stringify(kube.snapshot().httpRoutes).includes('b.test')) await next();
  t.pass('watching again once allowed');
});
