// Header limits through the real proxy: proxy-buffer-size (the largest upstream response head; a
// larger one is NGINX's "upstream sent too big header", a 502 counted as an upstream error);
// client-header-buffer-size with large-client-header-buffers; HTTP/2 sessions with
// http2-max-concurrent-streams, GOAWAY after keep-alive-requests streams and the header limits.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { type ClientHttp2Session, connect as connectH2, type IncomingHttpHeaders } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, send, testConfig } from '../support/http.ts';
import { JSON_LOG_KEYS } from '../support/json-log-format.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseExposition, sampleValue } from '../support/prometheus.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(data))}
`;

/** A backend whose response to `/head/<n>` carries a header of n bytes of value. */
function headBackend() {
  // heads as large as the proxy lets through (Node's default would refuse those over 16 KiB)
  return createServer({ maxHeaderSize: 1 << 20 }, (req, res) => {
    req.resume();
    const size = /^\/head\/(\d+)$/.exec(req.url ?? '');
    res.writeHead(200, {
      'content-type': 'text/plain',
      'x-big': 'v'.repeat(size === null ? 0 : Number(size[1])),
    });
    res.end('ok');
  });
}

t.test('proxy-buffer-size bounds the upstream response head', async (t) => {
  const backend = headBackend();
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-header-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backendPort]),
      // two Ingresses on one Service: one upstream, each location with its own limit
      ingressYaml({ name: 'plain', host: 'plain.test', service: 'web' }),
      ingressYaml({
        name: 'large',
        host: 'large.test',
        service: 'web',
        annotations: { 'proxy-buffer-size': '16k' },
      }),
    ].join(''),
  );
  // the JSON line of the docs: lines are found by host
  await writeFile(join(dir, 'config.yaml'), configMap(JSON_LOG_KEYS));
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      sink.emit('lines');
      done();
    },
  });
  /** The first access log line for this host and URI (lines are written in batches). */
  const logLine = async (host: string, uri: string) => {
    for (;;) {
      const line = lines.find((l) => l.host === host && l.request_uri === uri);
      if (line !== undefined) return line;
      await once(sink, 'lines');
    }
  };
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: sink },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  // ingress-nginx's default, 4k
  t.equal((await get(port, 'plain.test', '/head/3000')).status, 200, 'a 3 KB head passes the 4k default');
  const tooBig = await get(port, 'plain.test', '/head/6000');
  t.equal(tooBig.status, 502, 'a 6 KB head is too big for 4k');
  t.match(tooBig.body, '<title>502 Bad Gateway</title>');
  t.equal((await get(port, 'large.test', '/head/6000')).status, 200, 'the annotation raises it (16k)');
  t.equal((await get(port, 'large.test', '/head/20000')).status, 502, 'a 20 KB head is too big for 16k');
  t.equal((await get(port, 'plain.test', '/head/3500')).status, 200, 'the 4k route keeps its own pool');

  // an upstream error as NGINX logs it: the peer tried, its status 502
  t.match(await logLine('plain.test', '/head/6000'), {
    status: 502,
    upstream_addr: `127.0.0.1:${backendPort}`,
    upstream_status: '502',
    proxy_upstream_name: 'e2e-web-80',
  });
  const reply = await get(controller.healthz.port, 'localhost', '/metrics');
  const labels = { ingress: 'plain', service: 'web', host: 'plain.test', status: '502', method: 'GET' };
  t.equal(sampleValue(parseExposition(reply.body), 'nginx_ingress_controller_requests', labels), 1);

  // the ConfigMap key sets the default of every route without the annotation, on a swap
  const swapped = nextSwap();
  await writeFile(join(dir, 'config.yaml'), configMap({ ...JSON_LOG_KEYS, 'proxy-buffer-size': '8k' }));
  await swapped;
  t.equal(
    (await get(port, 'plain.test', '/head/6000')).status,
    200,
    'proxy-buffer-size: 8k in the ConfigMap',
  );
  t.equal((await get(port, 'plain.test', '/head/9000')).status, 502);
  t.equal((await get(port, 'large.test', '/head/12000')).status, 200, 'the annotation still wins');
});

/** One HTTP/2 request on `session`: its status and body. */
function h2Get(
  session: ClientHttp2Session,
  host: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, ':authority': host, ...headers });
    let status = 0;
    let body = '';
    stream.on('response', (head: IncomingHttpHeaders) => {
      status = Number(head[':status']);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
  });
}

t.test('client-header-buffer-size and HTTP/2 sessions', async (t) => {
  const backend = headBackend();
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-header-limits-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backendPort]),
      ingressYaml({ name: 'web', host: 'web.test', service: 'web' }),
    ].join(''),
  );
  await writeFile(
    join(dir, 'config.yaml'),
    configMap({
      'client-header-buffer-size': '64k',
      'keep-alive-requests': '3',
      'http2-max-concurrent-streams': '7',
    }),
  );
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    {
      accessLogStdout: { write() {} },
    },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  // HTTP/1: a line longer than a large buffer (8k) passes when it fits the first buffer (64k)
  const long = await send(port, 'web.test', '/long', {
    headers: { 'x-long': 'a'.repeat(20_000) },
    agent: false,
  });
  t.equal(long.status, 200, 'a 20 KB header line within client-header-buffer-size 64k');
  const over = await send(port, 'web.test', '/over', {
    headers: { 'x-first': 'a'.repeat(60_000), 'x-second': 'b'.repeat(9_000) },
    agent: false,
  });
  t.equal(over.status, 400, 'past the first buffer, a 9 KB line is too large again');
  t.match(over.body, 'Request Header Or Cookie Too Large');

  const session = connectH2(`https://127.0.0.1:${controller.https.port}`, {
    rejectUnauthorized: false,
    servername: 'web.test',
  });
  t.teardown(() => session.destroy());
  const settings = await once(session, 'remoteSettings');
  t.equal(
    (settings[0] as { maxConcurrentStreams?: number }).maxConcurrentStreams,
    7,
    'SETTINGS_MAX_CONCURRENT_STREAMS from http2-max-concurrent-streams',
  );
  // HTTP/2 is bound by large-client-header-buffers alone (NGINX ≥ 1.19.7), not by the first buffer
  const big = await h2Get(session, 'web.test', '/h2-big', { 'x-big': 'a'.repeat(9000) });
  t.equal(big.status, 400, 'an HTTP/2 header value over 8k');
  t.match(big.body, '<title>400 Request Header Or Cookie Too Large</title>');
  const goaway = once(session, 'goaway');
  t.equal((await h2Get(session, 'web.test', '/h2-2')).status, 200, 'the second stream');
  t.equal((await h2Get(session, 'web.test', '/h2-3')).status, 200, 'the third stream is served');
  const [code] = await goaway;
  t.equal(code, 0, 'then GOAWAY NO_ERROR: keep-alive-requests 3 streams per session');
  const next = connectH2(`https://127.0.0.1:${controller.https.port}`, {
    rejectUnauthorized: false,
    servername: 'web.test',
  });
  t.teardown(() => next.destroy());
  t.equal((await h2Get(next, 'web.test', '/h2-4')).status, 200, 'a new session serves again');

  // larger buffers raise the header list size new sessions advertise past Node's default (64 KiB)
  const swapped = nextSwap();
  await writeFile(join(dir, 'config.yaml'), configMap({ 'large-client-header-buffers': '4 32k' }));
  await swapped;
  const roomy = connectH2(`https://127.0.0.1:${controller.https.port}`, {
    rejectUnauthorized: false,
    servername: 'web.test',
    maxSendHeaderBlockLength: 1 << 20,
  });
  t.teardown(() => roomy.destroy());
  const [roomySettings] = await once(roomy, 'remoteSettings');
  t.equal(
    (roomySettings as { maxHeaderListSize?: number }).maxHeaderListSize,
    4 * 32768 + 32 * 128,
    'SETTINGS_MAX_HEADER_LIST_SIZE covers 4 × 32k',
  );
  const fields: Record<string, string> = {};
  for (let i = 0; i < 4; i++) fields[`x-f${i}`] = 'c'.repeat(25_000);
  t.equal(
    (await h2Get(roomy, 'web.test', '/h2-roomy', fields)).status,
    200,
    '100 KB of headers within 4 × 32k',
  );
  const field = await h2Get(roomy, 'web.test', '/h2-field', { 'x-big': 'a'.repeat(33_000) });
  t.equal(field.status, 400, 'a value over 32k');
});

t.test(
  'enable-underscores-in-headers and ignore-invalid-headers: auth and upstream see the same headers',
  async (t) => {
    /** the client headers each side received, by the request's path */
    const upstreamSaw = new Map<string, string[]>();
    const authSaw = new Map<string, string[]>();
    const names = (raw: string[]) =>
      raw.filter((_, i) => i % 2 === 0 && raw[i]?.toLowerCase().startsWith('x')).map((n) => n.toLowerCase());
    const upstream = createServer((req, res) => {
      upstreamSaw.set(req.url ?? '', names(req.rawHeaders));
      req.resume();
      res.end('ok');
    });
    const auth = createServer((req, res) => {
      authSaw.set(String(req.headers['x-original-uri']), names(req.rawHeaders));
      req.resume();
      res.end();
    });
    const upstreamPort = await listen(upstream);
    const authPort = await listen(auth);
    t.teardown(() => {
      upstream.close();
      auth.close();
    });
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-header-names-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'routes.yaml'),
      [
        INGRESS_CLASS,
        serviceYaml('web', [upstreamPort]),
        ingressYaml({
          name: 'web',
          host: 'web.test',
          service: 'web',
          annotations: { 'auth-url': `http://127.0.0.1:${authPort}/check` },
        }),
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
    const headers = { 'X-Plain': '1', X_Under: '2', 'X.Dot': '3', 'X~Tilde': '4' };
    const seen = async (path: string) => {
      t.equal((await send(port, 'web.test', path, { headers, agent: false })).status, 200, path);
      // the client's x-* headers; the proxy's own (x-forwarded-*, x-real-ip...) left out
      const own = (list: string[] | undefined) =>
        (list ?? []).filter((n) => !/^x-(forwarded|real|request|original|scheme|sent|auth-request)/.test(n));
      return { upstream: own(upstreamSaw.get(path)), auth: own(authSaw.get(path)) };
    };

    const defaults = await seen('/defaults');
    t.strictSame(defaults.upstream, ['x-plain'], 'by default only letters, digits and - reach the upstream');
    t.strictSame(defaults.auth, defaults.upstream, 'and auth-url sees the same');

    let swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap({ 'enable-underscores-in-headers': 'true' }));
    await swapped;
    const underscores = await seen('/underscores');
    t.strictSame(underscores.upstream, ['x-plain', 'x_under'], 'enable-underscores-in-headers: _ is taken');
    t.strictSame(underscores.auth, underscores.upstream);

    swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap({ 'ignore-invalid-headers': 'false' }));
    await swapped;
    const all = await seen('/all');
    t.strictSame(
      all.upstream,
      ['x-plain', 'x_under', 'x.dot', 'x~tilde'],
      'ignore-invalid-headers false: every name',
    );
    t.strictSame(all.auth, all.upstream);
  },
);
