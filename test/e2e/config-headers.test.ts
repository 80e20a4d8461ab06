// The global ConfigMap's request/response keys through the real proxy: the
// upstream headers with the defaults (X-Forwarded-* not believed, X-Forwarded-For replaced, request
// ids generated, no Server), then after a swap with use-forwarded-headers, compute-full-forwarded-for,
// real IP behind trusted proxies, generate-request-id off, server-tokens, proxy-set-headers,
// add-headers (on every status), hide-headers, keep-alive-requests/keep-alive, client-body-timeout
// and upstream-keepalive-requests; a change to a referenced ConfigMap alone is applied too.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { accessLogSink } from '../support/access-log-sink.ts';
import { listen, type Reply, send as sendRequest, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseNginxLine } from '../support/nginx-log-line.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
  socket: string;
}

/** A backend that answers with what it saw; `/status/<n>` answers n; some headers to hide. */
function backend() {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const seen: Seen = {
        url: req.url ?? '',
        headers: req.headers,
        socket: `${req.socket.remotePort}`,
      };
      const body = JSON.stringify(seen);
      const status = /^\/status\/(\d{3})$/.exec(req.url ?? '');
      res.writeHead(status === null ? 200 : Number(status[1]), {
        'content-type': 'application/json',
        server: 'backend/1.0',
        'x-powered-by': 'php/5',
        'x-frame-options': 'SAMEORIGIN',
      });
      res.end(body);
    });
  });
}

/** A request with these extra headers (and a keep-alive agent when given). */
const send = (
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  agent?: Agent,
) => sendRequest(port, host, path, { headers, agent });

const seen = (reply: Reply): Seen => JSON.parse(reply.body) as Seen;

const configMap = (name: string, data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: ingress }
data: ${JSON.stringify(name === 'ingress-ts' ? withTestThreads(data) : data)}
`;

t.test('ConfigMap request/response keys through the proxy', async (t) => {
  const web = backend();
  const fresh = backend();
  const webPort = await listen(web);
  const freshPort = await listen(fresh);
  t.teardown(() => {
    web.close();
    fresh.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-config-headers-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [webPort]),
      serviceYaml('fresh', [freshPort]),
      serviceYaml('empty', []),
      ingressYaml({ name: 'web', host: 'web.test', service: 'web' }),
      ingressYaml({ name: 'fresh', host: 'fresh.test', service: 'fresh' }),
      ingressYaml({ name: 'empty', host: 'empty.test', service: 'empty' }),
    ].join(''),
  );
  await writeFile(join(dir, 'config.yaml'), configMap('ingress-ts', {}));
  const log = accessLogSink();
  const logLine = log.line;
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: log.stream },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const forwarded = {
    'x-forwarded-for': '9.9.9.9, 10.0.0.1',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'front.example',
    'x-forwarded-port': '8443',
    'x-env': 'from-client',
  };

  await t.test('defaults: incoming X-Forwarded-* not believed, XFF replaced, an id generated', async (t) => {
    const reply = await send(port, 'web.test', '/x', forwarded);
    const up = seen(reply).headers;
    t.equal(up['x-forwarded-for'], '127.0.0.1', 'X-Forwarded-For replaced by the peer');
    t.equal(up['x-real-ip'], '127.0.0.1');
    t.equal(up['x-original-forwarded-for'], '9.9.9.9, 10.0.0.1');
    t.equal(up['x-forwarded-proto'], 'http');
    t.equal(up['x-forwarded-port'], String(port));
    t.equal(up.host, 'web.test');
    t.equal(up['x-forwarded-host'], 'web.test');
    t.match(up['x-request-id'], /^[0-9a-f]{32}$/, 'X-Request-ID generated');
    t.equal(up['x-env'], 'from-client');
    t.equal(reply.headers.server, undefined, 'no Server header (server-tokens false)');
    t.equal(reply.headers['x-powered-by'], 'php/5', 'nothing hidden');
    t.equal(reply.headers['x-frame-options'], 'SAMEORIGIN');
    t.equal(reply.headers['keep-alive'], 'timeout=75', `keep-alive 75 s ${JSON.stringify(reply.headers)}`);
  });

  await t.test('after a swap: forwarded headers, real IP, header ConfigMaps, Server', async (t) => {
    const swapped = nextSwap();
    await writeFile(
      join(dir, 'config.yaml'),
      configMap('ingress-ts', {
        'use-forwarded-headers': 'true',
        'compute-full-forwarded-for': 'true',
        'proxy-real-ip-cidr': '127.0.0.0/8, 10.0.0.0/8',
        'generate-request-id': 'false',
        'server-tokens': 'true',
        'proxy-set-headers': 'ingress/up',
        'add-headers': 'ingress/down',
        'hide-headers': 'X-Powered-By',
        'keep-alive': '10',
        'keep-alive-requests': '2',
        'client-body-timeout': '1',
        'upstream-keepalive-requests': '2',
      }) +
        configMap('up', { 'X-Env': 'prod', 'X-Team': 'edge' }) +
        configMap('down', { 'X-Frame-Options': 'DENY', 'X-Served-By': 'edge' }),
    );
    await swapped;
    const agent = new Agent({ keepAlive: true });
    t.teardown(() => agent.destroy());
    const reply = await send(port, 'web.test', '/real', forwarded, agent);
    const up = seen(reply).headers;
    t.equal(up['x-real-ip'], '9.9.9.9', 'the rightmost untrusted address of the chain');
    t.equal(up['x-forwarded-for'], '9.9.9.9, 10.0.0.1, 127.0.0.1', 'the full chain plus the peer');
    t.equal(up['x-forwarded-proto'], 'https', 'X-Forwarded-Proto believed');
    t.equal(up['x-forwarded-port'], '8443', 'X-Forwarded-Port believed');
    t.equal(up.host, 'front.example', '$best_http_host: X-Forwarded-Host');
    t.equal(up['x-forwarded-host'], 'front.example');
    t.equal(up['x-request-id'], undefined, 'generate-request-id false: none made up');
    t.equal(up['x-env'], 'prod', 'proxy-set-headers replaces the client header');
    t.equal(up['x-team'], 'edge');
    t.equal(reply.headers.server, 'ingress-ts', 'server-tokens: Server: ingress-ts');
    t.equal(reply.headers['x-powered-by'], undefined, 'hide-headers');
    t.equal(reply.headers['x-frame-options'], 'DENY', 'add-headers replaces the upstream value');
    t.equal(reply.headers['x-served-by'], 'edge');
    t.equal(reply.headers['keep-alive'], 'timeout=10', 'keep-alive 10 s (a new connection)');

    const passed = seen(await send(port, 'web.test', '/x', { 'x-request-id': 'abc' })).headers;
    t.equal(passed['x-request-id'], 'abc', 'an incoming X-Request-ID is passed through');

    const notFound = await send(port, 'web.test', '/status/404');
    t.equal(notFound.status, 404);
    t.equal(notFound.headers['x-served-by'], 'edge', 'add-headers on an upstream 404');
    const unavailable = await send(port, 'empty.test', '/');
    t.equal(unavailable.status, 503);
    t.equal(unavailable.headers['x-served-by'], 'edge', "add-headers on the proxy's own 503");
    t.equal(unavailable.headers.server, 'ingress-ts', 'Server on error pages');

    const line = parseNginxLine(await logLine('"GET /real HTTP/1.1"'));
    t.equal(line.remote_addr, '9.9.9.9', 'the access log remote_addr is the real IP');
  });

  await t.test(
    'an untrusted peer names no client; HTTP with X-Forwarded-Proto https is not redirected',
    async (t) => {
      const swapped = nextSwap();
      await writeFile(
        join(dir, 'config.yaml'),
        configMap('ingress-ts', {
          'enable-real-ip': 'true',
          'use-forwarded-headers': 'true',
          'proxy-real-ip-cidr': '10.0.0.0/8',
          'force-ssl-redirect': 'true',
          'proxy-set-headers': 'ingress/up',
        }) + configMap('up', { 'X-Env': 'prod' }),
      );
      await swapped;
      const untrusted = await send(port, 'web.test', '/x', forwarded);
      t.equal(untrusted.status, 200, JSON.stringify(untrusted.headers));
      const up = seen(untrusted).headers;
      t.equal(up['x-real-ip'], '127.0.0.1', 'the peer is not trusted: its own address');
      t.equal(up['x-forwarded-for'], '127.0.0.1', 'XFF replaced again');
      const plain = await send(port, 'web.test', '/x');
      t.equal(plain.status, 308, 'force-ssl-redirect on a plain HTTP request');
      const behind = await send(port, 'web.test', '/x', { 'x-forwarded-host': 'front.example:8080' });
      t.equal(behind.headers.location, 'https://front.example/x', 'the redirect names $best_http_host');
      t.equal(
        (await send(port, 'web.test', '/x', { 'x-forwarded-proto': 'https' })).status,
        200,
        'XFP https',
      );

      const changed = nextSwap();
      await writeFile(
        join(dir, 'config.yaml'),
        configMap('ingress-ts', {
          'proxy-set-headers': 'ingress/up',
          'keep-alive-requests': '2',
          'client-body-timeout': '1',
          'upstream-keepalive-requests': '2',
        }) + configMap('up', { 'X-Env': 'staging' }),
      );
      await changed;
      const afterReply = await send(port, 'web.test', '/x');
      t.equal(afterReply.status, 200, JSON.stringify(afterReply));
      const after = seen(afterReply).headers;
      t.equal(after['x-env'], 'staging', 'a change of the referenced ConfigMap is applied');
    },
  );

  await t.test('keep-alive-requests: the second request of a connection closes it', async (t) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const first = await send(port, 'web.test', '/1', {}, agent);
    const second = await send(port, 'web.test', '/2', {}, agent);
    t.not(first.headers.connection, 'close');
    t.equal(second.headers.connection, 'close', 'connection closed after 2 requests');
  });

  await t.test(
    'upstream-keepalive-requests: a new pool uses at most 2 requests per connection',
    async (t) => {
      const sockets = new Set<string>();
      for (let i = 0; i < 4; i++) sockets.add(seen(await send(port, 'fresh.test', `/${i}`)).socket);
      t.equal(sockets.size, 2, '4 requests over 2 upstream connections');
    },
  );

  await t.test('client-body-timeout: an idle request body gets 408', async (t) => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write('POST /upload HTTP/1.1\r\nHost: web.test\r\nContent-Length: 10\r\n\r\nab');
      });
      let data = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        data += chunk;
      });
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    t.match(reply, /^HTTP\/1\.1 408 /, '408 Request Timeout');
  });
});
