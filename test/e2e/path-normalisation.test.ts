// The path-normalisation guarantee: a path-based route cannot be reached or
// bypassed by encoding tricks. Routing matches the normalised path NGINX's ngx_http_parse_complex_uri
// gives $uri (percent-decoding, `.`/`..` segments, merged slashes; `..` above the root and `%00` are
// 400), while the upstream gets the request URI exactly as the client sent it (no rewrite). An
// absolute-form target is routed by its own host and forwarded in origin-form.
// Two Ingresses on one host: /admin (Prefix) to backend A, whose route adds a response header from
// custom-headers, and / to backend B.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend, seenBy, send } from '../support/echo.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

t.test('encoded paths reach the route ingress-nginx would pick', async (t) => {
  const admin = echoBackend('admin');
  const site = echoBackend('site');
  const adminPort = await listen(admin);
  const sitePort = await listen(site);
  t.teardown(() => {
    admin.close();
    site.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-paths-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('admin', [adminPort]),
      serviceYaml('site', [sitePort]),
      ingressYaml({
        name: 'admin',
        host: 'paths.test',
        path: '/admin',
        service: 'admin',
        annotations: { 'custom-headers': 'admin-headers' },
      }),
      ingressYaml({ name: 'site', host: 'paths.test', path: '/', service: 'site' }),
      ingressYaml({ name: 'other', host: 'other.test', path: '/', service: 'admin' }),
      `---
apiVersion: v1
kind: ConfigMap
metadata: { name: admin-headers, namespace: e2e }
data: { X-Route: admin }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: { ${TEST_THREADS_ENTRY}global-allowed-response-headers: X-Route }
`,
    ].join(''),
  );
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts'),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  const cases: Array<[string, 'admin' | 'site', string]> = [
    ['/admin', 'admin', 'the path itself'],
    ['/admin/users?x=1', 'admin', 'under the prefix'],
    ['/%61dmin', 'admin', 'a percent-encoded letter is decoded'],
    ['/%2Fadmin', 'admin', 'an encoded slash is decoded, then slashes merge'],
    ['//admin', 'admin', 'merged slashes'],
    ['/x/../admin', 'admin', 'a .. segment'],
    ['/x/%2e%2E/admin', 'admin', 'an encoded .. segment'],
    ['/./admin', 'admin', 'a . segment'],
    ['/admin/.', 'admin', 'a trailing . segment'],
    ['/admin/%FF', 'admin', 'decoded bytes that are not UTF-8 are routed (NGINX compares bytes)'],
    ['/ADMIN', 'site', 'Prefix is case-sensitive'],
    ['/admin%2F..%2Fpublic', 'site', 'encoded slashes and .. leave the prefix'],
    ['/admin/../public', 'site', '.. leaves the prefix'],
    ['/admin;x', 'site', '; is an ordinary character: not a path element of /admin'],
    ['/adminx', 'site', 'Prefix matches whole path elements'],
    ['/admin\\..\\public', 'site', 'a backslash is an ordinary character (NGINX on Unix), no separator'],
  ];
  for (const [path, expected, why] of cases) {
    const reply = await send(port, 'paths.test', path);
    t.equal(reply.status, 200, `${path}: ${why}`);
    const seen = seenBy(reply);
    t.equal(seen.name, expected, `${path}: ${why}`);
    t.equal(seen.url, path, `${path}: the upstream gets the request URI as sent`);
    t.equal(
      reply.headers['x-route'],
      expected === 'admin' ? 'admin' : undefined,
      `${path}: the route's headers`,
    );
  }
  for (const [path, why] of [
    ['/%2e%2e/admin', 'an encoded .. above the root'],
    ['/../admin', '.. above the root'],
    ['/admin%00', 'an encoded NUL'],
    ['/%zzadmin', 'a malformed escape'],
  ]) {
    const reply = await send(port, 'paths.test', path as string);
    t.equal(reply.status, 400, `${path}: ${why}`);
    t.equal(reply.headers['x-route'], undefined);
  }

  // absolute-form targets (RFC 9112 §3.2.2): the target's authority is the host, whatever Host says
  // (Node's client sends a path that is a URL as the request target, as it does for a forward proxy)
  const absolute = async (target: string, host: string) => {
    const reply = await send(port, host, target);
    return { status: reply.status, seen: reply.status === 200 ? seenBy(reply) : null };
  };
  const viaOther = await absolute('http://other.test/admin/x?q=1', 'paths.test');
  t.equal(viaOther.seen?.name, 'admin', "routed by the target's host, not the Host header");
  t.equal(viaOther.seen?.url, '/admin/x?q=1', 'the upstream gets the origin-form target');
  t.equal(viaOther.seen?.headers.host, 'other.test', "and the target's host as Host");
  const viaPaths = await absolute('HTTP://paths.test:80/admin', 'other.test');
  t.equal(viaPaths.seen?.name, 'admin', 'paths.test /admin: the admin route');
  t.equal(viaPaths.seen?.headers.host, 'paths.test:80', 'the authority as sent, port included');
  const noPath = await absolute('http://paths.test?x=1', 'other.test');
  t.equal(noPath.seen?.name, 'site', 'no path: /');
  t.equal(noPath.seen?.url, '/?x=1');
  const escaped = await absolute('http://paths.test/x/%2e%2e/admin', 'paths.test');
  t.equal(escaped.seen?.name, 'admin', 'normalised as any path');
  for (const [target, why] of [
    ['http://user@paths.test/admin', 'userinfo'],
    ['ftp://paths.test/admin', 'another scheme'],
    ['http:///admin', 'no host'],
    ['http://paths.test/../admin', '.. above the root'],
  ] as const) {
    t.equal((await absolute(target, 'paths.test')).status, 400, `${target}: ${why} → 400`);
  }
});
