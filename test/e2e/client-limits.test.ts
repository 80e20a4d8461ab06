// Client-facing limits through the real proxy: large-client-header-buffers (a
// header line over one buffer → 400 "Request Header Or Cookie Too Large", a head over all of them →
// the same, a request line over one buffer → 414, a swap raising the limit), request smuggling shapes refused with 400 without the backend ever
// seeing them (nor a request hidden in their body), max-worker-connections (the connection over the
// cap closed, served again once one leaves), client-header-timeout (408), and slowloris: 1,000
// connections trickling header bytes while normal requests keep getting 200.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { listen, send, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { planeStats, untilStats } from '../support/plane.ts';
import { raw } from '../support/raw-http.ts';
import { nextSwap } from '../support/swaps.ts';
import { THREAD_MODE, withTestThreads } from '../support/threads.ts';

t.setTimeout(120_000);

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(data))}
`;

/** Resolves once `check` holds, looking again on every turn of the event loop (bounded by tap's timeout). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

t.test('client limits through the proxy', async (t) => {
  /** every request target the backend received */
  const seen: string[] = [];
  const backend = createServer((req, res) => {
    seen.push(req.url ?? '');
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  const backendPort = await listen(backend);
  t.teardown(() => backend.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-client-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backendPort]),
      ingressYaml({ name: 'web', host: 'web.test', service: 'web' }),
    ].join(''),
  );
  await writeFile(join(dir, 'config.yaml'), configMap({}));
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    {
      accessLogStdout: { write() {} },
    },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;

  await t.test('large-client-header-buffers 4 8k (the default)', async (t) => {
    t.equal((await send(port, 'web.test', '/ok', { agent: false })).status, 200, 'a normal request');
    const before = seen.length;
    const big = await send(port, 'web.test', '/big-line', {
      headers: { 'x-big': 'a'.repeat(9000) },
      agent: false,
    });
    t.equal(big.status, 400, 'one header line over 8k: 400');
    t.match(big.body, '<title>400 Request Header Or Cookie Too Large</title>', "NGINX's page");
    const many: Record<string, string> = {};
    for (let i = 0; i < 5; i++) many[`x-h${i}`] = 'b'.repeat(7000);
    const whole = await raw(
      port,
      head([
        'GET /big-head HTTP/1.1',
        'Host: web.test',
        ...Object.entries(many).map(([k, v]) => `${k}: ${v}`),
      ]),
    );
    t.equal(whole.status, 400, 'a head over 4 × 8k (each line within 8k): 400');
    t.match(whole.text, 'Request Header Or Cookie Too Large');
    t.ok(whole.closed, 'and the connection closed');
    const uri = await raw(port, head([`GET /${'u'.repeat(9000)} HTTP/1.1`, 'Host: web.test']));
    t.equal(uri.status, 414, 'a request line over 8k: 414');
    const huge = await raw(port, head([`GET /${'u'.repeat(40_000)} HTTP/1.1`, 'Host: web.test']));
    t.equal(huge.status, 414, 'a request line over the whole head limit: 414 too');
    t.equal(seen.length, before, 'none of them reached the backend');
    t.equal(
      (await send(port, 'web.test', `/${'u'.repeat(8000)}`, { agent: false })).status,
      200,
      'a request line within 8k is served',
    );
    const fits = await send(port, 'web.test', '/fits', {
      headers: { 'x-big': 'a'.repeat(8000) },
      agent: false,
    });
    t.equal(fits.status, 200, 'a header line within 8k is served');
  });

  await t.test('the HTTPS listener (HTTP/1.1): the same head limits', async (t) => {
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            port: controller.https.port,
            host: '127.0.0.1',
            path: '/tls',
            headers: { host: 'web.test', ...headers },
            rejectUnauthorized: false,
            agent: false,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    t.equal(await status({}), 200, 'a normal request');
    t.equal(await status({ 'x-big': 'a'.repeat(9000) }), 400, 'one header line over 8k: 400');
    const many: Record<string, string> = {};
    for (let i = 0; i < 5; i++) many[`x-h${i}`] = 'b'.repeat(7000);
    t.equal(await status(many), 400, 'a head over the buffers: 400');
  });

  await t.test('request smuggling shapes: 400, the backend never sees them', async (t) => {
    const hidden = 'GET /smuggled HTTP/1.1\r\nHost: web.test\r\n\r\n';
    const cases: Array<[string, string[], string]> = [
      [
        'Content-Length with Transfer-Encoding',
        ['Content-Length: 4', 'Transfer-Encoding: chunked'],
        `0\r\n\r\n${hidden}`,
      ],
      ['two Content-Length values', ['Content-Length: 0', `Content-Length: ${hidden.length}`], hidden],
      ['two equal Content-Length headers', ['Content-Length: 0', 'Content-Length: 0'], hidden],
      ['a Content-Length list', [`Content-Length: 0, ${hidden.length}`], hidden],
      ['a negative Content-Length', ['Content-Length: -1'], hidden],
      ['obs-fold', ['X-Folded: a', ' b', 'Content-Length: 0'], hidden],
      ['obs-fold of Transfer-Encoding', ['Transfer-Encoding:', ' chunked'], `0\r\n\r\n${hidden}`],
      [
        'Transfer-Encoding: chunked, identity',
        ['Transfer-Encoding: chunked, identity'],
        `0\r\n\r\n${hidden}`,
      ],
      ['Transfer-Encoding: identity', ['Transfer-Encoding: identity'], hidden],
      ['Transfer-Encoding: xchunked', ['Transfer-Encoding: xchunked'], hidden],
      [
        'two Transfer-Encoding headers',
        ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
        `0\r\n\r\n${hidden}`,
      ],
      ['whitespace before the colon', ['Transfer-Encoding : chunked'], `0\r\n\r\n${hidden}`],
      ['a NUL in a header value', ['X-Nul: a\0b', 'Content-Length: 0'], hidden],
      ['bare LF line ends', [], ''],
    ];
    for (const [name, lines, body] of cases) {
      const before = seen.length;
      const request =
        name === 'bare LF line ends'
          ? `POST /rejected HTTP/1.1\nHost: web.test\nContent-Length: 0\n\n${hidden}`
          : `${head(['POST /rejected HTTP/1.1', 'Host: web.test', ...lines])}${body}`;
      const reply = await raw(port, request);
      t.equal(reply.status, 400, `${name}: 400`);
      t.ok(reply.closed, `${name}: the connection closed`);
      t.notOk(/HTTP\/1\.1 200/.test(reply.text), `${name}: no second response`);
      t.equal(seen.length, before, `${name}: the backend saw nothing`);
    }
    const http10 = await raw(
      port,
      `${head(['POST /rejected HTTP/1.0', 'Host: web.test', 'Transfer-Encoding: chunked'])}0\r\n\r\n${hidden}`,
    );
    t.equal(http10.status, 400, 'Transfer-Encoding on HTTP/1.0: 400');
    for (const [name, request] of [
      ['HTTP/1.1 without Host', head(['GET /no-host HTTP/1.1'])],
      ['an empty Host', head(['GET /no-host HTTP/1.1', 'Host: '])],
      ['HTTP/1.0 with an empty Host', head(['GET /no-host HTTP/1.0', 'Host:'])],
    ]) {
      const reply = await raw(port, request as string);
      t.equal(reply.status, 400, `${name}: 400`);
      t.match(reply.text, /<center><h1>400 Bad Request<\/h1><\/center>/, `${name}: NGINX's page`);
    }
    const http10NoHost = await raw(port, head(['GET /ok HTTP/1.0']));
    t.equal(http10NoHost.status, 404, 'HTTP/1.0 without Host: no host, so the default backend');
    t.notOk(
      seen.includes('/smuggled') || seen.includes('/rejected'),
      'no smuggled or rejected request upstream',
    );
  });

  await t.test('after a swap: a larger buffer, a connection cap, a 1 s header timeout', async (t) => {
    const swapped = nextSwap();
    await writeFile(
      join(dir, 'config.yaml'),
      configMap({
        'large-client-header-buffers': '4 16k',
        'max-worker-connections': '5',
        'client-header-timeout': '1',
      }),
    );
    await swapped;
    const big = await send(port, 'web.test', '/bigger', {
      headers: { 'x-big': 'a'.repeat(12_000) },
      agent: false,
    });
    t.equal(big.status, 200, 'a 12k header line fits 16k buffers (a new connection)');

    if (THREAD_MODE) {
      // each thread counts its own connections against the cap, as each NGINX worker does (docs/operations.md)
      t.comment(
        "skipped with threads: the cap is per thread, and which thread gets a connection is the kernel's",
      );
    } else {
      // the cap counts open connections, idle keep-alive ones too
      const open: Socket[] = [];
      t.teardown(() => {
        for (const socket of open) socket.destroy();
      });
      await untilStats(controller.handle, (s) => s.active === 0);
      for (let i = 0; i < 5; i++) {
        const socket = connect(port, '127.0.0.1');
        open.push(socket);
        socket.write('GET /held HTTP/1.1\r\nHost: web.test\r\n\r\n');
        const [chunk] = (await once(socket, 'data')) as [Buffer];
        t.match(chunk.toString('latin1'), /^HTTP\/1\.1 200 /, `connection ${i + 1} served and kept open`);
      }
      const over = await raw(port, 'GET /over HTTP/1.1\r\nHost: web.test\r\n\r\n');
      t.equal(over.status, 0, 'the sixth connection is closed without an answer');
      t.ok(over.closed, 'and closed, not left hanging');
      (open.pop() as Socket).destroy();
      await untilStats(controller.handle, (s) => s.active < 5);
      t.equal(
        (await send(port, 'web.test', '/again', { agent: false })).status,
        200,
        'served again once a connection left',
      );
      for (const socket of open.splice(0)) socket.destroy();
      await untilStats(controller.handle, (s) => s.active === 0);
    }

    const slow = await raw(port, 'GET /slow HTTP/1.1\r\nHost: web.t', { end: false, timeoutMs: 10_000 });
    t.equal(slow.status, 408, 'a head not complete within client-header-timeout: 408');
    t.ok(slow.closed, 'and the connection closed');
  });

  await t.test('slowloris: 1,000 trickling connections, normal requests still served', async (t) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap({}));
    await swapped;
    await untilStats(controller.handle, (s) => s.active === 0);
    const handlesBefore = process.getActiveResourcesInfo().length;
    const slow: Socket[] = [];
    const done = () => {
      for (const socket of slow) socket.destroy();
    };
    t.teardown(done);
    await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        slow.push(socket);
        await once(socket, 'connect');
        socket.write(`GET /slow/${i} HTTP/1.1\r\nHost: web.test\r\nX-Trickle: `);
      }),
    );
    await untilStats(controller.handle, (s) => s.active >= 1000);
    // one more byte on each, while normal requests go through
    const trickle = setInterval(() => {
      for (const socket of slow) if (!socket.destroyed) socket.write('a');
    }, 100);
    try {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) => send(port, 'web.test', `/normal/${i}`, { agent: false })),
      );
      t.strictSame(
        replies.map((r) => r.status),
        Array.from({ length: 50 }, () => 200),
        '50 normal requests all served while 1,000 connections trickle',
      );
    } finally {
      clearInterval(trickle);
    }
    t.equal(
      (await planeStats(controller.handle)).active >= 1000,
      true,
      'the slow connections are still open',
    );
    t.notOk(
      seen.some((url) => url.startsWith('/slow/')),
      'no incomplete head reached the backend',
    );
    done();
    await untilStats(controller.handle, (s) => s.active === 0);
    await until(() => process.getActiveResourcesInfo().length <= handlesBefore);
    t.pass('every connection closed, no handle left behind');
  });
});
