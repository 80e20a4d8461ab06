// satisfy any|all through the proxy, with basic auth and source lists, from 127.0.0.1 and 127.0.0.2:
// under any, an allowlisted client skips authentication and any other client may log in (even a
// denylisted one, as in NGINX); when both refuse, 401 (the client can still log in). Under all (the
// default) the lists answer 403 first and authentication 401. Rate limits apply under both, and a
// route without authentication is not changed by satisfy. Also: basic auth and auth-url as
// alternatives under any, WebSocket upgrades, the host's default-backend paths, /debug/model.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { getFrom } from '../support/client.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';

/** openssl passwd -apr1 -salt abcdefgh secret */
const APR1 = '$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/';
const RIGHT = { authorization: `Basic ${Buffer.from('user:secret').toString('base64')}` };
const TOKEN = { 'x-token': 'ok' };
const FORBID = { 'x-token': 'forbid' };
const BROKEN = { 'x-token': 'broken' };
const WRONG = { authorization: `Basic ${Buffer.from('user:wrong').toString('base64')}` };

t.test('satisfy any / all between the source lists and basic auth', async (t) => {
  const seen: IncomingHttpHeaders[] = [];
  const backend = createServer((req, res) => {
    seen.push(req.headers);
    res.end('app');
  });
  const sockets = new WebSocketServer({ server: backend });
  sockets.on('connection', (socket) => socket.send('hello'));
  const backendPort = await listen(backend);
  t.teardown(() => {
    sockets.close();
    backend.close();
  });
  const auths: IncomingHttpHeaders[] = [];
  const authService = createServer((req, res) => {
    auths.push(req.headers);
    const token = req.headers['x-token'];
    res.statusCode = token === 'ok' ? 200 : token === 'forbid' ? 403 : token === 'broken' ? 502 : 401;
    res.end();
  });
  const authPort = await listen(authService);
  t.teardown(() => authService.close());
  const authUrl = `http://127.0.0.1:${authPort}/check`;

  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-satisfy-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const auth = { 'auth-type': 'basic', 'auth-secret': 'htpasswd' };
  const site = (name: string, annotations: Record<string, string>) =>
    ingressYaml({ name, host: `${name}.test`, path: '/', service: 'web', annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backendPort]),
      `---
apiVersion: v1
kind: Secret
metadata: { name: htpasswd, namespace: e2e }
type: Opaque
data:
  auth: ${Buffer.from(`user:${APR1}\n`).toString('base64')}
`,
      site('any', { ...auth, 'allowlist-source-range': '127.0.0.1', satisfy: 'any' }),
      site('all', { ...auth, 'allowlist-source-range': '127.0.0.1', satisfy: 'all' }),
      site('default', { ...auth, 'allowlist-source-range': '127.0.0.1' }),
      site('invalid', { ...auth, 'allowlist-source-range': '127.0.0.1', satisfy: 'either' }),
      site('denylist', { ...auth, 'denylist-source-range': '127.0.0.2', satisfy: 'any' }),
      site('noauth', { 'allowlist-source-range': '127.0.0.1', satisfy: 'any' }),
      site('either', { ...auth, 'auth-url': authUrl, 'allowlist-source-range': '127.0.0.1', satisfy: 'any' }),
      ingressYaml({
        name: 'partial',
        host: 'partial.test',
        path: '/app',
        service: 'web',
        annotations: { ...auth, 'allowlist-source-range': '127.0.0.1', satisfy: 'any' },
      }),
      site('both', { ...auth, 'auth-url': authUrl }),
      site('limited', {
        ...auth,
        'allowlist-source-range': '127.0.0.1',
        satisfy: 'any',
        'limit-rpm': '1',
        'limit-burst-multiplier': '1',
      }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = { port: controller.http.port };

  await t.test('the decision per client and credentials', async (t) => {
    const cases: Array<[string, string, Record<string, string>, number, string]> = [
      ['127.0.0.1', 'any', {}, 200, 'any: an allowlisted client without credentials'],
      ['127.0.0.1', 'any', WRONG, 200, 'any: an allowlisted client with wrong credentials'],
      ['127.0.0.2', 'any', RIGHT, 200, 'any: not allowlisted, the right credentials'],
      ['127.0.0.2', 'any', {}, 401, 'any: not allowlisted, no credentials: 401, not 403'],
      ['127.0.0.2', 'any', WRONG, 401, 'any: not allowlisted, wrong credentials'],
      ['127.0.0.1', 'all', {}, 401, 'all: allowlisted, no credentials'],
      ['127.0.0.1', 'all', RIGHT, 200, 'all: allowlisted, the right credentials'],
      ['127.0.0.2', 'all', RIGHT, 403, 'all: not allowlisted, the right credentials'],
      ['127.0.0.2', 'all', {}, 403, 'all: not allowlisted, no credentials: the lists answer first'],
      ['127.0.0.1', 'default', {}, 401, 'unset is all'],
      ['127.0.0.2', 'default', RIGHT, 403, 'unset is all'],
      ['127.0.0.1', 'invalid', {}, 401, 'an invalid value is all'],
      ['127.0.0.2', 'invalid', RIGHT, 403, 'an invalid value is all'],
      ['127.0.0.2', 'denylist', RIGHT, 200, 'any: a denylisted client that logs in gets in (NGINX)'],
      ['127.0.0.2', 'denylist', {}, 401, 'any: a denylisted client without credentials'],
      ['127.0.0.1', 'denylist', {}, 401, 'any: a denylist alone lets nobody skip authentication'],
      ['127.0.0.1', 'denylist', RIGHT, 200, 'any: not denylisted, the right credentials'],
      ['127.0.0.1', 'noauth', {}, 200, 'no authentication: allowlisted'],
      ['127.0.0.1', 'partial', {}, 404, "any: the host's other paths (default backend), allowlisted"],
      ['127.0.0.2', 'partial', {}, 401, "any: the host's other paths, not allowlisted, no credentials"],
      ['127.0.0.2', 'partial', RIGHT, 404, "any: the host's other paths, not allowlisted, logged in"],
      ['127.0.0.2', 'noauth', {}, 403, 'no authentication: satisfy changes nothing'],
    ];
    for (const [source, name, headers, status, why] of cases) {
      const before = seen.length;
      const reply = await getFrom(source, port, `${name}.test`, '/', headers);
      t.equal(reply.status, status, `${source} → ${name}.test: ${why}`);
      t.equal(seen.length, before + (status === 200 ? 1 : 0), `${why}: the backend saw it only when allowed`);
      if (status === 200) {
        t.equal(seen.at(-1)?.authorization, undefined, `${why}: Authorization is not passed upstream`);
      }
    }
  });

  await t.test('the 401 under any is NGINX 401 page', async (t) => {
    const denied = await getFrom('127.0.0.2', port, 'any.test', '/');
    t.match(denied.body, '<title>401 Authorization Required</title>');
  });

  await t.test('any with basic auth and auth-url: either one lets the client in', async (t) => {
    const asked = auths.length;
    t.equal((await getFrom('127.0.0.2', port, 'either.test', '/', RIGHT)).status, 200, 'basic auth');
    t.equal(auths.length, asked, 'valid credentials: the auth service is not asked');
    t.equal((await getFrom('127.0.0.2', port, 'either.test', '/', TOKEN)).status, 200, 'the auth service');
    t.equal(auths.length, asked + 1);
    t.equal((await getFrom('127.0.0.2', port, 'either.test', '/')).status, 401, 'both refuse: 401');
    t.equal((await getFrom('127.0.0.2', port, 'either.test', '/', FORBID)).status, 401, 'its 403: still 401');
    t.equal((await getFrom('127.0.0.2', port, 'either.test', '/', BROKEN)).status, 500, 'its error: 500');
    t.equal((await getFrom('127.0.0.1', port, 'either.test', '/')).status, 200, 'allowlisted');
    t.equal(auths.length, asked + 4, 'allowlisted: the auth service is not asked');
    t.equal((await getFrom('127.0.0.2', port, 'both.test', '/', TOKEN)).status, 401, 'all: basic auth first');
  });

  await t.test('WebSocket upgrades: the same decision', async (t) => {
    const open = (source: string, host: string) =>
      new Promise<number | string>((resolve, reject) => {
        const socket = new WebSocket(`ws://127.0.0.1:${controller.http.port}/ws`, {
          headers: { host },
          localAddress: source,
        });
        socket.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
        });
        socket.on('message', (data) => {
          resolve(String(data));
          socket.close();
        });
        socket.on('error', reject);
      });
    t.equal(await open('127.0.0.1', 'any.test'), 'hello', 'any: allowlisted, tunnelled without credentials');
    t.equal(await open('127.0.0.2', 'any.test'), 401, 'any: not allowlisted, no credentials');
    t.equal(await open('127.0.0.1', 'all.test'), 401, 'all: allowlisted, no credentials');
    t.equal(await open('127.0.0.2', 'all.test'), 403, 'all: not allowlisted');
  });

  await t.test('rate limits still apply under any (allowlisted client)', async (t) => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await getFrom('127.0.0.1', port, 'limited.test', '/')).status);
    t.equal(statuses[0], 200, `the first request passes (${statuses})`);
    t.equal(statuses.at(-1), 503, `the limit answers 503 (${statuses})`);
    t.notOk(statuses.includes(401), 'the allowlisted client is never asked to log in');
    const other = await getFrom('127.0.0.2', port, 'limited.test', '/', RIGHT);
    t.equal(other.status, 200, 'each client address has its own limit');
  });

  await t.test('/debug/model shows satisfy any', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const routes = Object.fromEntries(model.hosts.map((h) => [h.host, h.routes[0]]));
    t.equal(routes['any.test']?.auth?.satisfy, 'any');
    t.equal(routes['noauth.test']?.auth?.satisfy, 'any');
    t.equal(routes['all.test']?.auth?.satisfy, undefined);
    t.equal(routes['default.test']?.auth?.satisfy, undefined);
  });
});
