// The webhook certificate's rules as a table: which Secrets serve as they are, which the leader
// renews and why, and what a new certificate holds (names, lifetimes, the CA kept or replaced).
import { X509Certificate } from 'node:crypto';
import t from 'tap';
import {
  assessSecret,
  decodeSecretData,
  encodeSecretData,
  issueCertificate,
  type PemData,
  parseBundle,
  renewalTime,
  serviceDnsNames,
  servingPair,
} from '../../lib/source/kube/webhook-pki.ts';

const DAY = 24 * 3600 * 1000;
const NOW = Date.now();
const names = serviceDnsNames({ namespace: 'ingress', name: 'edge-admission' });
const fresh = await issueCertificate(names, null, null, NOW);
const otherCa = await issueCertificate(names, null, null, NOW);
const aged = await issueCertificate(names, null, null, NOW - 300 * DAY);
const caOf = (data: PemData) => ({ certPem: data['ca.crt'] as string, keyPem: data['ca.key'] as string });
const cert = (pem: string | undefined) => new X509Certificate(pem as string);

t.test('the names of a Service', async (t) => {
  t.same(names, [
    'edge-admission',
    'edge-admission.ingress',
    'edge-admission.ingress.svc',
    'edge-admission.ingress.svc.cluster.local',
  ]);
});

t.test('a new certificate: SANs, lifetimes, signed by its CA, key usage of a server', async (t) => {
  const leaf = cert(fresh['tls.crt']);
  const ca = cert(fresh['ca.crt']);
  t.equal(leaf.subjectAltName, names.map((name) => `DNS:${name}`).join(', '));
  t.ok(leaf.verify(ca.publicKey), 'signed by ca.crt');
  t.ok(ca.ca, 'the CA is a CA');
  t.notOk(leaf.ca, 'the serving certificate is not');
  t.match(leaf.keyUsage ?? [], ['1.3.6.1.5.5.7.3.1'], 'extended key usage: serverAuth');
  const days = (c: X509Certificate) => (Date.parse(c.validTo) - NOW) / DAY;
  t.ok(days(leaf) > 364 && days(leaf) < 366, `serving certificate for a year (${days(leaf)})`);
  t.ok(days(ca) > 5 * 365 - 1 && days(ca) < 5 * 365 + 1, 'CA for five years');
  t.ok(Date.parse(leaf.validFrom) < NOW - 30 * 60 * 1000, 'backdated for clocks that lag');
  t.equal(
    renewalTime(leaf),
    Date.parse(leaf.validTo) - (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 3,
  );
  t.same(decodeSecretData(encodeSecretData(fresh)), fresh, 'base64 round trip');
});

t.test('renewed under the same CA: ca.crt unchanged, so the caBundle stays', async (t) => {
  const renewed = await issueCertificate(names, caOf(fresh), null, NOW);
  t.equal(renewed['ca.crt'], fresh['ca.crt']);
  t.not(renewed['tls.crt'], fresh['tls.crt']);
  t.ok(cert(renewed['tls.crt']).verify(cert(fresh['ca.crt']).publicKey));
});

t.test('a new CA keeps the old one in ca.crt while it is valid', async (t) => {
  const rotated = await issueCertificate(names, null, fresh['ca.crt'] as string, NOW);
  const bundle = parseBundle(rotated['ca.crt']);
  t.equal(bundle.length, 2);
  t.equal(bundle[1]?.fingerprint256, cert(fresh['ca.crt']).fingerprint256);
  t.ok(cert(rotated['tls.crt']).verify((bundle[0] as X509Certificate).publicKey), 'signed by the new one');
});

t.test('what the leader does with a Secret', async (t) => {
  const cases: Array<{
    name: string;
    data: PemData | null;
    renew: boolean;
    reason?: RegExp;
    reuse?: boolean;
  }> = [
    { name: 'missing', data: null, renew: true, reason: /does not exist/, reuse: false },
    { name: 'valid', data: fresh, renew: false },
    {
      name: 'valid, without ca.key (another tool wrote it)',
      data: { ...fresh, 'ca.key': undefined },
      renew: false,
    },
    {
      name: 'no tls.key',
      data: { ...fresh, 'tls.key': undefined },
      renew: true,
      reason: /missing/,
      reuse: true,
    },
    {
      name: 'tls.crt not PEM',
      data: { ...fresh, 'tls.crt': 'garbage' },
      renew: true,
      reason: /not a PEM/,
      reuse: true,
    },
    {
      name: 'key of another certificate',
      data: { ...fresh, 'tls.key': otherCa['tls.key'] },
      renew: true,
      reason: /not the key/,
      reuse: true,
    },
    {
      name: 'signed by another CA',
      data: { ...fresh, 'ca.crt': otherCa['ca.crt'], 'ca.key': otherCa['ca.key'] },
      renew: true,
      reason: /not signed by ca.crt/,
      reuse: true,
    },
    {
      name: 'no ca.crt',
      data: { ...fresh, 'ca.crt': undefined },
      renew: true,
      reason: /no certificate/,
      reuse: false,
    },
    {
      name: 'another Service',
      data: await issueCertificate(
        serviceDnsNames({ namespace: 'ingress', name: 'old' }),
        caOf(fresh),
        null,
        NOW,
      ),
      renew: true,
      reason: /does not name edge-admission, /,
      reuse: true,
    },
    // 300 days into a year: 65 days left, under a third of the lifetime; the CA (5 years) is kept
    { name: 'serving certificate due', data: aged, renew: true, reason: /tls.crt expires/, reuse: true },
  ];
  for (const c of cases) {
    const result = assessSecret(c.data, names, NOW);
    t.equal(result.renew, c.renew, `${c.name}: renew ${c.renew}`);
    if (result.renew) {
      t.match(result.reason, c.reason ?? /./, `${c.name}: ${result.reason}`);
      t.equal(result.reusableCa !== null, c.reuse, `${c.name}: CA ${c.reuse ? 'kept' : 'new'}`);
    }
  }
  // four years and ten months on, the CA itself is due: a new one, the old one still trusted
  const late = NOW + (5 * 365 - 60) * DAY;
  const due = assessSecret(fresh, names, late);
  t.match(due, { renew: true, reusableCa: null });
  t.equal(
    due.renew && due.keepCaPem !== null && cert(due.keepCaPem).fingerprint256,
    cert(fresh['ca.crt']).fingerprint256,
  );
  // an expired CA is not kept
  t.match(assessSecret(fresh, names, NOW + 6 * 365 * DAY), {
    renew: true,
    reusableCa: null,
    keepCaPem: null,
  });
});

t.test('the serving pair every replica loads', async (t) => {
  t.match(servingPair(fresh), { certPem: fresh['tls.crt'], keyPem: fresh['tls.key'] });
  t.match(servingPair({ ...fresh, 'tls.key': 'not a key' }), { problem: /not a PEM private key/ });
  t.match(servingPair({}), { problem: /missing/ });
});
