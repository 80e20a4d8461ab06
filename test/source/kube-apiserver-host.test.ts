// --apiserver-host and --certificate-authority, as ingress-nginx (client-go's BuildConfigFromFlags)
// reads them: the server overrides the kubeconfig's and keeps its credentials; alone, no credentials.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { loadKubeConfig } from '../../lib/source/kube/kubeconfig.ts';
import { startFakeApiServer } from '../support/fake-apiserver.ts';
import { LOOPBACK_PORT_0 } from '../support/http.ts';
import { testThreadsKube } from '../support/threads.ts';

const bin = new URL('../../bin/ingress-ts.ts', import.meta.url).pathname;

/** A kubeconfig whose server nothing listens on, with a bearer token. */
function kubeconfigElsewhere(dir: string, token: string): string {
  const file = path.join(dir, 'kubeconfig');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
- name: elsewhere
  cluster: { server: 'https://127.0.0.1:1', certificate-authority-data: '' }
users:
- name: u
  user: { token: '${token}' }
contexts:
- name: c
  context: { cluster: elsewhere, user: u }
current-context: c
`,
  );
  return file;
}

t.test("with --kubeconfig, the kubeconfig's credentials go to --apiserver-host", async (t) => {
  const fake = await startFakeApiServer({ token: 's3cret' });
  t.teardown(() => fake.close());
  const file = kubeconfigElsewhere(t.testdir({}), 's3cret');
  const kc = loadKubeConfig(file, {}, { server: fake.url, caFile: null });
  t.equal(kc.getCurrentCluster()?.server, fake.url);
  await kc.makeApiClient(k8s.CoreV1Api).listNamespacedConfigMap({ namespace: 'default' });
  t.equal(fake.requests.at(-1)?.status, 200);
  t.equal(fake.requests.at(-1)?.headers.authorization, 'Bearer s3cret');
});

t.test('alone, --apiserver-host is reached without credentials, even in a Pod', async (t) => {
  const fake = await startFakeApiServer();
  t.teardown(() => fake.close());
  const kc = loadKubeConfig(
    null,
    { KUBERNETES_SERVICE_HOST: '10.0.0.1' },
    { server: fake.url, caFile: null },
  );
  await kc.makeApiClient(k8s.CoreV1Api).listNamespacedConfigMap({ namespace: 'default' });
  t.equal(fake.requests.at(-1)?.status, 200);
  t.equal(fake.requests.at(-1)?.headers.authorization, undefined);
});

t.test('--certificate-authority is the CA the server is verified with', async (t) => {
  const file = kubeconfigElsewhere(t.testdir({}), 't');
  for (const from of [null, file]) {
    const cluster = loadKubeConfig(
      from,
      {},
      { server: 'https://10.0.0.1:6443', caFile: '/etc/ca.pem' },
    ).getCurrentCluster();
    t.match(
      cluster,
      { server: 'https://10.0.0.1:6443', caFile: '/etc/ca.pem', skipTLSVerify: false },
      String(from),
    );
    t.equal(cluster?.caData, undefined);
  }
});

t.test('ingress-ts --apiserver-host URL lists the cluster there', async (t) => {
  const threads = testThreadsKube([]);
  const fake = await startFakeApiServer({ objects: threads.objects });
  t.teardown(() => fake.close());
  const home = t.testdir({}); // no ~/.kube/config: only the flag says where the API is
  const child = spawn(
    process.execPath,
    [bin, '--apiserver-host', fake.url, '--disable-leader-election', ...LOOPBACK_PORT_0, ...threads.flags],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        HOME: home,
        KUBECONFIG: '',
        KUBERNETES_SERVICE_HOST: '',
        POD_NAMESPACE: 'default',
      },
    },
  );
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('serving')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  t.ok(fake.requests.some((request) => request.verb === 'list' && request.resource === 'ingresses'));
  t.match(output, `"server":"${fake.url}"`);
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});
