// The ConfigMap's response keys through the real proxy, over HTTP/1.1 and HTTP/2:
// allow-backend-server-header (with and without server-tokens, as ingress-nginx's template combines
// them), proxy-add-original-uri-header (with rewrite-target, and a client sending its own
// X-Original-URI), default-type (the proxy's own `return 403 "text"`, never a proxied response),
// block-user-agents and block-referers (403 before routing, logged; no header: not blocked), and a
// WebSocket's 101 getting the same response headers as any response.
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { accessLogSink } from '../support/access-log-sink.ts';
import { listen, send, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
}

/** Echoes what it saw, with `Server: backend/1.0`; /noserver without Server, /notype without Content-Type. */
function backend() {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/notype') {
        res.writeHead(200, { server: 'backend/1.0' });
        res.end('untyped');
        return;
      }
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (req.url !== '/noserver') headers.server = 'backend/1.0';
      res.writeHead(200, headers);
      res.end(JSON.stringify({ url: req.url ?? '', headers: req.headers } satisfies Seen));
    });
  });
}

/** A WebSocket backend echoing messages; its 101 carries Server and X-Powered-By. */
function wsBackend() {
  const server = createServer((_req, res) => res.end());
  const wss = new WebSocketServer({ server });
  wss.on('headers', (headers) => headers.push('Server: ws-backend/1.0', 'X-Powered-By: php/5'));
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo ${data}`)));
  return { server, wss };
}

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(data))}
`;

const rewriteIngress = `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: rw, namespace: e2e, creationTimestamp: "2026-01-01T00:00:00Z", annotations: { nginx.ingress.kubernetes.io/rewrite-target: "/$2" } }
spec:
  ingressClassName: ingress-ts
  rules:
    - host: rw.test
      http: { paths: [{ path: "/something(/|$)(.*)", pathType: ImplementationSpecific, backend: { service: { name: web, port: { number: 80 } } } }] }
`;

t.test('ConfigMap response keys through the proxy', async (t) => {
  const web = backend();
  const webPort = await listen(web);
  t.teardown(() => web.close());
  const ws = wsBackend();
  const wsPort = await listen(ws.server);
  t.teardown(() => {
    for (const client of ws.wss.clients) client.terminate();
    ws.server.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-response-keys-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ca = await readFile(new URL('../fixtures/backend-tls/ca.crt', import.meta.url));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [webPort]),
      serviceYaml('ws', [wsPort]),
      ingressYaml({ name: 'ws', host: 'ws.test', service: 'ws' }),
      ingressYaml({ name: 'web', host: 'web.test', service: 'web' }),
      rewriteIngress,
      `---\napiVersion: v1\nkind: Secret\nmetadata: { name: ca, namespace: e2e }\ndata:\n  ca.crt: ${ca.toString('base64')}\n`,
      ingressYaml({
        name: 'cn',
        host: 'cn.test',
        service: 'web',
        annotations: { 'auth-tls-secret': 'ca', 'auth-tls-match-cn': 'CN=alice' },
      }),
    ].join(''),
  );
  await writeFile(join(dir, 'config.yaml'), configMap({}));
  const log = accessLogSink();
  const logLine = log.line;
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: log.stream },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const apply = async (data: Record<string, string>) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap(data));
    await swapped;
  };
  const seen = async (host: string, path: string, headers: Record<string, string> = {}) => {
    const reply = await send(port, host, path, { headers });
    return JSON.parse(reply.body) as Seen;
  };

  await t.test('defaults: no Server, no X-Original-URI of ours, nothing blocked', async (t) => {
    const reply = await send(port, 'web.test', '/x', { headers: { 'user-agent': 'BadBot/1.0' } });
    t.equal(reply.status, 200);
    t.equal(reply.headers.server, undefined, "the upstream's Server is dropped");
    const up = await seen('web.test', '/x?a=1');
    t.equal(up.headers['x-original-uri'], undefined, 'no X-Original-URI');
    const client = await seen('web.test', '/x', { 'x-original-uri': '/from-client' });
    t.equal(client.headers['x-original-uri'], '/from-client', "off: the client's header passes, as in NGINX");
    const untyped = await send(port, 'web.test', '/notype');
    t.equal(untyped.headers['content-type'], undefined, 'a proxied response without Content-Type stays so');
  });

  await t.test('allow-backend-server-header alone: still no Server (more_clear_headers)', async (t) => {
    await apply({ 'allow-backend-server-header': 'true' });
    t.equal((await send(port, 'web.test', '/x')).headers.server, undefined);
    t.equal((await send(port, 'web.test', '/noserver')).headers.server, undefined);
    t.equal((await send(port, 'nowhere.test', '/')).headers.server, undefined, 'nor on error pages');
  });

  await t.test(
    'server-tokens without allow-backend-server-header: ours replaces the upstream one',
    async (t) => {
      await apply({ 'server-tokens': 'true' });
      t.equal((await send(port, 'web.test', '/x')).headers.server, 'ingress-ts');
      t.equal((await send(port, 'web.test', '/noserver')).headers.server, 'ingress-ts');
    },
  );

  await t.test('both: the upstream Server passes, ours where it sent none', async (t) => {
    await apply({ 'server-tokens': 'true', 'allow-backend-server-header': 'true' });
    t.equal((await send(port, 'web.test', '/x')).headers.server, 'backend/1.0');
    t.equal((await send(port, 'web.test', '/noserver')).headers.server, 'ingress-ts');
    const own = await send(port, 'nowhere.test', '/');
    t.equal(own.status, 404);
    t.equal(own.headers.server, 'ingress-ts', "the proxy's own answer");
  });

  await t.test('proxy-add-original-uri-header: the URI the client sent, whatever the rewrite', async (t) => {
    await apply({ 'proxy-add-original-uri-header': 'true' });
    const plain = await seen('web.test', '/a/b?c=d');
    t.equal(plain.headers['x-original-uri'], '/a/b?c=d');
    const rewritten = await seen('rw.test', '/something/x?q=1');
    t.equal(rewritten.url, '/x?q=1', 'rewrite-target changed the upstream path');
    t.equal(rewritten.headers['x-original-uri'], '/something/x?q=1', 'X-Original-URI is the original');
    const spoofed = await seen('web.test', '/real', { 'X-Original-URI': '/spoofed' });
    t.equal(spoofed.headers['x-original-uri'], '/real', "the client's own header never passes as ours");
    t.equal(JSON.stringify(spoofed.headers).includes('/spoofed'), false, 'nor next to it');
  });

  await t.test('default-type: the type of return 403 "text", not of proxied responses', async (t) => {
    const before = await send(port, 'cn.test', '/');
    t.equal(before.status, 403);
    t.equal(before.headers['content-type'], 'text/html', 'the default: text/html');
    await apply({ 'default-type': 'text/plain' });
    const refused = await send(port, 'cn.test', '/');
    t.equal(refused.status, 403);
    t.equal(refused.body, 'client certificate unauthorized');
    t.equal(refused.headers['content-type'], 'text/plain');
    t.equal(
      (await send(port, 'web.test', '/notype')).headers['content-type'],
      undefined,
      'proxied: none added',
    );
    t.equal(
      (await send(port, 'nowhere.test', '/')).headers['content-type'],
      'text/html',
      "NGINX's pages: text/html",
    );
  });

  await t.test('block-user-agents, block-referers: 403 before routing, logged', async (t) => {
    await apply({
      'block-user-agents': '~*bot, curl/7.68.0, ~^Wget',
      'block-referers': 'http://spam.example/, ~*casino',
    });
    const ua = async (agent: string, host = 'web.test') =>
      (await send(port, host, '/', { headers: { 'user-agent': agent } })).status;
    t.equal(await ua('Googlebot/2.1'), 403, '~* regex, any case');
    t.equal(await ua('CURL/7.68.0'), 403, 'exact string, case-insensitive');
    t.equal(await ua('curl/7.68.01'), 200, 'exact: the whole value');
    t.equal(await ua('Wget/1.2'), 403, '~ regex');
    t.equal(await ua('wget/1.2'), 200, '~ regex is case-sensitive');
    t.equal(await ua('Mozilla/5.0'), 200);
    t.equal(await ua('Googlebot', 'nowhere.test'), 403, 'on every host, the catch-all too');
    const ref = async (referer: string) =>
      (await send(port, 'web.test', '/', { headers: { referer } })).status;
    t.equal(await ref('http://spam.example/'), 403);
    t.equal(await ref('https://CASINO.example/x'), 403);
    t.equal(await ref('https://news.example/'), 200);
    t.equal((await send(port, 'web.test', '/', { headers: {} })).status, 200, 'no User-Agent nor Referer');
    const upgrade = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.write(
          'GET /ws HTTP/1.1\r\nHost: web.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
            'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nUser-Agent: EvilBot\r\n\r\n',
        ),
      );
      let data = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        data += chunk;
      });
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    t.match(upgrade, /^HTTP\/1\.1 403 /, 'a WebSocket upgrade is refused the same way');
    // format-agnostic (the access log's format is configurable): the line names the referer and 403
    const line = await logLine('https://CASINO.example/x');
    t.match(line, /\b403\b/, 'the refused request has its access log line, with its status');
  });

  await t.test('block lists over HTTP/2', async (t) => {
    const session = http2Connect(`https://127.0.0.1:${controller.https.port}`, {
      rejectUnauthorized: false,
      servername: 'web.test',
    });
    t.teardown(() => session.close());
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request({ ':path': '/', ':authority': 'web.test', ...headers });
        stream.on('response', (h) => resolve(Number(h[':status'])));
        stream.on('error', reject);
        stream.resume();
      });
    t.equal(await status({ 'user-agent': 'SomeBot' }), 403);
    t.equal(await status({ referer: 'http://spam.example/' }), 403);
    t.equal(await status({ 'user-agent': 'Mozilla/5.0' }), 200);
  });

  await t.test("a WebSocket's 101 goes through the same response headers", async (t) => {
    const swapped = nextSwap();
    await writeFile(
      join(dir, 'config.yaml'),
      configMap({
        'server-tokens': 'true',
        'allow-backend-server-header': 'true',
        'hide-headers': 'X-Powered-By',
        'add-headers': 'ingress/down',
      }) +
        `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: down, namespace: ingress }\ndata: { X-Frame-Options: DENY }\n`,
    );
    await swapped;
    const client = new WebSocket(`ws://127.0.0.1:${port}/chat`, { headers: { host: 'ws.test' } });
    t.teardown(() => client.terminate());
    // 'open' follows 'upgrade' in the same tick: both are listened for first
    const opened = once(client, 'open');
    const [response] = (await once(client, 'upgrade')) as [{ headers: IncomingHttpHeaders }];
    await opened;
    t.equal(response.headers['x-frame-options'], 'DENY', 'add-headers');
    t.equal(response.headers['x-powered-by'], undefined, 'hide-headers');
    t.equal(response.headers.server, 'ws-backend/1.0', 'allow-backend-server-header with server-tokens');
    t.equal(response.headers.connection, 'upgrade');
    t.equal(response.headers.upgrade, 'websocket');
    t.ok(response.headers.date, 'a Date');
    client.send('hi');
    const [message] = (await once(client, 'message')) as [Buffer];
    t.equal(message.toString(), 'echo hi', 'the tunnel works');
  });

  await t.test('block lists emptied: nothing is checked', async (t) => {
    await apply({});
    t.equal((await send(port, 'web.test', '/', { headers: { 'user-agent': 'Googlebot' } })).status, 200);
  });
});
