// Header snippets read as data, through the real proxy, where ingress-nginx accepts snippets
// (allow-snippet-annotations "true", annotations-risk-level Critical): each accepted directive's
// effect on real responses and on what the upstream sees, a server-snippet beside a location's, the
// oldest server-snippet of a host winning, and a snippet with one unknown directive dropping its
// Ingress.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { send } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { withTestThreads } from '../support/threads.ts';

/** A backend that echoes the request headers and sends headers a snippet may change. */
function backend() {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const status = /^\/status\/(\d{3})$/.exec(req.url ?? '');
      res.writeHead(status === null ? 200 : Number(status[1]), {
        'content-type': 'application/json',
        'x-frame-options': 'SAMEORIGIN',
        'x-powered-by': 'upstream',
        'x-debug-one': '1',
        'x-debug-two': '2',
        'x-secret': 'hidden-by-snippet',
        'x-added': 'upstream',
      });
      res.end(JSON.stringify(req.headers));
    });
  });
}

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(data))}
`;

const site = (name: string, snippet: string, extra: Partial<Parameters<typeof ingressYaml>[0]> = {}) =>
  ingressYaml({
    name,
    host: `${name}.test`,
    service: 'web',
    annotations: { 'configuration-snippet': snippet },
    ...extra,
  });

t.test('header snippets through the proxy', async (t) => {
  const web = backend();
  const webPort = await listen(web);
  t.teardown(() => web.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-snippets-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [webPort]),
      site(
        'set',
        'more_set_headers "X-Frame-Options: DENY" "X-Snippet: yes";\nmore_clear_headers X-Powered-By "X-Debug-*";',
      ),
      site('add', 'add_header X-Added on-success;\nadd_header X-Always everywhere always;'),
      site('hide', 'proxy_hide_header X-Secret;'),
      site(
        'request',
        [
          'proxy_set_header X-Team edge;',
          'proxy_set_header X-Drop "";',
          "more_set_input_headers 'X-Input: in';",
          'more_clear_input_headers X-Gone;',
          'proxy_set_header Upgrade $http_upgrade;',
        ].join('\n'),
      ),
      site('redirect', 'return 301 https://elsewhere.test$request_uri;'),
      site('uri', 'return 302 https://$host$uri;'),
      site('text', 'return 200 "hello from a snippet";\nadd_header X-On-Success yes;'),
      site('forbidden', 'return 403;\nadd_header X-On-Success yes;\nmore_set_headers "X-Every: yes";'),
      ingressYaml({
        name: 'server-a',
        host: 'server.test',
        path: '/a',
        service: 'web',
        annotations: {
          'server-snippet': 'add_header X-Server srv always;\nmore_set_headers "X-Server-More: 1";',
        },
      }),
      ingressYaml({
        name: 'server-b',
        host: 'server.test',
        path: '/b',
        service: 'web',
        created: '2026-01-02T00:00:00Z',
        annotations: {
          'server-snippet': 'more_set_headers "X-Loser: 1";',
          'configuration-snippet': 'add_header X-Location loc always;',
        },
      }),
      site('refused', 'more_set_headers "X-Fine: 1";\nlua_need_request_body on;'),
      site('blocked', 'if ($http_x_evil) { return 200; }'),
    ].join(''),
  );
  await writeFile(
    join(dir, 'config.yaml'),
    configMap({
      'allow-snippet-annotations': 'true',
      'annotations-risk-level': 'Critical',
      'default-type': '"text/plain; charset=utf-8"',
    }),
  );
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const seen = (body: string) => JSON.parse(body) as IncomingHttpHeaders;

  await t.test('more_set_headers and more_clear_headers: every status, replacing', async (t) => {
    for (const path of ['/x', '/status/404', '/status/500']) {
      const reply = await send(port, 'set.test', path);
      t.equal(reply.headers['x-frame-options'], 'DENY', `${path}: replaces the upstream's`);
      t.equal(reply.headers['x-snippet'], 'yes', path);
      t.equal(reply.headers['x-powered-by'], undefined, `${path}: cleared`);
      t.equal(reply.headers['x-debug-one'], undefined, `${path}: cleared by the wildcard`);
      t.equal(reply.headers['x-debug-two'], undefined, `${path}: cleared by the wildcard`);
      t.equal(reply.headers['x-secret'], 'hidden-by-snippet', `${path}: others pass`);
    }
  });

  await t.test('add_header: appended on 200, not on 404; always on both', async (t) => {
    const ok = await send(port, 'add.test', '/x');
    t.equal(ok.status, 200);
    t.equal(ok.headers['x-added'], 'upstream, on-success', "appended to the upstream's, not replacing it");
    t.equal(ok.headers['x-always'], 'everywhere');
    const notFound = await send(port, 'add.test', '/status/404');
    t.equal(notFound.status, 404);
    t.equal(notFound.headers['x-added'], 'upstream', 'not on a 404');
    t.equal(notFound.headers['x-always'], 'everywhere', '`always` on a 404');
    const created = await send(port, 'add.test', '/status/201');
    t.equal(created.headers['x-added'], 'upstream, on-success', 'on a 201');
  });

  await t.test('proxy_hide_header', async (t) => {
    const reply = await send(port, 'hide.test', '/x');
    t.equal(reply.status, 200);
    t.equal(reply.headers['x-secret'], undefined);
    t.equal(reply.headers['x-powered-by'], 'upstream');
  });

  await t.test('request headers: set, removed, cleared as the upstream sees them', async (t) => {
    const reply = await send(port, 'request.test', '/x', {
      headers: { 'X-Team': 'client', 'X-Drop': 'a', 'X-Gone': 'b', 'X-Kept': 'c', 'X-Input': 'client' },
    });
    t.equal(reply.status, 200);
    const headers = seen(reply.body);
    t.equal(headers['x-team'], 'edge', 'proxy_set_header replaces the client value');
    t.equal(headers['x-drop'], undefined, 'proxy_set_header with an empty value removes');
    t.equal(headers['x-input'], 'in', 'more_set_input_headers');
    t.equal(headers['x-gone'], undefined, 'more_clear_input_headers');
    t.equal(headers['x-kept'], 'c', 'other client headers pass');
  });

  await t.test('return with $uri: the decoded path never splits the head (NGINX would)', async (t) => {
    const injected = await send(port, 'uri.test', '/a%0d%0aSet-Cookie:%20x=1');
    t.equal(injected.status, 302);
    t.equal(injected.headers.location, 'https://uri.test/a%0D%0ASet-Cookie:%20x=1', 'CR LF percent-encoded');
    t.equal(injected.headers['set-cookie'], undefined, 'no header injected');
    const accented = await send(port, 'uri.test', '/caf%C3%A9%ff');
    t.equal(
      accented.headers.location,
      'https://uri.test/caf%C3%A9%EF%BF%BD',
      'UTF-8 as %XX, a bad byte as U+FFFD',
    );
    // an upgrade's answer is written by hand: the same Location, one header block
    const socket = connect(port, '127.0.0.1');
    socket.end(
      'GET /a%0d%0aSet-Cookie:%20x=1 HTTP/1.1\r\nHost: uri.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    );
    let head = '';
    for await (const chunk of socket) head += String(chunk);
    t.match(head, /^HTTP\/1\.1 302 /);
    t.match(head, 'Location: https://uri.test/a%0D%0ASet-Cookie:%20x=1\r\n');
    t.notMatch(head, /\r\nSet-Cookie/i, 'no header injected on the upgrade path');
  });

  await t.test('return: a redirect with $request_uri, a text, an error page', async (t) => {
    const moved = await send(port, 'redirect.test', '/a/b?c=1');
    t.equal(moved.status, 301);
    t.equal(moved.headers.location, 'https://elsewhere.test/a/b?c=1');
    const text = await send(port, 'text.test', '/anything');
    t.equal(text.status, 200);
    t.equal(text.body, 'hello from a snippet');
    t.equal(
      text.headers['content-type'],
      'text/plain; charset=utf-8',
      "NGINX's default_type: the default-type key",
    );
    t.equal(text.headers['x-on-success'], 'yes', 'add_header on the 200 of a return');
    const forbidden = await send(port, 'forbidden.test', '/x');
    t.equal(forbidden.status, 403);
    t.match(forbidden.body, /403 Forbidden/);
    t.equal(forbidden.headers['x-on-success'], undefined, 'add_header not on the 403');
    t.equal(forbidden.headers['x-every'], 'yes', 'more_set_headers on the 403');
  });

  await t.test('an upgrade request answered by a snippet gets the headers a request gets', async (t) => {
    /** The answer to a WebSocket handshake on `host`: status line and header lines, lower-cased names. */
    const upgrade = async (host: string, path: string) => {
      const socket = connect(port, '127.0.0.1');
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      let text = '';
      for await (const chunk of socket) text += String(chunk);
      const lines = text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n');
      const headers: Record<string, string[]> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).toLowerCase();
        headers[name] = [...(headers[name] ?? []), line.slice(colon + 1).trim()];
      }
      return { status: Number(lines[0]?.split(' ')[1]), headers };
    };
    for (const [host, path] of [
      ['text.test', '/ws'],
      ['forbidden.test', '/ws'],
      ['redirect.test', '/ws'],
      ['server.test', '/b'],
    ] as const) {
      const request = await send(port, host, path);
      const upgraded = await upgrade(host, path);
      t.equal(upgraded.status, request.status, `${host}: the same status`);
      for (const name of ['x-on-success', 'x-every', 'x-server-more', 'x-server', 'x-location']) {
        const expected = request.headers[name];
        t.strictSame(
          upgraded.headers[name],
          expected === undefined ? undefined : [expected].flat(),
          `${host}: ${name} as on a request's answer`,
        );
      }
    }
  });

  await t.test("server-snippet: the oldest Ingress's, merged or replaced as NGINX does", async (t) => {
    const a = await send(port, 'server.test', '/a');
    t.equal(a.status, 200);
    t.equal(a.headers['x-server'], 'srv', "the server's add_header in a location without its own");
    t.equal(a.headers['x-server-more'], '1');
    t.equal(a.headers['x-loser'], undefined, "the newer Ingress's server-snippet is ignored");
    const b = await send(port, 'server.test', '/b');
    t.equal(b.status, 200);
    t.equal(b.headers['x-location'], 'loc');
    t.equal(b.headers['x-server'], undefined, "a location's add_header replaces the server's whole");
    t.equal(b.headers['x-server-more'], '1', "headers-more's directives add up");
  });

  await t.test('/debug/model shows what each snippet does, never a value', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const host = (name: string) => model.hosts.find((h) => h.host === name);
    t.strictSame(host('set.test')?.routes[0]?.snippet, {
      responseHeaders: ['set X-Frame-Options', 'set X-Snippet', 'clear x-powered-by', 'clear x-debug-*'],
    });
    t.strictSame(host('add.test')?.routes[0]?.snippet, { addHeaders: ['X-Added', 'X-Always always'] });
    t.strictSame(host('request.test')?.routes[0]?.snippet, {
      requestHeaders: ['set X-Team', 'clear X-Drop', 'set X-Input', 'clear x-gone'],
    });
    t.strictSame(host('redirect.test')?.routes[0]?.snippet, { return: 301 });
    t.strictSame(host('server.test')?.serverSnippet, {
      responseHeaders: ['set X-Server-More'],
      addHeaders: ['X-Server always'],
    });
    t.notMatch(reply.body, /hello from a snippet|elsewhere\.test|everywhere|on-success/, 'no value');
  });

  await t.test('one statement outside the set drops the Ingress', async (t) => {
    for (const host of ['refused.test', 'blocked.test']) {
      const reply = await send(port, host, '/x');
      t.equal(reply.status, 404, `${host}: not served`);
      t.equal(reply.headers['x-fine'], undefined);
    }
  });
});

t.test('without annotations-risk-level Critical a snippet still drops its Ingress', async (t) => {
  const web = backend();
  const webPort = await listen(web);
  t.teardown(() => web.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-snippets-off-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [INGRESS_CLASS, serviceYaml('web', [webPort]), site('set', 'more_set_headers "X-Snippet: yes";')].join(
      '',
    ),
  );
  await writeFile(join(dir, 'config.yaml'), configMap({ 'allow-snippet-annotations': 'true' }));
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  const reply = await send(controller.http.port, 'set.test', '/x');
  t.equal(reply.status, 404);
});
