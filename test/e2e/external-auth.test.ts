// External authentication through the proxy: auth-url allows (2xx) with auth-response-headers copied
// upstream (the client's own copies dropped) and the auth Set-Cookie passed on; denies with 401 (the
// service's WWW-Authenticate) and 403; auth-signin turns a 401 into a 302 with the exact rd=;
// anything else, or the service down, is 500. The auth service sees the headers ingress-nginx sends,
// the URL with NGINX variables expanded, auth-method, auth-proxy-set-headers, and never a body.
// The ConfigMap's global-auth-url applies to Ingresses without auth-url, not with
// enable-global-auth: "false", and not on no-auth-locations.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { listen, type Reply, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

function fetch(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, method, headers: { host, ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A server recording what it saw; `answer` decides the response. */
async function recorder(
  answer: (seen: Seen, res: import('node:http').ServerResponse) => void,
): Promise<{ port: number; seen: Seen[]; close: () => void }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      answer(entry, res);
    });
  });
  const port = await listen(server);
  return { port, seen, close: () => server.close() };
}

t.test('external authentication through the proxy', async (t) => {
  const backend = await recorder((_seen, res) => {
    res.setHeader('set-cookie', 'app=1');
    res.end('app');
  });
  t.teardown(backend.close);
  const auth = await recorder((seen, res) => {
    const path = seen.url.split('?')[0];
    if (path === '/ok') {
      res.writeHead(200, { 'x-auth-user': 'alice', 'x-other': 'no', 'set-cookie': 'session=abc' });
      res.end('fine');
    } else if (path === '/deny401') {
      res.writeHead(401, { 'www-authenticate': 'Bearer realm="sso"' });
      res.end();
    } else if (path === '/deny403') {
      res.writeHead(403);
      res.end();
    } else if (path === '/token') {
      res.writeHead(seen.headers['x-token'] === 'good' ? 200 : 403, {
        'x-auth-user': String(seen.headers['x-token']),
      });
      res.end();
    } else if (path === '/big') {
      // a 6 KiB head: over the default proxy-buffer-size (4k), under 16k
      res.writeHead(200, { 'x-auth-user': 'bob', 'x-auth-padding': 'p'.repeat(6 * 1024) });
      res.end();
    } else if (path === '/global') {
      res.writeHead(seen.headers['x-let-in'] === 'yes' ? 204 : 401);
      res.end();
    } else {
      res.writeHead(502);
      res.end();
    }
  });
  t.teardown(auth.close);
  // a port nothing listens on
  const gone = await recorder(() => {});
  gone.close();

  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-external-auth-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const base = `http://127.0.0.1:${auth.port}`;
  const site = (name: string, annotations: Record<string, string>, path = '/') =>
    ingressYaml({ name, host: `${name}.test`, path, service: 'web', annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backend.port]),
      `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: e2e }
data:
  ${TEST_THREADS_ENTRY.replace(', ', '\n  ')}global-auth-url: "${base}/global"
  global-auth-response-headers: X-Auth-User
---
apiVersion: v1
kind: ConfigMap
metadata: { name: auth-headers, namespace: e2e }
data: { X-Extra: "yes" }
`,
      site('allow', {
        'auth-url': `${base}/ok?u=$escaped_request_uri&h=$host`,
        'auth-response-headers': 'X-Auth-User',
        'auth-proxy-set-headers': 'auth-headers',
      }),
      site('allowcors', {
        'auth-url': `${base}/ok`,
        'auth-response-headers': 'X-Auth-User',
        'enable-cors': 'true',
      }),
      site('method', { 'auth-url': `${base}/ok`, 'auth-method': 'POST', 'auth-request-redirect': '/back' }),
      site('deny401', { 'auth-url': `${base}/deny401` }),
      site('deny403', { 'auth-url': `${base}/deny403` }),
      site('signin', { 'auth-url': `${base}/deny401`, 'auth-signin': 'https://login.example/start' }),
      site('signin2', {
        'auth-url': `${base}/deny401`,
        'auth-signin': 'https://login.example/start?x=1',
        'auth-signin-redirect-param': 'return_to',
      }),
      site('broken', { 'auth-url': `${base}/error` }),
      site('down', { 'auth-url': `http://127.0.0.1:${gone.port}/ok` }),
      site('notaurl', { 'auth-url': 'ftp://files.example/' }),
      site('missingcm', { 'auth-url': `${base}/ok`, 'auth-proxy-set-headers': 'nope' }),
      site('nonascii', { 'auth-url': `${base}/ok`, 'auth-request-redirect': '/zurück' }),
      site('cached', {
        'auth-url': `${base}/token`,
        'auth-cache-key': '$http_x_token',
        'auth-cache-duration': '200 1h',
        'auth-response-headers': 'X-Auth-User',
      }),
      site('bighead', { 'auth-url': `${base}/big` }),
      site('bigbuffer', { 'auth-url': `${base}/big`, 'proxy-buffer-size': '16k' }),
      site('global', {}),
      ingressYaml({ name: 'acme', host: 'global.test', path: '/.well-known/acme-challenge', service: 'web' }),
      site('optout', { 'enable-global-auth': 'false' }),
    ].join(''),
  );
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  await t.test('2xx allows: the headers the auth service saw, response headers copied', async (t) => {
    const reply = await fetch(port, 'allow.test', '/p?q=1', {
      cookie: 'c=1',
      'x-request-id': 'given-id',
      'x-forwarded-proto': 'https',
      'x-auth-user': 'mallory',
      'x-original-url': 'http://evil/',
    });
    t.equal(reply.status, 200);
    t.equal(reply.body, 'app');
    t.same(reply.headers['set-cookie'], ['app=1', 'session=abc'], "the auth Set-Cookie joins the upstream's");
    const seen = auth.seen.at(-1);
    t.equal(seen?.method, 'GET', 'the request method by default');
    t.equal(seen?.url, '/ok?u=%2Fp%3Fq%3D1&h=allow.test', 'NGINX variables expanded in auth-url');
    t.equal(seen?.body, '');
    t.match(seen?.headers, {
      host: `127.0.0.1:${auth.port}`,
      'x-original-uri': '/p?q=1',
      'x-scheme': 'http',
      'x-original-url': 'http://allow.test/p?q=1',
      'x-original-method': 'GET',
      'x-sent-from': 'nginx-ingress-controller',
      'x-real-ip': '127.0.0.1',
      'x-forwarded-for': '127.0.0.1',
      'x-auth-request-redirect': '/p?q=1',
      'x-request-id': 'given-id',
      cookie: 'c=1',
      'x-extra': 'yes',
    });
    t.equal(seen?.headers['x-forwarded-proto'], undefined, 'X-Forwarded-Proto cleared');
    t.equal(seen?.headers['content-length'], undefined, 'no body, no Content-Length');
    const up = backend.seen.at(-1);
    t.equal(up?.headers['x-auth-user'], 'alice', 'auth-response-headers replace the client copy');
    t.equal(up?.headers['x-other'], undefined, 'other auth headers are not copied');
  });

  await t.test('a route with its own response headers (CORS) keeps what the auth service said', async (t) => {
    const reply = await fetch(port, 'allowcors.test', '/', {
      'x-auth-user': 'mallory',
      origin: 'https://a.example',
    });
    t.equal(reply.status, 200);
    t.equal(reply.headers['access-control-allow-origin'], '*', 'the CORS headers on the proxied response');
    t.same(reply.headers['set-cookie'], ['app=1', 'session=abc'], "the auth Set-Cookie joins the upstream's");
    const up = backend.seen.at(-1);
    t.equal(up?.headers['x-auth-user'], 'alice', 'auth-response-headers replace the client copy');
  });

  await t.test('the auth request never carries the body; auth-method, auth-request-redirect', async (t) => {
    const reply = await fetch(
      port,
      'method.test',
      '/upload',
      { 'content-type': 'text/plain' },
      'PUT',
      'payload',
    );
    t.equal(reply.status, 200);
    const seen = auth.seen.at(-1);
    t.equal(seen?.method, 'POST');
    t.equal(seen?.body, '');
    t.equal(seen?.headers['x-original-method'], 'PUT');
    t.equal(seen?.headers['x-auth-request-redirect'], '/back');
    t.equal(backend.seen.at(-1)?.body, 'payload', 'the upstream gets the body');
  });

  await t.test('denials', async (t) => {
    const before = backend.seen.length;
    const unauthorized = await fetch(port, 'deny401.test', '/');
    t.equal(unauthorized.status, 401);
    t.equal(unauthorized.headers['www-authenticate'], 'Bearer realm="sso"', "the service's challenge");
    t.match(unauthorized.body, '401 Authorization Required');
    const forbidden = await fetch(port, 'deny403.test', '/');
    t.equal(forbidden.status, 403);
    t.match(forbidden.body, '403 Forbidden');
    const broken = await fetch(port, 'broken.test', '/');
    t.equal(broken.status, 500, 'another status from the service is 500');
    const down = await fetch(port, 'down.test', '/');
    t.equal(down.status, 500, 'the service unreachable is 500');
    t.equal((await fetch(port, 'notaurl.test', '/')).status, 503, 'an auth-url that is not http(s): 503');
    t.equal((await fetch(port, 'missingcm.test', '/')).status, 503, 'a missing auth-proxy-set-headers: 503');
    for (const path of ['/', '/x', '/y?z=1']) {
      const reply = await fetch(port, 'nonascii.test', path);
      t.equal(
        reply.status,
        503,
        `a non-ASCII auth-request-redirect is refused when built (${path}), never a 500`,
      );
    }
    t.equal(backend.seen.length, before, 'nothing reached the backend');
  });

  await t.test(
    "the auth service's response head is bounded by the location's proxy-buffer-size",
    async (t) => {
      const before = backend.seen.length;
      t.equal((await fetch(port, 'bighead.test', '/')).status, 500, 'over the default 4k: the check fails');
      t.equal(backend.seen.length, before, 'nothing reached the backend');
      t.equal((await fetch(port, 'bigbuffer.test', '/')).status, 200, 'proxy-buffer-size: 16k takes it');
    },
  );

  await t.test('auth-signin: a 401 becomes a redirect with rd=', async (t) => {
    const reply = await fetch(port, 'signin.test', '/p?q=1');
    t.equal(reply.status, 302);
    t.equal(reply.headers.location, 'https://login.example/start?rd=http://signin.test%2Fp%3Fq%3D1');
    const custom = await fetch(port, 'signin2.test', '/a%20b');
    t.equal(custom.status, 302);
    t.equal(
      custom.headers.location,
      'https://login.example/start?x=1&return_to=http://signin2.test%2Fa%2520b',
    );
  });

  await t.test('auth-cache-key: responses cached per key for the listed statuses', async (t) => {
    const calls = () => auth.seen.filter((s) => s.url === '/token').length;
    t.equal((await fetch(port, 'cached.test', '/', { 'x-token': 'good' })).status, 200);
    t.equal(calls(), 1);
    t.equal((await fetch(port, 'cached.test', '/again', { 'x-token': 'good' })).status, 200);
    t.equal(calls(), 1, 'the same key: served from the cache');
    t.equal(backend.seen.at(-1)?.headers['x-auth-user'], 'good', 'cached response headers still copied');
    t.equal((await fetch(port, 'cached.test', '/', { 'x-token': 'bad' })).status, 403);
    t.equal((await fetch(port, 'cached.test', '/', { 'x-token': 'bad' })).status, 403);
    t.equal(calls(), 3, 'another key asks again; 403 is not in auth-cache-duration');
  });

  await t.test('global-auth-url, enable-global-auth and no-auth-locations', async (t) => {
    t.equal((await fetch(port, 'global.test', '/')).status, 401, 'global auth applies');
    const ok = await fetch(port, 'global.test', '/', { 'x-let-in': 'yes', 'x-auth-user': 'mallory' });
    t.equal(ok.status, 200);
    t.equal(
      backend.seen.at(-1)?.headers['x-auth-user'],
      undefined,
      'global-auth-response-headers: the client copy is dropped even when the service sends none',
    );
    t.equal(auth.seen.at(-1)?.url, '/global');
    t.equal((await fetch(port, 'optout.test', '/')).status, 200, 'enable-global-auth: "false"');
    t.equal(
      (await fetch(port, 'global.test', '/.well-known/acme-challenge/token')).status,
      200,
      'no-auth-locations (default /.well-known/acme-challenge)',
    );
    t.equal((await fetch(port, 'allow.test', '/')).status, 200, "an Ingress's own auth-url wins");
    t.equal(auth.seen.at(-1)?.url.startsWith('/ok'), true);
  });
});
