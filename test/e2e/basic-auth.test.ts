// auth-type: basic through the proxy: each htpasswd format (bcrypt $2y$/$2b$, apr1, {SHA}, crypt)
// with the right and a wrong password, auth-map Secrets, the 401 challenge with the realm and NGINX's
// page, Authorization not passed upstream, and the routes that answer 503 instead of opening: a
// missing Secret, a Secret without the `auth` key, a Secret in another namespace (no
// allow-cross-namespace-resources), auth-type digest. A bad auth-type skips the Ingress (404).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, type Reply, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';

/** Known vectors for the password `secret` (openssl passwd -apr1, crypt(3), sha1). */
const APR1 = '$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/';
const CRYPT = 'abNANd1rDfiNc';
const SHA = '{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=';

function secretYaml(namespace: string, name: string, data: Record<string, string>): string {
  const entries = Object.entries(data)
    .map(([k, v]) => `  ${k}: ${Buffer.from(v).toString('base64')}\n`)
    .join('');
  return `---
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: ${namespace} }
type: Opaque
data:
${entries}`;
}

function fetch(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, headers: { host, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

t.test('basic authentication through the proxy', async (t) => {
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

  const bcryptHash = bcrypt.hashSync('secret', 4);
  const htpasswd = [
    '# users',
    `bcrypt-y:${bcryptHash.replace(/^\$2[ab]\$/, '$2y$')}`,
    `bcrypt-b:${bcryptHash.replace(/^\$2[ay]\$/, '$2b$')}`,
    `apr1:${APR1}`,
    `sha:${SHA}`,
    `crypt:${CRYPT}`,
    '',
  ].join('\n');

  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-basic-auth-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const site = (name: string, annotations: Record<string, string>) =>
    ingressYaml({ name, host: `${name}.test`, path: '/', service: 'web', annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('web', [backendPort]),
      secretYaml('e2e', 'htpasswd', { auth: htpasswd }),
      secretYaml('e2e', 'users', { alice: APR1, bob: SHA }),
      secretYaml('e2e', 'no-auth-key', { users: htpasswd }),
      secretYaml('vault', 'htpasswd', { auth: htpasswd }),
      site('file', { 'auth-type': 'basic', 'auth-secret': 'htpasswd', 'auth-realm': 'Team Area' }),
      site('qualified', { 'auth-type': 'basic', 'auth-secret': 'e2e/htpasswd' }),
      site('map', { 'auth-type': 'basic', 'auth-secret': 'users', 'auth-secret-type': 'auth-map' }),
      site('missing', { 'auth-type': 'basic', 'auth-secret': 'nope' }),
      site('nokey', { 'auth-type': 'basic', 'auth-secret': 'no-auth-key' }),
      site('cross', { 'auth-type': 'basic', 'auth-secret': 'vault/htpasswd' }),
      site('digest', { 'auth-type': 'digest', 'auth-secret': 'htpasswd' }),
      site('badtype', { 'auth-type': 'magic', 'auth-secret': 'htpasswd' }),
      site('open', {}),
      site('denied', {
        'auth-type': 'basic',
        'auth-secret': 'htpasswd',
        'denylist-source-range': '127.0.0.1/32',
      }),
      site('cors', { 'auth-type': 'basic', 'auth-secret': 'htpasswd', 'enable-cors': 'true' }),
    ].join(''),
  );
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  await t.test('the challenge', async (t) => {
    const reply = await fetch(port, 'file.test', '/x');
    t.equal(reply.status, 401);
    t.equal(reply.headers['www-authenticate'], 'Basic realm="Team Area"');
    t.match(reply.body, '<title>401 Authorization Required</title>');
    const qualified = await fetch(port, 'qualified.test', '/');
    t.equal(qualified.status, 401, 'namespace/name in the Ingress namespace');
    t.equal(qualified.headers['www-authenticate'], 'Basic realm=""', 'no auth-realm: an empty realm');
    const cors = await fetch(port, 'cors.test', '/', { origin: 'https://app.example' });
    t.equal(cors.status, 401);
    t.equal(cors.headers['access-control-allow-origin'], '*', 'the route response headers (CORS) on the 401');
    const denied = await fetch(port, 'denied.test', '/', basic('apr1', 'secret'));
    t.equal(denied.status, 403, 'denylist-source-range (access phase) answers before auth');
    t.equal((await fetch(port, 'denied.test', '/')).status, 403, 'also without credentials');
    t.equal(seen.length, 0, 'nothing reached the backend');
  });

  await t.test('each htpasswd format, right and wrong password', async (t) => {
    for (const user of ['bcrypt-y', 'bcrypt-b', 'apr1', 'sha', 'crypt']) {
      const before = seen.length;
      const ok = await fetch(port, 'file.test', '/x', basic(user, 'secret'));
      t.equal(ok.status, 200, `${user}: the right password`);
      t.equal(ok.body, 'app');
      t.equal(seen.length, before + 1);
      t.equal(seen.at(-1)?.authorization, undefined, `${user}: Authorization is not passed upstream`);
      const wrong = await fetch(port, 'file.test', '/x', basic(user, 'secreT'));
      t.equal(wrong.status, 401, `${user}: a wrong password`);
      t.equal(wrong.headers['www-authenticate'], 'Basic realm="Team Area"');
    }
    // bcrypt again: the cached verdicts give the same answers
    t.equal((await fetch(port, 'file.test', '/', basic('bcrypt-y', 'secret'))).status, 200);
    t.equal((await fetch(port, 'file.test', '/', basic('bcrypt-y', 'secreT'))).status, 401);
    t.equal((await fetch(port, 'file.test', '/', basic('nobody', 'secret'))).status, 401, 'unknown user');
    t.equal((await fetch(port, 'file.test', '/', { authorization: 'Bearer x' })).status, 401, 'not Basic');
  });

  await t.test(
    'a route with its own response headers (CORS) still keeps Authorization from the upstream',
    async (t) => {
      const before = seen.length;
      const ok = await fetch(port, 'cors.test', '/', {
        ...basic('apr1', 'secret'),
        origin: 'https://app.example',
      });
      t.equal(ok.status, 200);
      t.equal(ok.headers['access-control-allow-origin'], '*', 'the CORS headers on the proxied response');
      t.equal(seen.length, before + 1);
      t.equal(seen.at(-1)?.authorization, undefined, 'Authorization is not passed upstream');
    },
  );

  await t.test('auth-map: one key per user', async (t) => {
    t.equal((await fetch(port, 'map.test', '/', basic('alice', 'secret'))).status, 200);
    t.equal((await fetch(port, 'map.test', '/', basic('bob', 'secret'))).status, 200);
    t.equal((await fetch(port, 'map.test', '/', basic('bob', 'wrong'))).status, 401);
    t.equal((await fetch(port, 'map.test', '/', basic('carol', 'secret'))).status, 401);
  });

  await t.test('an unusable configuration answers 503, never an open route', async (t) => {
    const before = seen.length;
    for (const host of ['missing', 'nokey', 'cross', 'digest']) {
      const reply = await fetch(port, `${host}.test`, '/', basic('apr1', 'secret'));
      t.equal(reply.status, 503, host);
      t.match(reply.body, '503 Service Temporarily Unavailable');
    }
    t.equal(seen.length, before, 'nothing reached the backend');
    t.equal((await fetch(port, 'badtype.test', '/')).status, 404, 'a bad auth-type skips the Ingress');
    t.equal((await fetch(port, 'open.test', '/')).status, 200, 'an Ingress without auth is open');
  });

  await t.test('WebSocket upgrades are authenticated too', async (t) => {
    const open = (headers: Record<string, string>) =>
      new Promise<number | string>((resolve, reject) => {
        const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`, {
          headers: { host: 'file.test', ...headers },
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
    t.equal(await open({}), 401, 'no credentials');
    t.equal(await open(basic('apr1', 'wrong')), 401, 'a wrong password');
    t.equal(await open(basic('apr1', 'secret')), 'hello', 'the right password: tunnelled');
  });

  await t.test('/debug/model shows the auth settings, never the hashes', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const routes = Object.fromEntries(model.hosts.map((h) => [h.host, h.routes[0]]));
    t.strictSame(routes['file.test']?.auth, {
      basic: { type: 'basic', secret: 'e2e/htpasswd', secretType: 'auth-file', realm: 'Team Area', users: 5 },
    });
    t.match(routes['missing.test']?.auth, { denied: 'auth-secret e2e/nope does not exist' });
    t.equal(routes['open.test']?.auth, undefined);
    for (const hash of [APR1, CRYPT, SHA, bcryptHash.slice(7)]) t.notOk(reply.body.includes(hash), 'no hash');
  });
});
