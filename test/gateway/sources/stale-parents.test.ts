// The controller end to end against the fake API server: an HTTPRoute accepted by our Gateway carries
// our entry in status.parents; once every Gateway and GatewayClass of ours is gone the build still
// reports (an empty status) and the leader removes that entry, leaving another controller's alone.
import t from 'tap';
import { parseFlags } from '../../../lib/config/flags.ts';
import { createLogger } from '../../../lib/log.ts';
import { start } from '../../../lib/main.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../../lib/model/index.ts';
import {
  type FakeApiServer,
  GATEWAY_GROUP,
  type KubeObject,
  startFakeApiServer,
} from '../../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0 } from '../../support/http.ts';

t.setTimeout(60_000);

const V1 = `${GATEWAY_GROUP}/v1`;
const OURS = DEFAULT_MODEL_OPTIONS.gatewayControllerName;
const FOREIGN = 'example.net/other-controller';
const foreignParent = {
  parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', name: 'theirs', namespace: 'web' },
  controllerName: FOREIGN,
  conditions: [
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Accepted',
      message: 'theirs',
      observedGeneration: 1,
      lastTransitionTime: '2025-01-01T00:00:00Z',
    },
  ],
};

const objects: KubeObject[] = [
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'ingress-ts' },
    spec: { controller: 'ingress-ts.dev/controller' },
  },
  { apiVersion: V1, kind: 'GatewayClass', metadata: { name: 'ingress-ts' }, spec: { controllerName: OURS } },
  {
    apiVersion: V1,
    kind: 'Gateway',
    metadata: { name: 'edge', namespace: 'web' },
    spec: { gatewayClassName: 'ingress-ts', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
  },
  {
    apiVersion: V1,
    kind: 'HTTPRoute',
    metadata: { name: 'site', namespace: 'web' },
    spec: {
      parentRefs: [{ name: 'edge' }, { name: 'theirs' }],
      hostnames: ['site.test'],
      rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
    },
    status: { parents: [foreignParent] },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'web' },
    spec: { ports: [{ name: 'http', port: 80 }] },
  },
];

type Parent = { controllerName: string; parentRef: { name: string }; conditions: Array<{ type: string }> };
const parents = (api: FakeApiServer): Parent[] =>
  (
    api.get({ apiVersion: V1, kind: 'HTTPRoute', namespace: 'web', name: 'site' }) as {
      status?: { parents?: Parent[] };
    }
  ).status?.parents ?? [];
const routeStatusWritten = (api: FakeApiServer) =>
  api.waitForRequest(
    (r) =>
      r.method === 'PUT' && r.resource === 'httproutes' && r.subresource === 'status' && r.status === 200,
    15_000,
  );

t.test('every Gateway and GatewayClass deleted: our parent entry goes, the other stays', async (t) => {
  const api = await startFakeApiServer({ gatewayApi: true, objects });
  t.teardown(() => api.close());
  const parsed = parseFlags([
    '--kubeconfig',
    await api.writeKubeconfig(),
    ...LOOPBACK_PORT_0,
    '--disable-leader-election',
    '--publish-status-address',
    '10.0.0.1',
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const written = routeStatusWritten(api);
  const first = await start(parsed.config, createLogger('silent'));
  await written;
  t.same(
    parents(api).map((p) => [p.controllerName, p.parentRef.name]),
    [
      [FOREIGN, 'theirs'],
      [OURS, 'edge'],
    ],
    "accepted: our entry beside the other controller's",
  );
  t.match(parents(api)[1]?.conditions, [{ type: 'Accepted', status: 'True' }]);

  // Deleted together (one build sees neither; a build that still sees one of them reports a status
  // anyway): here while no controller runs, as across a restart or a change of leader.
  await first.stop(0);
  api.remove({ apiVersion: V1, kind: 'Gateway', namespace: 'web', name: 'edge' });
  api.remove({ apiVersion: V1, kind: 'GatewayClass', name: 'ingress-ts' });
  const removed = routeStatusWritten(api);
  const second = await start(parsed.config, createLogger('silent'));
  t.teardown(() => second.stop(0));
  await removed;
  t.same(parents(api), [foreignParent], 'ours removed, theirs exactly as it was');
});
