// The HTTPS listener against real handshakes: ALPN choice (h2 first, use-http2 off → http/1.1 only),
// and the ConfigMap's ssl-protocols / ssl-ciphers taking effect on the next connection when the SNI
// store is swapped (SecureContexts rebuilt only when those settings change).

import { once } from 'node:events';
import { connect as http2Connect } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connect, type SecureVersion } from 'node:tls';
import type { Test } from 'tap';
import t from 'tap';
import {
  createHttpsListener,
  type HttpsListener,
  selectAlpn,
} from '../../lib/dataplane/listening/https-listener.ts';
import {
  applyDefaultCertificate,
  type CertificatePair,
  compileSniStore,
  generateDefaultCertificate,
  type SniStore,
} from '../../lib/dataplane/listening/sni.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, tlsSecret } from '../model/helpers.ts';

const A = pem('a-example');
const generated: CertificatePair = await generateDefaultCertificate();

/** a.example.com with its certificate, under a ConfigMap holding `data`. */
function modelWith(data: Record<string, string>): Model {
  const result = build(
    {
      ingresses: [
        ingress('a', {
          tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
          rules: [rule('a.example.com', path('/', 'web:80'))],
        }),
      ],
      secrets: [tlsSecret('a-tls', A)],
      configMaps: [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ingress-ts', namespace: 'ingress' }, data },
      ],
    },
    { configMap: 'ingress/ingress-ts' },
  );
  return result.model;
}

async function serve(
  t: Test,
  holder: { store: SniStore },
  idleSessionMs?: number,
): Promise<{ listener: HttpsListener; port: number }> {
  const listener = createHttpsListener(
    () => holder.store,
    (_req, res) => res.end('ok'),
    idleSessionMs,
  );
  listener.server.listen(0, '127.0.0.1');
  await once(listener.server, 'listening');
  t.teardown(() => {
    listener.destroyAll();
    return new Promise<void>((resolve) => listener.server.close(() => resolve()));
  });
  return { listener, port: (listener.server.address() as AddressInfo).port };
}

interface Handshake {
  alpn: string | false;
  protocol: string | null;
  cipher: string;
}

function handshake(
  port: number,
  options: { alpn?: string[]; maxVersion?: SecureVersion; servername?: string } = {},
): Promise<Handshake | Error> {
  return new Promise((resolve) => {
    const socket = connect(
      {
        port,
        host: '127.0.0.1',
        servername: options.servername ?? 'a.example.com',
        rejectUnauthorized: false,
        ALPNProtocols: options.alpn,
        maxVersion: options.maxVersion,
      },
      () => {
        resolve({
          alpn: socket.alpnProtocol ?? false,
          protocol: socket.getProtocol(),
          cipher: socket.getCipher().name,
        });
        socket.destroy();
      },
    );
    socket.on('error', (error) => resolve(error));
  });
}

t.test('selectAlpn: h2 first when offered and enabled, else http/1.1, else none', async (t) => {
  t.equal(selectAlpn(['http/1.1', 'h2'], true), 'h2');
  t.equal(selectAlpn(['h2', 'http/1.1'], false), 'http/1.1');
  t.equal(selectAlpn(['http/1.1'], true), 'http/1.1');
  t.equal(selectAlpn(['h2'], false), undefined);
  t.equal(selectAlpn(['acme-tls/1'], true), undefined);
});

t.test('ALPN follows listener.http2 at every handshake', async (t) => {
  const holder = { store: compileSniStore(modelWith({}), generated) };
  const { listener, port } = await serve(t, holder);
  t.match(await handshake(port, { alpn: ['h2', 'http/1.1'] }), { alpn: 'h2' });
  t.match(await handshake(port, { alpn: ['http/1.1'] }), { alpn: 'http/1.1' });
  t.match(
    await handshake(port, { servername: 'unknown.test', alpn: ['h2'] }),
    { alpn: 'h2' },
    'default certificate too',
  );
  t.match(await handshake(port), { alpn: false }, 'no ALPN from the client: none chosen (HTTP/1.1)');
  listener.http2 = false;
  t.match(await handshake(port, { alpn: ['h2', 'http/1.1'] }), { alpn: 'http/1.1' });
  t.ok((await handshake(port, { alpn: ['h2'] })) instanceof Error, 'an h2-only client is refused');
});

t.test('ssl-ciphers and ssl-protocols apply to new connections after a swap', async (t) => {
  const first = compileSniStore(modelWith({ 'ssl-ciphers': 'ECDHE-RSA-AES128-GCM-SHA256' }), generated);
  const holder = { store: first };
  const { listener, port } = await serve(t, holder);
  applyDefaultCertificate(listener.server, first);
  t.match(await handshake(port, { maxVersion: 'TLSv1.2' }), {
    protocol: 'TLSv1.2',
    cipher: 'ECDHE-RSA-AES128-GCM-SHA256',
  });
  t.match(
    await handshake(port, { maxVersion: 'TLSv1.2', servername: 'no-sni-entry.test' }),
    { cipher: 'ECDHE-RSA-AES128-GCM-SHA256' },
    'the default certificate too',
  );
  t.match(await handshake(port), { protocol: 'TLSv1.3' }, 'TLS 1.3 suites are not affected by ssl-ciphers');

  const second = compileSniStore(
    modelWith({ 'ssl-ciphers': 'ECDHE-RSA-AES256-GCM-SHA384', 'ssl-protocols': 'TLSv1.2' }),
    generated,
    first,
  );
  t.not(
    second.contextFor('a.example.com'),
    first.contextFor('a.example.com'),
    'contexts rebuilt: settings changed',
  );
  holder.store = second;
  t.equal(
    applyDefaultCertificate(listener.server, second),
    true,
    'the server credentials follow the settings',
  );
  t.match(await handshake(port, { maxVersion: 'TLSv1.2' }), { cipher: 'ECDHE-RSA-AES256-GCM-SHA384' });
  t.match(await handshake(port), { protocol: 'TLSv1.2' }, 'ssl-protocols TLSv1.2: no TLS 1.3');

  const third = compileSniStore(
    modelWith({ 'ssl-ciphers': 'ECDHE-RSA-AES256-GCM-SHA384', 'ssl-protocols': 'TLSv1.2' }),
    generated,
    second,
  );
  t.equal(
    third.contextFor('a.example.com'),
    second.contextFor('a.example.com'),
    'same settings: contexts reused',
  );
  t.equal(applyDefaultCertificate(listener.server, third), false, 'nothing to replace');
});

t.test('an idle HTTP/2 session is closed with GOAWAY; the session serves until then', async (t) => {
  const holder = { store: compileSniStore(modelWith({}), generated) };
  const { port } = await serve(t, holder, 100);
  const session = http2Connect(`https://127.0.0.1:${port}`, { servername: 'a.example.com', ca: A.crt });
  session.on('error', () => {});
  const goaway = once(session, 'goaway');
  const stream = session.request({ ':path': '/', ':authority': 'a.example.com' });
  stream.resume();
  await once(stream, 'end');
  await goaway;
  await once(session, 'close');
  t.pass('closed by the server once idle');
});
