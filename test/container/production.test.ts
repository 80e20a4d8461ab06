// The image's file set, reproduced from the Containerfile itself (containerfile.ts): production
// dependencies only, the runtime files only, and from there the entrypoint answers --help and serves
// a request in standalone mode. Needs the npm registry or a warm npm cache (`npm ci` ran before).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { get, LOOPBACK_PORT_0, listen } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseContainerfile, replay } from './containerfile.ts';

const repo = new URL('../..', import.meta.url).pathname;
const containerfile = path.join(repo, 'Containerfile');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
};

// `npm ci` (from the npm cache when warm) takes most of the time: up to a minute on a busy machine.
t.setTimeout(180_000);
const work = mkdtempSync(path.join(tmpdir(), 'ingress-ts-image-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

// npm here may need the system CA bundle to reach the registry (as in .ci/run).
const npmEnv: NodeJS.ProcessEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' };
if (!npmEnv.NODE_EXTRA_CA_CERTS && existsSync('/etc/ssl/certs/ca-certificates.crt')) {
  npmEnv.NODE_EXTRA_CA_CERTS = '/etc/ssl/certs/ca-certificates.crt';
}
const image = await replay(containerfile, repo, path.join(work, 'stages'), npmEnv);
const [command, ...entryArgs] = image.entrypoint;
const argv0 = command === 'node' ? process.execPath : (command as string);
const runtimeEnv = { ...process.env, ...image.env };

/** Starts the entrypoint with `args`; resolves with its stdout once a line matches. */
function start(args: string[]) {
  const child = spawn(argv0, [...entryArgs, ...args], {
    cwd: image.workdir,
    env: runtimeEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const waitFor = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = output.split('\n').find((candidate) => pattern.test(candidate));
        if (line !== undefined) resolve(line);
      };
      child.stdout.on('data', check);
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
      check();
    });
  return { child, waitFor, output: () => output };
}

t.test(
  'the Containerfile: multi-stage on Node 24, npm ci --omit=dev, non-root, entrypoint, labels',
  async (t) => {
    const instructions = parseContainerfile(readFileSync(containerfile, 'utf8'));
    const of = (keyword: string) => instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
    t.ok(of('FROM').length >= 2, 'multi-stage');
    t.match(of('ARG').join('\n'), /NODE_IMAGE=docker\.io\/library\/node:24-/, 'the official Node 24 image');
    t.match(of('RUN').join('\n'), /npm ci --omit=dev/, 'production dependencies only');
    const user = of('USER').at(-1) ?? 'root';
    t.notMatch(user, /^(root|0)(:|$)/, 'a non-root user');
    t.match(of('ENTRYPOINT').at(-1), /bin\/ingress-ts\.ts/, 'the binary is the entrypoint');
    const labels = of('LABEL').join(' ');
    for (const label of ['title', 'description', 'version', 'licenses', 'source']) {
      t.match(labels, `org.opencontainers.image.${label}=`, `OCI label ${label}`);
    }
    t.match(of('ARG').join('\n'), `VERSION=${pkg.version}`, 'the version label is the package version');
  },
);

t.test('.containerignore lets in exactly what the Containerfile copies', async (t) => {
  const allowed = readFileSync(path.join(repo, '.containerignore'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('!'))
    .map((line) => line.slice(1).replace(/\/$/, ''));
  const copied = image.contextSources.map((source) => source.replace(/\/$/, ''));
  t.same([...new Set(copied)].sort(), allowed.sort());
});

t.test('the production file set: runtime files and production dependencies only', async (t) => {
  t.same(readdirSync(image.root).sort(), ['app'], 'everything under /app');
  const app = path.join(image.root, 'app');
  t.same(readdirSync(app).sort(), ['bin', 'lib', 'node_modules', 'package.json']);
  for (const name of Object.keys(pkg.dependencies)) {
    t.ok(existsSync(path.join(app, 'node_modules', name, 'package.json')), `dependency ${name} installed`);
  }
  // Every package the lockfile marks dev-only is left out (some devDependencies, @types/node for one,
  // are also needed by a production dependency and rightly stay).
  const lock = JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const devOnly = Object.entries(lock.packages).filter(
    ([where, entry]) => where !== '' && entry.dev === true,
  );
  t.ok(devOnly.length > 0);
  const present = devOnly.filter(([where]) => existsSync(path.join(app, where)));
  t.same(
    present.map(([where]) => where),
    [],
    `none of the ${devOnly.length} dev-only packages installed`,
  );
  t.notOk(existsSync(path.join(app, 'node_modules', 'tap')), 'no test runner');
});

t.test('the entrypoint answers --help', async (t) => {
  const { child, waitFor } = start(['--help']);
  await waitFor(/^Usage: ingress-ts/);
  const [code] = await once(child, 'exit');
  t.equal(code, 0);
});

t.test('standalone mode serves a request from the production file set', async (t) => {
  const backend = createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`echo ${req.headers.host} ${req.url}`);
  });
  const backendPort = await listen(backend);
  t.teardown(() => backend.close());
  const manifests = mkdtempSync(path.join(work, 'manifests-'));
  writeFileSync(
    path.join(manifests, 'app.yaml'),
    INGRESS_CLASS +
      serviceYaml('echo', [backendPort]) +
      ingressYaml({ name: 'app', host: 'app.test', service: 'echo' }),
  );
  const { child, waitFor, output } = start(['--manifests', manifests, ...LOOPBACK_PORT_0]);
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const serving = JSON.parse(await waitFor(/"msg":"ingress-ts \S+ serving"/)) as { http: number };
  t.match(output(), /"msg":"configuration applied"/);
  const reply = await get(serving.http, 'app.test', '/hello');
  t.equal(reply.status, 200);
  t.equal(reply.body, 'echo app.test /hello');
  child.kill('SIGTERM');
  const [code] = await once(child, 'exit');
  t.equal(code, 0, 'a graceful stop');
});
