// limit-rpm, limit-rps, limit-connections, limit-burst-multiplier, limit-allowlist and the ConfigMap's
// limit-req-status-code / limit-conn-status-code through the real proxy. Exact counts use limit-rpm 1
// (the bucket drains 1/60 of a request per second: nothing refills during a test): 1 + burst
// back-to-back requests pass, the next ones are rejected at once. Clients vary by source address.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { WebSocket } from 'ws';
import { echoServer } from '../../examples/demo-backends.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { getFrom } from '../support/client.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { withTestThreads } from '../support/threads.ts';

const site = (name: string, annotations: Record<string, string>, service = 'web') =>
  ingressYaml({ name, host: `${name}.test`, service, annotations });
const configMap = (data: Record<string, string>) =>
  `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: ${JSON.stringify(withTestThreads(data))}\n`;

async function controllerOver(t: Test, manifests: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'all.yaml'), manifests.join(''));
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  return controller;
}

async function echo(t: Test): Promise<number> {
  const server = echoServer('web');
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return port;
}

/** Statuses of `n` requests sent one after the other from `source`. */
async function statuses(
  source: string,
  port: number,
  host: string,
  n: number,
  path = '/',
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await getFrom(source, { port }, host, path)).status);
  return out;
}

t.test('limit-rpm / limit-rps: the burst passes, the rest is rejected at once', async (t) => {
  const web = await echo(t);
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    site('rpm', { 'limit-rpm': '1', 'limit-burst-multiplier': '3' }),
    site('default', { 'limit-rpm': '1' }),
    site('exempt', { 'limit-rpm': '1', 'limit-burst-multiplier': '1', 'limit-allowlist': '127.0.0.2, ::1' }),
    site('alias', { 'limit-rpm': '1', 'limit-burst-multiplier': '1', 'limit-whitelist': '127.0.0.2' }),
    site('rps', { 'limit-rps': '1', 'limit-burst-multiplier': '1' }),
    site('both', { 'limit-rpm': '1', 'limit-burst-multiplier': '0', 'allowlist-source-range': '10.0.0.0/8' }),
    site('free', {}),
  ]);
  const port = controller.http.port;
  const ok = (n: number) => Array.from({ length: n }, () => 200);
  const busy = (n: number) => Array.from({ length: n }, () => 503);
  t.strictSame(
    await statuses('127.0.0.1', port, 'rpm.test', 6),
    [...ok(4), ...busy(2)],
    'rpm 1 × multiplier 3: 1 + 3 pass, then 503',
  );
  t.strictSame(
    await statuses('127.0.0.1', port, 'rpm.test', 1, '/other'),
    busy(1),
    'every path of the Ingress shares the zone',
  );
  t.strictSame(
    await statuses('127.0.0.2', port, 'rpm.test', 5),
    [...ok(4), ...busy(1)],
    'another address has its own bucket',
  );
  t.strictSame(
    await statuses('127.0.0.1', port, 'default.test', 7),
    [...ok(6), ...busy(1)],
    'the default burst multiplier is 5',
  );
  t.strictSame(await statuses('127.0.0.2', port, 'exempt.test', 8), ok(8), 'limit-allowlist: never limited');
  t.strictSame(await statuses('127.0.0.1', port, 'exempt.test', 3), [...ok(2), 503], 'others are limited');
  t.strictSame(await statuses('127.0.0.2', port, 'alias.test', 5), ok(5), 'limit-whitelist is an alias');
  t.strictSame(await statuses('127.0.0.3', port, 'free.test', 10), ok(10), 'no limit annotation: unlimited');
  // a limit reached before the allowlist's 403: the first request is counted and denied, the next is over the limit
  t.strictSame(
    await statuses('127.0.0.1', port, 'both.test', 2),
    [403, 503],
    'rate limit (503) before allow/deny (403)',
  );
  // rps: 1 + 1 pass; the bucket drains one request per second, so send them at once and expect at least one rejected
  const burst = await Promise.all(
    Array.from({ length: 6 }, () => getFrom('127.0.0.4', { port }, 'rps.test')),
  );
  const codes = burst.map((r) => r.status).sort();
  t.ok(codes.filter((c) => c === 200).length >= 2, `limit-rps: the burst passes (${codes})`);
  t.ok(codes.includes(503), `limit-rps: requests beyond it are rejected (${codes})`);
  t.notOk(
    codes.some((c) => c !== 200 && c !== 503),
    'only 200 and 503',
  );
});

t.test('limit-req-status-code from the ConfigMap', async (t) => {
  const web = await echo(t);
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    configMap({ 'limit-req-status-code': '429' }),
    site('rpm', { 'limit-rpm': '1', 'limit-burst-multiplier': '1' }),
  ]);
  t.strictSame(await statuses('127.0.0.1', controller.http.port, 'rpm.test', 3), [200, 200, 429]);
});

t.test('limit-connections: requests in flight per address, released when the response ends', async (t) => {
  // /slow is held until released; anything else answers at once
  const held: ServerResponse[] = [];
  let arrived: (() => void) | null = null;
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/slow') {
      held.push(res);
      arrived?.();
    } else res.end('fast');
  });
  const web = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    configMap({ 'limit-conn-status-code': '429' }),
    site('conn', { 'limit-connections': '2' }),
  ]);
  const port = controller.http.port;
  const heldTwo = new Promise<void>((resolve) => {
    arrived = () => {
      if (held.length === 2) resolve();
    };
  });
  const slow = [
    getFrom('127.0.0.1', { port }, 'conn.test', '/slow'),
    getFrom('127.0.0.1', { port }, 'conn.test', '/slow'),
  ];
  await heldTwo;
  t.equal(
    (await getFrom('127.0.0.1', { port }, 'conn.test', '/fast')).status,
    429,
    'a third request in flight: limit-conn-status-code',
  );
  t.equal(
    (await getFrom('127.0.0.2', { port }, 'conn.test', '/fast')).status,
    200,
    'another address is not limited',
  );
  for (const res of held) res.end('done');
  t.strictSame(
    (await Promise.all(slow)).map((r) => r.status),
    [200, 200],
    'the held requests complete',
  );
  // the slots are released when the proxy's responses close, which may follow the client's last byte by a tick
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await getFrom('127.0.0.1', { port }, 'conn.test', '/fast')).status;
    if (status !== 200) await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(status, 200, 'the slots are free again');
});

t.test('limit-connections: a WebSocket holds its slot until it closes', async (t) => {
  const web = await echo(t);
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    site('ws', { 'limit-connections': '1' }),
  ]);
  const port = controller.http.port;
  const open = (): Promise<WebSocket | number> =>
    new Promise((resolve, reject) => {
      const socket = new WebSocket(`ws://127.0.0.1:${port}/chat`, {
        headers: { host: 'ws.test' },
        localAddress: '127.0.0.1',
      });
      socket.once('open', () => resolve(socket));
      socket.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      socket.once('error', reject);
    });
  const first = await open();
  if (typeof first === 'number') throw new Error(`the first WebSocket was refused: ${first}`);
  t.equal(await open(), 503, 'a second tunnel from the same address is over the limit');
  t.equal((await getFrom('127.0.0.1', { port }, 'ws.test')).status, 503, 'so is a plain request');
  const closed = new Promise((resolve) => first.once('close', resolve));
  first.close();
  await closed;
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await getFrom('127.0.0.1', { port }, 'ws.test')).status;
    if (status !== 200) await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(status, 200, 'the slot is free once the tunnel closed');
});
