// The ConfigMap's TLS handshake keys through the real HTTPS listener, with node:tls clients: session
// resumption by session ID (the cache) and by ticket, each on and off; the cache's size and timeout;
// a configured ticket key (rotated, restored, and shared with a second controller); ssl-ecdh-curve;
// ssl-dh-param (a DHE-only TLS 1.2 client); ssl-reject-handshake; an invalid value keeping the
// default. With INGRESS_TS_TEST_THREADS=2 the connections spread over two data-plane threads, so
// every resumption below is also one across threads.
import { getDiffieHellman, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect, type EphemeralKeyInfo } from 'node:tls';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';
import { dhParamPem } from '../support/tls-params.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const SITE = 'a.example.com';

interface Handshake {
  /** the status line's code, or the TLS error's code */
  result: number | string;
  reused: boolean;
  /** the last session the server gave (a ticket, or a session ID with its state) */
  session: Buffer | undefined;
  /** whether the server issued a ticket (TLS 1.2: the ticket itself; TLS 1.3 resumes by ticket only) */
  ticket: boolean;
  keyInfo: EphemeralKeyInfo | null;
}

interface ClientOptions {
  servername?: string;
  session?: Buffer;
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  ecdhCurve?: string;
  ciphers?: string;
}

/** One HTTP/1.1 request on a fresh TLS connection; resolves once the server closed it. */
function handshake(port: number, options: ClientOptions = {}): Promise<Handshake> {
  return new Promise((resolve) => {
    const { servername = SITE, ...rest } = options;
    const out: Handshake = { result: 0, reused: false, session: undefined, ticket: false, keyInfo: null };
    const socket = connect({
      port,
      host: '127.0.0.1',
      rejectUnauthorized: false,
      ...(servername === '' ? {} : { servername }),
      ...rest,
    });
    socket.on('session', (session: Buffer) => {
      out.session = session;
    });
    let head = '';
    socket.setEncoding('utf8');
    socket.on('secureConnect', () => {
      out.reused = socket.isSessionReused();
      out.ticket = socket.getTLSTicket() !== undefined;
      out.keyInfo = socket.getEphemeralKeyInfo() as EphemeralKeyInfo | null;
      socket.write(`GET / HTTP/1.1\r\nHost: ${SITE}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      head += chunk;
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      out.result = error.code ?? error.message;
    });
    socket.on('close', () => {
      if (out.result === 0) out.result = Number(head.slice(9, 12));
      resolve(out);
    });
  });
}

/** A first connection, then `times` resuming its session: how many resumed. */
async function resumptions(port: number, options: ClientOptions, times = 8): Promise<number> {
  const first = await handshake(port, options);
  let reused = 0;
  for (let i = 0; i < times; i++) {
    const again = await handshake(port, { ...options, session: first.session });
    if (again.result === 200 && again.reused) reused++;
  }
  return reused;
}

const quiet = () => createLogger('warn', new Writable({ write: (_chunk, _encoding, done) => done() }));

t.test('TLS handshake keys', async (t) => {
  const backend = createServer((req, res) => {
    req.resume();
    res.end('hello');
  });
  const backendPort = await listen(backend);
  t.teardown(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-tls-sessions-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pair = { crt: fixture('a-example.crt'), key: fixture('a-example.key') };
  const site = ingressYaml({ name: 'site', host: SITE, service: 'web' }).replace(
    '  rules:',
    `  tls: [{ hosts: [${SITE}], secretName: site-tls }]\n  rules:`,
  );
  await writeFile(
    join(dir, 'site.yaml'),
    `${INGRESS_CLASS}${serviceYaml('web', [backendPort])}---\n${tlsSecret('e2e', 'site-tls', pair)}${site}${ingressYaml({ name: 'plain', host: 'plain.test', service: 'web' })}`,
  );
  const dh = dhParamPem(getDiffieHellman('modp15'));
  await writeFile(
    join(dir, 'dh.yaml'),
    `apiVersion: v1\nkind: Secret\nmetadata: { name: dh, namespace: e2e }\ndata: { dhparam.pem: ${Buffer.from(dh).toString('base64')} }\n`,
  );
  const configYaml = (data: Record<string, string>) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: config, namespace: e2e }\ndata: ${JSON.stringify(withTestThreads(data))}\n`;
  await writeFile(join(dir, 'config.yaml'), configYaml({}));
  const startController = async (): Promise<Controller> => {
    const controller = await start(testConfig(dir, '--configmap', 'e2e/config'), quiet());
    t.teardown(() => controller.stop(0));
    return controller;
  };
  const controller = await startController();
  const port = controller.https.port;
  /** The ConfigMap's data becomes `data` (and the suite's worker-processes); resolves once served. */
  const configure = async (data: Record<string, string>) => {
    const swapped = nextSwap();
    await writeFile(join(dir, 'config.yaml'), configYaml(data));
    await swapped;
  };

  t.test("defaults (ingress-nginx's): TLS 1.2 resumes by session ID, no ticket is issued", async (t) => {
    const first = await handshake(port, { maxVersion: 'TLSv1.2' });
    t.strictSame([first.result, first.ticket], [200, false], 'a full handshake, no ticket');
    t.equal(await resumptions(port, { maxVersion: 'TLSv1.2' }), 8, 'every later connection resumes');
    const tls13 = await handshake(port);
    t.equal(tls13.result, 200);
    const again = await handshake(port, { session: tls13.session });
    t.strictSame(
      [again.result, again.reused],
      [200, false],
      'TLS 1.3 without tickets: no resumption (Node serves no stateful TLS 1.3 ticket)',
    );
  });

  t.test('ssl-session-cache false: no session ID resumption', async (t) => {
    await configure({ 'ssl-session-cache': 'false' });
    t.equal(await resumptions(port, { maxVersion: 'TLSv1.2' }), 0);
  });

  t.test('ssl-session-cache-size: the least recently used sessions leave a full cache', async (t) => {
    // a TLS 1.2 session of this certificate, its ID and the entry's overhead: about 300 bytes
    await configure({ 'ssl-session-cache-size': '1k' });
    const sessions: Array<Buffer | undefined> = [];
    for (let i = 0; i < 6; i++) sessions.push((await handshake(port, { maxVersion: 'TLSv1.2' })).session);
    const oldest = await handshake(port, { maxVersion: 'TLSv1.2', session: sessions[0] });
    const newest = await handshake(port, { maxVersion: 'TLSv1.2', session: sessions[5] });
    t.strictSame([oldest.reused, newest.reused], [false, true], 'the oldest is gone, the newest is kept');
  });

  t.test('ssl-session-timeout: a session is not resumed after it', async (t) => {
    await configure({ 'ssl-session-timeout': '1s' });
    const first = await handshake(port, { maxVersion: 'TLSv1.2' });
    const soon = await handshake(port, { maxVersion: 'TLSv1.2', session: first.session });
    t.equal(soon.reused, true, 'within the timeout');
    // no event marks a session's expiry: resume until it is refused (OpenSSL counts whole seconds, so
    // that is 1 to 2 s away); with the default timeout (10m) the loop runs out and the test fails
    const giveUp = performance.now() + 15_000;
    let late = soon;
    while (late.reused && performance.now() < giveUp) {
      late = await handshake(port, { maxVersion: 'TLSv1.2', session: first.session });
    }
    t.equal(late.reused, false, 'after it');
  });

  t.test('ssl-session-tickets true: tickets issued, TLS 1.2 and 1.3 resume by them', async (t) => {
    await configure({ 'ssl-session-tickets': 'true', 'ssl-session-cache': 'false' });
    const first = await handshake(port, { maxVersion: 'TLSv1.2' });
    t.equal(first.ticket, true, 'a ticket');
    t.equal(await resumptions(port, { maxVersion: 'TLSv1.2' }), 8, 'TLS 1.2');
    t.equal(await resumptions(port, {}), 8, 'TLS 1.3');
  });

  t.test('ssl-session-ticket-key: the key decides which tickets resume', async (t) => {
    const key1 = randomBytes(80).toString('base64');
    const key2 = randomBytes(48).toString('base64');
    await configure({ 'ssl-session-tickets': 'true', 'ssl-session-ticket-key': key1 });
    const first = await handshake(port);
    t.equal((await handshake(port, { session: first.session })).reused, true, 'resumes under its key');
    await configure({ 'ssl-session-tickets': 'true', 'ssl-session-ticket-key': key2 });
    t.equal((await handshake(port, { session: first.session })).reused, false, 'rotated: a full handshake');
    await configure({ 'ssl-session-tickets': 'true', 'ssl-session-ticket-key': key1 });
    t.equal((await handshake(port, { session: first.session })).reused, true, 'the key back: resumes again');
    // another controller reading the same ConfigMap: the ticket of one resumes on the other
    const other = await startController();
    const there = await handshake(other.https.port, { session: first.session });
    t.strictSame([there.result, there.reused], [200, true], 'a ticket of one instance resumes on another');
    await other.stop(0);
    await configure({ 'ssl-session-tickets': 'true' });
    t.equal(
      (await handshake(port, { session: first.session })).reused,
      false,
      'without the key: generated keys again',
    );
  });

  t.test('ssl-ecdh-curve: only the listed groups are offered', async (t) => {
    const before = await handshake(port, { ecdhCurve: 'X25519' });
    t.equal(before.keyInfo?.name, 'X25519', 'auto: X25519 is among them');
    await configure({ 'ssl-ecdh-curve': 'secp384r1' });
    const refused = await handshake(port, { ecdhCurve: 'X25519' });
    t.match(String(refused.result), /HANDSHAKE_FAILURE/, 'a client offering only X25519 fails');
    const chosen = await handshake(port, { ecdhCurve: 'X25519:secp384r1' });
    t.strictSame([chosen.result, chosen.keyInfo?.name], [200, 'secp384r1'], 'the configured group is used');
  });

  t.test('ssl-ecdh-curve: an unknown curve keeps the default', async (t) => {
    await configure({ 'ssl-ecdh-curve': 'X25519:no-such-curve', 'ssl-session-timeout': '11m' });
    const auto = await handshake(port, { ecdhCurve: 'X25519' });
    t.strictSame([auto.result, auto.keyInfo?.name], [200, 'X25519']);
  });

  t.test('ssl-dh-param: a DHE-only TLS 1.2 client gets the group of the Secret', async (t) => {
    const dhe = { maxVersion: 'TLSv1.2' as const, ciphers: 'DHE-RSA-AES128-GCM-SHA256' };
    const without = await handshake(port, dhe);
    t.match(String(without.result), /HANDSHAKE_FAILURE/, 'no DH parameters: no DHE cipher');
    await configure({ 'ssl-dh-param': 'e2e/dh' });
    const with3072 = await handshake(port, dhe);
    t.strictSame([with3072.result, with3072.keyInfo?.type, with3072.keyInfo?.size], [200, 'DH', 3072]);
  });

  t.test('ssl-reject-handshake: names no server has (or none) get no certificate', async (t) => {
    t.equal(
      (await handshake(port, { servername: 'unknown.test' })).result,
      200,
      'off: the default certificate',
    );
    await configure({ 'ssl-reject-handshake': 'true' });
    t.match(String((await handshake(port, { servername: 'unknown.test' })).result), /HANDSHAKE_FAILURE/);
    t.match(String((await handshake(port, { servername: '' })).result), /HANDSHAKE_FAILURE/, 'no SNI');
    t.equal((await handshake(port)).result, 200, 'a host with its certificate');
    t.equal(
      (await handshake(port, { servername: 'plain.test' })).result,
      200,
      'a host without one: the default certificate, as NGINX serves its server block',
    );
  });
});
