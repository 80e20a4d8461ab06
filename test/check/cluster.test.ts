// `ingress-ts check --kubeconfig` against the fake API server: one list per kind, no watch, the
// same class and namespace flags as the controller.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import type { CheckReport } from '../../lib/check/report.ts';
import { DEFAULT_MODEL_OPTIONS } from '../../lib/model/index.ts';
import { type KubeObject, startFakeApiServer } from '../support/fake-apiserver.ts';

const run = promisify(execFile);
// each run starts a process (a few seconds on a loaded machine): tap's 30 s default is too short
t.setTimeout(180_000);
const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;

const backend = { service: { name: 'web', port: { number: 80 } } };
const ingress = (name: string, namespace: string, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace, annotations },
  spec: {
    ingressClassName: 'ingress-ts',
    rules: [{ host: `${name}.example.com`, http: { paths: [{ path: '/', pathType: 'Prefix', backend }] } }],
  },
});
const OBJECTS: KubeObject[] = [
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'ingress-ts' },
    spec: { controller: DEFAULT_MODEL_OPTIONS.controllerClass },
  },
  ingress('shop', 'web'),
  ingress('blog', 'web', { 'nginx.ingress.kubernetes.io/configuration-snippet': 'return 200;' }),
  ingress('elsewhere', 'other'),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'web' },
    spec: { ports: [{ port: 80 }] },
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-1', namespace: 'web', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ port: 80 }],
    endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: true } }],
  },
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'token', namespace: 'web' },
    type: 'Opaque',
    data: { token: Buffer.from('cluster-secret-do-not-print').toString('base64') },
  },
];

async function check(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // without tap's per-module hook (NODE_OPTIONS): it triples the CPU of loading the Kubernetes client
    const { stdout, stderr } = await run(process.execPath, [bin, 'check', ...args], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

t.test('a cluster is listed once, never watched, and checked as a folder would be', async (t) => {
  const fake = await startFakeApiServer();
  t.teardown(() => fake.close());
  for (const object of OBJECTS) fake.apply(object);
  const kubeconfig = await fake.writeKubeconfig();

  const ran = await check(['--kubeconfig', kubeconfig, '-o', 'json']);
  t.equal(ran.code, 1, 'blog is not served');
  const report = JSON.parse(ran.stdout) as CheckReport;
  t.strictSame(
    report.ingresses.map((i) => [`${i.namespace}/${i.name}`, i.verdict]),
    [
      ['other/elsewhere', 'served-with-differences'],
      ['web/blog', 'not-served'],
      ['web/shop', 'served'],
    ],
  );
  t.match(
    report.ingresses[0]?.findings,
    [{ code: 'SERVICE_NOT_FOUND' }],
    'no Service web in namespace other',
  );
  t.equal(fake.count({ verb: 'watch' }), 0, 'no watch');
  for (const resource of [
    'ingressclasses',
    'ingresses',
    'services',
    'endpointslices',
    'secrets',
    'configmaps',
  ]) {
    t.equal(fake.count({ verb: 'list', resource }), 1, `${resource} listed once`);
  }
  t.notMatch(ran.stdout + ran.stderr, 'cluster-secret-do-not-print');
  t.notMatch(ran.stdout + ran.stderr, Buffer.from('cluster-secret-do-not-print').toString('base64'));

  const table = await check(['--kubeconfig', kubeconfig, '--watch-namespace', 'web']);
  t.equal(table.code, 1);
  t.match(table.stdout, /^Checked the cluster at http:\/\/127\.0\.0\.1:\d+\.$/m);
  t.notMatch(table.stdout, 'elsewhere', '--watch-namespace lists one namespace');
  t.match(table.stdout, /^web\/shop +served$/m);
  t.match(
    table.stdout,
    /^2 Ingresses: 1 served, 0 served-with-differences, 0 partly-served, 1 not-served, 0 ignored$/m,
  );
  t.ok(
    fake.count(
      (request) => request.verb === 'list' && request.resource === 'ingresses' && request.namespace === 'web',
    ) >= 1,
    'listed in that namespace',
  );
});

t.test(
  'an API server that refuses the list: exit 3 with its answer, and nothing printed on stdout',
  async (t) => {
    const fake = await startFakeApiServer({ token: 'right' });
    t.teardown(() => fake.close());
    const file = await fake.writeKubeconfig();
    const { writeFile, readFile } = await import('node:fs/promises');
    await writeFile(file, (await readFile(file, 'utf8')).replace("token: 'right'", "token: 'wrong'"));
    const ran = await check(['--kubeconfig', file]);
    t.equal(ran.code, 3);
    t.equal(ran.stdout, '');
    t.match(ran.stderr, /ingress-ts check: list .*HTTP 401/);
  },
);

t.test('Gateway API installed: its kinds listed once as the controller reads them', async (t) => {
  const V1 = 'gateway.networking.k8s.io/v1';
  const fake = await startFakeApiServer({ gatewayApi: true });
  t.teardown(() => fake.close());
  for (const object of [
    ...OBJECTS,
    {
      apiVersion: V1,
      kind: 'GatewayClass',
      metadata: { name: 'ingress-ts' },
      spec: { controllerName: DEFAULT_MODEL_OPTIONS.gatewayControllerName },
    },
    {
      apiVersion: V1,
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: 'web' },
      spec: { gatewayClassName: 'ingress-ts', listeners: [{ name: 'odd', port: 8081, protocol: 'HTTP' }] },
    },
  ])
    fake.apply(object);
  const kubeconfig = await fake.writeKubeconfig();
  const gatewayFindings = (ran: { stdout: string }) =>
    ((JSON.parse(ran.stdout) as CheckReport).other?.findings ?? []).filter((f) => f.kind === 'Gateway');

  const ran = await check(['--kubeconfig', kubeconfig, '-o', 'json']);
  t.equal(ran.code, 1);
  t.match(
    gatewayFindings(ran),
    [{ kind: 'Gateway', namespace: 'web', name: 'edge', code: 'GATEWAY_INVALID', message: /odd/ }],
    "the build saw the Gateway: its listener's port is not one ingress-ts serves",
  );
  for (const resource of ['gatewayclasses', 'gateways', 'httproutes', 'referencegrants', 'namespaces']) {
    t.equal(fake.count({ verb: 'list', resource }), 1, `${resource} listed once`);
  }
  t.equal(fake.count({ verb: 'watch' }), 0, 'no watch');

  const before = fake.requests.length;
  const off = await check(['--kubeconfig', kubeconfig, '-o', 'json', '--enable-gateway-api=false']);
  t.same(gatewayFindings(off), [], '--enable-gateway-api=false: not read');
  t.notOk(
    fake.requests.slice(before).some((r) => r.path.includes('gateway.networking.k8s.io')),
    'not even discovery',
  );

  fake.rbac = [
    { apiGroups: ['networking.k8s.io'], resources: ['ingresses', 'ingressclasses'], verbs: ['list'] },
    { apiGroups: [''], resources: ['services', 'secrets', 'configmaps'], verbs: ['list'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list'] },
  ];
  const forbidden = await check(['--kubeconfig', kubeconfig, '-o', 'json']);
  t.equal(forbidden.code, 1, 'RBAC without the Gateway API rules: checked as the controller would serve');
  t.same(gatewayFindings(forbidden), []);
});
