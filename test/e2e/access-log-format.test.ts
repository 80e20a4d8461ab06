// log-format-upstream through the real proxy (run it with INGRESS_TS_TEST_THREADS=2 too): the default
// is ingress-nginx's text format, each field what NGINX writes for the same request; a custom text
// format and a JSON one (escape=json) after a swap, hostile header bytes escaped in each; a request
// refused before routing keeps its line in the format; a format with an unknown variable keeps the
// default and is reported on the ConfigMap.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { parseNginxLine, timeLocalMs } from '../support/nginx-log-line.ts';
import { raw } from '../support/raw-http.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

t.setTimeout(60_000);

const configMap = (data: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: config, namespace: e2e }\ndata: ${JSON.stringify(
    withTestThreads(data),
  )}\n`;

const BODY = 'hello from the backend';

t.test('log-format-upstream through the proxy', async (t) => {
  const requestIds: string[] = [];
  const backend = createServer((req, res) => {
    requestIds.push(String(req.headers['x-request-id']));
    req.resume();
    res.end(BODY);
  });
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    return new Promise<void>((resolve) => backend.close(() => resolve()));
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-log-format-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'config.yaml'), configMap({}));
  await writeFile(
    join(dir, 'site.yaml'),
    `${INGRESS_CLASS}${serviceYaml('web', [backendPort])}${ingressYaml({ name: 'site', host: 'site.test', path: '/app', service: 'web' })}`,
  );
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('latin1').split('\n')) if (line !== '') lines.push(line);
      sink.emit('lines');
      done();
    },
  });
  /** The first line from `from` on that has `part`. */
  const lineWith = async (part: string, from = 0) => {
    for (;;) {
      const line = lines.slice(from).find((l) => l.includes(part));
      if (line !== undefined) return line;
      await once(sink, 'lines');
    }
  };
  const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), createLogger('silent'), {
    accessLogStdout: sink,
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const swapTo = async (data: Record<string, string>) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap(data));
    await swapped;
  };

  await t.test('the default: ingress-nginx text format, field by field', async (t) => {
    const request =
      'GET /app/page?q=1 HTTP/1.1\r\nHost: site.test\r\n' +
      `Authorization: Basic ${Buffer.from('alice:pw').toString('base64')}\r\n` +
      'User-Agent: ua "quoted" \\back\\ \xe9\r\nReferer: https://r.test/\r\nConnection: close\r\n\r\n';
    const before = Date.now();
    const reply = await raw(port, Buffer.from(request, 'latin1'), { end: false });
    t.equal(reply.status, 200);
    const head = reply.text.indexOf('\r\n\r\n') + 4;
    const line = await lineWith('/app/page');
    const f = parseNginxLine(line);
    t.equal(f.remote_addr, '127.0.0.1');
    t.equal(f.remote_user, 'alice', 'the user of Basic credentials');
    const time = timeLocalMs(f.time_local);
    t.ok(time >= before - (before % 1000) && time <= Date.now(), `time_local ${f.time_local}`);
    t.equal(f.request, 'GET /app/page?q=1 HTTP/1.1');
    t.equal(f.status, 200);
    t.equal(f.body_bytes_sent, reply.text.length - head, 'body_bytes_sent: the body only');
    t.equal(f.body_bytes_sent, BODY.length);
    t.equal(f.http_referer, 'https://r.test/');
    t.equal(f.http_user_agent, 'ua "quoted" \\back\\ \xe9');
    t.match(line, '"ua \\x22quoted\\x22 \\x5Cback\\x5C \\xE9"', 'escaped as NGINX escapes: \\xHH');
    t.equal(f.request_length, Buffer.byteLength(request, 'latin1'));
    t.match(String(f.request_time), /^\d+(\.\d+)?$/);
    t.equal(f.proxy_upstream_name, 'e2e-web-80');
    t.equal(f.proxy_alternative_upstream_name, '');
    t.equal(f.upstream_addr, `127.0.0.1:${backendPort}`);
    t.equal(f.upstream_response_length, String(BODY.length));
    t.match(f.upstream_response_time, /^\d+\.\d{3}$/);
    t.equal(f.upstream_status, '200');
    t.equal(f.req_id, requestIds.at(-1), 'the X-Request-ID the backend got');
  });

  await t.test('a custom text format after a swap; a refused request keeps its line in it', async (t) => {
    await swapTo({
      'log-format-upstream':
        '$remote_addr|$request_method|$uri|$args|$arg_page|$http_x_custom|$cookie_sid|$scheme|' +
        // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
        '$namespace|$ingress_name|$service_name|$service_port|$location_path|$host|$status|${request_length}',
    });
    const from = lines.length;
    const reply = await raw(
      port,
      'GET /app/a%20b?page=3&x=y HTTP/1.1\r\nHost: site.test\r\nX-Custom: one\r\nX-Custom: two\r\n' +
        'Cookie: a=1; sid=s-42\r\nConnection: close\r\n\r\n',
      { end: false },
    );
    t.equal(reply.status, 200);
    t.equal(
      await lineWith('|/app/a b|', from),
      '127.0.0.1|GET|/app/a b|page=3&x=y|3|one, two|s-42|http|e2e|site|web|80|/app|site.test|200|' +
        String(
          Buffer.byteLength(
            'GET /app/a%20b?page=3&x=y HTTP/1.1\r\nHost: site.test\r\nX-Custom: one\r\nX-Custom: two\r\n' +
              'Cookie: a=1; sid=s-42\r\nConnection: close\r\n\r\n',
          ),
        ),
    );
    // a request line Node's parser refuses: 400, logged in the same format, nothing routed
    const refused = await raw(port, 'GET /bad path HTTP/1.1\r\nHost: site.test\r\n\r\n');
    t.equal(refused.status, 400);
    const line = await lineWith('|400|', from);
    // no request line NGINX could read: $request_method not found, the line as it came in $uri
    t.match(line, /^127\.0\.0\.1\|-\|GET \/bad path HTTP\/1\.1\|-\|-\|-\|-\|http\|\|\|\|\|\|_\|400\|\d+$/);
  });

  await t.test('a JSON format with escape=json: hostile header bytes stay inside their string', async (t) => {
    await swapTo({
      'log-format-upstream':
        '{"ua":"$http_user_agent","uri":"$request_uri","user":"$remote_user","status":$status,"upstream":"$upstream_addr"}',
      'log-format-escape-json': 'true',
    });
    const from = lines.length;
    const reply = await raw(
      port,
      'GET /app/j?x="1" HTTP/1.1\r\nHost: site.test\r\nUser-Agent: a"b\\c\td\r\nConnection: close\r\n\r\n',
      { end: false },
    );
    t.equal(reply.status, 200);
    const line = await lineWith('/app/j', from);
    t.match(line, '"ua":"a\\"b\\\\c\\td"', 'escaped as NGINX escapes JSON');
    t.same(JSON.parse(line), {
      ua: 'a"b\\c\td',
      uri: '/app/j?x="1"',
      user: '',
      status: 200,
      upstream: `127.0.0.1:${backendPort}`,
    });
  });

  await t.test('an unknown variable: the default format stays, the ConfigMap is told', async (t) => {
    await swapTo({ 'log-format-upstream': '$remote_addr $upstream_cache_status' });
    const from = lines.length;
    t.equal((await get(port, 'site.test', '/app/after')).status, 200);
    const f = parseNginxLine(await lineWith('/app/after', from));
    t.equal(f.request, 'GET /app/after HTTP/1.1', 'the line is in the default format');
    const model = JSON.parse((await get(controller.healthz.port, 'localhost', '/debug/model')).body) as {
      diagnostics: Record<string, Array<{ code: string; message: string }>>;
    };
    t.match(model.diagnostics['ConfigMap e2e/config'], [
      {
        code: 'CONFIG_VALUE_INVALID',
        message: /log-format-upstream.*unknown variable "\$upstream_cache_status"/,
      },
    ]);
  });

  await t.test('the built-in default backend is upstream-default-backend, as in ingress-nginx', async (t) => {
    await swapTo({ 'enable-access-log-for-default-backend': 'true' });
    const from = lines.length;
    t.equal((await get(port, 'nowhere.test', '/no-host')).status, 404);
    const f = parseNginxLine(await lineWith('/no-host', from));
    t.equal(f.status, 404);
    t.equal(f.proxy_upstream_name, 'upstream-default-backend', 'an unknown host');
    t.equal(
      f.upstream_addr,
      '-',
      'nothing was contacted (ingress-nginx: its own 404 server, 127.0.0.1:8181)',
    );
    t.equal((await get(port, 'site.test', '/no-route')).status, 404);
    const path = parseNginxLine(await lineWith('/no-route', from));
    t.equal(path.proxy_upstream_name, 'upstream-default-backend', "a known host's path no route has");
  });
});
