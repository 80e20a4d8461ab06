// use-proxy-protocol through the running proxy: the PROXY header's client (v1 and v2; TCP4, TCP6,
// with TLVs) is the client everywhere: X-Forwarded-For, X-Real-IP, X-Forwarded-Port (the header's
// destination port), the access log's remote_addr and an allow-list; LOCAL and UNKNOWN keep the
// socket's address. A connection without a header, with a malformed one, or with one that does not
// arrive within proxy-protocol-header-timeout is closed without a byte of answer; a header split across
// writes works. HTTPS after the header (SNI picks the certificate and the route; HTTP/1.1 and h2), the
// precedence against enable-real-ip / use-forwarded-headers / proxy-real-ip-cidr after swaps, the key
// switched off again, and ssl-passthrough (the header, then the ClientHello peeked at and relayed).
// Runs in thread mode too (INGRESS_TS_TEST_THREADS=2): each thread reads the headers of its connections.

import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createSecureServer, connect as http2Connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import t, { type Test } from 'tap';
import { encodeProxyV1, encodeProxyV2 } from '../../lib/dataplane/listening/proxy-protocol.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { echoBackend, type Reply, type Seen } from '../support/echo.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { parseNginxLine } from '../support/nginx-log-line.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const CLIENT = { address: '203.0.113.7', port: 50000 };
const BALANCER_FRONT = { address: '198.51.100.1', port: 8443 };
const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

/** A v2 header of this command/family byte pair and body. */
function v2(versionCommand: number, familyTransport: number, body: Buffer): Buffer {
  const fixed = Buffer.from([versionCommand, familyTransport, body.length >> 8, body.length & 0xff]);
  return Buffer.concat([SIGNATURE, fixed, body]);
}

/** Connects and writes `header` (in `parts` writes, each waiting for the previous one to be sent). */
async function openWith(port: number, header: Buffer | string, parts = 1): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const bytes = Buffer.from(header);
  const step = Math.ceil(bytes.length / parts);
  for (let at = 0; at < bytes.length; at += step) {
    await new Promise<void>((resolve) => socket.write(bytes.subarray(at, at + step), () => resolve()));
  }
  return socket;
}

/** An HTTP/1.1 request on a connection that starts with `header`. */
async function viaHeader(
  port: number,
  header: Buffer | string,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  parts = 1,
): Promise<Reply> {
  const socket = await openWith(port, header, parts);
  const req = httpRequest({ path, headers: { host, ...headers }, createConnection: () => socket });
  req.end();
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

/** TLS (SNI `servername`) on a connection that starts with `header`. */
async function tlsAfter(port: number, header: Buffer | string, servername: string, alpn: string[]) {
  const raw = await openWith(port, header);
  const socket = tlsConnect({ socket: raw, servername, ALPNProtocols: alpn, rejectUnauthorized: false });
  await once(socket, 'secureConnect');
  return socket;
}

const subjectOf = (socket: TLSSocket) => socket.getPeerCertificate().subject.CN as string;

/** What a connection that starts with `bytes` receives before the proxy closes it. */
async function answerTo(port: number, bytes: Buffer | string): Promise<string> {
  const socket = await openWith(port, bytes);
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return received;
}

const seen = (reply: Reply): Seen => JSON.parse(reply.body) as Seen;
const clientOf = (reply: Reply) => {
  const h = seen(reply).headers;
  return {
    status: reply.status,
    xff: h['x-forwarded-for'],
    realIp: h['x-real-ip'],
    port: h['x-forwarded-port'],
  };
};

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: ingress }
data: ${JSON.stringify(withTestThreads(data))}
`;

async function site(t: Test, data: Record<string, string>, flags: string[] = [], extra: string[] = []) {
  const web = echoBackend('web');
  const webPort = await listen(web);
  t.teardown(() => {
    web.closeAllConnections();
    web.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-proxy-protocol-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'routes.yaml'),
    [
      INGRESS_CLASS,
      `---\n${tlsSecret('e2e', 'a-tls', pem('a-example'))}`,
      serviceYaml('web', [webPort]),
      ingressYaml({ name: 'web', host: 'web.test', service: 'web' }),
      ingressYaml({
        name: 'allow',
        host: 'allow.test',
        service: 'web',
        annotations: { 'allowlist-source-range': '203.0.113.0/24' },
      }),
      ingressYaml({ name: 'tls', host: 'a.example.com', service: 'web' }).replace(
        '  rules:',
        '  tls: [{ hosts: [a.example.com], secretName: a-tls }]\n  rules:',
      ),
      ...extra,
    ].join(''),
  );
  await writeFile(join(dir, 'config.yaml'), configMap(data));
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(line);
      sink.emit('lines');
      callback();
    },
  });
  const controller = await start(
    testConfig(dir, '--configmap', 'ingress/ingress-ts', ...flags),
    createLogger('silent'),
    { accessLogStdout: sink },
  );
  t.teardown(() => controller.stop(0));
  return {
    http: controller.http.port,
    https: controller.https.port,
    /** the first access log line with all of `parts` */
    async logLine(...parts: string[]): Promise<string> {
      for (;;) {
        const line = lines.find((l) => parts.every((p) => l.includes(p)));
        if (line !== undefined) return line;
        await once(sink, 'lines');
      }
    },
    async config(next: Record<string, string>): Promise<void> {
      const swapped = nextSwap();
      await writeFile(join(dir, 'config.yaml'), configMap(next));
      await swapped;
    },
  };
}

const ON = { 'use-proxy-protocol': 'true', 'proxy-protocol-header-timeout': '300ms' };

t.test('use-proxy-protocol on the HTTP and HTTPS listeners', async (t) => {
  const s = await site(t, ON);
  const v1 = encodeProxyV1(CLIENT, BALANCER_FRONT);

  await t.test('v1 TCP4: the client everywhere, X-Forwarded-Port from the header', async (t) => {
    const reply = await viaHeader(s.http, v1, 'web.test', '/v1', { 'x-forwarded-for': '9.9.9.9' });
    t.strictSame(clientOf(reply), { status: 200, xff: '203.0.113.7', realIp: '203.0.113.7', port: '8443' });
    t.equal(
      parseNginxLine(await s.logLine(' /v1 ')).remote_addr,
      '203.0.113.7',
      "the access log's remote_addr",
    );
  });

  await t.test('v2 TCP4 and TCP6 with TLVs', async (t) => {
    const v4 = encodeProxyV2(CLIENT, BALANCER_FRONT);
    t.strictSame(clientOf(await viaHeader(s.http, v4, 'web.test', '/v2')), {
      status: 200,
      xff: '203.0.113.7',
      realIp: '203.0.113.7',
      port: '8443',
    });
    // TCP6, then an AWS-style TLV (vpce id) and a NOOP the parser skips
    const six = encodeProxyV2({ address: '2001:db8::42', port: 1234 }, { address: '2001:db8::1', port: 80 });
    const tlvs = Buffer.from([0xea, 0x00, 0x05, 0x01, 0x76, 0x70, 0x63, 0x65, 0x04, 0x00, 0x01, 0x00]);
    const withTlvs = v2(0x21, 0x21, Buffer.concat([six.subarray(16), tlvs]));
    t.strictSame(clientOf(await viaHeader(s.http, withTlvs, 'web.test', '/v2-tlv')), {
      status: 200,
      xff: '2001:db8::42',
      realIp: '2001:db8::42',
      port: '80',
    });
    t.equal(parseNginxLine(await s.logLine(' /v2-tlv ')).remote_addr, '2001:db8::42');
  });

  await t.test("LOCAL and UNKNOWN: the socket's own address and port", async (t) => {
    for (const [name, header] of [
      ['v2 LOCAL', v2(0x20, 0x00, Buffer.alloc(0))],
      ['v1 UNKNOWN', 'PROXY UNKNOWN\r\n'],
    ] as const) {
      t.strictSame(
        clientOf(await viaHeader(s.http, header, 'web.test', '/local')),
        { status: 200, xff: '127.0.0.1', realIp: '127.0.0.1', port: String(s.http) },
        name,
      );
    }
  });

  await t.test("the allow-list judges the header's client", async (t) => {
    t.equal((await viaHeader(s.http, v1, 'allow.test', '/')).status, 200, '203.0.113.7 is listed');
    const other = encodeProxyV1({ address: '192.0.2.9', port: 1 }, BALANCER_FRONT);
    t.equal((await viaHeader(s.http, other, 'allow.test', '/')).status, 403, '192.0.2.9 is not');
  });

  await t.test(
    'one header per connection: every request of a keep-alive connection has its client',
    async (t) => {
      const requests =
        'GET /ka1 HTTP/1.1\r\nHost: web.test\r\n\r\nGET /ka2 HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n';
      const answer = await answerTo(s.http, Buffer.concat([v1, Buffer.from(requests)]));
      const bodies = [...answer.matchAll(/\{"method".*?"name":"web"\}/g)].map(
        (m) => JSON.parse(m[0]) as Seen,
      );
      t.strictSame(
        bodies.map((b) => [b.url, b.headers['x-forwarded-for']]),
        [
          ['/ka1', '203.0.113.7'],
          ['/ka2', '203.0.113.7'],
        ],
      );
    },
  );

  await t.test('a header split across writes', async (t) => {
    const reply = await viaHeader(s.http, encodeProxyV2(CLIENT, BALANCER_FRONT), 'web.test', '/split', {}, 3);
    t.equal(clientOf(reply).xff, '203.0.113.7');
    const line = await viaHeader(s.http, v1, 'web.test', '/split1', {}, 4);
    t.equal(clientOf(line).xff, '203.0.113.7');
  });

  await t.test('no header, a malformed one or a late one: closed without an answer', async (t) => {
    const cases: [string, Buffer | string][] = [
      ['a plain GET', 'GET / HTTP/1.1\r\nHost: web.test\r\n\r\n'],
      [
        'a bad v2 signature',
        Buffer.concat([Buffer.from('0d0a0d0a000d0a51554954ff', 'hex'), Buffer.alloc(16)]),
      ],
      ['an over-long v1 line', `PROXY UNKNOWN ${'x'.repeat(100)}\r\nGET / HTTP/1.1\r\n\r\n`],
      ['a bad address', 'PROXY TCP4 203.0.113.700 10.0.0.1 1 2\r\nGET / HTTP/1.1\r\n\r\n'],
      ['a TCP6 header with a TCP4 block', v2(0x21, 0x21, Buffer.alloc(12))],
      ['an incomplete header (the timeout)', 'PROXY TCP4 203.0.113.7 '],
    ];
    for (const [name, bytes] of cases) t.equal(await answerTo(s.http, bytes), '', name);
    t.equal(await answerTo(s.https, 'PROXY TCP4 203.0.113.7 '), '', 'HTTPS: an incomplete header');
  });

  await t.test('HTTPS after the header: SNI picks the certificate and the route; h1 and h2', async (t) => {
    const socket = await tlsAfter(s.https, v1, 'a.example.com', ['http/1.1']);
    t.equal(subjectOf(socket), 'a.example.com');
    const req = httpsRequest({
      path: '/tls',
      headers: { host: 'a.example.com' },
      createConnection: () => socket,
    });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);
    const h1 = clientOf({ status: res.statusCode ?? 0, headers: res.headers, body });
    t.strictSame(h1, { status: 200, xff: '203.0.113.7', realIp: '203.0.113.7', port: '8443' }, 'HTTP/1.1');

    const h2Socket = await tlsAfter(s.https, encodeProxyV2(CLIENT, BALANCER_FRONT), 'a.example.com', ['h2']);
    const session = http2Connect('https://a.example.com', { createConnection: () => h2Socket });
    t.teardown(() => session.close());
    const stream = session.request({ ':path': '/h2', ':authority': 'a.example.com' });
    let h2Body = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      h2Body += chunk;
    });
    await once(stream, 'end');
    const headers = (JSON.parse(h2Body) as Seen).headers;
    t.strictSame([headers['x-forwarded-for'], headers['x-forwarded-port']], ['203.0.113.7', '8443'], 'h2');
    t.equal(parseNginxLine(await s.logLine(' /h2 ')).remote_addr, '203.0.113.7');
  });

  await t.test('precedence: enable-real-ip, use-forwarded-headers, proxy-real-ip-cidr', async (t) => {
    const xff = { 'x-forwarded-for': '9.9.9.9' };
    const ask = async () => clientOf(await viaHeader(s.http, v1, 'web.test', '/who', xff)).realIp;
    await s.config({ ...ON, 'enable-real-ip': 'true' });
    t.equal(await ask(), '203.0.113.7', "enable-real-ip: the header's client, forwarded-for not read");
    await s.config({ ...ON, 'use-forwarded-headers': 'true' });
    t.equal(
      await ask(),
      '9.9.9.9',
      "use-forwarded-headers: the header's client is trusted, the chain is read",
    );
    await s.config({ ...ON, 'use-forwarded-headers': 'true', 'proxy-real-ip-cidr': '127.0.0.1/32' });
    t.equal(await ask(), '203.0.113.7', "the header's client is not a trusted proxy: it is the client");
    await s.config({ ...ON, 'proxy-real-ip-cidr': '10.0.0.0/8' });
    const untrusted = clientOf(await viaHeader(s.http, v1, 'web.test', '/who', xff));
    t.strictSame(
      [untrusted.realIp, untrusted.port],
      ['127.0.0.1', '8443'],
      'a balancer outside proxy-real-ip-cidr does not name the client (its port still counts)',
    );
  });

  await t.test('switched off: plain requests again, a PROXY line is a bad request', async (t) => {
    await s.config({});
    const plain = await viaHeader(s.http, '', 'web.test', '/plain');
    t.equal(clientOf(plain).xff, '127.0.0.1');
    t.match(
      await answerTo(s.http, `${v1.toString()}GET / HTTP/1.1\r\nHost: web.test\r\n\r\n`),
      /^HTTP\/1\.1 400/,
    );
  });
});

t.test('use-proxy-protocol with ssl-passthrough: the header, then the ClientHello', async (t) => {
  const fixture = (name: string) =>
    readFile(new URL(`../fixtures/backend-tls/${name}`, import.meta.url), 'utf8');
  const backend = createSecureServer(
    { key: await fixture('backend.key'), cert: await fixture('backend.crt'), allowHTTP1: true },
    (req, res) => res.end(`backend ${req.url}`),
  );
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  const sockets = new Set<Socket>();
  backend.on('secureConnection', (socket: Socket) => sockets.add(socket));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    backend.close();
  });
  const s = await site(
    t,
    ON,
    ['--enable-ssl-passthrough'],
    [
      serviceYaml('tls-backend', [(backend.address() as AddressInfo).port]),
      ingressYaml({
        name: 'pass',
        host: 'backend.internal',
        service: 'tls-backend',
        annotations: { 'ssl-passthrough': 'true' },
      }),
    ],
  );
  const v1 = encodeProxyV1(CLIENT, BALANCER_FRONT);

  await t.test('a passthrough host: relayed to the backend, which terminates TLS', async (t) => {
    const socket = await tlsAfter(s.https, v1, 'backend.internal', ['http/1.1']);
    t.equal(subjectOf(socket), 'backend.internal', "the backend's certificate");
    const req = httpsRequest({
      path: '/x',
      headers: { host: 'backend.internal' },
      createConnection: () => socket,
    });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);
    t.equal(body, 'backend /x');
  });

  await t.test('another host: terminated here, the header names the client', async (t) => {
    const socket = await tlsAfter(s.https, encodeProxyV2(CLIENT, BALANCER_FRONT), 'a.example.com', [
      'http/1.1',
    ]);
    t.equal(subjectOf(socket), 'a.example.com');
    const req = httpsRequest({
      path: '/t',
      headers: { host: 'a.example.com' },
      createConnection: () => socket,
    });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);
    t.equal((JSON.parse(body) as Seen).headers['x-forwarded-for'], '203.0.113.7');
  });

  await t.test('no header before the ClientHello: closed', async (t) => {
    const socket = tlsConnect({
      port: s.https,
      host: '127.0.0.1',
      servername: 'backend.internal',
      rejectUnauthorized: false,
    });
    let secure = false;
    socket.once('secureConnect', () => {
      secure = true;
    });
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    t.equal(secure, false, 'no handshake');
  });
});
