// Requests with bodies, and the data plane's error boundary, through a standalone controller:
// - a body to a route that streams it (proxy-body-size "0", proxy-request-buffering "off") is
//   answered and logged, over HTTP/1.1 and HTTPS, with a Content-Length or chunked, and the process
//   keeps serving (the record's bytes were read from a socket Node had detached: a TypeError that
//   ended the process);
// - HTTP/2 bytes_sent: each stream's own bytes, several streams at once on one session, observed in
//   nginx_ingress_controller_bytes_sent for every response;
// - an exception while serving (a fault put into the proxy by the test) is answered 500, or the
//   connection cut once a response began (also from limit-rate's pacing timer), logged with the
//   request id and counted; nothing escapes.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, ServerResponse } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Duplex, Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { MirrorClient } from '../../lib/dataplane/upstream/mirror.ts';
import { UpstreamProxy } from '../../lib/dataplane/upstream/upstream-proxy.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import {
  allowingAuth,
  bodyBackend,
  collectRecords,
  type Framing,
  rawExchange,
  sendBody,
  until,
  watchFailures,
} from '../support/body-traffic.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseExposition, sampleValue } from '../support/prometheus.ts';
import { THREAD_MODE, withTestThreads } from '../support/threads.ts';

const FAULTS_SKIP =
  THREAD_MODE &&
  "the fault is put into the main thread's copy of the proxy; data-plane threads load their own";

t.setTimeout(60_000);

const ACCESS_FORMAT = '$request_method $request_uri $server_protocol $status $bytes_sent $body_bytes_sent';

function accessFields(line: string): Record<string, unknown> {
  const [request_method, request_uri, server_protocol, status, bytes_sent, body_bytes_sent] = line.split(' ');
  return { request_method, request_uri, server_protocol, status, bytes_sent, body_bytes_sent };
}

async function setUp(t: Test, extraYaml = '') {
  const { port } = await bodyBackend(t);
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-boundary-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const yaml = [
    INGRESS_CLASS,
    serviceYaml('web', [port]),
    ingressYaml({ name: 'plain', host: 'plain.test', service: 'web' }),
    ingressYaml({
      name: 'unlimited',
      host: 'unlimited.test',
      service: 'web',
      annotations: { 'proxy-body-size': '0' },
    }),
    ingressYaml({
      name: 'streamed',
      host: 'streamed.test',
      service: 'web',
      annotations: { 'proxy-request-buffering': 'off' },
    }),
    extraYaml,
  ].join('');
  await writeFile(join(dir, 'all.yaml'), yaml);
  // a custom format: a line's bytes, its body's, and which request it was
  await writeFile(
    join(dir, 'config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: ingress }\ndata: ${JSON.stringify(
      withTestThreads({ 'log-format-upstream': ACCESS_FORMAT }),
    )}\n`,
  );
  const logLines: Array<Record<string, unknown>> = [];
  const logSink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') logLines.push(JSON.parse(line));
      done();
    },
  });
  // the access log's lines, parsed (with data-plane threads, the threads encode them)
  const accessLines: Array<Record<string, unknown>> = [];
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('warn', logSink),
    {
      accessLogStdout: new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString().split('\n'))
            if (line !== '') accessLines.push(accessFields(line));
          done();
        },
      }),
    },
  );
  t.teardown(() => controller.stop(0));
  const scrape = async () =>
    parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
  return { controller, logLines, accessLines, scrape };
}

/**
 * The requests `ids` were each contained once where the proxy's exchange runs: published (and no
 * other failure), logged at error level with their request ids, counted under where="proxy".
 */
async function containedInProxy(
  t: Test,
  failures: ReturnType<typeof watchFailures>,
  { logLines, scrape }: Pick<Awaited<ReturnType<typeof setUp>>, 'logLines' | 'scrape'>,
  ids: string[],
): Promise<void> {
  failures.check();
  t.same(
    failures.contained.map((f) => [f.where, f.requestId]),
    ids.map((id) => ['proxy', id]),
  );
  t.same(
    logLines.filter((line) => line.level === 50).map((line) => line.req_id),
    ids,
  );
  t.equal(sampleValue(await scrape(), 'ingress_ts_request_errors_total', { where: 'proxy' }), ids.length);
}

t.test('a body to a route that streams it is answered and logged; the process keeps serving', async (t) => {
  const failures = watchFailures(t);
  const records = collectRecords(t);
  const { controller } = await setUp(t);
  const ports = { http: controller.http.port, https: controller.https.port };
  let sent = 0;
  for (const host of ['unlimited.test', 'streamed.test']) {
    for (const protocol of ['http', 'https'] as const) {
      for (const framing of ['content-length', 'chunked'] as Framing[]) {
        const body = 'b'.repeat(3000);
        const reply = await sendBody({ ...ports, protocol, framing, host, path: '/upload', body });
        t.same([reply.status, reply.body], [200, 'got 3000'], `${host} ${protocol} ${framing}`);
        sent++;
        // the next request is served: the process is still there
        t.equal((await get(ports.http, 'plain.test', '/')).status, 200);
        sent++;
      }
    }
  }
  failures.check();
  t.ok(await until(() => records.length >= sent), 'every request has its record');
  const uploads = records.filter((r) => r.method === 'POST');
  t.equal(uploads.length, 8, 'every upload has its record');
  for (const r of uploads) {
    t.equal(r.status, 200);
    // head + "got 3000": over 8 bytes, under a kilobyte
    t.ok(r.bytesSent > 8 && r.bytesSent < 1024, `${r.host}: bytes_sent ${r.bytesSent}`);
  }
  failures.check();
  t.same(failures.contained, [], 'nothing needed the boundary');
});

t.test('a streamed upload: bytes_sent is exactly what the client received (HTTP/1.1)', async (t) => {
  const records = collectRecords(t);
  const { controller } = await setUp(t);
  const received = await rawExchange(
    controller.http.port,
    'POST /up HTTP/1.1\r\nHost: streamed.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  );
  t.ok(await until(() => records.length >= 1), 'a record');
  t.match(received.toString('latin1'), /^HTTP\/1\.1 200 /);
  t.equal(records[0]?.bytesSent, received.length);
});

t.test(
  'pipelined behind a streamed upload: the next request is served once the upload is answered',
  async (t) => {
    const failures = watchFailures(t);
    const records = collectRecords(t);
    const { controller } = await setUp(t);
    // the pipeline finds its connection from the response (kept with it, not read from
    // `res.req.socket`) to serve what waits behind the upload
    const received = await rawExchange(
      controller.http.port,
      'POST /up HTTP/1.1\r\nHost: streamed.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' +
        'GET /size/3 HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n',
    );
    const text = received.toString('latin1');
    t.equal(text.match(/HTTP\/1\.1 200 /g)?.length, 2, 'both requests answered 200');
    t.match(text, /got 5/);
    t.ok(await until(() => records.length >= 2), 'both have their record');
    failures.check();
    t.same(failures.contained, [], 'nothing needed the boundary');
  },
);

t.test(
  'HTTP/2: a streamed upload whose stream is reset never reaches the upstream as complete',
  async (t) => {
    // the upstream tells a whole body (its request ended) from a cut one (aborted, or closed first)
    const outcomes: Array<{ complete: boolean; bytes: number }> = [];
    let firstBytes: () => void = () => {};
    const gotBytes = new Promise<void>((resolve) => {
      firstBytes = resolve;
    });
    let settled: () => void = () => {};
    const outcome = new Promise<void>((resolve) => {
      settled = resolve;
    });
    const watcher = createServer((req, res) => {
      let bytes = 0;
      let done = false;
      const finish = (complete: boolean) => {
        if (done) return;
        done = true;
        outcomes.push({ complete, bytes });
        settled();
        if (complete) res.end('whole');
      };
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        firstBytes();
      });
      req.on('end', () => finish(true));
      req.on('error', () => finish(false));
      req.on('close', () => finish(req.complete));
    });
    const watcherPort = await listen(watcher);
    t.teardown(() => {
      watcher.closeAllConnections();
      watcher.close();
    });
    const { controller } = await setUp(
      t,
      serviceYaml('watch', [watcherPort]) +
        ingressYaml({
          name: 'watched',
          host: 'watched.test',
          service: 'watch',
          annotations: { 'proxy-request-buffering': 'off' },
        }),
    );
    const session = http2Connect(`https://127.0.0.1:${controller.https.port}`, {
      servername: 'watched.test',
      rejectUnauthorized: false,
    });
    t.teardown(() => session.destroy());
    const stream = session.request({ ':method': 'POST', ':path': '/upload', ':authority': 'watched.test' });
    stream.on('error', () => {});
    stream.write(Buffer.alloc(1000, 'u'));
    await gotBytes;
    // a reset without END_STREAM: the client gave up half-way through its body
    stream.destroy();
    await outcome;
    t.same(outcomes, [{ complete: false, bytes: 1000 }], 'the upstream saw the body cut, not ended');
    t.equal((await get(controller.http.port, 'plain.test', '/')).status, 200, 'still serving');
  },
);

t.test('HTTP/2: each stream counts its own bytes, and every response is observed', async (t) => {
  const failures = watchFailures(t);
  const { controller, accessLines, scrape } = await setUp(t);
  const session = http2Connect(`https://127.0.0.1:${controller.https.port}`, {
    servername: 'plain.test',
    rejectUnauthorized: false,
  });
  t.teardown(() => session.destroy());
  const sizes = [0, 7, 1500, 20_000, 70_000, 3, 300_000];
  // all at once on one session: their bytes are interleaved on the one connection
  const replies = await Promise.all(
    sizes.map(
      (size) =>
        new Promise<{ size: number; received: number; head: number }>((resolve, reject) => {
          const stream = session.request({ ':path': `/size/${size}`, ':authority': 'plain.test' });
          let received = 0;
          let head = 0;
          stream.on('response', (headers) => {
            for (const [name, value] of Object.entries(headers)) head += name.length + String(value).length;
          });
          stream.on('data', (chunk: Buffer) => {
            received += chunk.length;
          });
          stream.on('end', () => resolve({ size, received, head }));
          stream.on('error', reject);
        }),
    ),
  );
  // a HEAD: a head, no body
  await new Promise<void>((resolve, reject) => {
    const stream = session.request({ ':path': '/size/5000', ':method': 'HEAD', ':authority': 'plain.test' });
    stream.resume();
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  t.ok(await until(() => accessLines.length >= sizes.length + 1), 'an access log line per stream');
  for (const { size, received } of replies) {
    t.equal(received, size);
    const line = accessLines.find((l) => l.request_uri === `/size/${size}` && l.request_method === 'GET');
    t.ok(line, `a line for /size/${size}`);
    if (line === undefined) continue;
    t.equal(line.server_protocol, 'HTTP/2.0');
    // the body exactly, plus a head of some tens of bytes
    const bytesSent = Number(line.bytes_sent);
    const head = bytesSent - size;
    t.ok(head >= 30 && head < 512, `/size/${size}: bytes_sent ${bytesSent} = body + head ${head}`);
    t.equal(Number(line.body_bytes_sent), size, `/size/${size}: body_bytes_sent is the body`);
  }
  const headOnly = accessLines.find((l) => l.request_method === 'HEAD');
  const headBytes = Number(headOnly?.bytes_sent);
  t.ok(headBytes >= 30 && headBytes < 512, 'HEAD: the head only');
  t.equal(Number(headOnly?.body_bytes_sent), 0, 'HEAD: no body bytes');
  const metrics = await scrape();
  const series = { namespace: 'e2e', ingress: 'plain', service: 'web', path: '/', canary: '', status: '200' };
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_bytes_sent_count', { ...series, method: 'GET' }),
    sizes.length,
    'every HTTP/2 response observed',
  );
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_bytes_sent_sum', { ...series, method: 'GET' }),
    accessLines.filter((l) => l.request_method === 'GET').reduce((sum, l) => sum + Number(l.bytes_sent), 0),
  );
  failures.check();
});

/** Makes the proxy throw for requests with an `x-fault` header: `sync` before anything is sent,
 * `late` once a response head and some body went out; upgrades with `x-fault` throw too. */
function injectFaults(t: Test): void {
  const web = UpstreamProxy.prototype.web;
  const upgrade = UpstreamProxy.prototype.upgrade;
  UpstreamProxy.prototype.web = function (this: UpstreamProxy, req, res, ...rest) {
    const fault = req.headers['x-fault'];
    if (fault === 'sync') throw new Error('injected fault before the response');
    if (fault === 'late') {
      (res as ServerResponse).writeHead(200, { 'content-length': '100' });
      res.write('partial');
      throw new Error('injected fault during the response');
    }
    return web.call(this, req, res, ...rest);
  };
  UpstreamProxy.prototype.upgrade = function (this: UpstreamProxy, req: IncomingMessage, ...rest) {
    if (req.headers['x-fault'] !== undefined) throw new Error('injected fault in an upgrade');
    return upgrade.call(this, req, ...rest);
  };
  t.teardown(() => {
    UpstreamProxy.prototype.web = web;
    UpstreamProxy.prototype.upgrade = upgrade;
  });
}

t.test('an exception while serving is contained to its request', { skip: FAULTS_SKIP }, async (t) => {
  const failures = watchFailures(t);
  injectFaults(t);
  // an external auth server: the route's response starts after its verdict, asynchronously
  const authUrl = await allowingAuth(t);
  const { controller, logLines, scrape } = await setUp(
    t,
    ingressYaml({
      name: 'guarded',
      host: 'guarded.test',
      service: 'web',
      annotations: { 'auth-url': authUrl },
    }),
  );
  const ports = { http: controller.http.port, https: controller.https.port };
  const fault = (value: string, id: string) => ({ 'x-fault': value, 'x-request-id': id });

  for (const protocol of ['http', 'https', 'h2'] as const) {
    const reply = await sendBody({
      ...ports,
      protocol,
      framing: 'content-length',
      host: 'plain.test',
      path: '/',
      headers: fault('sync', `sync-${protocol}`),
    });
    t.equal(reply.status, 500, `${protocol}: 500 when nothing was sent yet`);
    t.match(reply.body, /500 Internal Server Error/);
  }
  const authed = await sendBody({
    ...ports,
    protocol: 'http',
    framing: 'empty',
    method: 'GET',
    host: 'guarded.test',
    path: '/',
    headers: fault('sync', 'after-auth'),
  });
  t.equal(authed.status, 500, 'after an asynchronous auth verdict: 500');
  const late = await sendBody({
    ...ports,
    protocol: 'http',
    framing: 'empty',
    method: 'GET',
    host: 'plain.test',
    path: '/',
    headers: fault('late', 'late-1'),
  });
  t.equal(late.status, 0, 'a response under way: the connection is cut');
  t.match(late.error, /aborted|socket hang up|ECONNRESET/);
  // an upgrade: a raw 500 on its socket
  const upgraded = await rawExchange(
    ports.http,
    'GET /ws HTTP/1.1\r\nHost: plain.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Fault: 1\r\nX-Request-ID: upgrade-1\r\n\r\n',
  );
  t.match(upgraded.toString('latin1'), /^HTTP\/1\.1 500 /, 'upgrade: 500');

  // still serving, on every listener
  t.equal((await get(ports.http, 'plain.test', '/')).status, 200);
  for (const protocol of ['https', 'h2'] as const) {
    const reply = await sendBody({
      ...ports,
      protocol,
      framing: 'empty',
      method: 'GET',
      host: 'plain.test',
      path: '/',
    });
    t.equal(reply.status, 200, `${protocol}: still serving`);
  }

  const ids = ['sync-http', 'sync-https', 'sync-h2', 'after-auth', 'late-1', 'upgrade-1'];
  t.same(
    failures.contained.map((f) => [f.where, f.requestId]),
    [
      ['request', 'sync-http'],
      ['request', 'sync-https'],
      ['request', 'sync-h2'],
      ['auth', 'after-auth'],
      ['request', 'late-1'],
      ['upgrade', 'upgrade-1'],
    ],
  );
  const logged = logLines.filter((line) => line.level === 50);
  t.same(
    logged.map((line) => line.req_id),
    ids,
    'an error log line per failure, with the request id',
  );
  t.match(logged[0], {
    where: 'request',
    err: { message: 'injected fault before the response', stack: /at / },
  });
  const metrics = await scrape();
  t.equal(sampleValue(metrics, 'ingress_ts_request_errors_total', { where: 'request' }), 4);
  t.equal(sampleValue(metrics, 'ingress_ts_request_errors_total', { where: 'auth' }), 1);
  t.equal(sampleValue(metrics, 'ingress_ts_request_errors_total', { where: 'upgrade' }), 1);
  failures.check();
});

t.test(
  "an exception in the proxy's deferred work (a buffered body's end) is contained",
  { skip: FAULTS_SKIP },
  async (t) => {
    const failures = watchFailures(t);
    // the copy of a buffered body is sent from the body's 'end' listener, outside every listener's
    // boundary of the data plane: the fault is put there
    const send = MirrorClient.prototype.send;
    MirrorClient.prototype.send = function (this: MirrorClient, req: IncomingMessage, ...rest) {
      if (req.headers['x-fault'] !== undefined) throw new Error('injected fault after the body');
      return send.call(this, req, ...rest);
    };
    t.teardown(() => {
      MirrorClient.prototype.send = send;
    });
    const { controller, logLines, scrape } = await setUp(
      t,
      ingressYaml({
        name: 'mirrored',
        host: 'mirrored.test',
        service: 'web',
        annotations: { 'mirror-target': 'http://127.0.0.1:1/copy' },
      }),
    );
    const ports = { http: controller.http.port, https: controller.https.port };
    for (const protocol of ['http', 'h2'] as const) {
      const reply = await sendBody({
        ...ports,
        protocol,
        framing: 'content-length',
        host: 'mirrored.test',
        path: '/',
        body: 'abc',
        headers: { 'x-fault': '1', 'x-request-id': `deferred-${protocol}` },
      });
      t.equal(reply.status, 500, `${protocol}: 500`);
    }
    t.equal((await get(ports.http, 'plain.test', '/')).status, 200, 'still serving');
    await containedInProxy(t, failures, { logLines, scrape }, ['deferred-http', 'deferred-h2']);
  },
);

t.test("an exception in limit-rate's pacing timer is contained", { skip: FAULTS_SKIP }, async (t) => {
  const failures = watchFailures(t);
  // limit-rate writes the body's rest from its own timer, outside every boundary of the request: the
  // fault is put into the client's response writes after the first (the first goes out at once)
  const write = ServerResponse.prototype.write;
  const writes = new WeakMap<ServerResponse, number>();
  ServerResponse.prototype.write = function (this: ServerResponse, ...args: unknown[]) {
    if (this.req?.headers['x-fault'] !== undefined) {
      const n = (writes.get(this) ?? 0) + 1;
      writes.set(this, n);
      if (n > 1) throw new Error('injected fault in a paced write');
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof write;
  t.teardown(() => {
    ServerResponse.prototype.write = write;
  });
  const { controller, logLines, scrape } = await setUp(
    t,
    ingressYaml({
      name: 'paced',
      host: 'paced.test',
      service: 'web',
      annotations: { 'limit-rate': '1', 'limit-rate-after': '0', 'proxy-buffering': 'on' },
    }),
  );
  const ports = { http: controller.http.port, https: controller.https.port };
  const reply = await sendBody({
    ...ports,
    protocol: 'http',
    framing: 'empty',
    method: 'GET',
    host: 'paced.test',
    path: '/size/4096',
    headers: { 'x-fault': '1', 'x-request-id': 'paced-1' },
  });
  t.equal(reply.status, 0, 'a response under way: the connection is cut');
  t.equal((await get(ports.http, 'plain.test', '/')).status, 200, 'still serving');
  await containedInProxy(t, failures, { logLines, scrape }, ['paced-1']);
});

t.test(
  "an exception in undici's response callbacks is ours, not the upstream's",
  { skip: FAULTS_SKIP },
  async (t) => {
    const failures = watchFailures(t);
    // undici catches what its callbacks throw and would report it as the upstream's failure: the
    // response's end (written from undici's end callback) throws here, on the proxy's side only
    let proxyPort = -1;
    const end = ServerResponse.prototype.end;
    ServerResponse.prototype.end = function (this: ServerResponse, ...args: unknown[]) {
      if (this.req?.headers['x-fault'] !== undefined && this.socket?.localPort === proxyPort)
        throw new Error('injected fault in the response end');
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof end;
    t.teardown(() => {
      ServerResponse.prototype.end = end;
    });
    const { controller, logLines, scrape } = await setUp(t);
    proxyPort = controller.http.port;
    const reply = await sendBody({
      http: controller.http.port,
      https: controller.https.port,
      protocol: 'http',
      framing: 'empty',
      method: 'GET',
      host: 'plain.test',
      path: '/size/4096',
      headers: { 'x-fault': '1', 'x-request-id': 'ended-1' },
    });
    t.equal(reply.status, 0, 'the head was sent: the connection is cut, not left hanging');
    t.equal((await get(controller.http.port, 'plain.test', '/')).status, 200, 'still serving');
    await containedInProxy(t, failures, { logLines, scrape }, ['ended-1']);
  },
);

t.test("an exception in the upgrade's undici callback is contained", { skip: FAULTS_SKIP }, async (t) => {
  const failures = watchFailures(t);
  // an upstream that accepts every upgrade; the tunnel is set up from undici's upgrade callback
  const upgrades = createServer();
  const upstreamSockets = new Set<Duplex>();
  upgrades.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    upstreamSockets.add(socket);
    socket.on('error', () => {});
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  });
  const wsPort = await listen(upgrades);
  t.teardown(() => {
    for (const socket of upstreamSockets) socket.destroy();
    upgrades.close();
  });
  const tunnel = UpstreamProxy.prototype.tunnel;
  UpstreamProxy.prototype.tunnel = () => {
    throw new Error('injected fault in the tunnel');
  };
  t.teardown(() => {
    UpstreamProxy.prototype.tunnel = tunnel;
  });
  const { controller, logLines } = await setUp(
    t,
    serviceYaml('ws', [wsPort]) + ingressYaml({ name: 'ws', host: 'ws.test', service: 'ws' }),
  );
  const reply = await rawExchange(
    controller.http.port,
    'GET /ws HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
  );
  t.match(reply.toString('latin1'), /^HTTP\/1\.1 101 /, 'the 101 went out before the fault');
  t.equal((await get(controller.http.port, 'plain.test', '/')).status, 200, 'still serving');
  failures.check();
  t.same(
    failures.contained.map((f) => f.where),
    ['upgrade'],
  );
  t.match(
    logLines.filter((line) => line.level === 50),
    [{ where: 'upgrade', err: { message: 'injected fault in the tunnel' } }],
  );
});
