// The SNI store against real TLS handshakes: which certificate each servername gets, the default
// certificate, swapping stores under a running server, SecureContext reuse and protocol versions.

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect, type PeerCertificate, type SecureContext } from 'node:tls';
import fc from 'fast-check';
import { generate } from 'selfsigned';
import type { Test } from 'tap';
import t from 'tap';
import {
  applyDefaultCertificate,
  type CertificatePair,
  compileSniStore,
  generateDefaultCertificate,
  httpsServerOptions,
  type SniStore,
} from '../../lib/dataplane/listening/sni.ts';
import type { IngressTLS, Model, ModelOptions, Secret } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, tlsSecret } from '../model/helpers.ts';

const A = pem('a-example'); // a.example.com, www.a.example.com
const WILD = pem('wildcard-example'); // *.example.com
const OTHER = pem('other'); // other.test
const FAKE_CN = 'Ingress-TS Fake Certificate';

const generated: CertificatePair = await generateDefaultCertificate();

interface SiteSpec {
  hosts: string[];
  tls?: IngressTLS[];
  created?: number;
  nginx?: Record<string, string>;
}

function modelOf(
  sites: Record<string, SiteSpec>,
  secrets: Secret[],
  options: Partial<ModelOptions> = {},
): Model {
  const ingresses = Object.entries(sites).map(([name, s]) =>
    ingress(name, {
      created: s.created ?? 0,
      tls: s.tls,
      nginx: s.nginx,
      rules: s.hosts.map((h) => rule(h, path('/', 'web:80'))),
    }),
  );
  return build({ ingresses, secrets }, options).model;
}

/** a.example.com (Secret a-tls), *.example.com (wild-tls), plain.example.com and plain.test without TLS. */
function baseModel(options: Partial<ModelOptions> = {}, secrets: Secret[] = []): Model {
  return modelOf(
    {
      a: {
        hosts: ['a.example.com'],
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        nginx: { 'server-alias': 'www.a.example.com, alias.nowhere' },
      },
      wild: { hosts: ['*.example.com'], tls: [{ hosts: ['*.example.com'], secretName: 'wild-tls' }] },
      plain: { hosts: ['plain.example.com', 'plain.test'] },
    },
    [tlsSecret('a-tls', A), tlsSecret('wild-tls', WILD), tlsSecret('other-tls', OTHER), ...secrets],
    options,
  );
}

interface Handshake {
  cn: string | undefined;
  altNames: string | undefined;
  fingerprint: string;
  protocol: string | null;
  alpn: string | false | null;
}

interface ConnectOptions {
  servername?: string;
  minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  ciphers?: string;
}

function handshake(port: number, options: ConnectOptions = {}): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2', 'http/1.1'],
      ...options,
    });
    socket.once('secureConnect', () => {
      const cert: PeerCertificate = socket.getPeerCertificate();
      const cn = cert.subject?.CN;
      resolve({
        cn: Array.isArray(cn) ? cn.join(',') : cn,
        altNames: cert.subjectaltname,
        fingerprint: cert.fingerprint256,
        protocol: socket.getProtocol(),
        alpn: socket.alpnProtocol,
      });
      socket.end();
    });
    socket.once('error', (error) => {
      socket.destroy();
      reject(error);
    });
  });
}

/** An https server on port 0 whose SNI store is whatever `holder.store` is at handshake time. */
async function serve(t: Test, holder: { store: SniStore }): Promise<{ server: Server; port: number }> {
  const server = createServer(
    httpsServerOptions(() => holder.store),
    (_req, res) => res.end('ok'),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, port: (server.address() as AddressInfo).port };
}

const fingerprintOf = (pair: { crt: string } | CertificatePair): string =>
  new X509Certificate('crt' in pair ? pair.crt : pair.certPem).fingerprint256;

t.test('the generated default certificate', async (t) => {
  const x509 = new X509Certificate(generated.certPem);
  t.match(x509.subject, /CN=Ingress-TS Fake Certificate/);
  t.equal(x509.subjectAltName, 'DNS:ingress.local');
  t.equal(x509.publicKey.asymmetricKeyDetails?.modulusLength, 2048, 'RSA 2048');
  t.equal(x509.publicKey.asymmetricKeyType, 'rsa');
  const days = (Date.parse(x509.validTo) - Date.parse(x509.validFrom)) / 86_400_000;
  t.ok(days >= 364 && days <= 366, `valid about a year (${days} days)`);
  t.ok(x509.checkPrivateKey(createPrivateKey(generated.keyPem)), 'key matches');
});

t.test('certificate per servername over real TLS', async (t) => {
  const holder = { store: compileSniStore(baseModel(), generated) };
  const { port } = await serve(t, holder);
  const cases: Array<[string, string | undefined, string]> = [
    ['exact host gets its certificate', 'a.example.com', 'a.example.com'],
    ['upper-case servername', 'A.Example.COM', 'a.example.com'],
    ['trailing dot is stripped', 'a.example.com.', 'a.example.com'],
    ['wildcard server certificate for a one-label subdomain', 'shop.example.com', '*.example.com'],
    ['wildcard, upper-case and trailing dot', 'SHOP.example.com.', '*.example.com'],
    ['the wildcard server name itself', '*.example.com', '*.example.com'],
    ['a two-label subdomain gets the default', 'x.shop.example.com', FAKE_CN],
    ['the parent of the wildcard gets the default', 'example.com', FAKE_CN],
    ['unknown name gets the default', 'unknown.test', FAKE_CN],
    ['a host without TLS gets the default', 'plain.test', FAKE_CN],
    // ingress-nginx deletes the mapping of a host without certificate, so its wildcard lookup applies
    [
      'a host without TLS under a wildcard server gets the wildcard certificate',
      'plain.example.com',
      '*.example.com',
    ],
    ['an alias covered by the server certificate gets it', 'www.a.example.com', 'a.example.com'],
    ['an alias the certificate does not cover gets the default', 'alias.nowhere', FAKE_CN],
    ['no SNI gets the default', undefined, FAKE_CN],
  ];
  for (const [name, servername, cn] of cases) {
    const result = await handshake(port, servername === undefined ? {} : { servername });
    t.equal(result.cn, cn, name);
    t.equal(result.alpn, 'http/1.1', `${name}: ALPN http/1.1`);
  }
  const fake = await handshake(port, { servername: 'unknown.test' });
  t.equal(fake.altNames, 'DNS:ingress.local');
  t.equal(fake.fingerprint, fingerprintOf(generated), 'the generated certificate itself');
});

t.test('--default-ssl-certificate replaces the generated default', async (t) => {
  const model = baseModel({ defaultSSLCertificate: 'default/other-tls' });
  t.equal(model.defaultCertificate, 'default/other-tls');
  const holder = { store: compileSniStore(model, generated) };
  const { port } = await serve(t, holder);
  t.equal((await handshake(port, { servername: 'unknown.test' })).cn, 'other.test', 'unknown name');
  t.equal((await handshake(port, { servername: 'x.shop.example.com' })).cn, 'other.test', 'two labels');
  t.equal((await handshake(port)).cn, 'other.test', 'no SNI');
  t.equal((await handshake(port, { servername: 'a.example.com' })).cn, 'a.example.com', 'named host');
  t.equal(holder.store.defaultContext, holder.store.contextFor('other.test'), 'the default context');
});

t.test('swapping the store serves a renewed Secret on the next handshake', async (t) => {
  const renewedPems = await generate([{ name: 'commonName', value: 'a.example.com' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'a.example.com' }] }],
  });
  const renewed = { crt: renewedPems.cert, key: renewedPems.private };
  const first = compileSniStore(baseModel(), generated);
  const holder = { store: first };
  const { server, port } = await serve(t, holder);

  const before = await handshake(port, { servername: 'a.example.com' });
  t.equal(before.fingerprint, fingerprintOf(A), 'original certificate');

  const model2 = baseModel({ defaultSSLCertificate: 'default/other-tls' }, [tlsSecret('a-tls', renewed)]);
  t.equal(model2.certificates['default/a-tls']?.certPem, renewed.crt, 'the model has the renewed Secret');
  holder.store = compileSniStore(model2, generated, first);
  const after = await handshake(port, { servername: 'a.example.com' });
  t.equal(after.fingerprint, fingerprintOf(renewed), 'renewed certificate, same server');
  t.equal((await handshake(port, { servername: 'unknown.test' })).cn, 'other.test', 'new default by SNI');

  // without SNI the server's own credentials answer until the default is applied to it
  t.equal(applyDefaultCertificate(server, holder.store), true, 'credentials replaced');
  t.equal(applyDefaultCertificate(server, holder.store), false, 'unchanged default: nothing to do');
  const noSni = await handshake(port);
  t.equal(noSni.cn, 'other.test', 'no SNI follows the new default');
  t.equal(noSni.alpn, 'http/1.1');
  await t.rejects(
    handshake(port, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }),
    { code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' },
    'still TLS 1.2+ after replacing the credentials',
  );
});

t.test('SecureContexts are reused while the sha256 is unchanged', async (t) => {
  const first = compileSniStore(baseModel(), generated);
  const again = compileSniStore(baseModel(), generated, first);
  for (const name of ['a.example.com', 'shop.example.com', 'www.a.example.com', 'unknown.test']) {
    t.equal(again.contextFor(name), first.contextFor(name), `${name}: same SecureContext`);
  }
  t.equal(again.defaultContext, first.defaultContext, 'default context reused');
  t.equal(
    first.contextFor('www.a.example.com'),
    first.contextFor('a.example.com'),
    'alias shares its context',
  );

  // two hosts with the same certificate share one context
  const shared = modelOf(
    {
      one: { hosts: ['a.example.com'], tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }] },
      two: {
        hosts: ['www.a.example.com'],
        tls: [{ hosts: ['www.a.example.com'], secretName: 'a-tls-copy' }],
      },
    },
    [tlsSecret('a-tls', A), tlsSecret('a-tls-copy', A)],
  );
  const sharedStore = compileSniStore(shared, generated);
  t.not(sharedStore.contextFor('a.example.com'), sharedStore.defaultContext);
  t.equal(
    sharedStore.contextFor('www.a.example.com'),
    sharedStore.contextFor('a.example.com'),
    'one context',
  );

  // a changed certificate gets a new context; without `previous` nothing is reused
  const changed = compileSniStore(
    baseModel({}, [tlsSecret('a-tls', WILD)]), // a.example.com now served by the wildcard PEMs
    generated,
    first,
  );
  t.equal(changed.contextFor('a.example.com'), first.contextFor('shop.example.com'), 'content decides');
  t.not(changed.contextFor('a.example.com'), first.contextFor('a.example.com'));
  t.not(
    compileSniStore(baseModel(), generated).contextFor('a.example.com'),
    first.contextFor('a.example.com'),
  );
});

t.test('TLS 1.1 is refused, TLS 1.2 and 1.3 work', async (t) => {
  const store = compileSniStore(baseModel(), generated);
  const options = httpsServerOptions(() => store);
  t.equal(options.minVersion, 'TLSv1.2', 'explicit minVersion (not the process-wide default)');
  t.equal(options.maxVersion, 'TLSv1.3');
  t.strictSame(options.ALPNProtocols, ['http/1.1']);
  const holder = { store: compileSniStore(baseModel(), generated) };
  const { server, port } = await serve(t, holder);
  for (const servername of ['a.example.com', undefined]) {
    const label = servername ?? 'no SNI';
    const refused = once(server, 'tlsClientError');
    await t.rejects(
      handshake(port, {
        ...(servername === undefined ? {} : { servername }),
        minVersion: 'TLSv1.1',
        maxVersion: 'TLSv1.1',
        ciphers: 'DEFAULT@SECLEVEL=0',
      }),
      { code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' },
      `${label}: TLS 1.1 refused by the server`,
    );
    const [serverError] = (await refused) as [Error];
    t.match(serverError.message, /unsupported protocol/i, `${label}: the server saw a version problem`);
    const v13 = await handshake(port, { ...(servername === undefined ? {} : { servername }) });
    t.equal(v13.protocol, 'TLSv1.3', `${label}: TLS 1.3 negotiated`);
    const v12 = await handshake(port, {
      ...(servername === undefined ? {} : { servername }),
      maxVersion: 'TLSv1.2',
    });
    t.equal(v12.protocol, 'TLSv1.2', `${label}: TLS 1.2 works`);
  }
});

t.test('a certificate that TLS refuses does not throw and falls back', async (t) => {
  const model = structuredClone(baseModel({ defaultSSLCertificate: 'default/other-tls' }));
  const wild = model.certificates['default/wild-tls'];
  const other = model.certificates['default/other-tls'];
  if (wild === undefined || other === undefined) throw new Error('fixture certificates missing');
  wild.keyPem = OTHER.key; // a key that does not belong to the certificate
  wild.sha256 = 'broken-wild';
  other.certPem = '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n';
  other.sha256 = 'broken-default';
  let store: SniStore | undefined;
  t.doesNotThrow(() => {
    store = compileSniStore(model, generated);
  }, 'compile does not throw');
  if (store === undefined) return;
  t.equal(store.contextFor('shop.example.com'), store.defaultContext, 'broken host certificate → default');
  t.not(store.contextFor('a.example.com'), store.defaultContext, 'other hosts keep theirs');
  const holder = { store };
  const { port } = await serve(t, holder);
  t.equal(
    (await handshake(port, { servername: 'shop.example.com' })).cn,
    FAKE_CN,
    'broken → generated default',
  );
  t.equal((await handshake(port, { servername: 'unknown.test' })).cn, FAKE_CN, 'broken default → generated');
  t.equal((await handshake(port)).cn, FAKE_CN, 'no SNI → generated');
  t.equal((await handshake(port, { servername: 'a.example.com' })).cn, 'a.example.com');
  // a later compile reuses the failure without throwing either
  t.doesNotThrow(() => compileSniStore(model, generated, store));
});

t.test('contextFor never throws and always answers', async (t) => {
  const store = compileSniStore(baseModel(), generated);
  const known = new Set<SecureContext>([
    store.defaultContext,
    store.contextFor('a.example.com'),
    store.contextFor('shop.example.com'),
  ]);
  t.equal(known.size, 3);
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.domain(), fc.constant(undefined)), (name) => {
      const context = store.contextFor(name);
      return known.has(context);
    }),
  );
  t.equal(store.contextFor(''), store.defaultContext, 'empty name');
  t.equal(store.contextFor('.'), store.defaultContext, 'a lone dot');
  t.equal(store.contextFor('.example.com'), store.defaultContext, 'empty first label');
});

t.test(
  'ssl-reject-handshake: names of no server (or none) get the refusal context, the rest as before',
  async (t) => {
    const served = baseModel();
    const off = compileSniStore(served, generated);
    const model = {
      ...served,
      config: { ...served.config, sslHandshake: { ...served.config.sslHandshake, rejectHandshake: true } },
    };
    const on = compileSniStore(model, generated, off); // the same contexts, reused by content
    const cases: Array<[string | undefined, 'same' | 'refused']> = [
      ['a.example.com', 'same'],
      ['WWW.A.example.com.', 'same'], // an alias, its case and trailing dot as a client may send them
      ['alias.nowhere', 'same'], // an alias the certificate does not cover: the default certificate
      ['deep.example.com', 'same'], // under the wildcard host
      ['plain.test', 'same'], // a host without TLS: the default certificate
      ['a.b.example.com', 'refused'], // a wildcard host covers one label
      ['unknown.test', 'refused'],
      ['', 'refused'],
      [undefined, 'refused'],
    ];
    for (const [name, expected] of cases) {
      const context = on.contextFor(name);
      if (expected === 'same') t.equal(context, off.contextFor(name), `${name}: as without refusal`);
      else t.not(context, off.contextFor(name), `${String(name)}: refused`);
    }
    t.equal(on.contextFor('unknown.test'), on.contextFor(undefined), 'one refusal context');
    t.not(on.contextFor('unknown.test'), on.defaultContext);
  },
);
