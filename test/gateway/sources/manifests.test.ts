// Standalone mode with the Gateway API kinds: read from the folder in gateway.networking.k8s.io/v1
// or v1beta1 (another version is a finding), Namespaces with their labels, a first-seen
// creationTimestamp for Gateways and HTTPRoutes as for Ingresses, and --enable-gateway-api=false
// leaving them all out of the snapshot.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_MODEL_OPTIONS } from '../../../lib/model/index.ts';
import { parseManifestFile } from '../../../lib/source/manifests/parse.ts';
import { createManifestSource } from '../../../lib/source/manifests/source.ts';

const GATEWAY_YAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: ingress-ts, namespace: ignored }
spec: { controllerName: ingress-ts.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: infra }
spec:
  gatewayClassName: ingress-ts
  listeners: [{ name: http, port: 80, protocol: HTTP }]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: HTTPRoute
metadata: { name: site }
spec:
  parentRefs: [{ name: edge, namespace: infra }]
  rules: [{ backendRefs: [{ name: web, port: 80 }] }]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: grant, namespace: backends, creationTimestamp: "2020-01-01T00:00:00Z" }
spec: { from: [], to: [] }
---
apiVersion: v1
kind: Namespace
metadata: { name: web, labels: { team: web, shared: true } }
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: HTTPRoute
metadata: { name: old, namespace: web }
`;

t.test(
  'the kinds of a file: v1 and v1beta1 read, namespaces defaulted, another version a finding',
  async (t) => {
    const { entries, findings } = parseManifestFile('gateway.yaml', GATEWAY_YAML);
    t.same(
      entries.map((e) => e.key),
      [
        'GatewayClass//ingress-ts',
        'Gateway/infra/edge',
        'HTTPRoute/default/site',
        'ReferenceGrant/backends/grant',
        'Namespace//web',
      ],
    );
    t.same(entries.at(-1)?.object.metadata?.labels, { team: 'web', shared: 'true' }, 'labels as strings');
    t.match(findings, [
      {
        code: 'MANIFEST_API_VERSION_IGNORED',
        message:
          'HTTPRoute web/old has apiVersion gateway.networking.k8s.io/v1alpha2, only gateway.networking.k8s.io/v1 or gateway.networking.k8s.io/v1beta1 is read: ignored',
      },
    ]);
  },
);

async function folder(t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ingress-ts-gateway-manifests-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'gateway.yaml'), GATEWAY_YAML);
  return dir;
}

t.test('the folder: the kinds in the snapshot, Gateways and HTTPRoutes dated when first seen', async (t) => {
  const dir = await folder(t);
  const source = createManifestSource({
    dir,
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => {},
    now: () => new Date('2026-02-03T04:05:06.789Z'),
  });
  t.teardown(() => source.stop());
  await source.start();
  const snapshot = source.snapshot();
  const created = (list: ReadonlyArray<{ metadata?: { creationTimestamp?: string } }> | undefined) =>
    list?.map((o) => o.metadata?.creationTimestamp);
  t.same(created(snapshot.gateways), ['2026-02-03T04:05:06Z']);
  t.same(created(snapshot.httpRoutes), ['2026-02-03T04:05:06Z']);
  t.same(created(snapshot.referenceGrants), ['2020-01-01T00:00:00Z'], 'a written one kept');
  t.same(created(snapshot.gatewayClasses), [undefined], 'classes are not ordered by age: left as written');
  t.same(
    snapshot.namespaces?.map((n) => n.metadata?.name),
    ['web'],
  );
  t.equal(snapshot.gatewayClasses?.[0]?.metadata?.namespace, undefined, 'cluster-scoped: no namespace');
});

t.test('--enable-gateway-api=false: none of them in the snapshot', async (t) => {
  const dir = await folder(t);
  const source = createManifestSource({
    dir,
    model: DEFAULT_MODEL_OPTIONS,
    gatewayApi: false,
    onChange: () => {},
  });
  t.teardown(() => source.stop());
  await source.start();
  const snapshot = source.snapshot();
  for (const list of ['gatewayClasses', 'gateways', 'httpRoutes', 'referenceGrants', 'namespaces']) {
    t.notOk(list in snapshot, `no ${list}`);
  }
});
