// The command line: --help, --version, refusing bad flags, and a real start and graceful stop.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import t from 'tap';
import { LOOPBACK_PORT_0 } from './support/http.ts';

const run = promisify(execFile);
const bin = new URL('../bin/ingress-ts.ts', import.meta.url).pathname;
const manifests = new URL('../examples/manifests', import.meta.url).pathname;
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
  const badPort = await run(process.execPath, [bin, '--manifests', manifests, '--http-port', 'x']).catch(
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
  const child = spawn(process.execPath, [bin, '--manifests', manifests, ...LOOPBACK_PORT_0], {
    stdio: ['ignore', 'pipe', 'pipe'],
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
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});
