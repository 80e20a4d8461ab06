// An HTTPRoute backendRef or RequestMirror to an ExternalName Service is refused (InvalidKind,
// 500 for its share): the Service's DNS name could reach another namespace without a
// ReferenceGrant (CVE-2021-25740). An Ingress keeps its ExternalName backends.
import t from 'tap';
import { buildModel, type Service } from '../../../lib/model/index.ts';
import { gateway, http, httpRoute, INFRA, routeLines, snapshotOfWorld, worldWith } from './fixtures.ts';

const external: Service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'ext', namespace: 'tenant' },
  spec: { type: 'ExternalName', externalName: 'secret-api.other-team.svc.cluster.local' },
};
const plain: Service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'own', namespace: 'tenant' },
  spec: { ports: [{ port: 8080 }] },
};

t.test(
  'a backendRef and a mirror to an ExternalName Service: ResolvedRefs=False/InvalidKind, 500',
  async (t) => {
    const world = worldWith({
      gateways: [gateway('gw', [http('http', { from: 'All' })])],
      services: [external, plain],
      httpRoutes: [
        httpRoute(
          'r',
          [{ name: 'gw', namespace: INFRA }],
          [
            {
              backendRefs: [
                { name: 'ext', port: 8080, weight: 1 },
                { name: 'own', port: 8080, weight: 1 },
              ],
              filters: [
                { type: 'RequestMirror', requestMirror: { backendRef: { name: 'ext', port: 8080 } } },
              ],
            },
          ],
          { namespace: 'tenant', hostnames: ['t.example.com'] },
        ),
      ],
    });
    const result = buildModel(snapshotOfWorld(world));
    const lines = routeLines(
      {
        status: result.gatewayStatus ?? { gatewayClasses: [], gateways: [], httpRoutes: [] },
        routes: [],
        certificates: [],
      },
      'r',
      'tenant',
    );
    t.match(lines[1], /ResolvedRefs=False\/InvalidKind/);
    const route = result.model.servers.find((s) => s.hostname === 't.example.com')?.routes[0];
    const backend = route?.backend;
    t.equal(backend?.type, 'weighted');
    if (backend?.type === 'weighted') {
      t.equal(backend.backends[0]?.upstream, null, 'the ExternalName share answers 500');
      t.not(backend.backends[1]?.upstream, null, 'the other share is served');
    }
    t.strictSame(route?.gateway?.mirrors, [], 'no mirror copy to the ExternalName');
    for (const upstream of Object.values(result.model.upstreams)) {
      t.notOk(upstream.externalName, `no ExternalName upstream (${upstream.name})`);
    }
    t.ok(
      result.diagnostics.some(
        (d) => d.code === 'HTTPROUTE_BACKEND_INVALID' && d.name === 'r' && /ExternalName/.test(d.message),
      ),
      'a diagnostic names the reason',
    );
  },
);
