// permanent-redirect, temporal-redirect and app-root through the proxy: the URL as written, the
// codes and their fallbacks, temporal winning, the host's unmatched paths redirecting too, the route's
// redirect coming before ssl-redirect on a TLS host, and app-root for `/` only.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

const site = (name: string, annotations: Record<string, string>, path = '/app') =>
  ingressYaml({ name, host: `${name}.test`, path, service: 'web', annotations });

t.test('redirect annotations through the proxy', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-redirect-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const secure = `${ingressYaml({
    name: 'secure',
    host: 'secure.test',
    service: 'web',
    annotations: { 'permanent-redirect': 'https://elsewhere.example/landing' },
  }).replace('  rules:', '  tls: [{ hosts: [secure.test], secretName: secure-tls }]\n  rules:')}---
${tlsSecret('e2e', 'secure-tls', pem('a-example'))}`;
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', []),
      site('moved', { 'permanent-redirect': 'https://new.example/path?q=1' }),
      site('code', { 'permanent-redirect': 'http://new.example/', 'permanent-redirect-code': '308' }),
      site('badcode', { 'permanent-redirect': 'http://new.example/', 'permanent-redirect-code': '399' }),
      site('both', {
        'permanent-redirect': 'https://permanent.example/',
        'temporal-redirect': 'https://temporal.example/',
        'temporal-redirect-code': '307',
      }),
      site('temp', { 'temporal-redirect': 'https://temporal.example/x' }),
      site('bad', { 'permanent-redirect': 'ftp://files.example/' }),
      site('root', { 'app-root': '/app1' }),
      site('badroot', { 'app-root': 'https://elsewhere.example/' }),
      site('variable', { 'permanent-redirect': 'https://x.example$request_uri' }),
      secure,
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const cases: Array<[string, string, number, string | undefined, string]> = [
    ['moved.test', '/app/x', 301, 'https://new.example/path?q=1', 'the URL as written, nothing appended'],
    ['moved.test', '/unmatched', 301, 'https://new.example/path?q=1', 'the host default route inherits it'],
    ['code.test', '/app', 308, 'http://new.example/', 'permanent-redirect-code'],
    ['badcode.test', '/app', 301, 'http://new.example/', 'a code out of range falls back to 301'],
    ['both.test', '/app', 307, 'https://temporal.example/', 'temporal wins, with its code'],
    ['temp.test', '/app', 302, 'https://temporal.example/x', 'temporal-redirect: 302'],
    ['bad.test', '/app', 404, undefined, 'a URL that is not http(s) drops the Ingress'],
    [
      'root.test',
      '/',
      302,
      'http://root.test/app1',
      'app-root: / to the app root on the same scheme and Host',
    ],
    ['root.test', '/?x=1', 302, 'http://root.test/app1', 'app-root: $uri is /, the query does not count'],
    ['root.test', '/other', 404, undefined, 'app-root: only / is redirected'],
    ['badroot.test', '/', 404, undefined, 'app-root that is a URL is ignored: / is not redirected'],
    ['badroot.test', '/app', 503, undefined, 'app-root that is a URL is ignored: the Ingress is kept'],
    ['variable.test', '/app', 404, undefined, 'a URL with an NGINX variable drops the Ingress'],
    [
      'secure.test',
      '/',
      301,
      'https://elsewhere.example/landing',
      'before ssl-redirect (which would be 308)',
    ],
  ];
  for (const [host, path, status, location, name] of cases) {
    const reply = await get(port, host, path);
    t.equal(reply.status, status, `${name}: status`);
    t.equal(reply.headers.location, location, `${name}: Location`);
  }
  const body = (await get(port, 'moved.test', '/app')).body;
  t.match(body, '<title>301 Moved Permanently</title>', "NGINX's redirect page");
});

/** An HTTPS GET with SNI `host`: status, Location and the CN of the certificate served. */
function httpsGet(
  port: number,
  host: string,
  path: string,
): Promise<{ status: number; location: string | undefined; cn: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { port, host: '127.0.0.1', servername: host, path, headers: { host }, rejectUnauthorized: false },
      (res) => {
        const cn = String((res.socket as TLSSocket).getPeerCertificate().subject?.CN);
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, cn }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

t.test(
  'per-route ssl-redirect, force-ssl-redirect, preserve-trailing-slash, use-port-in-redirects and from-to-www-redirect',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-ssl-redirect-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const withTls = (yaml: string, host: string, secret: string) =>
      yaml.replace('  rules:', `  tls: [{ hosts: [${host}], secretName: ${secret} }]\n  rules:`);
    const on = (
      name: string,
      host: string,
      annotations: Record<string, string>,
      path = '/',
      created?: string,
    ) => ingressYaml({ name, host, path, service: 'web', annotations, ...(created ? { created } : {}) });
    await writeFile(
      join(dir, 'all.yaml'),
      [
        INGRESS_CLASS,
        serviceYaml('web', []),
        // the ConfigMap turns ssl-redirect off: annotations turn it back on per route
        `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: { ${TEST_THREADS_ENTRY}ssl-redirect: "false" }\n`,
        `---\n${tlsSecret('e2e', 'a-tls', pem('a-example'))}`,
        `---\n${tlsSecret('e2e', 'wild-tls', pem('wildcard-example'))}`,
        withTls(on('tlsoff', 'tlsoff.test', {}), 'tlsoff.test', 'a-tls'),
        withTls(on('tlson', 'tlson.test', { 'ssl-redirect': 'true' }), 'tlson.test', 'a-tls'),
        withTls(on('maybe', 'maybe.test', { 'ssl-redirect': 'maybe' }), 'maybe.test', 'a-tls'),
        withTls(on('mixed-a', 'mixed.test', { 'ssl-redirect': 'true' }, '/a'), 'mixed.test', 'a-tls'),
        on('mixed-b', 'mixed.test', {}, '/b', '2026-01-01T00:01:00Z'),
        on('force', 'force.test', { 'force-ssl-redirect': 'true' }),
        on('keep', 'keep.test', { 'force-ssl-redirect': 'true', 'preserve-trailing-slash': 'true' }),
        on('port', 'port.test', { 'force-ssl-redirect': 'true', 'use-port-in-redirects': 'true' }),
        on('acme', 'acme.test', { 'force-ssl-redirect': 'true' }, '/.well-known/acme-challenge'),
        withTls(on('www', 'a.example.com', { 'from-to-www-redirect': 'true' }), 'a.example.com', 'a-tls'),
        withTls(on('wild', 'b.example.com', { 'from-to-www-redirect': 'true' }), 'b.example.com', 'wild-tls'),
        on('bare', 'www.bare.test', { 'from-to-www-redirect': 'true' }),
        on('taken', 'taken.test', { 'from-to-www-redirect': 'true' }),
        on('taken-www', 'www.taken.test', {}),
      ].join(''),
    );
    const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
      accessLogStdout: { write() {} },
    });
    t.teardown(() => controller.stop(0));
    const port = controller.http.port;
    const https = controller.https.port;

    const cases: Array<[string, string, number, string | undefined, string]> = [
      ['tlsoff.test', '/x', 503, undefined, 'ConfigMap ssl-redirect false: proxied (no endpoints)'],
      ['tlson.test', '/x', 308, 'https://tlson.test/x', 'ssl-redirect: "true" overrides the ConfigMap'],
      ['maybe.test', '/x', 503, undefined, 'ssl-redirect: "maybe" is invalid: the ConfigMap decides'],
      ['mixed.test', '/a/x', 308, 'https://mixed.test/a/x', 'per route: /a redirects'],
      ['mixed.test', '/b/x', 503, undefined, 'per route: /b of another Ingress follows the ConfigMap'],
      ['force.test', '/dir/?q=1', 308, 'https://force.test/dir/?q=1', 'force-ssl-redirect without TLS'],
      ['force.test', '/dir/', 308, 'https://force.test/dir', 'one trailing slash removed'],
      ['force.test', '/', 308, 'https://force.test', 'GET / → https://host'],
      ['keep.test', '/dir/', 308, 'https://keep.test/dir/', 'preserve-trailing-slash keeps it'],
      ['port.test', '/dir/?q', 308, 'https://port.test:443/dir/?q', 'use-port-in-redirects: :443'],
      ['port.test', '/', 308, 'https://port.test:443', 'use-port-in-redirects: GET /'],
      ['acme.test', '/.well-known/acme-challenge/token', 503, undefined, 'no-tls-redirect-locations'],
      ['acme.test', '/other', 308, 'https://acme.test/other', 'the host default route is not exempt'],
      [
        'www.a.example.com',
        '/foo/?x=1',
        308,
        `http://a.example.com:${port}/foo/?x=1`,
        'www → host, port kept',
      ],
      ['www.a.example.com', '/foo/', 308, `http://a.example.com:${port}/foo`, 'one trailing slash removed'],
      ['bare.test', '/p', 308, `http://www.bare.test:${port}/p`, 'host → www. host'],
      ['www.taken.test', '/', 503, undefined, 'the other name is a host of its own: no redirect'],
      ['a.example.com', '/', 503, undefined, 'the host itself is served (ConfigMap ssl-redirect false)'],
    ];
    for (const [host, path, status, location, name] of cases) {
      const reply = await get(port, host, path);
      t.equal(reply.status, status, `${name}: status`);
      t.equal(reply.headers.location, location, `${name}: Location`);
    }

    t.strictSame(
      await httpsGet(https, 'www.a.example.com', '/x/?y=1'),
      { status: 308, location: 'https://a.example.com:443/x/?y=1', cn: 'a.example.com' },
      "HTTPS: port 443 in the Location; the host's certificate covers the www name",
    );
    t.strictSame(
      await httpsGet(https, 'www.b.example.com', '/'),
      { status: 308, location: 'https://b.example.com:443', cn: 'Ingress-TS Fake Certificate' },
      '*.example.com does not cover www.b.example.com: the default certificate',
    );

    const model = JSON.parse((await get(controller.healthz.port, 'localhost', '/debug/model')).body) as {
      hosts: Array<{ host: string; wwwRedirectFrom?: string; routes: Array<Record<string, unknown>> }>;
    };
    const host = (name: string) => model.hosts.find((h) => h.host === name);
    t.equal(host('a.example.com')?.wwwRedirectFrom, 'www.a.example.com', '/debug/model: from-to-www');
    t.equal(host('taken.test')?.wwwRedirectFrom, undefined);
    t.match(host('keep.test')?.routes[0], { forceSslRedirect: true, preserveTrailingSlash: true });
    t.match(host('port.test')?.routes[0], { usePortInRedirects: true });
    t.match(host('tlson.test')?.routes[0], { sslRedirect: true });
  },
);
