// upstream-hash-by through the real proxy: six echo backends behind one Service (one EndpointSlice
// each, since every backend listens on its own port); $request_uri sends identical requests to one
// backend and spreads different ones; the subset mode spreads one key over exactly 3 backends.
// (Also the one canary case that needs a controller without a catch-all Ingress: no main → 404.)
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { rawGets } from '../support/raw-gets.ts';
import { nextSwap } from '../support/swaps.ts';

t.setTimeout(120_000); // ~20,000 requests; tap's 30 s default is tight on a shared CI machine

const backendOf = async (port: number, host: string, path: string): Promise<string> =>
  (JSON.parse((await get(port, host, path)).body) as { backend: string }).backend;

const site = (name: string, annotations: Record<string, string>, service = name) =>
  ingressYaml({ name, host: `${name}.test`, service, annotations });
const service = serviceYaml;

t.test('consistent hashing through the proxy', async (t) => {
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) {
    const server = echoServer(`pod-${i}`);
    ports.push(await listen(server));
    t.teardown(() => new Promise((resolve) => server.close(resolve)));
  }
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-hash-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      service('hashed', ports),
      service('subset', ports),
      service('plain', ports),
      site('hashed', { 'upstream-hash-by': '$request_uri' }),
      site('subset', { 'upstream-hash-by': '$request_uri', 'upstream-hash-by-subset': 'true' }),
      site('plain', {}),
      // a canary for a host no main Ingress serves (never a host of its own → 404)
      site('lost', { canary: 'true', 'canary-weight': '100' }).replace(
        'service: { name: lost',
        'service: { name: plain',
      ),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  const seen = async (host: string, paths: string[]) => {
    const backends = new Set<string>();
    for (const path of paths) backends.add(await backendOf(port, host, path));
    return backends;
  };
  const same = Array.from({ length: 100 }, () => '/products/42?color=red');
  const different = Array.from({ length: 100 }, (_, i) => `/products/${i}`);
  t.equal((await seen('hashed.test', same)).size, 1, '$request_uri: 100 identical requests, one backend');
  t.ok((await seen('hashed.test', different)).size >= 4, 'different URIs spread over the backends');
  t.equal((await seen('subset.test', same)).size, 3, 'subset of 3: one URI, exactly 3 backends');
  t.equal((await seen('plain.test', same)).size, 6, 'without upstream-hash-by: round robin over all 6');
  t.equal((await get(port, 'lost.test', '/')).status, 404, 'a canary without a main Ingress: 404');
});

t.test('adding one endpoint to 10 moves at most 20% of 10,000 keys, through the proxy', async (t) => {
  const ports: number[] = [];
  for (let i = 0; i < 11; i++) {
    const server = echoServer(`pod-${i}`);
    ports.push(await listen(server));
    t.teardown(() => new Promise((resolve) => server.close(resolve)));
  }
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-hash-move-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const write = (count: number) =>
    writeFile(
      join(dir, 'all.yaml'),
      [
        INGRESS_CLASS,
        service('hashed', ports.slice(0, count)),
        site('hashed', { 'upstream-hash-by': '$request_uri' }),
      ].join(''),
    );
  await write(10);
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const paths = Array.from({ length: 10_000 }, (_, i) => `/k/${i}`);
  // 16 requests in flight, on keep-alive connections: the owner depends on the URI alone
  const owners = async () =>
    (await rawGets(port, 'hashed.test', paths, 16)).map(
      (reply) => (JSON.parse(reply.body) as { backend: string }).backend,
    );
  const before = await owners();
  t.equal(new Set(before).size, 10, 'all 10 endpoints own keys');
  const swapped = nextSwap();
  await write(11);
  await swapped;
  const after = await owners();
  const moved = after.filter((owner, i) => owner !== before[i]);
  t.ok(
    moved.length / paths.length <= 0.2,
    `${((moved.length / paths.length) * 100).toFixed(1)}% of the keys moved`,
  );
  t.ok(
    moved.every((owner) => owner === 'pod-10'),
    'and only to the new endpoint',
  );
});
