// Backends that fail in every way a TCP peer can, through the in-process proxy: refusing connections,
// resetting after the request, closing without an answer, answering garbage, crashing mid-response,
// closing right after the head, never answering. Each gives the status ingress-nginx gives (502, 504,
// or a cut response once the head went out), a retry only where it is safe (the request was not
// sent, or it is idempotent and bodiless), no crash, and no socket or timer left behind: the active
// handles (process.getActiveResourcesInfo) come back to their count before the faults, and to the count
// before the controller started once it is stopped.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, request } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { testConfig } from '../support/http.ts';
import { untilRefused } from '../support/listening.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { planeStats } from '../support/plane.ts';

/** Listens on a free loopback port; resolves with the port. */
async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** How many handles of each kind are active (sockets, servers, timers, ...). */
function handles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}
const sockets = () => handles().get('TCPSocketWrap') ?? 0;
const describe = (counts: Map<string, number>) =>
  [...counts]
    .filter(([kind]) => kind !== 'FSReqCallback')
    .sort()
    .map(([kind, n]) => `${kind}=${n}`)
    .join(' ');

/** Waits (turn by turn of the event loop, at most 5 s) until `done()`; closes are asynchronous. */
async function settle(done: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + 5000;
  while (!(await done())) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

/** A raw TCP backend: `onRequest` gets the socket once a request head (and its body, if any) arrived. */
function rawBackend(onRequest: (socket: Socket, head: string) => void): Server & { seen: string[] } {
  const seen: string[] = [];
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => {});
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buffered.slice(0, end);
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = '';
      seen.push(head.split('\r\n')[0] ?? '');
      onRequest(socket, head);
    });
  });
  return Object.assign(server, {
    seen,
    closeAllConnections() {
      for (const socket of open) socket.destroy();
    },
  });
}

/** One request on a connection of its own: the status and body, or where it broke. */
function attempt(
  port: number,
  host: string,
  method = 'GET',
  body?: string,
): Promise<{ status: number; body: string; error: string | null }> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { host };
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    let status = 0;
    let received = '';
    const req = request({ port, host: '127.0.0.1', method, path: '/', headers, agent: false }, (res) => {
      status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        received += chunk;
      });
      res.on('end', () => resolve({ status, body: received, error: null }));
      res.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ status, body: received, error: error.code ?? error.message }),
      );
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ status, body: received, error: error.code ?? error.message }),
    );
    req.end(body);
  });
}

t.test('faulty backends: the right 5xx, safe retries, no crash, no leaked handles', async (t) => {
  const baseline = handles();
  const good = createHttpServer((req, res) => {
    good.seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('good'));
  }) as ReturnType<typeof createHttpServer> & { seen: string[] };
  good.seen = [];
  // refusing: port 1, which nothing listens on. A port listened on and then closed could be taken by
  // another test file running beside this one (ports from port 0 come from the same ephemeral range),
  // and its answers would count as the good peer's; nothing gets port 1 that way.
  const refusedPort = 1;
  await untilRefused(refusedPort);
  const reset = rawBackend((socket) => socket.resetAndDestroy());
  const closing = rawBackend((socket) => socket.end());
  const garbage = rawBackend((socket) => socket.end('SPDY/9 what\r\n\x00\x01garbage\r\n\r\n'));
  const crash = rawBackend((socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial');
    setImmediate(() => socket.resetAndDestroy());
  });
  const headOnly = rawBackend((socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n'));
  const silent = rawBackend(() => {});
  const backends: Server[] = [good as unknown as Server, reset, closing, garbage, crash, headOnly, silent];
  const ports: number[] = [];
  for (const server of backends) ports.push(await listen(server));
  const [goodPort, resetPort, closingPort, garbagePort, crashPort, headOnlyPort, silentPort] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];

  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-faults-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const site = (name: string, annotations: Record<string, string> = {}) =>
    ingressYaml({ name, host: `${name}.test`, service: name, annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('refused', [refusedPort, goodPort]),
      serviceYaml('reset', [resetPort, goodPort]),
      serviceYaml('resetonly', [resetPort]),
      serviceYaml('closing', [closingPort]),
      serviceYaml('garbage', [garbagePort]),
      serviceYaml('crash', [crashPort]),
      serviceYaml('headonly', [headOnlyPort]),
      serviceYaml('silent', [silentPort]),
      site('refused'),
      site('reset'),
      site('resetonly'),
      site('closing'),
      site('garbage'),
      site('crash'),
      site('headonly'),
      site('silent', { 'proxy-read-timeout': '1' }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  const port = controller.http.port;
  t.equal((await attempt(port, 'refused.test')).status, 200, 'warmed up');
  await settle(async () => (await planeStats(controller.handle)).active === 0);
  const warm = handles();

  const ROUNDS = 6;
  for (let round = 0; round < ROUNDS; round++) {
    good.seen.length = 0;
    reset.seen.length = 0;

    // refused: nothing was sent, so even a POST with a body goes to the next peer
    for (const method of ['GET', 'POST', 'GET', 'POST']) {
      const reply = await attempt(port, 'refused.test', method, method === 'POST' ? 'data' : undefined);
      t.equal(reply.status, 200, `refused → next peer (${method})`);
    }
    t.equal(good.seen.length, 4, 'each request reached the good peer once');

    // reset after the request was sent: a GET is retried, a POST is not (NGINX: non-idempotent)
    good.seen.length = 0;
    const gets = await Promise.all([1, 2, 3, 4].map(() => attempt(port, 'reset.test')));
    t.same(
      gets.map((r) => r.status),
      [200, 200, 200, 200],
      'a reset GET is retried on the good peer',
    );
    good.seen.length = 0;
    reset.seen.length = 0;
    const posts: number[] = [];
    for (let i = 0; i < 4; i++) posts.push((await attempt(port, 'reset.test', 'POST', 'x')).status);
    const failed = posts.filter((s) => s === 502).length;
    t.ok(failed >= 1, `a reset POST is answered 502, not retried (${posts.join(' ')})`);
    t.equal(failed + posts.filter((s) => s === 200).length, 4, 'only 200 or 502');
    t.equal(reset.seen.length, failed, 'each 502 was a POST the resetting peer saw');
    t.equal(good.seen.length, 4 - failed, 'no POST was sent twice');

    t.equal((await attempt(port, 'resetonly.test')).status, 502, 'reset, no other peer: 502');
    t.equal((await attempt(port, 'closing.test')).status, 502, 'closed without an answer: 502');
    t.equal((await attempt(port, 'garbage.test')).status, 502, 'garbage instead of HTTP: 502');

    const crashed = await attempt(port, 'crash.test');
    t.equal(crashed.status, 200, 'crash mid-response: the head went out');
    t.not(crashed.error, null, `then the client connection is cut (${crashed.error})`);
    t.ok(crashed.body.length < 1000, 'and the body is short');
    // the head is under way but not flushed (Node writes it with the first body byte): the client
    // connection is cut with or without the head, never a complete response
    const truncated = await attempt(port, 'headonly.test');
    t.ok([0, 200].includes(truncated.status), `closed after the head: no other status (${truncated.status})`);
    t.not(truncated.error, null, `the client connection is cut (${truncated.error})`);
  }
  // one timeout (1 s each): 504
  t.equal((await attempt(port, 'silent.test')).status, 504, 'no answer within proxy-read-timeout: 504');

  t.equal((await attempt(port, 'refused.test')).status, 200, 'still serving');
  const settled = await settle(
    async () =>
      (await planeStats(controller.handle)).active === 0 && sockets() <= (warm.get('TCPSocketWrap') ?? 0),
  );
  t.ok(
    settled,
    `sockets back to their count before the faults (before: ${describe(warm)}; after: ${describe(handles())})`,
  );

  await controller.stop(0);
  for (const server of backends) {
    (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
    server.close();
    if (server.listening) await once(server, 'close');
  }
  const clean = await settle(() => {
    const now = handles();
    return ['TCPSocketWrap', 'TCPServerWrap', 'Timeout'].every(
      (kind) => (now.get(kind) ?? 0) <= (baseline.get(kind) ?? 0),
    );
  });
  t.ok(
    clean,
    `no socket, server or timer left (before: ${describe(baseline)}; after: ${describe(handles())})`,
  );
});
