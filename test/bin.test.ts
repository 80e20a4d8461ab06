// The command line: --help, --version, refusing bad flags, and a real start and graceful stop.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import t from 'tap';
import { LOOPBACK_PORT_0 } from './support/http.ts';
import { TEST_THREAD_COUNT, testThreadsFlags, withTestThreads } from './support/threads.ts';

const run = promisify(execFile);
// eight process starts: tap's 30 s default is too short on a loaded machine
t.setTimeout(120_000);
const bin = new URL('../bin/ingress-ts.ts', import.meta.url).pathname;
const examples = new URL('../examples/manifests', import.meta.url).pathname;

/** A copy of the example manifests, to which the suite's worker-processes can be added. */
function exampleManifests(t: Test): string {
  const dir = t.testdir({});
  cpSync(examples, dir, { recursive: true });
  return dir;
}
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

t.test('--version prints the package version', async (t) => {
  const { stdout } = await run(process.execPath, [bin, '--version']);
  t.equal(stdout.trim(), version);
});

t.test('--help lists the flags with their defaults', async (t) => {
  const { stdout } = await run(process.execPath, [bin, '--help']);
  for (const flag of [
    '--http-port',
    '--https-port',
    '--healthz-port',
    '--manifests',
    '--controller-class',
    '--shutdown-grace-period',
  ]) {
    t.match(stdout, flag);
  }
  t.match(stdout, '[10254]');
});

t.test('an unknown flag or a bad value exits 2 with a message', async (t) => {
  const unknown = await run(process.execPath, [bin, '--no-such-flag']).catch((e: unknown) => e);
  t.match(unknown, { code: 2, stderr: /Unknown option '--no-such-flag'/ });
  const badPort = await run(process.execPath, [bin, '--manifests', examples, '--http-port', 'x']).catch(
    (e: unknown) => e,
  );
  t.match(badPort, { code: 2, stderr: /--http-port must be a port number/ });
});

t.test('no --manifests and no way to reach a cluster: exits 1 saying what to pass', async (t) => {
  const home = t.testdir({}); // no ~/.kube/config there
  const env = { ...process.env, HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '' };
  const noSource = await run(process.execPath, [bin, ...LOOPBACK_PORT_0], { env }).catch((e: unknown) => e);
  t.match(noSource, { code: 1, stdout: /no Kubernetes API to watch.*--kubeconfig FILE.*--manifests DIR/ });
});

t.test('starts on the example manifests, logs JSON, and exits 0 on SIGTERM', async (t) => {
  const manifests = exampleManifests(t);
  const threads = testThreadsFlags(manifests, []);
  const child = spawn(process.execPath, [bin, '--manifests', manifests, ...LOOPBACK_PORT_0, ...threads], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  const serving = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of output.split('\n')) {
        if (line.includes('serving')) resolve(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before serving: ${output}`)));
  });
  const line = await serving;
  t.type(line.http, 'number');
  t.type(line.https, 'number');
  t.match(output, /"msg":"configuration applied"/);
  t.match(output, new RegExp(`"threads":${TEST_THREAD_COUNT}[,}]`), 'the thread count is logged');
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});

t.test("starts with ingress-nginx's args: one warning names the flags with no effect", async (t) => {
  // deploy/static/provider/cloud/deploy.yaml of ingress-nginx v1.15.1, plus flags its users carry
  const ingressNginxArgs = [
    '/nginx-ingress-controller',
    '--publish-service=ingress-nginx/ingress-nginx-controller',
    '--election-id=ingress-nginx-leader',
    '--controller-class=k8s.io/ingress-nginx',
    '--ingress-class=nginx',
    '--configmap=ingress-nginx/ingress-nginx-controller',
    '--validating-webhook=:8443',
    '--validating-webhook-certificate=/usr/local/certificates/cert',
    '--validating-webhook-key=/usr/local/certificates/key',
    '--v=2',
    '--tcp-services-configmap',
    'ingress-nginx/tcp-services',
    '--maxmind-license-key=secret-license-key',
    '--health-check-path=/ready',
    // the other listeners are on 127.0.0.1 (--bind-address)
    '--healthz-host=127.0.0.2',
  ];
  // standalone: the flags that need a cluster stay out; the webhook on a free port (the certificate
  // files do not exist here: it starts without one, with a warning)
  const args = ingressNginxArgs
    .filter((arg) => !arg.startsWith('--publish-service'))
    .map((arg) => (arg === '--validating-webhook=:8443' ? '--validating-webhook=127.0.0.1:0' : arg));
  // the --configmap it names, holding only the suite's worker-processes
  const manifests = exampleManifests(t);
  writeFileSync(
    join(manifests, 'zz-controller.yaml'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-nginx-controller', namespace: 'ingress-nginx' },
      data: withTestThreads({}),
    }),
  );
  const child = spawn(process.execPath, [bin, ...args, '--manifests', manifests, ...LOOPBACK_PORT_0], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const serving = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of output.split('\n')) {
        if (line.includes('serving')) resolve(JSON.parse(line) as Record<string, unknown>);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before serving: ${output}${errors}`)));
  });
  const line = await serving;
  const warnings = output
    .split('\n')
    .filter((text) => text !== '')
    .map((text) => JSON.parse(text) as { level: number; msg: string; flags?: Record<string, string> })
    .filter((entry) => entry.level === 40 && entry.flags !== undefined);
  t.equal(warnings.length, 1, 'one warning');
  t.strictSame(Object.keys(warnings[0]?.flags ?? {}), ['/nginx-ingress-controller', '--maxmind-license-key']);
  t.match(warnings[0]?.msg, /\/nginx-ingress-controller, --maxmind-license-key/);
  t.match(output, /"msg":"validating admission webhook listening"/, 'the webhook flags act');
  t.match(output, /cannot read the webhook certificate files/);
  t.notMatch(output + errors, 'secret-license-key', 'no flag value is logged');
  // --health-check-path moved the readiness check, --healthz-host its listener
  const ready = await fetch(`http://127.0.0.2:${line.healthz}/ready`);
  t.equal(ready.status, 200);
  t.equal((await fetch(`http://127.0.0.2:${line.healthz}/healthz`)).status, 404);
  await t.rejects(fetch(`http://127.0.0.1:${line.healthz}/ready`), 'not on --bind-address');
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});

t.test('with ingress-nginx args, a flag ingress-nginx does not have still exits 2', async (t) => {
  const result = await run(process.execPath, [
    bin,
    '/nginx-ingress-controller',
    '--v=2',
    '--validating-webhook=:8443',
    '--no-such-flag',
  ]).catch((e: unknown) => e);
  t.match(result, { code: 2, stderr: /Unknown option '--no-such-flag'/ });
});
