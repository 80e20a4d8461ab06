// TLS per host: which Secret, fallbacks to the default certificate, oldest wins, default certificate.

import type { Test } from 'tap';
import t from 'tap';
import type { BuildResult, IngressTLS, Secret } from '../../lib/model/index.ts';
import { ingress, path, pem, rule, runCases, tlsSecret } from './helpers.ts';

const A = pem('a-example'); // a.example.com, www.a.example.com
const WILD = pem('wildcard-example'); // *.example.com
const CN = pem('cn-only'); // CN=legacy.example.org, no SAN
const OTHER = pem('other'); // other.test
const CN_SAN = pem('cn-and-san'); // CN=legacy.example.org, SAN www.example.org only

const site = (name: string, hosts: string[], tls: IngressTLS[] | undefined, created = 0) =>
  ingress(name, { created, tls, rules: hosts.map((h) => rule(h, path('/', 'web:80'))) });

const tlsOf = (result: BuildResult, host: string) =>
  result.model.servers.find((s) => s.hostname === host)?.tls;
const certFor =
  (host: string, expected: string | null | undefined) =>
  (t: Test, result: BuildResult): void => {
    const tls = tlsOf(result, host);
    if (expected === undefined) t.equal(tls, null, `${host} has no TLS section`);
    else t.equal(tls?.certificate, expected, `${host} certificate`);
  };

runCases(t, [
  {
    name: 'tls: the tls entry listing the host gives its Secret',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }])],
    secrets: [tlsSecret('a-tls', A)],
    check: (t, result) => {
      certFor('a.example.com', 'default/a-tls')(t, result);
      const cert = result.model.certificates['default/a-tls'];
      t.strictSame(cert?.dnsNames, ['a.example.com', 'www.a.example.com']);
      t.ok(cert !== undefined && cert.notAfter > Date.parse('2100-01-01') / 1000, 'notAfter recorded');
      t.match(cert?.certPem, /BEGIN CERTIFICATE/);
      t.match(cert?.keyPem, /PRIVATE KEY/);
      t.match(cert?.sha256, /^[0-9a-f]{64}$/);
    },
  },
  {
    name: 'tls: hosts in the tls section match case-insensitively',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['A.Example.COM'], secretName: 'a-tls' }])],
    secrets: [tlsSecret('a-tls', A)],
    check: certFor('a.example.com', 'default/a-tls'),
  },
  {
    name: 'tls: without a listed host, the first Secret whose certificate covers the host is used',
    ingresses: [
      site(
        'a',
        ['shop.example.com'],
        [{ hosts: ['other.test'], secretName: 'other-tls' }, { secretName: 'wild-tls' }],
      ),
    ],
    secrets: [tlsSecret('other-tls', OTHER), tlsSecret('wild-tls', WILD)],
    check: certFor('shop.example.com', 'default/wild-tls'),
  },
  {
    name: 'tls: a wildcard host uses a wildcard certificate',
    ingresses: [site('a', ['*.example.com'], [{ hosts: ['*.example.com'], secretName: 'wild-tls' }])],
    secrets: [tlsSecret('wild-tls', WILD)],
    check: certFor('*.example.com', 'default/wild-tls'),
  },
  {
    name: 'tls: a missing Secret gives that host the default certificate',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'nope' }])],
    diagnostics: ['TLS_SECRET_NOT_FOUND a'],
    messages: ['TLS Secret default/nope for host a.example.com not found'],
    check: certFor('a.example.com', null),
  },
  {
    name: 'tls: a Secret without tls.key is unusable',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'half' }])],
    secrets: [
      {
        metadata: { name: 'half', namespace: 'default' },
        data: { 'tls.crt': Buffer.from(A.crt).toString('base64') },
      },
    ],
    diagnostics: ['TLS_SECRET_INVALID a'],
    messages: ['it has no tls.key'],
    check: certFor('a.example.com', null),
  },
  {
    name: 'tls: a key that does not belong to the certificate is unusable',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'mixed' }])],
    secrets: [tlsSecret('mixed', { crt: A.crt, key: OTHER.key })],
    diagnostics: ['TLS_SECRET_INVALID a'],
    messages: ['does not belong to the certificate'],
  },
  {
    name: 'tls: garbage instead of PEM is unusable',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'junk' }])],
    secrets: [tlsSecret('junk', { crt: 'not a certificate', key: 'not a key' })],
    diagnostics: ['TLS_SECRET_INVALID a'],
    messages: ['tls.crt is not a PEM certificate'],
  },
  {
    name: 'tls: a certificate that does not cover the host falls back for that host only',
    ingresses: [
      site(
        'a',
        ['a.example.com', 'b.example.org'],
        [{ hosts: ['a.example.com', 'b.example.org'], secretName: 'a-tls' }],
      ),
    ],
    secrets: [tlsSecret('a-tls', A)],
    diagnostics: ['TLS_HOST_MISMATCH a'],
    messages: ['does not cover host b.example.org'],
    check: (t, result) => {
      certFor('a.example.com', 'default/a-tls')(t, result);
      certFor('b.example.org', null)(t, result);
    },
  },
  {
    name: 'tls: an Ingress with a tls section that does not apply to a host serves it with the default certificate',
    ingresses: [site('a', ['plain.example.org'], [{ hosts: ['other.test'], secretName: 'other-tls' }])],
    secrets: [tlsSecret('other-tls', OTHER)],
    diagnostics: ['TLS_NO_SECRET_FOR_HOST a'],
    check: (t, result) => {
      certFor('plain.example.org', null)(t, result);
      t.strictSame(
        tlsOf(result, 'plain.example.org')?.ingress,
        { namespace: 'default', name: 'a' },
        'still TLS-configured',
      );
    },
  },
  {
    name: 'tls: the first Ingress of the host that has a tls section decides, even if it is not the oldest',
    ingresses: [
      site('plain', ['a.example.com'], undefined, 1),
      ingress('secure', {
        created: 2,
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        rules: [rule('a.example.com', path('/secure', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a-tls', A)],
    check: certFor('a.example.com', 'default/a-tls'),
  },
  {
    name: 'tls: a newer Ingress naming another Secret for a decided host is reported',
    ingresses: [
      site('old', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }], 1),
      ingress('new', {
        created: 2,
        tls: [{ hosts: ['a.example.com'], secretName: 'wild-tls' }],
        rules: [rule('a.example.com', path('/new', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a-tls', A), tlsSecret('wild-tls', WILD)],
    diagnostics: ['TLS_CONFLICT new'],
    check: certFor('a.example.com', 'default/a-tls'),
  },
  {
    name: 'tls: a host no Ingress gives a tls section has no TLS settings',
    ingresses: [site('a', ['a.example.com'], undefined)],
    check: certFor('a.example.com', undefined),
  },
  {
    name: 'tls: a certificate with only a Common Name still covers its host (legacy CN fallback)',
    ingresses: [site('a', ['legacy.example.org'], [{ hosts: ['legacy.example.org'], secretName: 'cn' }])],
    secrets: [tlsSecret('cn', CN)],
    check: certFor('legacy.example.org', 'default/cn'),
  },
  {
    name: 'tls: stringData (plain PEM, as in manifests) is read like data',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'plain' }])],
    secrets: [
      {
        metadata: { name: 'plain', namespace: 'default' },
        stringData: { 'tls.crt': A.crt, 'tls.key': A.key },
      },
    ],
    check: certFor('a.example.com', 'default/plain'),
  },
  {
    name: 'tls: Secrets are looked up in the namespace of the Ingress',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }])],
    secrets: [tlsSecret('a-tls', A, 'elsewhere')],
    diagnostics: ['TLS_SECRET_NOT_FOUND a'],
  },
  {
    name: 'tls: --default-ssl-certificate is recorded when usable',
    ingresses: [],
    secrets: [tlsSecret('default-cert', WILD, 'ingress')],
    options: { defaultSSLCertificate: 'ingress/default-cert' },
    check: (t, { model }) => {
      t.equal(model.defaultCertificate, 'ingress/default-cert');
      t.ok(model.certificates['ingress/default-cert']);
    },
  },
  {
    name: 'tls: a missing --default-ssl-certificate is reported and a generated one will be used',
    ingresses: [],
    options: { defaultSSLCertificate: 'ingress/missing' },
    diagnostics: ['DEFAULT_CERTIFICATE_UNUSABLE Secret:ingress/missing'],
    check: (t, { model }) => t.equal(model.defaultCertificate, null),
  },
  {
    name: 'tls: the model lists the Secrets it looked at',
    ingresses: [
      site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }, { secretName: 'x' }]),
    ],
    secrets: [tlsSecret('a-tls', A)],
    check: (t, { references }) => t.strictSame(references.secrets, ['default/a-tls']),
  },

  {
    name: 'tls: a listed host matches case-insensitively even when its Secret is missing',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['A.Example.COM'], secretName: 'nope' }])],
    diagnostics: ['TLS_SECRET_NOT_FOUND a'],
    check: certFor('a.example.com', null),
  },
  {
    name: 'tls: the covers fallback looks at DNS names only, so a Common-Name-only certificate is not picked',
    ingresses: [
      ingress('a', { tls: [{ secretName: 'cn' }], rules: [rule('legacy.example.org', path('/', 'web:80'))] }),
    ],
    secrets: [tlsSecret('cn', CN)],
    diagnostics: ['TLS_NO_SECRET_FOR_HOST a'],
    check: certFor('legacy.example.org', null),
  },
  {
    name: 'tls: a newer Ingress listing a decided host in another case is reported',
    ingresses: [
      site('old', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }], 1),
      ingress('new', {
        created: 2,
        tls: [{ hosts: ['A.EXAMPLE.COM'], secretName: 'wild-tls' }],
        rules: [rule('a.example.com', path('/new', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a-tls', A), tlsSecret('wild-tls', WILD)],
    diagnostics: ['TLS_CONFLICT new'],
    check: certFor('a.example.com', 'default/a-tls'),
  },
  {
    name: 'tls: an Ingress naming its host in two rules does not conflict with itself',
    ingresses: [
      ingress('a', {
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        rules: [rule('a.example.com', path('/1', 'web:80')), rule('a.example.com', path('/2', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a-tls', A)],
    check: certFor('a.example.com', 'default/a-tls'),
  },
  {
    name: 'tls: an unusable --default-ssl-certificate is reported and not used',
    ingresses: [],
    secrets: [tlsSecret('default-cert', { crt: A.crt, key: OTHER.key }, 'ingress')],
    options: { defaultSSLCertificate: 'ingress/default-cert' },
    diagnostics: ['DEFAULT_CERTIFICATE_UNUSABLE Secret:ingress/default-cert'],
    check: (t, { model }) => {
      t.equal(model.defaultCertificate, null);
      t.strictSame(model.certificates, {});
    },
  },
  {
    name: 'tls: a malformed --default-ssl-certificate is reported',
    ingresses: [],
    options: { defaultSSLCertificate: 'no-namespace' },
    diagnostics: ['DEFAULT_CERTIFICATE_UNUSABLE Secret:/no-namespace'],
    check: (t, { model }) => t.equal(model.defaultCertificate, null),
  },

  {
    name: 'tls: a private key that is not PEM is unusable',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'badkey' }])],
    secrets: [tlsSecret('badkey', { crt: A.crt, key: 'not a key' })],
    diagnostics: ['TLS_SECRET_INVALID a'],
    messages: ['tls.key is not a PEM private key'],
  },

  {
    name: 'tls: the legacy Common Name counts even when the certificate has other SAN names',
    ingresses: [site('a', ['legacy.example.org'], [{ hosts: ['legacy.example.org'], secretName: 'cn-san' }])],
    secrets: [tlsSecret('cn-san', CN_SAN)],
    check: certFor('legacy.example.org', 'default/cn-san'),
  },
]);

t.test('tls: a Secret that changes content is parsed again (no stale cache)', async (t) => {
  const { build } = await import('./helpers.ts');
  const world = (secret: Secret) => ({
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 's' }])],
    secrets: [secret],
  });
  const first = build(world(tlsSecret('s', A)));
  const second = build(world(tlsSecret('s', { crt: A.crt, key: OTHER.key })));
  t.equal(tlsOf(first, 'a.example.com')?.certificate, 'default/s');
  t.equal(tlsOf(second, 'a.example.com')?.certificate, null);
  t.not(first.model.hash, second.model.hash);
});

t.test('tls: a re-issued certificate (same names, new content) changes the hash', async (t) => {
  const { build } = await import('./helpers.ts');
  const world = (crt: string) => ({
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 's' }])],
    secrets: [tlsSecret('s', { crt, key: A.key })],
  });
  const first = build(world(A.crt));
  const second = build(world(`${A.crt}\n`));
  t.equal(tlsOf(first, 'a.example.com')?.certificate, 'default/s');
  t.equal(tlsOf(second, 'a.example.com')?.certificate, 'default/s');
  t.not(first.model.hash, second.model.hash);
});
