// custom-http-errors and default-backend through the real proxy: an upstream
// status in the route's list is answered by the error backend (the route's default-backend Service,
// else --default-backend-service) with the X-Code family of headers and URI `/`, and its response
// (status, type, body) goes to the client unchanged, as ingress-nginx documents; statuses not in the
// list, and error backends without endpoints, pass the upstream response through; a route whose
// Service has no endpoints is served by its default-backend Service (X-Code 503); the proxy's own 502
// is intercepted too (and the only one with disable-proxy-intercept-errors); the ConfigMap list
// applies where the route sets none, and a swap changes it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { listen, send as sendRequest, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

/** The application: `/status/<n>` answers n with a text body, anything else 200. */
function app(): Server {
  return createServer((req, res) => {
    req.resume();
    const m = /^\/status\/(\d{3})/.exec(req.url ?? '');
    const status = m === null ? 200 : Number(m[1]);
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(`app ${status}`);
  });
}

interface ErrorRequest {
  backend: string;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** An error backend: answers `status(X-Code)` with JSON saying what it was sent. */
function errorBackend(name: string, status: (code: number) => number): Server {
  return createServer((req, res) => {
    req.resume();
    const seen: ErrorRequest = {
      backend: name,
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
    };
    res.writeHead(status(Number(req.headers['x-code'] ?? 200)), { 'content-type': 'application/json' });
    res.end(JSON.stringify(seen));
  });
}

const send = (port: number, host: string, path: string, headers: Record<string, string> = {}) =>
  sendRequest(port, host, path, { headers });

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: e2e }
data: ${JSON.stringify(withTestThreads(data))}
`;

t.test('custom-http-errors and default-backend through the proxy', async (t) => {
  const servers = [
    app(),
    errorBackend('errors', (code) => code),
    // like the stock default backend image: 404 whatever happened
    errorBackend('global', () => 404),
  ];
  const [appPort, errorsPort, globalPort] = await Promise.all(servers.map((s) => listen(s)));
  // a port nothing listens on: the proxy's own 502
  const closed = createServer();
  const deadPort = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
  t.teardown(() => {
    for (const s of servers) s.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-custom-errors-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ing = (name: string, service: string, annotations: Record<string, string> = {}) =>
    ingressYaml({ name, host: `${name}.test`, service, annotations });
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('app', [appPort as number]),
      serviceYaml('errors', [errorsPort as number]),
      serviceYaml('global-errors', [globalPort as number]),
      serviceYaml('empty', []),
      serviceYaml('dead', [deadPort]),
      ing('annotated', 'app', { 'custom-http-errors': '404, 503', 'default-backend': 'errors' }),
      ing('global', 'app'),
      ing('emptyfb', 'empty', { 'default-backend': 'errors' }),
      ing('emptyglobal', 'empty'),
      ing('nofb', 'app', { 'custom-http-errors': '404', 'default-backend': 'empty' }),
      ing('dead', 'dead', { 'custom-http-errors': '502', 'default-backend': 'errors' }),
      ing('passthrough', 'app', {
        'custom-http-errors': '404',
        'default-backend': 'errors',
        'disable-proxy-intercept-errors': 'true',
      }),
      ing('passdead', 'dead', {
        'custom-http-errors': '502',
        'default-backend': 'errors',
        'disable-proxy-intercept-errors': 'true',
      }),
    ].join(''),
  );
  await writeFile(join(dir, 'config.yaml'), configMap({ 'custom-http-errors': '502,503' }));
  const controller = await start(
    testConfig(dir, '--configmap', 'e2e/ingress-ts', '--default-backend-service', 'e2e/global-errors'),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  await t.test(
    'an intercepted upstream status: the error backend answers, with the X-Code headers',
    async (t) => {
      const reply = await send(port, 'annotated.test', '/status/404?q=1', {
        accept: 'application/json',
        'x-request-id': 'req-1',
      });
      t.equal(reply.status, 404, "the error backend's status");
      t.equal(reply.headers['content-type'], 'application/json', "the error backend's content type");
      const seen = JSON.parse(reply.body) as ErrorRequest;
      t.equal(seen.backend, 'errors', "the route's default-backend Service");
      t.equal(seen.url, '/', 'URI rewritten to /');
      t.equal(seen.method, 'GET');
      t.equal(seen.headers['x-code'], '404');
      t.equal(seen.headers['x-format'], 'application/json', "X-Format: the client's Accept");
      t.equal(seen.headers['x-original-uri'], '/status/404?q=1');
      t.equal(seen.headers['x-namespace'], 'e2e');
      t.equal(seen.headers['x-ingress-name'], 'annotated');
      t.equal(seen.headers['x-service-name'], 'app');
      t.equal(seen.headers['x-service-port'], '80');
      t.equal(seen.headers['x-request-id'], 'req-1');
      t.equal(seen.headers.host, 'annotated.test');
    },
  );

  await t.test('statuses not in the list pass through', async (t) => {
    const reply = await send(port, 'annotated.test', '/status/500');
    t.equal(reply.status, 500);
    t.equal(reply.body, 'app 500');
    t.equal((await send(port, 'annotated.test', '/')).body, 'app 200');
    const notListed = await send(port, 'global.test', '/status/404');
    t.equal(notListed.body, 'app 404', 'the ConfigMap list (502, 503) has no 404');
  });

  await t.test(
    'the ConfigMap list goes to --default-backend-service, whose answer is sent as is',
    async (t) => {
      const reply = await send(port, 'global.test', '/status/503');
      const seen = JSON.parse(reply.body) as ErrorRequest;
      t.equal(seen.backend, 'global');
      t.equal(seen.headers['x-code'], '503');
      t.equal(seen.headers['x-ingress-name'], 'global');
      t.match(seen.headers['x-request-id'], /^[0-9a-f]{32}$/, 'a generated X-Request-ID');
      t.equal(reply.status, 404, 'NGINX does not change the error backend response (its 404)');
    },
  );

  await t.test('a route without endpoints: its default-backend Service, X-Code 503', async (t) => {
    const reply = await send(port, 'emptyfb.test', '/some/where');
    t.equal(reply.status, 503);
    const seen = JSON.parse(reply.body) as ErrorRequest;
    t.equal(seen.backend, 'errors');
    t.equal(seen.headers['x-code'], '503');
    t.equal(seen.headers['x-original-uri'], '/some/where');
    t.equal(seen.headers['x-service-name'], 'empty');
    const global = await send(port, 'emptyglobal.test', '/');
    t.equal(
      (JSON.parse(global.body) as ErrorRequest).backend,
      'global',
      "the proxy's 503 is in the ConfigMap list",
    );
  });

  await t.test("the proxy's own 502 is intercepted", async (t) => {
    const reply = await send(port, 'dead.test', '/');
    t.equal(reply.status, 502);
    const seen = JSON.parse(reply.body) as ErrorRequest;
    t.equal(seen.backend, 'errors');
    t.equal(seen.headers['x-code'], '502');
  });

  await t.test("disable-proxy-intercept-errors: the upstream's own errors pass through", async (t) => {
    const reply = await send(port, 'passthrough.test', '/status/404');
    t.equal(reply.status, 404);
    t.equal(reply.body, 'app 404', "the upstream's response, not the error backend's");
    const dead = await send(port, 'passdead.test', '/');
    t.equal(dead.status, 502);
    t.equal((JSON.parse(dead.body) as ErrorRequest).headers['x-code'], '502', "the proxy's own 502 still is");
  });

  await t.test('an error backend without endpoints: the normal response', async (t) => {
    const reply = await send(port, 'nofb.test', '/status/404');
    t.equal(reply.status, 404);
    t.equal(reply.body, 'app 404');
  });

  await t.test('a swap changes the ConfigMap list', async (t) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configMap({ 'custom-http-errors': '404' }));
    await swapped;
    t.equal((await send(port, 'global.test', '/status/503')).body, 'app 503', '503 no longer intercepted');
    const reply = await send(port, 'global.test', '/status/404');
    t.equal((JSON.parse(reply.body) as ErrorRequest).headers['x-code'], '404', '404 now is');
  });
});
