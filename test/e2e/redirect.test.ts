// permanent-redirect, temporal-redirect and app-root through the proxy: the URL as written, the
// codes and their fallbacks, temporal winning, the host's unmatched paths redirecting too, the route's
// redirect coming before ssl-redirect on a TLS host, and app-root for `/` only.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { get, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';

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
    ['badroot.test', '/', 404, undefined, 'app-root that is a URL drops the Ingress'],
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
