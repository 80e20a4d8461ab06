// ssl-passthrough with --enable-ssl-passthrough through the running proxy: a TLS backend with its own
// certificate (test/fixtures/backend-tls) behind a passthrough host. A client naming that host sees
// the backend's certificate and answer (HTTP/1.1, and HTTP/2 by the backend's ALPN); other hosts keep
// ingress-ts's certificate and routing (HTTP/1.1 and HTTP/2 after the peek); plain HTTP to the
// passthrough host is routed by its paths; no endpoints closes the connection; a refusing endpoint
// is skipped; a swap removing the annotation changes new connections but not an open tunnel; a
// non-TLS client and a stalled half ClientHello are closed; the stop cuts tunnels last. Without the
// flag the host is terminated as usual, with the SSL_PASSTHROUGH_DISABLED diagnostic.

import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createSecureServer, type Http2SecureServer, connect as http2Connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { type AddressInfo, createServer as createNetServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import t, { type Test } from 'tap';
import { createLogger } from '../../lib/log.ts';
import { type Controller, start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { echoBackend, seenBy } from '../support/echo.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { planeStats } from '../support/plane.ts';
import { nextSwap } from '../support/swaps.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

const fixture = (name: string) =>
  readFile(new URL(`../fixtures/backend-tls/${name}`, import.meta.url), 'utf8');
const backendCa = await fixture('ca.crt');
const backendPair = { key: await fixture('backend.key'), cert: await fixture('backend.crt') };
/** the passthrough host is the backend's own name, so clients verify its certificate fully */
const PASS = 'backend.internal';

/** A TLS backend offering h2 and http/1.1, answering `<name> <HTTP version> <path>`. */
async function tlsBackend(t: Test, name: string): Promise<{ server: Http2SecureServer; port: number }> {
  const server = createSecureServer({ ...backendPair, allowHTTP1: true }, (req, res) => {
    res.end(`${name} ${req.httpVersion} ${req.url}`);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const sessions = new Set<{ destroy(): void }>();
  server.on('session', (session) => sessions.add(session));
  server.on('secureConnection', (socket) => sessions.add(socket));
  t.teardown(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** A port nothing listens on (bound, then closed): connections to it are refused. */
async function refusingPort(): Promise<number> {
  const server = createNetServer();
  const port = await listen(server as never);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Handshake {
  subject: string;
  alpn: string | false | null;
  socket: TLSSocket;
}

/** A TLS connection to the proxy's HTTPS port naming `servername`, trusting the backend CA. */
async function handshake(port: number, servername: string, alpn = ['http/1.1']): Promise<Handshake> {
  const socket = tlsConnect({
    port,
    host: '127.0.0.1',
    servername,
    ALPNProtocols: alpn,
    ca: backendCa,
    rejectUnauthorized: false,
  });
  await once(socket, 'secureConnect');
  return { subject: socket.getPeerCertificate().subject.CN as string, alpn: socket.alpnProtocol, socket };
}

/** One HTTP/1.1 request on an open TLS socket (kept open); resolves with the response body. */
function requestOn(socket: TLSSocket, host: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text);
      if (head !== -1 && length !== null && text.length >= head + 4 + Number(length[1])) {
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve(text.slice(head + 4, head + 4 + Number(length[1])));
      }
    };
    const onClose = (): void => reject(new Error(`closed before the response: ${JSON.stringify(text)}`));
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  });
}

/** A request over HTTPS (its own connection) to the proxy: ingress-ts's answer and certificate. */
async function httpsGet(
  port: number,
  servername: string,
  path: string,
): Promise<{ subject: string; body: string }> {
  const req = httpsRequest({
    port,
    host: '127.0.0.1',
    servername,
    path,
    headers: { host: servername },
    agent: false,
    rejectUnauthorized: false,
  });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const subject = (res.socket as TLSSocket).getPeerCertificate().subject.CN as string;
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { subject, body };
}

/** Resolves once the connection to the proxy closes without a TLS session; the error code if any. */
async function closedBeforeHandshake(port: number, servername: string): Promise<string> {
  const socket = tlsConnect({ port, host: '127.0.0.1', servername, rejectUnauthorized: false });
  let secure = false;
  socket.once('secureConnect', () => {
    secure = true;
  });
  const [error] = (await Promise.race([once(socket, 'error'), once(socket, 'close')])) as [unknown];
  socket.destroy();
  if (secure) return 'handshake completed';
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'closed';
}

async function h2Get(
  port: number,
  servername: string,
  path: string,
): Promise<{ body: string; subject: string }> {
  const session = http2Connect(`https://127.0.0.1:${port}`, {
    servername,
    ca: backendCa,
    rejectUnauthorized: false,
  });
  try {
    const request = session.request({ ':path': path, ':authority': servername });
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    await once(request, 'end');
    const socket = session.socket as TLSSocket;
    return { body, subject: socket.getPeerCertificate().subject.CN as string };
  } finally {
    session.close();
  }
}

interface Setup {
  dir: string;
  write(passthrough: boolean): Promise<void>;
  controller: Controller;
  https: number;
  http: number;
  /** GET a.example.com/slow is answered once release() is called */
  slow: { arrived: Promise<void>; release(): void };
}

async function setUp(t: Test, flags: string[]): Promise<Setup> {
  const a = await tlsBackend(t, 'backend-a');
  const b = await tlsBackend(t, 'backend-b');
  const refused = await refusingPort();
  // the echo backend, whose /slow is held until slow.release() (a request in flight during a stop)
  const echo = echoBackend('web');
  let arrived: () => void = () => {};
  let release: () => void = () => {};
  const slowArrived = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const web = createHttpServer((req, res) => {
    if (req.url !== '/slow') {
      echo.emit('request', req, res);
      return;
    }
    arrived();
    void released.then(() => res.end('slow done'));
  });
  const webPort = await listen(web);
  t.teardown(() => {
    web.closeAllConnections();
    web.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-passthrough-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const write = (passthrough: boolean) => {
    const on: Record<string, string> = passthrough ? { 'ssl-passthrough': 'true' } : {};
    return writeFile(
      join(dir, 'all.yaml'),
      [
        INGRESS_CLASS,
        `---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: e2e }\ndata: { ${TEST_THREADS_ENTRY}client-header-timeout: "1" }\n`,
        `---\n${tlsSecret('e2e', 'a-tls', pem('a-example'))}`,
        serviceYaml('tls-a', [a.port]),
        serviceYaml('tls-failover', [refused, b.port]),
        serviceYaml('none', []),
        serviceYaml('web', [webPort]),
        ingressYaml({ name: 'pass', host: PASS, service: 'tls-a', annotations: on }),
        // the same host's plain-HTTP path, from an Ingress without the annotation
        ingressYaml({ name: 'pass-plain', host: PASS, path: '/plain', service: 'web' }),
        ingressYaml({ name: 'failover', host: 'failover.test', service: 'tls-failover', annotations: on }),
        ingressYaml({ name: 'empty', host: 'empty.test', service: 'none', annotations: on }),
        ingressYaml({ name: 'site', host: 'a.example.com', service: 'web' }).replace(
          '  rules:',
          '  tls: [{ hosts: [a.example.com], secretName: a-tls }]\n  rules:',
        ),
      ].join(''),
    );
  };
  await write(true);
  const controller = await start(
    testConfig(dir, '--configmap', 'e2e/ingress-ts', ...flags),
    createLogger('silent'),
  );
  t.teardown(() => controller.stop(0));
  return {
    dir,
    write,
    controller,
    https: controller.https.port,
    http: controller.http.port,
    slow: { arrived: slowArrived, release },
  };
}

t.test('with --enable-ssl-passthrough', async (t) => {
  const s = await setUp(t, ['--enable-ssl-passthrough']);

  await t.test('the passthrough host: the backend terminates TLS, HTTP/1.1 and HTTP/2', async (t) => {
    const h1 = await handshake(s.https, PASS);
    t.equal(h1.subject, 'backend.internal', "the backend's certificate");
    t.equal(h1.socket.authorized, true, 'verified against the backend CA, for the backend name');
    t.equal(await requestOn(h1.socket, PASS, '/x'), 'backend-a 1.1 /x');
    h1.socket.destroy();
    const h2 = await h2Get(s.https, PASS, '/h2');
    t.strictSame(h2, { body: 'backend-a 2.0 /h2', subject: 'backend.internal' }, 'h2 chosen by the backend');
    const upper = await handshake(s.https, 'Backend.Internal.');
    t.equal(upper.subject, 'backend.internal', 'SNI matched as host names are (case, trailing dot)');
    upper.socket.destroy();
  });

  await t.test("another host keeps ingress-ts's certificate and routing, over h1 and h2", async (t) => {
    const h1 = await httpsGet(s.https, 'a.example.com', '/y');
    t.equal(h1.subject, 'a.example.com');
    t.equal(JSON.parse(h1.body).url, '/y');
    const h2 = await h2Get(s.https, 'a.example.com', '/z');
    t.equal(h2.subject, 'a.example.com');
    t.equal(JSON.parse(h2.body).name, 'web');
    const unnamed = await handshake(s.https, '');
    t.not(unnamed.subject, 'backend.internal', 'no SNI: not passed through');
    unnamed.socket.destroy();
  });

  await t.test('plain HTTP to the passthrough host is routed by its paths', async (t) => {
    const reply = await get(s.http, PASS, '/plain/p');
    t.equal(reply.status, 200);
    t.equal(seenBy(reply).url, '/plain/p');
  });

  await t.test('no endpoints: the connection is closed', async (t) => {
    t.not(await closedBeforeHandshake(s.https, 'empty.test'), 'handshake completed');
  });

  await t.test('a refusing endpoint is skipped: every connection reaches the other one', async (t) => {
    // round-robin starts each connection at the next endpoint: of two, one starts at the refusing one
    for (const i of [1, 2, 3]) {
      const c = await handshake(s.https, 'failover.test');
      t.equal(c.subject, 'backend.internal', `connection ${i}`);
      t.equal(await requestOn(c.socket, 'failover.test', '/'), 'backend-b 1.1 /');
      c.socket.destroy();
    }
  });

  await t.test('a non-TLS client and a stalled half ClientHello are closed', async (t) => {
    const { accepted } = await planeStats(s.controller.handle);
    const plain = netConnect({ port: s.https, host: '127.0.0.1' });
    plain.end('GET / HTTP/1.1\r\nHost: backend.internal\r\n\r\n');
    plain.resume();
    await once(plain, 'close');
    t.pass('a plain HTTP request on the HTTPS port: closed (failed TLS handshake)');

    const stalled = netConnect({ port: s.https, host: '127.0.0.1' });
    // a record announcing 512 bytes of ClientHello, then nothing (client-header-timeout is 1 s)
    stalled.write(Buffer.from([22, 3, 1, 2, 0, 1, 0, 1, 252, 3, 3]));
    stalled.resume();
    const started = Date.now();
    await once(stalled, 'close');
    const elapsed = Date.now() - started;
    t.ok(elapsed >= 900 && elapsed < 5000, `closed after client-header-timeout (${elapsed} ms)`);
    t.equal((await planeStats(s.controller.handle)).accepted - accepted, 2, 'both connections were counted');
    // still serving
    const after = await handshake(s.https, PASS);
    t.equal(after.subject, 'backend.internal', 'still serving');
    after.socket.destroy();
  });

  await t.test(
    'a swap removing the annotation: new connections terminate, an open tunnel stays',
    async (t) => {
      const open = await handshake(s.https, PASS);
      t.equal(await requestOn(open.socket, PASS, '/before'), 'backend-a 1.1 /before');
      const swapped = nextSwap();
      await s.write(false);
      await swapped;
      const fresh = await handshake(s.https, PASS);
      t.not(fresh.subject, 'backend.internal', "a new connection gets ingress-ts's certificate");
      fresh.socket.destroy();
      t.equal(
        await requestOn(open.socket, PASS, '/after'),
        'backend-a 1.1 /after',
        'the open tunnel still works',
      );
      const back = nextSwap();
      await s.write(true);
      await back;
      const again = await handshake(s.https, PASS);
      t.equal(again.subject, 'backend.internal', 'and passes through again when it comes back');
      again.socket.destroy();
      open.socket.destroy();
    },
  );

  await t.test('/debug/model lists the passthrough hosts', async (t) => {
    const reply = await get(s.controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as { hosts: Array<{ host: string; passthrough?: unknown }> };
    const pass = model.hosts.find((h) => h.host === PASS);
    t.match(pass?.passthrough, { ingress: 'e2e/pass', backend: 'e2e-tls-a-80', endpoints: [`127.0.0.1:`] });
    t.notOk(model.hosts.find((h) => h.host === 'a.example.com')?.passthrough, 'other hosts: none');
  });

  await t.test('stop: a tunnel lasts while requests drain, and is cut last', async (t) => {
    const open = await handshake(s.https, PASS);
    t.equal(await requestOn(open.socket, PASS, '/'), 'backend-a 1.1 /');
    let tunnelClosedAt = 0;
    const closed = once(open.socket, 'close').then(() => {
      tunnelClosedAt = Date.now();
    });
    const slow = httpsGet(s.https, 'a.example.com', '/slow');
    await s.slow.arrived;
    const stopped = s.controller.stop(0, 10_000);
    t.equal(
      await requestOn(open.socket, PASS, '/during'),
      'backend-a 1.1 /during',
      'the tunnel works while draining',
    );
    t.equal(tunnelClosedAt, 0, 'still open');
    s.slow.release();
    t.equal((await slow).body, 'slow done', 'the request in flight finished');
    const slowDoneAt = Date.now();
    await closed;
    await stopped;
    t.ok(tunnelClosedAt >= slowDoneAt, 'the tunnel was closed after the drain');
  });
});

t.test('without --enable-ssl-passthrough: the host is terminated as usual, with a diagnostic', async (t) => {
  const s = await setUp(t, []);
  const c = await httpsGet(s.https, PASS, '/plain/x');
  t.not(c.subject, 'backend.internal', "ingress-ts's (default) certificate");
  t.equal(JSON.parse(c.body).url, '/plain/x', 'routed by the paths');
  const reply = await get(s.controller.healthz.port, 'localhost', '/debug/model');
  const model = JSON.parse(reply.body) as { diagnostics: Record<string, Array<{ code: string }>> };
  t.match(model.diagnostics['Ingress e2e/pass'], [{ code: 'SSL_PASSTHROUGH_DISABLED' }]);
});
