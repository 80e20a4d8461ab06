// proxy-ssl-* through the real proxy to real TLS backends (test/fixtures/backend-tls: a test CA, a
// backend certificate for backend.internal, a client certificate): a backend that requires a client
// certificate gets one only from proxy-ssl-secret; proxy-ssl-verify with the right CA and
// proxy-ssl-name passes, a wrong CA, a wrong name or the default name (`upstream_balancer`) is a 502;
// proxy-ssl-server-name decides whether the backend sees SNI; proxy-ssl-protocols reaches a
// TLS 1.3-only backend; GRPCS (h2 over TLS) presents the client certificate too; routes to the same
// endpoints with different settings never share a connection; a missing Secret denies that Ingress
// (503 + PROXY_SSL_UNAVAILABLE) and nothing else.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createSecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from 'node:http2';
import { createServer as createHttpsServer, type ServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/backend-tls/${name}`, import.meta.url), 'utf8');
const CA = fixture('ca.crt');
const OTHER_CA = fixture('other-ca.crt');
const BACKEND = { cert: fixture('backend.crt'), key: fixture('backend.key') };
const CLIENT = { crt: fixture('client.crt'), key: fixture('client.key') };
/** deep.internal, issued by an intermediate issued by an intermediate issued by the CA */
const DEEP = { cert: fixture('deep-chain.crt'), key: fixture('deep.key') };

/** What a backend saw of the TLS connection a request came on. */
interface Seen {
  servername: string | false;
  client: string | null;
  protocol: string | null;
  alpn: string | false;
}

function seenOf(socket: TLSSocket): Seen {
  const peer = socket.getPeerCertificate();
  return {
    servername: socket.servername || false,
    client: typeof peer?.subject?.CN === 'string' ? peer.subject.CN : null,
    protocol: socket.getProtocol(),
    alpn: socket.alpnProtocol ?? false,
  };
}

/** An HTTPS (HTTP/1.1) backend with the backend.internal certificate; answers what it saw as JSON. */
async function httpsBackend(t: Test, options: ServerOptions = {}): Promise<number> {
  const server = createHttpsServer(
    { ...BACKEND, ...options },
    (req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(seenOf(req.socket as TLSSocket)));
    },
  );
  // a refused handshake is the point of some tests: never an unhandled error
  server.on('tlsClientError', () => {});
  const port = await listen(server as unknown as Parameters<typeof listen>[0]);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return port;
}

/** An h2-only TLS backend (what GRPCS reaches) that requires a client certificate of the test CA. */
async function h2Backend(t: Test): Promise<number> {
  const sessions = new Set<ServerHttp2Session>();
  const server = createSecureServer(
    { ...BACKEND, requestCert: true, rejectUnauthorized: true, ca: CA },
    (req: Http2ServerRequest, res: Http2ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(seenOf(req.stream.session?.socket as TLSSocket)));
    },
  );
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const session of sessions) session.destroy();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

function secretYaml(name: string, data: Record<string, string>): string {
  const lines = Object.entries(data)
    .map(([key, value]) => `  ${key}: ${Buffer.from(value).toString('base64')}`)
    .join('\n');
  return `---
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: e2e }
type: Opaque
data:
${lines}
`;
}

t.test('backend TLS (proxy-ssl-*) through the proxy', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-backend-tls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const mtlsPort = await httpsBackend(t, { requestCert: true, rejectUnauthorized: true, ca: CA });
  const openPort = await httpsBackend(t);
  const tls13Port = await httpsBackend(t, { minVersion: 'TLSv1.3' });
  const deepPort = await httpsBackend(t, DEEP);
  const grpcsPort = await h2Backend(t);

  const site = (name: string, service: string, annotations: Record<string, string> = {}) =>
    ingressYaml({ name, host: `${name}.test`, service, annotations });
  const https = (more: Record<string, string> = {}) => ({ 'backend-protocol': 'HTTPS', ...more });
  const verifying = (secret: string, more: Record<string, string> = {}) =>
    https({ 'proxy-ssl-secret': `e2e/${secret}`, 'proxy-ssl-verify': 'on', ...more });

  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('mtls', [mtlsPort]),
      serviceYaml('open', [openPort]),
      serviceYaml('tls13', [tls13Port]),
      serviceYaml('grpcs', [grpcsPort]),
      serviceYaml('deep', [deepPort]),
      secretYaml('client', { 'tls.crt': CLIENT.crt, 'tls.key': CLIENT.key }),
      secretYaml('ca', { 'ca.crt': CA }),
      secretYaml('other-ca', { 'ca.crt': OTHER_CA }),
      secretYaml('all', { 'tls.crt': CLIENT.crt, 'tls.key': CLIENT.key, 'ca.crt': CA }),
      // (a) client certificate
      site('noclient', 'mtls', https()),
      site('client', 'mtls', https({ 'proxy-ssl-secret': 'e2e/client' })),
      // (b) verification
      site('verified', 'open', verifying('ca', { 'proxy-ssl-name': 'backend.internal' })),
      site('wrongca', 'open', verifying('other-ca', { 'proxy-ssl-name': 'backend.internal' })),
      site('wrongname', 'open', verifying('ca', { 'proxy-ssl-name': 'other.internal' })),
      site('defaultname', 'open', verifying('ca')),
      site('verifyoff', 'open', https({ 'proxy-ssl-secret': 'e2e/other-ca' })),
      site(
        'everything',
        'mtls',
        verifying('all', { 'proxy-ssl-name': 'backend.internal', 'proxy-ssl-server-name': 'on' }),
      ),
      // proxy-ssl-verify-depth: the backend's chain has two intermediates
      site('depth1', 'deep', verifying('ca', { 'proxy-ssl-name': 'deep.internal' })),
      site(
        'depth2',
        'deep',
        verifying('ca', { 'proxy-ssl-name': 'deep.internal', 'proxy-ssl-verify-depth': '2' }),
      ),
      // (c) SNI
      site(
        'sni',
        'open',
        https({
          'proxy-ssl-secret': 'e2e/ca',
          'proxy-ssl-server-name': 'on',
          'proxy-ssl-name': 'backend.internal',
        }),
      ),
      site('nosni', 'open', https({ 'proxy-ssl-secret': 'e2e/ca', 'proxy-ssl-name': 'backend.internal' })),
      // protocols (only with a ca.crt; default TLSv1.2)
      site('tls12only', 'tls13', https({ 'proxy-ssl-secret': 'e2e/ca' })),
      site(
        'tls13',
        'tls13',
        https({ 'proxy-ssl-secret': 'e2e/ca', 'proxy-ssl-protocols': 'TLSv1.2 TLSv1.3' }),
      ),
      // GRPCS: h2 over TLS
      site('grpcsnoclient', 'grpcs', { 'backend-protocol': 'GRPCS' }),
      site('grpcsclient', 'grpcs', {
        'backend-protocol': 'GRPCS',
        'proxy-ssl-secret': 'e2e/all',
        'proxy-ssl-verify': 'on',
        'proxy-ssl-name': 'backend.internal',
      }),
      // a Secret rotated while the proxy runs (its own file)
      site('rotating', 'open', verifying('rotating', { 'proxy-ssl-name': 'backend.internal' })),
      // (d) a missing Secret
      site('missing', 'open', https({ 'proxy-ssl-secret': 'e2e/nope' })),
    ].join(''),
  );
  const rotating = join(dir, 'rotating.yaml');
  await writeFile(rotating, secretYaml('rotating', { 'ca.crt': OTHER_CA }));
  const controller = await start(testConfig(dir), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const seen = async (host: string): Promise<Seen> => {
    const reply = await get(port, `${host}.test`);
    if (reply.status !== 200) throw new Error(`${host}: ${reply.status}`);
    return JSON.parse(reply.body) as Seen;
  };
  const status = async (host: string) => (await get(port, `${host}.test`)).status;

  t.test('(a) a backend requiring a client certificate gets the one of proxy-ssl-secret', async (t) => {
    t.match(await seen('client'), { client: 'ingress-ts-client' });
    // the same endpoint, now with a pooled connection that has a client certificate: not shared
    t.equal(await status('noclient'), 502, 'without proxy-ssl-secret: no certificate, the backend refuses');
    t.match(await seen('client'), { client: 'ingress-ts-client' }, 'and again');
  });

  t.test('(b) proxy-ssl-verify: the right CA and name pass; a wrong CA or name is a 502', async (t) => {
    t.match(await seen('verified'), { client: null });
    t.equal(await status('wrongca'), 502, 'a CA that did not sign the backend certificate');
    t.equal(await status('wrongname'), 502, 'a name the certificate does not cover');
    t.equal(await status('defaultname'), 502, 'no proxy-ssl-name: upstream_balancer, as in ingress-nginx');
    t.equal(await status('verifyoff'), 200, 'the wrong CA without proxy-ssl-verify: not verified');
    t.match(await seen('everything'), { client: 'ingress-ts-client', servername: 'backend.internal' });
    t.equal(await status('verified'), 200, 'the verified route still works after the failures');
  });

  t.test('proxy-ssl-verify-depth: a chain with two intermediates needs depth 2', async (t) => {
    t.equal(await status('depth1'), 502, 'the default depth 1 allows one intermediate');
    t.equal(await status('depth2'), 200);
  });

  t.test('(c) proxy-ssl-server-name: on sends proxy-ssl-name as SNI, off sends none', async (t) => {
    t.match(await seen('sni'), { servername: 'backend.internal' });
    t.match(await seen('nosni'), { servername: false });
    t.match(await seen('sni'), { servername: 'backend.internal' }, 'the two never share a connection');
  });

  t.test('proxy-ssl-protocols: TLSv1.2 (the default) cannot reach a TLS 1.3-only backend', async (t) => {
    t.equal(await status('tls12only'), 502);
    t.match(await seen('tls13'), { protocol: 'TLSv1.3' });
  });

  t.test('GRPCS: the h2 connection presents the client certificate and is verified', async (t) => {
    t.match(await seen('grpcsclient'), { client: 'ingress-ts-client', alpn: 'h2', servername: false });
    t.equal(await status('grpcsnoclient'), 502, 'no proxy-ssl-secret: the backend refuses');
  });

  t.test(
    '(d) a missing Secret: that Ingress answers 503 with a diagnostic, the others are served',
    async (t) => {
      t.equal(await status('missing'), 503);
      t.equal(await status('verified'), 200);
      t.equal(await status('client'), 200);
      const model = JSON.parse(
        (await get(controller.healthz.port, 'localhost', '/debug/model')).body,
      ) as ModelDescription;
      t.match(model.diagnostics['Ingress e2e/missing'], [
        {
          code: 'PROXY_SSL_UNAVAILABLE',
          severity: 'error',
          message: /proxy-ssl-secret e2e\/nope does not exist/,
        },
      ]);
      t.equal(model.diagnostics['Ingress e2e/verified'], undefined, 'nothing on the others');
    },
  );

  t.test('a rotated Secret reaches the data plane; the old settings get no request', async (t) => {
    t.equal(await status('rotating'), 502, 'the wrong CA first');
    const swapped = nextSwap(5000);
    await writeFile(rotating, secretYaml('rotating', { 'ca.crt': CA }));
    await swapped;
    t.equal(await status('rotating'), 200, 'the right CA after the swap');
    const back = nextSwap(5000);
    await writeFile(rotating, secretYaml('rotating', { 'ca.crt': OTHER_CA }));
    await back;
    t.equal(await status('rotating'), 502, 'and a pooled connection of the previous settings is not reused');
  });

  t.test('/debug/model shows the settings of a route, never the private key', async (t) => {
    const body = (await get(controller.healthz.port, 'localhost', '/debug/model')).body;
    t.notMatch(body, /PRIVATE KEY/);
    const model = JSON.parse(body) as ModelDescription;
    const route = (host: string) => model.hosts.find((h) => h.host === `${host}.test`)?.routes[0];
    t.match(route('everything')?.proxySsl, {
      secret: 'e2e/all',
      verify: true,
      verifyDepth: 1,
      name: 'backend.internal',
      serverName: true,
      ciphers: 'DEFAULT',
      protocols: ['TLSv1.2'],
      clientCertificate: { subject: 'CN=ingress-ts-client' },
      caCertificates: [{ subject: 'CN=ingress-ts test backend CA' }],
    });
    t.match(route('missing')?.proxySsl, { secret: 'e2e/nope', denied: /does not exist/ });
    t.equal(route('noclient')?.proxySsl, undefined);
  });
});
