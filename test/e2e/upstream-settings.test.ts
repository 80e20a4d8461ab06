// Upstream behaviour annotations through the real proxy, with backends that
// misbehave on purpose: a read timeout (504) and the proxy-next-upstream-timeout window, http_503
// retries (the first answer discarded, POST only with non_idempotent, the last answer passed on once
// the tries run out), proxy-body-size (413 for a declared length, for a chunked body with request
// buffering on and off), upstream-vhost, and the Set-Cookie / Location / Refresh rewrites.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { errorPage } from '../../lib/dataplane/responses/error-pages.ts';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, type SendOptions, send as sendRequest, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

type Send = SendOptions & { path?: string };

const send = (port: number, host: string, options: Send = {}) =>
  sendRequest(port, host, options.path ?? '/', options);

/** Reads a request body as text. */
async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  req.setEncoding('utf8');
  for await (const chunk of req) text += chunk;
  return text;
}

/**
 * Two backends sharing one request log: `first503` answers 503 to the first request the pair sees
 * (whichever backend gets it) and 200 after that; `always503` always answers 503.
 */
async function pair(t: Test, mode: 'first503' | 'always503') {
  const seen: Array<{ port: number; method: string; body: string }> = [];
  const ports: number[] = [];
  for (let i = 0; i < 2; i++) {
    const server = createServer(async (req, res) => {
      const body = await bodyOf(req);
      const port = (req.socket.localPort ?? 0) as number;
      seen.push({ port, method: req.method ?? '', body });
      if (mode === 'always503' || seen.length === 1) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end(`backend 503 from ${port}`);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`ok from ${port}: ${body}`);
    });
    ports.push(await listen(server));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())).then(() => {}));
    t.teardown(() => server.closeAllConnections());
  }
  return { ports, seen };
}

t.test('upstream settings through the proxy', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-upstream-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  // a backend that takes requests and never answers
  let slowSeen = 0;
  const slow = createServer(() => {
    slowSeen++;
  });
  const slowPort = await listen(slow);
  t.teardown(() => {
    slow.closeAllConnections();
    slow.close();
  });

  // an echo backend: what it saw, plus Set-Cookie / Location responses on purpose
  let echoSeen = 0;
  const echo = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    echoSeen++;
    const body = await bodyOf(req);
    if (req.url === '/cookie') {
      res.setHeader('set-cookie', [
        'a=1; Domain=internal.example; Path=/app/x; HttpOnly',
        'b=2; domain=.INTERNAL.example; path=/other',
        'c=3; Domain=else.example; Path=/app',
      ]);
      res.end('cookies');
      return;
    }
    if (req.url === '/redirect') {
      res.writeHead(302, {
        location: 'http://internal.example/login?next=/a',
        refresh: '3; url=http://internal.example/r',
      });
      res.end();
      return;
    }
    if (req.url === '/elsewhere') {
      res.writeHead(301, { location: 'http://other.example/x' });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        host: req.headers.host,
        forwardedHost: req.headers['x-forwarded-host'],
        length: body.length,
        chunked: req.headers['transfer-encoding'] === 'chunked',
      }),
    );
  });
  const echoPort = await listen(echo);
  t.teardown(() => {
    echo.closeAllConnections();
    echo.close();
  });

  const retry = await pair(t, 'first503');
  const noRetry = await pair(t, 'first503');
  const postPlain = await pair(t, 'first503');
  const postNonIdempotent = await pair(t, 'first503');
  const exhausted = await pair(t, 'always503');

  const site = (name: string, service: string, annotations: Record<string, string> = {}) =>
    ingressYaml({ name, host: `${name}.test`, service, annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      // the ConfigMap's proxy-body-size is the limit of routes that do not set their own
      `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: e2e }
data: { ${TEST_THREADS_ENTRY}proxy-body-size: 2k }
`,
      serviceYaml('slow', [slowPort]),
      serviceYaml('echo', [echoPort]),
      serviceYaml('retry', retry.ports),
      serviceYaml('noretry', noRetry.ports),
      serviceYaml('postplain', postPlain.ports),
      serviceYaml('postni', postNonIdempotent.ports),
      serviceYaml('exhausted', exhausted.ports),
      site('timeout', 'slow', { 'proxy-read-timeout': '1', 'proxy-next-upstream': 'off' }),
      site('window', 'slow', {
        'proxy-read-timeout': '1',
        'proxy-next-upstream-tries': '3',
        'proxy-next-upstream-timeout': '1',
      }),
      site('retry', 'retry', { 'proxy-next-upstream': 'error timeout http_503' }),
      site('noretry', 'noretry'),
      site('postplain', 'postplain', { 'proxy-next-upstream': 'error timeout http_503' }),
      site('postni', 'postni', { 'proxy-next-upstream': 'error timeout http_503 non_idempotent' }),
      site('exhausted', 'exhausted', { 'proxy-next-upstream': 'http_503', 'proxy-next-upstream-tries': '3' }),
      site('small', 'echo', { 'proxy-body-size': '1k' }),
      site('stream', 'echo', { 'proxy-body-size': '1k', 'proxy-request-buffering': 'off' }),
      site('vhost', 'echo', { 'upstream-vhost': 'internal.example' }),
      site('vhostvar', 'echo', { 'upstream-vhost': '$host.internal' }),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX variable syntax, not a template
      site('vhostbest', 'echo', { 'upstream-vhost': '${best_http_host}-x' }),
      site('rewrite', 'echo', {
        'proxy-cookie-domain': 'internal.example example.com',
        'proxy-cookie-path': '/app/ /',
        'proxy-redirect-from': 'http://internal.example/',
        'proxy-redirect-to': 'https://example.com/',
      }),
    ].join(''),
  );
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  t.test('proxy-read-timeout: a backend that never answers gets 504 after the timeout', async (t) => {
    const [timeout, window] = await Promise.all(
      ['timeout', 'window'].map(async (name) => {
        const t0 = performance.now();
        const reply = await send(port, `${name}.test`);
        return { reply, ms: performance.now() - t0 };
      }),
    );
    t.equal(timeout?.reply.status, 504);
    t.equal(timeout?.reply.body, errorPage(504).body.toString('latin1'), "NGINX's 504 page");
    t.ok((timeout?.ms ?? 0) >= 900, `not before the 1 s read timeout (${timeout?.ms.toFixed(0)} ms)`);
    // proxy-next-upstream-timeout 1: the first try used the whole window, so no second try
    t.equal(window?.reply.status, 504);
    t.equal(slowSeen, 2, 'one try each (tries 3 without the window would have made 4 in all)');
  });

  t.test('http_503: the 503 is discarded and the request goes to the other endpoint', async (t) => {
    const reply = await send(port, 'retry.test');
    t.equal(reply.status, 200);
    t.equal(retry.seen.length, 2, 'two tries');
    const [first, second] = retry.seen;
    t.not(first?.port, second?.port, 'the second try went to the other endpoint');
    t.equal(reply.body, `ok from ${second?.port}: `);
    t.equal(retry.seen.filter((s) => s.port === first?.port).length, 1, 'the first backend saw one request');
  });

  t.test('without http_503 the 503 is passed on', async (t) => {
    const reply = await send(port, 'noretry.test');
    t.equal(reply.status, 503);
    t.match(reply.body, /^backend 503 from/, "the backend's own answer");
    t.equal(noRetry.seen.length, 1);
  });

  t.test('POST is not retried on http_503 unless non_idempotent', async (t) => {
    const plain = await send(port, 'postplain.test', { method: 'POST', body: 'payload' });
    t.equal(plain.status, 503, 'POST: the first answer stands');
    t.equal(postPlain.seen.length, 1);
    const ni = await send(port, 'postni.test', { method: 'POST', body: 'payload' });
    t.equal(ni.status, 200, 'non_idempotent: retried');
    t.equal(postNonIdempotent.seen.length, 2);
    t.strictSame(
      postNonIdempotent.seen.map((s) => [s.method, s.body]),
      [
        ['POST', 'payload'],
        ['POST', 'payload'],
      ],
      'the buffered body is sent again whole',
    );
  });

  t.test('when the tries run out, the last upstream answer is passed on', async (t) => {
    const reply = await send(port, 'exhausted.test');
    t.equal(reply.status, 503);
    t.match(reply.body, /^backend 503 from/, 'not the proxy error page');
    t.equal(exhausted.seen.length, 3, 'proxy-next-upstream-tries 3');
  });

  t.test('proxy-body-size: 413 without contacting the upstream', async (t) => {
    const before = echoSeen;
    const page = errorPage(413).body.toString('latin1');
    const big = 'x'.repeat(2048);
    const declared = await send(port, 'small.test', { method: 'POST', body: big });
    t.equal(declared.status, 413, 'Content-Length over the limit');
    t.equal(declared.body, page, "NGINX's 413 page");
    const chunked = await send(port, 'small.test', {
      method: 'POST',
      chunks: ['x'.repeat(800), 'x'.repeat(800)],
    });
    t.equal(chunked.status, 413, 'a chunked body growing past the limit (request buffering on)');
    t.equal(chunked.body, page);
    t.equal(echoSeen, before, 'the upstream saw neither');

    const fits = await send(port, 'small.test', {
      method: 'POST',
      chunks: ['x'.repeat(300), 'y'.repeat(300)],
    });
    t.equal(fits.status, 200);
    t.match(JSON.parse(fits.body), { length: 600, chunked: false }, 'buffered: sent with its length');
    const exact = await send(port, 'small.test', { method: 'POST', body: 'z'.repeat(1024) });
    t.equal(exact.status, 200, 'exactly the limit passes');
  });

  t.test('the ConfigMap proxy-body-size applies to routes without the annotation', async (t) => {
    const over = await send(port, 'vhost.test', { method: 'POST', body: 'x'.repeat(3000) });
    t.equal(over.status, 413);
    const under = await send(port, 'vhost.test', { method: 'POST', body: 'x'.repeat(1500) });
    t.equal(under.status, 200, 'under the ConfigMap limit');
    t.match(JSON.parse(under.body), { length: 1500 });
  });

  t.test('proxy-body-size with request buffering off: streamed, 413 once past the limit', async (t) => {
    const page = errorPage(413).body.toString('latin1');
    const chunked = await send(port, 'stream.test', {
      method: 'POST',
      chunks: ['x'.repeat(800), 'x'.repeat(800), 'x'.repeat(800)],
    });
    t.equal(chunked.status, 413, 'the backend had not answered yet');
    t.equal(chunked.body, page);
    const fits = await send(port, 'stream.test', {
      method: 'POST',
      chunks: ['x'.repeat(300), 'y'.repeat(300)],
    });
    t.equal(fits.status, 200);
    t.match(JSON.parse(fits.body), { length: 600 }, 'under the limit: passed on');
  });

  t.test('upstream-vhost: the Host the backend sees', async (t) => {
    const reply = await send(port, 'vhost.test');
    t.match(JSON.parse(reply.body), { host: 'internal.example', forwardedHost: 'vhost.test' });
    const templated = await send(port, 'vhostvar.test');
    t.match(JSON.parse(templated.body), { host: 'vhostvar.test.internal' }, 'variables expanded per request');
    const best = await send(port, 'vhostbest.test', { headers: { host: 'VhostBest.test:80' } });
    t.match(
      JSON.parse(best.body),
      { host: 'VhostBest.test:80-x' },
      '$best_http_host: the Host header as sent',
    );
    const plain = await send(port, 'small.test');
    t.match(JSON.parse(plain.body), { host: 'small.test' }, 'without it: the request Host');
  });

  t.test('proxy-cookie-domain / -path and proxy-redirect rewrite the response headers', async (t) => {
    const cookies = await send(port, 'rewrite.test', { path: '/cookie' });
    t.strictSame(cookies.headers['set-cookie'], [
      'a=1; Domain=example.com; Path=/x; HttpOnly',
      'b=2; domain=.example.com; path=/other',
      'c=3; Domain=else.example; Path=/app',
    ]);
    const moved = await send(port, 'rewrite.test', { path: '/redirect' });
    t.equal(moved.status, 302);
    t.equal(moved.headers.location, 'https://example.com/login?next=/a');
    t.equal(moved.headers.refresh, '3; url=https://example.com/r');
    const other = await send(port, 'rewrite.test', { path: '/elsewhere' });
    t.equal(other.headers.location, 'http://other.example/x', 'another prefix is left alone');
    const untouched = await send(port, 'vhost.test', { path: '/cookie' });
    t.match(untouched.headers['set-cookie'], ['a=1; Domain=internal.example; Path=/app/x; HttpOnly']);
  });

  t.test('/debug/model shows the upstream settings of each route', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const route = (host: string) => model.hosts.find((h) => h.host === host)?.routes[0];
    t.match(model.upstreamDefaults, {
      connectTimeout: 5,
      readTimeout: 60,
      bodySize: 2048,
      nextUpstreamTries: 3,
    });
    t.match(route('timeout.test')?.upstream, {
      readTimeout: 1,
      nextUpstream: { error: false, timeout: false, statuses: [] },
    });
    t.match(route('window.test')?.upstream, { nextUpstreamTimeout: 1, nextUpstreamTries: 3 });
    t.match(route('exhausted.test')?.upstream, { nextUpstream: { error: false, statuses: [503] } });
    t.match(route('small.test')?.upstream, { bodySize: 1024, requestBuffering: true });
    t.match(route('vhost.test')?.upstream, { upstreamVhost: 'internal.example' });
    t.match(route('rewrite.test')?.upstream, {
      cookieDomain: { from: 'internal.example', to: 'example.com' },
      redirect: { from: 'http://internal.example/', to: 'https://example.com/' },
    });
    t.ok(route('noretry.test'), 'a route without proxy annotations');
    t.notOk(route('noretry.test')?.upstream, 'has no upstream entry: upstreamDefaults apply');
  });
});

t.test('connection-proxy-header: close opens an upstream connection per request', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-connection-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  /** A backend that counts its connections and records the Connection header of each request. */
  const counting = async () => {
    const state = { connections: 0, headers: [] as string[] };
    const server = createServer((req, res) => {
      state.headers.push(req.headers.connection ?? '');
      res.end('ok');
    });
    server.on('connection', () => state.connections++);
    const port = await listen(server);
    t.teardown(() => {
      server.closeAllConnections();
      server.close();
    });
    return { port, state };
  };
  const kept = await counting();
  const closed = await counting();
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('kept', [kept.port]),
      serviceYaml('closed', [closed.port]),
      ingressYaml({ name: 'kept', host: 'kept.test', service: 'kept' }),
      ingressYaml({
        name: 'closed',
        host: 'closed.test',
        service: 'closed',
        annotations: { 'connection-proxy-header': 'close' },
      }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  for (let i = 0; i < 3; i++) {
    t.equal((await send(port, 'kept.test')).status, 200);
    t.equal((await send(port, 'closed.test')).status, 200);
  }
  t.equal(kept.state.connections, 1, 'by default the upstream connection is reused');
  t.strictSame(kept.state.headers, ['keep-alive', 'keep-alive', 'keep-alive']);
  t.equal(closed.state.connections, 3, 'close: one upstream connection per request');
  t.strictSame(closed.state.headers, ['close', 'close', 'close'], 'and Connection: close upstream');
});

t.test('limit-rate: a response body is paced after limit-rate-after', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-limit-rate-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const body = Buffer.alloc(48 * 1024, 'x');
  const backend = createServer((_req, res) => res.end(body));
  const port = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('big', [port]),
      ingressYaml({
        name: 'paced',
        host: 'paced.test',
        service: 'big',
        annotations: { 'limit-rate': '16', 'limit-rate-after': '16', 'proxy-buffering': 'on' },
      }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const started = performance.now();
  const reply = await send(controller.http.port, 'paced.test');
  const elapsed = performance.now() - started;
  t.equal(reply.status, 200);
  t.equal(reply.body, body.toString(), 'the whole body, intact');
  // 16 KB free, then 16 KB/s with one second's worth at once (NGINX's limit_rate): 48 KB take at
  // least a second (a lower bound: the proxy cannot be faster than its pace, whatever the machine)
  t.ok(elapsed >= 950, `48 KB at 16 KB/s after 16 KB: ${elapsed.toFixed(0)} ms`);
});
