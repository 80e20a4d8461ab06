// Sticky sessions through the real proxy (standalone controller, three echo backends): the
// Set-Cookie attributes exactly, a session that sticks across swaps, persistent sessions that
// survive an unrelated endpoint joining, the cookie only on the affinity Ingress's paths, and
// sticky vs legacy canaries; two Ingresses sharing a Service: the newest one's cookie.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { cookieTime } from '../../lib/dataplane/upstream/affinity-cookie.ts';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';

const agent = new Agent({ keepAlive: true, maxSockets: 8 });
t.teardown(() => agent.destroy());

interface Answer {
  backend: string;
  setCookie: string[];
}

function call(port: number, host: string, path = '/', headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, agent, headers: { host, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({
          backend:
            res.statusCode === 200
              ? (JSON.parse(body) as { backend: string }).backend
              : String(res.statusCode),
          setCookie: res.headers['set-cookie'] ?? [],
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const cookiePair = (setCookie: string) => setCookie.slice(0, setCookie.indexOf(';'));

const service = serviceYaml;
const ingress = (
  name: string,
  host: string,
  path: string,
  svc: string,
  annotations: Record<string, string>,
  created?: string,
) => ingressYaml({ name, host, path, service: svc, annotations, created });

t.test('sticky sessions through the proxy', async (t) => {
  const ports: number[] = [];
  for (const name of ['pod-a', 'pod-b', 'pod-c', 'pod-d', 'canary-a', 'canary-b']) {
    const server = echoServer(name);
    ports.push(await listen(server));
    t.teardown(() => new Promise((resolve) => server.close(resolve)));
  }
  const [a, b, c, d, ca, cb] = ports as [number, number, number, number, number, number];
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-affinity-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const files = (extraPod: boolean) =>
    [
      INGRESS_CLASS,
      service('app', extraPod ? [a, b, c, d] : [a, b, c]),
      service('kept', extraPod ? [a, b, c, d] : [a, b, c]),
      service('front', [a, b, c]),
      service('shared', [a, b, c]),
      service('canary', [ca, cb]),
      service('legacy', [ca, cb]),
      ingress('sticky', 'sticky.test', '/', 'app', {
        affinity: 'cookie',
        'session-cookie-name': 'route',
        'session-cookie-path': '/shop',
        'session-cookie-domain': 'sticky.test',
        'session-cookie-expires': '3600',
        'session-cookie-max-age': '1800',
        'session-cookie-samesite': 'lax',
      }),
      // the same upstream from another Ingress without affinity: sticky, but no cookie set here
      ingress('other', 'sticky.test', '/other', 'app', {}),
      ingress('kept', 'kept.test', '/', 'kept', { affinity: 'cookie', 'affinity-mode': 'persistent' }),
      ingress('main', 'canary.test', '/', 'front', { affinity: 'cookie' }),
      ingress(
        'c',
        'canary.test',
        '/',
        'canary',
        { canary: 'true', 'canary-by-header': 'X-Canary' },
        '2026-01-02T00:00:00Z',
      ),
      ingress('main2', 'legacy.test', '/', 'front', { affinity: 'cookie' }),
      // one Service, two Ingresses with affinity: the newer one's cookie name and attributes apply
      ingress(
        'older',
        'older.test',
        '/',
        'shared',
        { affinity: 'cookie', 'session-cookie-name': 'old', 'session-cookie-max-age': '60' },
        '2026-01-01T00:00:00Z',
      ),
      ingress(
        'newer',
        'newer.test',
        '/',
        'shared',
        { affinity: 'cookie', 'session-cookie-name': 'new', 'session-cookie-samesite': 'Strict' },
        '2026-01-03T00:00:00Z',
      ),
      ingress(
        'l',
        'legacy.test',
        '/',
        'legacy',
        { canary: 'true', 'canary-by-header': 'X-Canary', 'affinity-canary-behavior': 'legacy' },
        '2026-01-02T00:00:00Z',
      ),
    ].join('');
  await writeFile(join(dir, 'all.yaml'), files(false));
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  t.test('Set-Cookie: every attribute as ingress-nginx writes it; the session sticks', async (t) => {
    const before = Date.now();
    const first = await call(port, 'sticky.test', '/shop/cart');
    t.equal(first.setCookie.length, 1, 'a new session sets the cookie');
    const cookie = first.setCookie[0] as string;
    const match =
      /^route=([^|;]+)\|([0-9a-f]{32}); Expires=(.+?); Max-Age=1800; Domain=sticky\.test; Path=\/shop; HttpOnly; SameSite=Lax$/.exec(
        cookie,
      );
    t.ok(match, `the attributes, in order: ${cookie}`);
    const expires = match?.[3] ?? '';
    t.ok(
      [cookieTime(before + 3600_000), cookieTime(before + 3601_000), cookieTime(before + 3602_000)].includes(
        expires,
      ),
      `Expires one hour ahead in NGINX's cookie_time format (${expires})`,
    );
    t.notMatch(cookie, /Secure/, 'no Secure on plain HTTP without session-cookie-secure');
    const sent = { cookie: cookiePair(cookie) };
    for (let i = 0; i < 30; i++) {
      const again = await call(port, 'sticky.test', '/shop/cart', sent);
      t.equal(again.backend, first.backend, `request ${i + 1} with the cookie`);
      t.same(again.setCookie, [], 'an existing session sets no cookie');
    }
    const without = new Set<string>();
    for (let i = 0; i < 30; i++)
      without.add((await call(port, 'sticky.test', '/shop/x', { cookie: 'route=bogus|0' })).backend);
    t.ok(without.size > 1, 'a cookie of another backend is no session: requests spread');
  });

  t.test('the cookie is set only on the paths of the Ingress with affinity', async (t) => {
    const other = await call(port, 'sticky.test', '/other');
    t.same(other.setCookie, [], 'no Set-Cookie from the Ingress without affinity');
  });

  t.test('sessions survive swaps (balanced) and an unrelated endpoint joining (persistent)', async (t) => {
    const sticky = await call(port, 'sticky.test', '/shop');
    const kept = await call(port, 'kept.test', '/');
    const stickyCookie = { cookie: cookiePair(sticky.setCookie[0] as string) };
    const keptCookie = {
      cookie: cookiePair((kept.setCookie[0] as string).replace(/^INGRESSCOOKIE=/, 'INGRESSCOOKIE=')),
    };
    t.match(
      kept.setCookie[0],
      /^INGRESSCOOKIE=[0-9a-f]{32}\|[0-9a-f]{32}; Path=\/; HttpOnly$/,
      'defaults: name, path, HttpOnly',
    );
    for (let swap = 0; swap < 50; swap++) {
      const swapped = nextSwap();
      // alternate a route change (a full swap) with nothing else: 50 new runtimes
      await writeFile(
        join(dir, 'all.yaml'),
        files(false) + ingress(`extra-${swap % 2}`, 'x.test', '/', 'app', {}),
      );
      await swapped;
      t.equal((await call(port, 'sticky.test', '/shop', stickyCookie)).backend, sticky.backend);
    }
    const joined = nextSwap();
    await writeFile(join(dir, 'all.yaml'), files(true));
    await joined;
    t.equal(
      (await call(port, 'kept.test', '/', keptCookie)).backend,
      kept.backend,
      'persistent: still the same pod',
    );
  });

  t.test('canaries: sticky by default, not with legacy', async (t) => {
    const toCanary = await call(port, 'canary.test', '/', { 'x-canary': 'always' });
    t.match(toCanary.backend, /^canary-/);
    t.equal(toCanary.setCookie.length, 1, 'the canary (sticky) sets its own cookie');
    const cookie = { cookie: cookiePair(toCanary.setCookie[0] as string) };
    for (let i = 0; i < 10; i++) {
      t.equal(
        (await call(port, 'canary.test', '/', cookie)).backend,
        toCanary.backend,
        'the canary cookie keeps users there',
      );
    }
    const toMain = await call(port, 'canary.test', '/');
    t.match(toMain.backend, /^pod-/);
    const mainCookie = { cookie: cookiePair(toMain.setCookie[0] as string), 'x-canary': 'always' };
    t.equal(
      (await call(port, 'canary.test', '/', mainCookie)).backend,
      toMain.backend,
      'a main cookie stays on main',
    );

    const legacy = await call(port, 'legacy.test', '/', { 'x-canary': 'always' });
    t.match(legacy.backend, /^canary-/);
    t.same(legacy.setCookie, [], 'legacy: the canary sets no cookie');
  });

  t.test('one Service behind two Ingresses: the newest Ingress decides the cookie', async (t) => {
    for (const host of ['older.test', 'newer.test']) {
      const answer = await call(port, host, '/');
      t.equal(answer.setCookie.length, 1, `${host} sets the affinity cookie`);
      t.match(
        answer.setCookie[0],
        /^new=[^;]+; Path=\/; HttpOnly; SameSite=Strict$/,
        `${host}: the name and attributes of the newer Ingress`,
      );
    }
    const model = JSON.parse(
      (await get(controller.healthz.port, 'localhost', '/debug/model')).body,
    ) as ModelDescription;
    t.match(
      model.diagnostics['Ingress e2e/older'],
      [{ code: 'AFFINITY_CONFLICT', message: /follows the newer Ingress e2e\/newer/ }],
      'the older Ingress is told its cookie settings lost',
    );
    t.equal(model.diagnostics['Ingress e2e/newer'], undefined, 'nothing on the winner');
  });
});
