// What one client connection can hold open upstream. HTTP/2: the HTTPS listener advertises
// SETTINGS_MAX_CONCURRENT_STREAMS 128 (ingress-nginx's http2-max-concurrent-streams default), and a
// client that opens more streams anyway gets them refused, so a slow backend never sees more than
// 128 requests from one connection (it saw one upstream connection per stream, thousands of them,
// with no limit). HTTP/1.1: a pipelined batch is served one request at a time, as NGINX does.
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { HTTP2_MAX_CONCURRENT_STREAMS } from '../../lib/dataplane/listening/https-listener.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { send } from '../support/echo.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { planeStats } from '../support/plane.ts';
import { ERROR, errorCode, FRAME, rawH2 } from '../support/raw-h2.ts';
import { withTestThreads } from '../support/threads.ts';

/** A backend that holds every request until `release`, counting what it holds and its connections. */
function slowBackend() {
  const events = new EventEmitter<{ request: [string] }>();
  const held: ServerResponse[] = [];
  const connections = new Set<unknown>();
  const stats = { total: 0, inFlight: 0, maxInFlight: 0, maxConnections: 0 };
  let answering = false;
  const server = createServer((req, res) => {
    stats.total++;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    res.once('close', () => stats.inFlight--);
    req.resume();
    if (answering && req.url !== '/probe') req.once('end', () => res.end('ok'));
    else held.push(res);
    events.emit('request', req.url ?? '');
  });
  server.on('connection', (socket) => {
    connections.add(socket);
    stats.maxConnections = Math.max(stats.maxConnections, connections.size);
    socket.once('close', () => connections.delete(socket));
  });
  return {
    server,
    stats,
    events,
    /** answers what is held, and from now on every request at once */
    release() {
      answering = true;
      for (const res of held.splice(0)) res.end('ok');
    },
    /** resolves once `n` requests have arrived in all */
    async arrived(n: number) {
      while (stats.total < n) await once(events, 'request');
    },
  };
}

async function setUp(t: Test, config: Record<string, string> = {}) {
  const backend = slowBackend();
  const port = await listen(backend.server);
  t.teardown(() => {
    backend.release();
    backend.server.closeAllConnections();
    backend.server.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-h2-streams-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('slow', [port]),
      ingressYaml({ name: 'slow', host: 'slow.test', service: 'slow' }),
      `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(config))}
`,
    ].join(''),
  );
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    {
      accessLogStdout: { write() {} },
    },
  );
  t.teardown(() => controller.stop(0));
  return { backend, controller };
}

const STREAMS = 300;
const oddIds = (n: number) => Array.from({ length: n }, (_, i) => 2 * i + 1);

t.test('HTTP/2: at most 128 streams per connection reach the backend', async (t) => {
  t.equal(HTTP2_MAX_CONCURRENT_STREAMS, 128, "ingress-nginx's http2-max-concurrent-streams default");
  const { backend, controller } = await setUp(t);
  const client = await rawH2(controller.https.port, 'slow.test');
  t.teardown(() => client.close());
  await client.until((frames) => frames.some((f) => f.type === FRAME.SETTINGS && (f.flags & 1) === 0));
  const settings = client.frames.find((f) => f.type === FRAME.SETTINGS && (f.flags & 1) === 0);
  const advertised = new Map<number, number>();
  for (let i = 0; settings !== undefined && i + 6 <= settings.payload.length; i += 6) {
    advertised.set(settings.payload.readUInt16BE(i), settings.payload.readUInt32BE(i + 2));
  }
  // SETTINGS_MAX_CONCURRENT_STREAMS is setting 0x3
  t.equal(advertised.get(3), 128, 'SETTINGS_MAX_CONCURRENT_STREAMS 128 advertised');

  // a client that ignores it: 300 requests at once, before acknowledging the server's SETTINGS
  client.requestAll(oddIds(STREAMS), '/slow', 'slow.test');
  const refused = (frames: readonly { type: number }[]) =>
    frames.filter((f) => f.type === FRAME.RST_STREAM && errorCode(f as never) === ERROR.REFUSED_STREAM)
      .length;
  // without a limit the 129th request reaches the backend instead
  await Promise.race([client.until((frames) => refused(frames) === STREAMS - 128), backend.arrived(129)]);
  t.equal(refused(client.frames), STREAMS - 128, 'the streams over 128 are refused (REFUSED_STREAM)');
  await backend.arrived(128);
  backend.release();
  const answered = (frames: readonly { type: number }[]) =>
    frames.filter((f) => f.type === FRAME.HEADERS).length;
  await client.until((frames) => answered(frames) === 128);
  t.equal(backend.stats.total, 128, 'the backend got 128 requests, no more');
  t.ok(backend.stats.maxInFlight <= 128, `at most 128 at once (${backend.stats.maxInFlight})`);
  t.ok(
    backend.stats.maxConnections <= 128,
    `at most 128 upstream connections (${backend.stats.maxConnections})`,
  );
});

t.test('HTTP/2: a client that acknowledged the limit and exceeds it loses the connection', async (t) => {
  const { backend, controller } = await setUp(t);
  const client = await rawH2(controller.https.port, 'slow.test');
  t.teardown(() => client.close());
  await client.until((frames) => frames.some((f) => f.type === FRAME.SETTINGS && (f.flags & 1) === 0));
  client.ackSettings();
  // the server has our ACK once it answers a PING sent after it
  client.socket.write(Buffer.concat([Buffer.from([0, 0, 8, FRAME.PING, 0, 0, 0, 0, 0]), Buffer.alloc(8)]));
  await client.until((frames) => frames.some((f) => f.type === FRAME.PING && (f.flags & 1) === 1));
  client.requestAll(oddIds(STREAMS), '/slow', 'slow.test');
  // Node (nghttp2) treats a stream over an acknowledged limit as a connection error (RFC 9113
  // §5.1.2 allows that or refusing the stream; NGINX refuses the stream)
  await Promise.race([
    client.until((frames) => frames.some((f) => f.type === FRAME.GOAWAY)),
    backend.arrived(129),
  ]);
  const goaway = client.frames.find((f) => f.type === FRAME.GOAWAY);
  t.equal(goaway === undefined ? -1 : errorCode(goaway), ERROR.PROTOCOL_ERROR, 'GOAWAY PROTOCOL_ERROR');
  backend.release();
  if (goaway !== undefined && !client.socket.closed) await once(client, 'close');
  t.ok(backend.stats.total <= 128, `the backend got at most 128 requests (${backend.stats.total})`);
});

t.test('HTTP/1.1: a pipelined batch reaches the backend one request at a time', async (t) => {
  const { backend, controller } = await setUp(t);
  const port = controller.http.port;
  const socket = connect(port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  const BATCH = 5;
  socket.write(
    Array.from({ length: BATCH }, (_, i) => `GET /p${i} HTTP/1.1\r\nHost: slow.test\r\n\r\n`).join(''),
  );
  await backend.arrived(1);
  // a request on another connection is served meanwhile; when it arrives, the batch's others have had
  // their chance to arrive too
  const probeArrived = new Promise<void>((resolve) => {
    const arrived = (url: string) => {
      if (url !== '/probe') return;
      backend.events.off('request', arrived);
      resolve();
    };
    backend.events.on('request', arrived);
  });
  const probe = send(port, 'slow.test', '/probe');
  await probeArrived;
  t.equal(backend.stats.inFlight, 2, 'the first request of the batch and the probe, nothing else');
  backend.release();
  t.equal((await probe).status, 200);
  while ((text.match(/HTTP\/1\.1 200/g) ?? []).length < BATCH) await once(socket, 'data');
  t.equal(backend.stats.total, BATCH + 1, 'every request of the batch answered');
});

t.test('HTTP/1.1: requests pipelined after the connection’s last one never go upstream', async (t) => {
  // keep-alive-requests 2: the second response closes the connection
  const { backend, controller } = await setUp(t, { 'keep-alive-requests': '2' });
  backend.release();
  const socket = connect(controller.http.port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  socket.write(
    ['/c0', '/c1', '/c2'].map((path) => `GET ${path} HTTP/1.1\r\nHost: slow.test\r\n\r\n`).join(''),
  );
  await once(socket, 'close');
  t.equal((text.match(/HTTP\/1\.1 200/g) ?? []).length, 2, 'two answers, then the connection closed');
  t.equal(backend.stats.total, 2, 'the third request never reached the backend');
});

t.test('HTTP/1.1: the body of a request pipelined behind another one still arrives', async (t) => {
  const { backend, controller } = await setUp(t);
  const socket = connect(controller.http.port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  socket.write(
    'GET /first HTTP/1.1\r\nHost: slow.test\r\n\r\n' +
      'POST /second HTTP/1.1\r\nHost: slow.test\r\nContent-Length: 5\r\n\r\n',
  );
  await backend.arrived(1);
  backend.release();
  socket.write('hello');
  while ((text.match(/HTTP\/1\.1 200/g) ?? []).length < 2) await once(socket, 'data');
  t.pass('both answered: the second body was read while the first was served');
});

t.test('HTTP/1.1: what a client pipelines is read as it is served, not all at once', async (t) => {
  const { backend, controller } = await setUp(t);
  backend.release();
  const socket = connect(controller.http.port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  socket.on('error', () => {});
  socket.resume();
  const one = 'GET /p HTTP/1.1\r\nHost: slow.test\r\n\r\n';
  // 1.8 MB of requests; keep-alive-requests (1000) closes the connection after the 1000th answer
  socket.write(one.repeat(50_000));
  await once(socket, 'close');
  const parsed = (await planeStats(controller.handle)).requests;
  // a 64 KiB read holds at most 1,771 of these requests
  t.ok(parsed < 1000 + 2 * 1771, `requests parsed: ${parsed} (of 50,000 sent)`);
  t.equal(backend.stats.total, 1000, 'the backend got the 1000 the connection allows');
});
