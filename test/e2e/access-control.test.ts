// allowlist-source-range, whitelist-source-range, denylist-source-range and the ConfigMap's
// whitelist-source-range, denylist-source-range and block-cidrs through the real proxy, with the
// client address varied by binding the client socket (127.0.0.1, 127.0.0.2…, ::1): allowed and
// denied addresses (IPv4, IPv6, IPv4-mapped), the forwarded-for address believed only from a trusted
// proxy, denylist beating allowlist, and the status precedence (503 without endpoints and the 308
// ssl-redirect come before the 403).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { getFrom } from '../support/client.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { withTestThreads } from '../support/threads.ts';

const FORBIDDEN = '<html>\r\n<head><title>403 Forbidden</title></head>';

const site = (name: string, annotations: Record<string, string>, service = 'web') =>
  ingressYaml({ name, host: `${name}.test`, service, annotations });
const configMap = (data: Record<string, string>) =>
  `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: ${JSON.stringify(withTestThreads(data))}\n`;

async function controllerOver(t: Test, manifests: string[], ...flags: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-access-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // the ConfigMap --configmap names, with the suite's worker-processes, when the test has none
  const named = manifests.some((text) => text.includes('kind: ConfigMap'));
  await writeFile(join(dir, 'all.yaml'), (named ? manifests : [...manifests, configMap({})]).join(''));
  const controller = await start(
    testConfig(dir, '--configmap', 'e2e/ingress-ts', ...flags),
    createLogger('silent'),
    { accessLogStdout: { write() {} } },
  );
  t.teardown(() => controller.stop(0));
  return controller;
}

async function backend(t: Test): Promise<number> {
  const server = echoServer('web');
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return port;
}

t.test('annotations: allowed and denied IPv4 clients, denylist before allowlist, precedence', async (t) => {
  const web = await backend(t);
  const withTls = (yaml: string, host: string) =>
    yaml.replace('  rules:', `  tls: [{ hosts: [${host}], secretName: a-tls }]\n  rules:`);
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    serviceYaml('empty', []),
    `---\n${tlsSecret('e2e', 'a-tls', pem('a-example'))}`,
    site('allow', { 'allowlist-source-range': '127.0.0.1' }),
    site('alias', { 'whitelist-source-range': '127.0.0.2/32' }),
    site('primary', { 'whitelist-source-range': '127.0.0.2', 'allowlist-source-range': '127.0.0.1' }),
    site('deny', { 'denylist-source-range': '127.0.0.2, 10.0.0.0/8' }),
    site('both', { 'allowlist-source-range': '127.0.0.0/8', 'denylist-source-range': '127.0.0.2' }),
    site('bad', { 'allowlist-source-range': '127.0.0.1, not-an-address' }),
    ingressYaml({
      name: 'partial',
      host: 'partial.test',
      path: '/app',
      service: 'web',
      annotations: { 'allowlist-source-range': '127.0.0.1' },
    }),
    site('empty', { 'allowlist-source-range': '10.0.0.0/8' }, 'empty'),
    withTls(site('secure', { 'allowlist-source-range': '10.0.0.0/8' }), 'secure.test'),
  ]);
  const port = { port: controller.http.port };
  const cases: Array<[string, string, number, string]> = [
    ['127.0.0.1', 'allow', 200, 'allowlisted address'],
    ['127.0.0.2', 'allow', 403, 'another loopback address is not allowlisted'],
    ['127.0.0.2', 'alias', 200, 'whitelist-source-range is an alias'],
    ['127.0.0.1', 'alias', 403, 'alias: outside the list'],
    ['127.0.0.1', 'primary', 200, 'allowlist-source-range wins over its alias'],
    ['127.0.0.2', 'primary', 403, 'the alias is ignored when the primary key is set'],
    ['127.0.0.1', 'deny', 200, 'not in the denylist'],
    ['127.0.0.2', 'deny', 403, 'denylisted'],
    ['127.0.0.1', 'both', 200, 'allowlisted, not denied'],
    ['127.0.0.2', 'both', 403, 'deny comes before allow'],
    ['127.0.0.1', 'partial', 404, "an unmatched path of the host: the default backend's 404"],
    ['127.0.0.2', 'partial', 403, 'the host default route inherits the list (before the 404)'],
    ['127.0.0.1', 'bad', 404, 'an invalid list drops the Ingress (never an open route)'],
    ['127.0.0.1', 'empty', 503, 'no endpoints: 503 before the 403'],
    ['127.0.0.1', 'secure', 308, 'HTTP on a TLS host: the ssl-redirect before the 403'],
  ];
  for (const [source, name, status, why] of cases) {
    const reply = await getFrom(source, port, `${name}.test`, '/x');
    t.equal(reply.status, status, `${source} → ${name}.test: ${why}`);
    if (status === 403) t.ok(reply.body.startsWith(FORBIDDEN), `${why}: NGINX's 403 page`);
    if (status === 200) t.match(JSON.parse(reply.body), { backend: 'web' }, `${why}: proxied`);
  }
});

t.test('ConfigMap: global lists, block-cidrs, trusted and untrusted forwarded-for', async (t) => {
  const web = await backend(t);
  const controller = await controllerOver(t, [
    INGRESS_CLASS,
    serviceYaml('web', [web]),
    configMap({
      'whitelist-source-range': '127.0.0.1',
      'denylist-source-range': '127.0.0.5',
      'block-cidrs': '127.0.0.3',
      'use-forwarded-headers': 'true',
      'proxy-real-ip-cidr': '127.0.0.1/32',
    }),
    site('global', {}),
    site('override', { 'allowlist-source-range': '127.0.0.2' }),
    site('open', { 'allowlist-source-range': '127.0.0.0/8' }),
    site('unblock', { 'allowlist-source-range': '127.0.0.3' }),
  ]);
  const port = { port: controller.http.port };
  const xff = (address: string) => ({ 'x-forwarded-for': address });
  const cases: Array<[string, string, Record<string, string>, number, string]> = [
    ['127.0.0.1', 'global', {}, 200, 'the ConfigMap allowlist applies to a route without one'],
    ['127.0.0.2', 'global', {}, 403, 'outside the ConfigMap allowlist'],
    ['127.0.0.2', 'override', {}, 200, 'the annotation overrides the ConfigMap allowlist'],
    ['127.0.0.1', 'override', {}, 403, 'the ConfigMap allowlist no longer applies there'],
    ['127.0.0.6', 'open', {}, 200, 'inside the annotation allowlist'],
    ['127.0.0.5', 'open', {}, 403, 'the ConfigMap denylist applies to a route without one'],
    ['127.0.0.1', 'override', xff('127.0.0.2'), 200, 'trusted proxy: the forwarded address is the client'],
    ['127.0.0.1', 'global', xff('127.0.0.2'), 403, 'trusted proxy: the forwarded address is denied'],
    ['127.0.0.4', 'override', xff('127.0.0.2'), 403, 'untrusted peer: the header is ignored'],
    ['127.0.0.4', 'global', xff('127.0.0.1'), 403, 'untrusted peer cannot claim an allowed address'],
    ['127.0.0.3', 'unblock', {}, 403, 'block-cidrs: denied even where an allowlist names it'],
    ['127.0.0.3', 'nowhere', {}, 403, 'block-cidrs: denied before routing (no 404)'],
    ['127.0.0.1', 'unblock', xff('127.0.0.3'), 403, 'block-cidrs: applies to the forwarded address'],
  ];
  for (const [source, name, headers, status, why] of cases) {
    const reply = await getFrom(source, port, `${name}.test`, '/', headers);
    t.equal(reply.status, status, `${source} → ${name}.test: ${why}`);
    if (status === 403) t.ok(reply.body.startsWith(FORBIDDEN), `${why}: NGINX's 403 page`);
  }
  const described = await getFrom(
    '127.0.0.1',
    { port: controller.healthz.port },
    'localhost',
    '/debug/model',
  );
  const routes = (
    JSON.parse(described.body) as { hosts: Array<{ host: string; routes: unknown[] }> }
  ).hosts.find((h) => h.host === 'override.test')?.routes;
  t.match(routes, [{ allowlistSourceRange: ['127.0.0.2/32'] }], '/debug/model shows the route list');
});

/** Whether this machine can listen on ::1. */
async function hasIpv6Loopback(): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => server.close(() => resolve(true)));
  });
}

const ipv6 = await hasIpv6Loopback();
const skipIpv6 = ipv6 ? false : 'this machine has no IPv6 loopback (::1): IPv6 clients cannot be tested here';

t.test('IPv6 and IPv4-mapped clients', { skip: skipIpv6 }, async (t) => {
  const web = await backend(t);
  // listening on :: (dual stack), IPv4 clients arrive as ::ffff:127.0.0.1
  const controller = await controllerOver(
    t,
    [
      INGRESS_CLASS,
      serviceYaml('web', [web]),
      site('six', { 'allowlist-source-range': '::1' }),
      site('sixnet', { 'denylist-source-range': '::/64' }),
      site('four', { 'allowlist-source-range': '127.0.0.0/8' }),
    ],
    '--bind-address',
    '::',
  );
  const v4 = { port: controller.http.port, address: '127.0.0.1' };
  const v6 = { port: controller.http.port, address: '::1' };
  t.equal((await getFrom('::1', v6, 'six.test')).status, 200, '::1 is allowlisted');
  t.equal((await getFrom('127.0.0.1', v4, 'six.test')).status, 403, 'an IPv4 client is not ::1');
  t.equal((await getFrom('::1', v6, 'sixnet.test')).status, 403, '::1 is in the denied ::/64');
  // NGINX matches an IPv4-mapped peer (::ffff:127.0.0.1, which ::/64 would contain) against IPv4 rules only
  t.equal((await getFrom('127.0.0.1', v4, 'sixnet.test')).status, 200, 'an IPv4 client is not in ::/64');
  t.equal((await getFrom('127.0.0.2', v4, 'four.test')).status, 200, 'IPv4-mapped peer matches an IPv4 CIDR');
  t.equal((await getFrom('::1', v6, 'four.test')).status, 403, '::1 is not in 127.0.0.0/8');
});

t.test(
  'a path allowlist cannot be bypassed by encoding tricks; WebSocket upgrades are checked too',
  async (t) => {
    const web = await backend(t);
    const controller = await controllerOver(t, [
      INGRESS_CLASS,
      serviceYaml('web', [web]),
      ingressYaml({
        name: 'admin',
        host: 'app.test',
        path: '/admin',
        service: 'web',
        annotations: { 'allowlist-source-range': '10.0.0.0/8' },
      }),
      ingressYaml({
        name: 'public',
        host: 'app.test',
        path: '/',
        service: 'web',
        created: '2026-01-01T00:01:00Z',
      }),
    ]);
    const port = { port: controller.http.port };
    t.equal((await getFrom('127.0.0.1', port, 'app.test', '/public')).status, 200, 'the open route');
    for (const path of [
      '/admin',
      '/%61dmin',
      '//admin',
      '/x/../admin',
      '/admin/.',
      '/admin/x',
      '/ADMIN/../admin',
    ]) {
      t.equal(
        (await getFrom('127.0.0.1', port, 'app.test', path)).status,
        403,
        `${path} reaches the allowlisted route`,
      );
    }
    const upgrade = await new Promise<number>((resolve, reject) => {
      const req = request({
        host: '127.0.0.1',
        port: port.port,
        localAddress: '127.0.0.1',
        path: '/admin',
        agent: false,
        headers: {
          host: 'app.test',
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('upgrade', (_res, socket) => {
        socket.destroy();
        resolve(101);
      });
      req.on('error', reject);
      req.end();
    });
    t.equal(upgrade, 403, 'a WebSocket upgrade from a denied address');
  },
);
