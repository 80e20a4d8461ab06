// auth-tls-* (client certificate authentication) through the real proxy, over HTTP/1.1 and HTTP/2:
// a test PKI made with the openssl CLI (two CAs, an intermediate, clients), hosts with each
// verify-client mode, match-cn, error page, a denied host, and what the backend sees. Hosts without
// mTLS on the same listener send no CertificateRequest; two hosts with different CAs never accept
// each other's clients, and a request for an mTLS host under another SNI name is misdirected (421).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { withTestThreads } from '../support/threads.ts';

const run = promisify(execFile);

interface Pki {
  dir: string;
  pem(name: string): Promise<string>;
}

/** CAs a and b, an intermediate under a, clients (key + cert) and a self-signed one. */
async function makePki(dir: string): Promise<Pki> {
  const at = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  const ca = async (name: string) =>
    run('openssl', [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      at(`${name}.key`),
      '-out',
      at(`${name}.crt`),
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    ]);
  await ca('ca-a');
  await ca('ca-b');
  await writeFile(at('ca.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n');
  await writeFile(at('client.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
  const issue = async (name: string, subject: string, issuer: string, ext: string) => {
    await run('openssl', [
      'req',
      ...ec,
      '-keyout',
      at(`${name}.key`),
      '-out',
      at(`${name}.csr`),
      '-subj',
      subject,
    ]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at(`${issuer}.crt`),
      '-CAkey',
      at(`${issuer}.key`),
      '-CAcreateserial',
      '-out',
      at(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      at(ext),
    ]);
  };
  await issue('alice', '/C=US/O=Org, Inc/CN=alice', 'ca-a', 'client.ext');
  await issue('mallory', '/CN=mallory', 'ca-a', 'client.ext');
  await issue('bob', '/CN=bob', 'ca-b', 'client.ext');
  await issue('inter', '/CN=inter-a', 'ca-a', 'ca.ext');
  await issue('carol', '/CN=carol', 'inter', 'client.ext');
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    at('self.key'),
    '-out',
    at('self.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=self',
  ]);
  return { dir, pem: (name) => readFile(at(name), 'utf8') };
}

interface Answer {
  status: number;
  location: string | undefined;
  body: string;
  /** the ssl-client-* headers the backend saw, for proxied requests */
  seen: Record<string, string>;
}

interface Client {
  cert?: string;
  key?: string;
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

const parse = (status: number, location: string | undefined, body: string): Answer => {
  let seen: Record<string, string> = {};
  if (status === 200) seen = JSON.parse(body) as Record<string, string>;
  return { status, location, body, seen };
};

function h1(port: number, servername: string, host: string, client: Client, headers = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        port,
        host: '127.0.0.1',
        servername,
        path: '/',
        headers: { host, ...headers },
        rejectUnauthorized: false,
        agent: false,
        ...client,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve(parse(res.statusCode ?? 0, res.headers.location, body)));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function h2(port: number, servername: string, host: string, client: Client): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(`https://127.0.0.1:${port}`, {
      servername,
      rejectUnauthorized: false,
      ...client,
    });
    session.on('error', reject);
    const req = session.request({ ':path': '/', ':authority': host });
    let status = 0;
    let location: string | undefined;
    let body = '';
    req.on('response', (headers) => {
      status = Number(headers[':status']);
      location = headers.location as string | undefined;
    });
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      session.close();
      resolve(parse(status, location, body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** What `openssl s_client` reports about the CertificateRequest of a handshake with `servername`. */
async function caNamesAsked(port: number, servername: string): Promise<string> {
  const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', servername]);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stdin?.end();
  await new Promise((resolve) => child.on('close', resolve));
  if (out.includes('No client certificate CA names sent')) return 'none';
  const m = /Acceptable client certificate CA names\n([^\n]*)/.exec(out);
  return m === null ? 'unknown' : (m[1] ?? '').trim();
}

/** One HTTP/1.1 request on a raw TLS connection (optionally resuming `session`): status and resumption. */
function rawRequest(
  port: number,
  servername: string,
  client: Client,
  session?: Buffer,
): Promise<{ status: number; reused: boolean; session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    let ticket: Buffer | undefined;
    const socket = tlsConnect({
      port,
      host: '127.0.0.1',
      servername,
      rejectUnauthorized: false,
      ...client,
      ...(session === undefined ? {} : { session }),
    });
    socket.on('session', (value: Buffer) => {
      ticket = value;
    });
    let head = '';
    let reused = false;
    socket.setEncoding('utf8');
    socket.on('secureConnect', () => {
      reused = socket.isSessionReused();
      socket.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      head += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(head.slice(9, 12)), reused, session: ticket }));
  });
}

t.test('auth-tls: client certificates per host, HTTP/1.1 and HTTP/2', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-mtls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pki = await makePki(dir);
  const client = async (name: string): Promise<Client> => ({
    cert: await pki.pem(`${name}.crt`),
    key: await pki.pem(`${name}.key`),
  });
  const alice = await client('alice');
  const mallory = await client('mallory');
  const bob = await client('bob');
  const self = await client('self');
  const carol = await client('carol');
  // carol's chain: her certificate then the intermediate (the CA bundle has only ca-a)
  const carolChain = { cert: `${carol.cert}${await pki.pem('inter.crt')}`, key: carol.key };

  const echo = createServer((req, res) => {
    const seen: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (name.startsWith('ssl-client-')) seen[name] = String(value);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(seen));
  });
  const echoPort = await listen(echo);
  t.teardown(() => echo.close());

  const caSecret = (name: string, pem: string, namespace = 'e2e') =>
    `---\napiVersion: v1\nkind: Secret\nmetadata: { name: ${name}, namespace: ${namespace} }\ndata:\n  ca.crt: ${Buffer.from(pem).toString('base64')}\n`;
  const site = (name: string, annotations: Record<string, string>) =>
    ingressYaml({ name, host: `${name}.test`, service: 'echo', annotations });
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('echo', [echoPort]),
      caSecret('ca-a', await pki.pem('ca-a.crt')),
      caSecret('ca-b', await pki.pem('ca-b.crt')),
      site('on', { 'auth-tls-secret': 'ca-a', 'auth-tls-pass-certificate-to-upstream': 'true' }),
      site('b', { 'auth-tls-secret': 'e2e/ca-b' }),
      site('opt', { 'auth-tls-secret': 'ca-a', 'auth-tls-verify-client': 'optional' }),
      site('noca', { 'auth-tls-secret': 'ca-a', 'auth-tls-verify-client': 'optional_no_ca' }),
      site('cn', { 'auth-tls-secret': 'ca-a', 'auth-tls-match-cn': 'CN=(alice|carol)' }),
      site('cnredirect', {
        'auth-tls-secret': 'ca-a',
        'auth-tls-match-cn': 'CN=alice',
        'force-ssl-redirect': 'true',
      }),
      site('err', { 'auth-tls-secret': 'ca-a', 'auth-tls-error-page': 'https://errors.example/cert' }),
      site('deep', { 'auth-tls-secret': 'ca-a', 'auth-tls-verify-depth': '2' }),
      site('off', { 'auth-tls-secret': 'ca-a', 'auth-tls-verify-client': 'off' }),
      site('missing', { 'auth-tls-secret': 'nope' }),
      site('plain', {}),
    ].join(''),
  );
  // the resumption cases below offer TLS 1.3 sessions, which resume by ticket only (ingress-nginx's
  // default is no tickets: test/e2e/tls-sessions.test.ts)
  await writeFile(
    join(dir, 'config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: config, namespace: e2e }\ndata: ${JSON.stringify(withTestThreads({ 'ssl-session-tickets': 'true' }))}\n`,
  );
  const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.https.port;

  for (const [proto, send] of [
    ['HTTP/1.1', h1],
    ['HTTP/2', h2],
  ] as const) {
    const ask = (host: string, who: Client = {}, servername = host) => send(port, servername, host, who);
    t.test(`${proto}: a certificate of the host's CA → 200, the backend sees who it is`, async (t) => {
      const answer = await ask('on.test', alice);
      t.equal(answer.status, 200);
      t.equal(answer.seen['ssl-client-verify'], 'SUCCESS');
      t.equal(
        answer.seen['ssl-client-subject-dn'],
        'CN=alice,O=Org\\, Inc,C=US',
        'RFC 2253 order and escaping',
      );
      t.equal(answer.seen['ssl-client-issuer-dn'], 'CN=ca-a');
      t.equal(decodeURIComponent(answer.seen['ssl-client-cert'] ?? ''), alice.cert, 'the URL-escaped PEM');
      t.match(answer.seen['ssl-client-cert'], /^-----BEGIN%20CERTIFICATE-----%0A/);
    });
    t.test(`${proto}: on → no certificate, or one of another CA: 400 with NGINX's pages`, async (t) => {
      const none = await ask('on.test');
      t.equal(none.status, 400);
      t.match(none.body, '<title>400 No required SSL certificate was sent</title>');
      const other = await ask('on.test', bob);
      t.equal(other.status, 400);
      t.match(other.body, '<title>400 The SSL certificate error</title>');
      t.equal((await ask('on.test', self)).status, 400, 'a self-signed certificate');
    });
    t.test(`${proto}: two hosts with different CAs do not accept each other's clients`, async (t) => {
      t.equal((await ask('b.test', bob)).status, 200, "b's own client");
      t.equal((await ask('b.test', alice)).status, 400, "a's client on b");
      t.equal((await ask('on.test', bob)).status, 400, "b's client on a");
      t.equal((await ask('on.test', bob, 'b.test')).status, 421, 'verified for b.test, asking for on.test');
      t.equal((await ask('on.test', alice, 'plain.test')).status, 421, 'handshake for a host without mTLS');
      t.equal((await ask('on.test', alice, 'opt.test')).status, 421, 'handshake for another host, same CA');
      t.equal(
        (await ask('plain.test', alice, 'on.test')).status,
        200,
        'a host without mTLS, whatever the SNI',
      );
    });
    t.test(`${proto}: optional and optional_no_ca`, async (t) => {
      const none = await ask('opt.test');
      t.equal(none.status, 200);
      t.strictSame(none.seen, { 'ssl-client-verify': 'NONE' });
      t.equal((await ask('opt.test', alice)).seen['ssl-client-verify'], 'SUCCESS');
      t.equal((await ask('opt.test', bob)).status, 400, 'optional still refuses a certificate that fails');
      const foreign = await ask('noca.test', bob);
      t.equal(foreign.status, 200, 'optional_no_ca: a certificate of any CA passes');
      t.equal(foreign.seen['ssl-client-verify'], 'FAILED:unable to verify the first certificate');
      t.equal(foreign.seen['ssl-client-subject-dn'], 'CN=bob');
      t.equal((await ask('noca.test', self)).status, 200, 'optional_no_ca: self-signed passes');
      t.equal((await ask('noca.test')).seen['ssl-client-verify'], 'NONE');
      t.equal((await ask('noca.test', alice)).seen['ssl-client-verify'], 'SUCCESS');
    });
    t.test(`${proto}: match-cn, error page, depth, off, a denied host`, async (t) => {
      t.equal((await ask('cn.test', alice)).status, 200);
      const refused = await ask('cn.test', mallory);
      t.equal(refused.status, 403, 'a verified certificate whose CN does not match');
      t.equal(refused.body, 'client certificate unauthorized');
      const page = await ask('err.test');
      t.equal(page.status, 302);
      t.equal(page.location, 'https://errors.example/cert');
      t.equal((await ask('err.test', bob)).location, 'https://errors.example/cert');
      t.equal((await ask('err.test', alice)).status, 200);
      t.equal((await ask('on.test', carolChain)).status, 400, 'an intermediate is one too many at depth 1');
      const deep = await ask('deep.test', carolChain);
      t.equal(deep.status, 200, 'depth 2 accepts leaf → intermediate → CA');
      t.equal(deep.seen['ssl-client-issuer-dn'], 'CN=inter-a');
      t.strictSame((await ask('off.test', alice)).seen, { 'ssl-client-verify': 'NONE' }, 'off: never asked');
      t.equal((await ask('missing.test', alice)).status, 503, 'a missing Secret: 503, never open');
      t.equal((await ask('plain.test')).status, 200, 'a host without mTLS');
    });
  }

  t.test('clients cannot inject the ssl-client-* headers', async (t) => {
    const forged = {
      'ssl-client-verify': 'SUCCESS',
      'ssl-client-subject-dn': 'CN=admin',
      'ssl-client-issuer-dn': 'CN=ca-a',
      'ssl-client-cert': 'forged',
    };
    t.strictSame((await h1(port, 'plain.test', 'plain.test', {}, forged)).seen, {}, 'host without mTLS');
    t.strictSame((await h1(port, 'opt.test', 'opt.test', {}, forged)).seen, { 'ssl-client-verify': 'NONE' });
    const on = (await h1(port, 'on.test', 'on.test', alice, forged)).seen;
    t.equal(on['ssl-client-subject-dn'], 'CN=alice,O=Org\\, Inc,C=US');
  });

  t.test('only mTLS hosts send a CertificateRequest, naming only their own CA', async (t) => {
    t.equal(await caNamesAsked(port, 'plain.test'), 'none', 'a host without mTLS');
    t.equal(await caNamesAsked(port, 'off.test'), 'none', 'verify-client off');
    t.equal(await caNamesAsked(port, 'on.test'), 'CN = ca-a');
    t.equal(await caNamesAsked(port, 'b.test'), 'CN = ca-b');
  });

  t.test('resumed TLS sessions: the certificate is checked against the host of the resumption', async (t) => {
    const first = await rawRequest(port, 'on.test', alice);
    t.equal(first.status, 200);
    t.ok(first.session, 'the server issued a session ticket');
    const same = await rawRequest(port, 'on.test', {}, first.session);
    t.strictSame([same.reused, same.status], [true, 200], 'resumed on the same host: still alice');
    const other = await rawRequest(port, 'b.test', {}, first.session);
    t.equal(other.status, 400, "offered to b.test: alice's certificate never counts for b's CA");
    const refused = await rawRequest(port, 'on.test', bob);
    t.equal(refused.status, 400);
    const resumedBob = await rawRequest(port, 'on.test', {}, refused.session);
    t.strictSame([resumedBob.reused, resumedBob.status], [true, 400], 'a refused certificate stays refused');
    const carolFirst = await rawRequest(port, 'deep.test', carolChain);
    t.equal(carolFirst.status, 200);
    const carolAgain = await rawRequest(port, 'deep.test', {}, carolFirst.session);
    t.strictSame(
      [carolAgain.reused, carolAgain.status],
      [true, 200],
      'an intermediate-issued leaf verified before',
    );
    const tls12 = { ...alice, maxVersion: 'TLSv1.2' as const };
    const first12 = await rawRequest(port, 'on.test', tls12);
    const again12 = await rawRequest(port, 'on.test', { maxVersion: 'TLSv1.2' }, first12.session);
    t.strictSame(
      [first12.status, again12.reused, again12.status],
      [200, true, 200],
      'TLS 1.2 resumption too',
    );
    const plain = await rawRequest(port, 'plain.test', {});
    const again = await rawRequest(port, 'plain.test', {}, plain.session);
    t.equal(again.status, 200, 'hosts without mTLS are unaffected');
    const noCert = await rawRequest(port, 'on.test', {}, plain.session);
    t.equal(noCert.status, 400, 'a resumed session without a certificate has none');
  });

  t.test('plain HTTP: a denied host answers 503 there too', async (t) => {
    t.equal((await get(controller.http.port, 'missing.test', '/')).status, 503);
  });

  t.test('plain HTTP: match-cn answers 403 (an empty subject DN), before ssl-redirect', async (t) => {
    const cn = await get(controller.http.port, 'cn.test', '/');
    t.equal(cn.status, 403);
    t.equal(cn.body, 'client certificate unauthorized');
    t.equal(
      (await get(controller.http.port, 'cnredirect.test', '/')).status,
      403,
      'the server-level check runs before the location redirects to HTTPS',
    );
    t.equal((await get(controller.http.port, 'on.test', '/')).status, 200, 'without match-cn: no check');
    t.equal((await get(controller.http.port, 'plain.test', '/')).status, 200, 'a host without mTLS');
  });

  t.test('/debug/model shows the settings per host', async (t) => {
    const model = JSON.parse((await get(controller.healthz.port, 'localhost', '/debug/model')).body) as {
      hosts: Array<{ host: string; clientAuth?: Record<string, unknown> | null }>;
    };
    const host = (name: string) => model.hosts.find((h) => h.host === name);
    t.match(host('cn.test')?.clientAuth, {
      secret: 'e2e/ca-a',
      verifyClient: 'on',
      verifyDepth: 1,
      matchCN: 'CN=(alice|carol)',
      caCertificates: [{ subject: 'CN=ca-a' }],
    });
    t.match(host('missing.test')?.clientAuth, { secret: 'e2e/nope', denied: true });
    t.equal(host('plain.test')?.clientAuth, undefined);
  });
});
