// proxy-ssl-* compiled for the data plane: what applies with and without a ca.crt (ingress-nginx's
// template), the id pools are keyed by (equal settings share it, any difference changes it), the
// intermediate count behind proxy-ssl-verify-depth, and the proxy's TLS pools: one per settings for
// a peer, none for cleartext, and those of settings no runtime uses any more closed.
import { readFileSync } from 'node:fs';
import type { PeerCertificate } from 'node:tls';
import t from 'tap';
import { compileBackendTls, intermediatesOf } from '../../lib/dataplane/upstream/backend-tls.ts';
import { UpstreamProxy } from '../../lib/dataplane/upstream/upstream-proxy.ts';
import { PROXY_SSL_DEFAULTS, type ProxySslAnnotations } from '../../lib/model/annotations/proxy-ssl.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/backend-tls/${name}`, import.meta.url), 'utf8');
const material = (parts: { cert?: boolean; ca?: boolean }, sha256 = 'a'.repeat(64)) => ({
  secret: 'default/tls',
  certPem: parts.cert === true ? fixture('client.crt') : null,
  keyPem: parts.cert === true ? fixture('client.key') : null,
  caPem: parts.ca === true ? fixture('ca.crt') : null,
  sha256,
});
const settings = (more: Partial<ProxySslAnnotations> = {}): ProxySslAnnotations => ({
  ...PROXY_SSL_DEFAULTS,
  secret: 'tls',
  material: material({ cert: true, ca: true }),
  ...more,
});

t.test('nothing to compile without a usable Secret', async (t) => {
  t.equal(compileBackendTls(PROXY_SSL_DEFAULTS), null, 'no proxy-ssl-secret');
  t.equal(compileBackendTls(settings({ material: null, denied: 'gone' })), null, 'denied');
});

t.test('verification only with a ca.crt; SNI only with proxy-ssl-server-name', async (t) => {
  const verified = compileBackendTls(settings({ verify: true, name: 'backend.internal' }));
  t.equal(verified?.options.rejectUnauthorized, true);
  t.type(verified?.options.checkServerIdentity, 'function');
  t.equal(verified?.servername, null, 'server-name off: no SNI');
  t.match(verified?.requestServername, /\.invalid$/, 'a constant servername for undici, never sent');

  const noCa = compileBackendTls(settings({ verify: true, material: material({ cert: true }) }));
  t.equal(noCa?.options.rejectUnauthorized, false, 'verify on without ca.crt verifies nothing');
  t.equal(noCa?.options.checkServerIdentity, undefined);

  const sni = compileBackendTls(settings({ serverName: true }));
  t.equal(sni?.servername, 'upstream_balancer', "the default name: ingress-nginx's $proxy_host");
  t.equal(sni?.requestServername, 'upstream_balancer');
  t.equal(compileBackendTls(settings({ serverName: true, name: 'b.internal' }))?.servername, 'b.internal');
});

t.test('the id: equal settings share it, any difference that applies changes it', async (t) => {
  const id = (more: Partial<ProxySslAnnotations>) => compileBackendTls(settings(more))?.id;
  t.equal(id({}), id({}));
  const variants = [
    id({}),
    id({ verify: true }),
    id({ verify: true, verifyDepth: 2 }),
    id({ verify: true, name: 'x.internal' }),
    id({ serverName: true }),
    id({ ciphers: 'HIGH' }),
    id({ protocols: ['TLSv1.2', 'TLSv1.3'] }),
    id({ material: material({ cert: true, ca: true }, 'b'.repeat(64)) }),
  ];
  t.equal(new Set(variants).size, variants.length, 'all different');
  // without a ca.crt, ciphers and protocols do not apply: they do not split pools either
  const noCa = (more: Partial<ProxySslAnnotations>) =>
    compileBackendTls(settings({ material: material({ cert: true }), ...more }))?.id;
  t.equal(noCa({ ciphers: 'HIGH' }), noCa({}));
});

t.test('intermediatesOf counts the certificates between the leaf and the root', async (t) => {
  const chain = (length: number): PeerCertificate => {
    const certs = Array.from({ length }, (_, i) => ({ fingerprint256: `f${i}` }) as PeerCertificate);
    for (let i = 0; i < length; i++) {
      (certs[i] as PeerCertificate & { issuerCertificate: PeerCertificate }).issuerCertificate = certs[
        Math.min(i + 1, length - 1)
      ] as PeerCertificate;
    }
    return certs[0] as PeerCertificate;
  };
  t.equal(intermediatesOf(chain(1)), 0, 'a self-signed leaf');
  t.equal(intermediatesOf(chain(2)), 0, 'leaf and root');
  t.equal(intermediatesOf(chain(3)), 1);
  t.equal(intermediatesOf(chain(4)), 2);
});

t.test('the proxy keeps one TLS pool per settings for a peer, and closes those no longer used', async (t) => {
  const proxy = new UpstreamProxy();
  t.teardown(() => proxy.close());
  const a = compileBackendTls(settings());
  const b = compileBackendTls(settings({ verify: true, name: 'backend.internal' }));
  if (a === null || b === null) throw new Error('expected settings');
  const key = '127.0.0.1:1';
  const plain = proxy.pool(key, 1000, 'HTTPS');
  const poolA = proxy.pool(key, 1000, 'HTTPS', a);
  const poolB = proxy.pool(key, 1000, 'HTTPS', b);
  t.not(poolA, plain);
  t.not(poolA, poolB, 'different settings, different pools');
  t.equal(proxy.pool(key, 1000, 'HTTPS', a), poolA, 'the same settings share one');
  t.equal(proxy.pool(key, 1000, 'HTTP', a), proxy.pool(key, 1000, 'HTTP'), 'cleartext ignores them');
  t.not(proxy.pool(key, 1000, 'GRPCS', a), poolA, 'GRPCS (h2) has its own');

  proxy.retireTls(new Set([b.id]));
  t.equal(poolA.closed, true, "a's pool is closed");
  t.equal(poolB.closed, false);
  t.equal(plain.closed, false, 'pools without settings stay');
  t.equal(proxy.pool(key, 1000, 'HTTPS', b), poolB);
  t.not(proxy.pool(key, 1000, 'HTTPS', a), poolA, 'a new pool should the settings come back');
});
