// CORS through the real proxy: preflights from allowed origins answered 204 before
// redirects, ssl-redirect and the 503 check; the CORS headers on every status of the route for an
// allowed Origin (replacing the upstream's); `*` answering every request with Allow-Origin `*`;
// origin lists echoed, with single-label wildcard subdomains and ports; unmatched origins proxied
// with no CORS headers.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend, type Reply, seenBy, send } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';

const LIST = {
  'enable-cors': 'true',
  'cors-allow-origin': 'https://app.example, https://*.wild.example:8443, not an origin',
  'cors-allow-methods': 'GET, POST',
  'cors-allow-headers': 'X-Custom, Content-Type',
  'cors-expose-headers': 'X-Total',
  'cors-allow-credentials': 'false',
  'cors-max-age': '600',
};

const corsHeaders = (reply: Reply) =>
  Object.fromEntries(Object.entries(reply.headers).filter(([name]) => name.startsWith('access-control-')));

t.test('CORS through the proxy', async (t) => {
  const web = echoBackend('web');
  const webPort = await listen(web);
  t.teardown(() => web.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-cors-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [webPort]),
      serviceYaml('empty', []),
      ingressYaml({
        name: 'open',
        host: 'open.test',
        service: 'web',
        annotations: { 'enable-cors': 'true' },
      }),
      ingressYaml({ name: 'list', host: 'list.test', service: 'web', annotations: LIST }),
      ingressYaml({ name: 'empty', host: 'empty.test', service: 'empty', annotations: LIST }),
      ingressYaml({
        name: 'moved',
        host: 'moved.test',
        service: 'web',
        annotations: { ...LIST, 'permanent-redirect': 'https://elsewhere.example/' },
      }),
      ingressYaml({
        name: 'forced',
        host: 'forced.test',
        service: 'web',
        annotations: { ...LIST, 'force-ssl-redirect': 'true' },
      }),
      ingressYaml({ name: 'plain', host: 'plain.test', service: 'web' }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const allowed = { origin: 'https://app.example' };
  const listHeaders = {
    'access-control-allow-origin': 'https://app.example',
    'access-control-allow-methods': 'GET, POST',
    'access-control-allow-headers': 'X-Custom, Content-Type',
    'access-control-expose-headers': 'X-Total',
    'access-control-max-age': '600',
  };

  await t.test('allow-origin * (the default): every request, Allow-Origin *', async (t) => {
    const preflight = await send(port, 'open.test', '/x', { method: 'OPTIONS' });
    t.equal(preflight.status, 204, 'OPTIONS answered by the proxy, even without Origin');
    t.equal(preflight.headers['content-type'], 'text/plain charset=UTF-8');
    t.equal(preflight.headers['content-length'], '0');
    t.equal(preflight.body, '');
    t.same(corsHeaders(preflight), {
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, PUT, POST, DELETE, PATCH, OPTIONS',
      'access-control-allow-headers':
        'DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization',
      'access-control-max-age': '1728000',
    });
    const simple = await send(port, 'open.test', '/x', { headers: { origin: 'https://any.example' } });
    t.equal(simple.status, 200);
    t.equal(seenBy(simple).method, 'GET', 'a simple request reaches the backend');
    t.equal(simple.headers['access-control-allow-origin'], '*', "replaces the upstream's Allow-Origin");
    t.equal(simple.headers['access-control-allow-credentials'], 'true');
  });

  await t.test('an origin list: matching origins echoed, wildcards one label deep', async (t) => {
    const preflight = await send(port, 'list.test', '/x', { method: 'OPTIONS', headers: allowed });
    t.equal(preflight.status, 204);
    t.same(corsHeaders(preflight), listHeaders, 'no Allow-Credentials when cors-allow-credentials is false');
    const simple = await send(port, 'list.test', '/x', { method: 'POST', headers: allowed });
    t.equal(seenBy(simple).method, 'POST');
    t.same(corsHeaders(simple), listHeaders, "the upstream's Allow-Origin is replaced");
    const upper = await send(port, 'list.test', '/x', { headers: { origin: 'HTTPS://APP.EXAMPLE' } });
    t.equal(upper.headers['access-control-allow-origin'], 'HTTPS://APP.EXAMPLE', 'case-insensitive');
    const wild = await send(port, 'list.test', '/x', {
      method: 'OPTIONS',
      headers: { origin: 'https://api.wild.example:8443' },
    });
    t.equal(wild.status, 204, 'one label under the wildcard');
    t.equal(wild.headers['access-control-allow-origin'], 'https://api.wild.example:8443');
    for (const origin of [
      'https://a.b.wild.example:8443',
      'https://wild.example:8443',
      'https://api.wild.example',
      'http://app.example',
      'https://app.example:444',
      'https://app.example.evil.example',
      'https://evil.example/https://app.example',
      'null',
    ]) {
      const preflight = await send(port, 'list.test', '/x', { method: 'OPTIONS', headers: { origin } });
      t.equal(preflight.status, 200, `${origin}: the OPTIONS request is proxied`);
      t.equal(seenBy(preflight).method, 'OPTIONS', `${origin}: the backend saw it`);
      t.equal(
        preflight.headers['access-control-allow-origin'],
        'https://from-upstream.example',
        `${origin}: no CORS headers of the proxy`,
      );
      t.equal(preflight.headers['access-control-max-age'], undefined);
    }
    const none = await send(port, 'list.test', '/x');
    t.equal(none.headers['access-control-max-age'], undefined, 'no Origin: no CORS headers');
  });

  await t.test('on every status of the route', async (t) => {
    const notFound = await send(port, 'list.test', '/status/404', { headers: allowed });
    t.equal(notFound.status, 404);
    t.same(corsHeaders(notFound), listHeaders, 'an upstream 404');
    const unavailable = await send(port, 'empty.test', '/x', { headers: allowed });
    t.equal(unavailable.status, 503, 'no endpoints');
    t.same(corsHeaders(unavailable), listHeaders, "the proxy's own 503 page");
    const redirected = await send(port, 'forced.test', '/x', { headers: allowed });
    t.equal(redirected.status, 308);
    t.same(corsHeaders(redirected), listHeaders, 'the ssl-redirect');
  });

  await t.test('the preflight comes first', async (t) => {
    for (const host of ['empty.test', 'moved.test', 'forced.test']) {
      const preflight = await send(port, host, '/x', { method: 'OPTIONS', headers: allowed });
      t.equal(preflight.status, 204, `${host}: before the 503 check, the redirect and ssl-redirect`);
      t.same(corsHeaders(preflight), listHeaders);
    }
    const refused = await send(port, 'moved.test', '/x', {
      method: 'OPTIONS',
      headers: { origin: 'https://other.example' },
    });
    t.equal(refused.status, 301, 'an unmatched origin gets what any request gets');
  });

  await t.test('/debug/model shows the CORS settings per route', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const route = (host: string) => model.hosts.find((h) => h.host === host)?.routes[0];
    t.strictSame(route('list.test')?.cors, {
      enabled: true,
      allowOrigin: ['https://app.example', 'https://*.wild.example:8443'],
      allowMethods: 'GET, POST',
      allowHeaders: 'X-Custom, Content-Type',
      exposeHeaders: 'X-Total',
      allowCredentials: false,
      maxAge: 600,
    });
    t.match(route('open.test')?.cors, { enabled: true, allowOrigin: ['*'] });
    t.equal(route('plain.test')?.cors, undefined);
    t.match(model.diagnostics['Ingress e2e/list'], [
      { code: 'ANNOTATION_INVALID', message: /not an origin/ },
    ]);
  });

  await t.test('without enable-cors nothing is added', async (t) => {
    const preflight = await send(port, 'plain.test', '/x', { method: 'OPTIONS', headers: allowed });
    t.equal(preflight.status, 200);
    t.equal(seenBy(preflight).method, 'OPTIONS');
    t.equal(preflight.headers['access-control-allow-origin'], 'https://from-upstream.example');
  });
});
