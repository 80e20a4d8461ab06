// Metrics read off the routing model: Kubernetes objects in (through the real buildModel), the
// exposition's ssl_expire_time_seconds, ssl_certificate_info and orphan_ingress series out (read back
// by the strict text-format reader). Expected values come from node:crypto, not from the module.
import { X509Certificate } from 'node:crypto';
import { Registry } from 'prom-client';
import t from 'tap';
import { certificateFacts, createModelMetrics } from '../../lib/metrics/model-metrics.ts';
import type { BuildResult, IngressTLS, ModelOptions } from '../../lib/model/index.ts';
import { buildWithGraph, graphOf, plan } from '../model/gateway/helpers.ts';
import {
  build,
  externalNameService,
  ingress,
  path,
  pem,
  rule,
  service,
  slice,
  tlsSecret,
  type World,
} from '../model/helpers.ts';
import { type Family, parseExposition, samplesOf, sampleValue } from '../support/prometheus.ts';

const EXPIRE = 'nginx_ingress_controller_ssl_expire_time_seconds';
const INFO = 'nginx_ingress_controller_ssl_certificate_info';
const ORPHAN = 'nginx_ingress_controller_orphan_ingress';
const CLASS = 'k8s.io/ingress-nginx';

// An ECDSA P-256 leaf for ec.example.net, serial 0x1234567890ABCDEF1234 (more than 2^53), issued by a
// CA whose subject is serialNumber=CA-2024-7, O=Example Trust, O=Second Org, CN=Example Root,
// CN=Example Issuing CA (repeated attributes: the first O and the last CN count). Valid to 2126.
const EC = {
  crt: `-----BEGIN CERTIFICATE-----
MIIB5jCCAYugAwIBAgIKEjRWeJCrze8SNDAKBggqhkjOPQQDAjB1MRIwEAYDVQQF
EwlDQS0yMDI0LTcxFjAUBgNVBAoMDUV4YW1wbGUgVHJ1c3QxEzARBgNVBAoMClNl
Y29uZCBPcmcxFTATBgNVBAMMDEV4YW1wbGUgUm9vdDEbMBkGA1UEAwwSRXhhbXBs
ZSBJc3N1aW5nIENBMCAXDTI2MTEyMzExMDk0NloYDzIxMjYxMDMwMTEwOTQ2WjAZ
MRcwFQYDVQQDDA5lYy5leGFtcGxlLm5ldDBZMBMGByqGSM49AgEGCCqGSM49AwEH
A0IABN91nEoxNlc+PtUVTr0Yuc2tAopk4ph36hy8lIIIMQbC8/QUlctN/0A/r1/r
pF7p7AJfUOY15gWbjtYa6U7tGIqjXTBbMBkGA1UdEQQSMBCCDmVjLmV4YW1wbGUu
bmV0MB0GA1UdDgQWBBTjwO1oIoWfPL+LdXugVAH5gY2g3jAfBgNVHSMEGDAWgBQ+
rGIqm4rhOeVEeiNnZiPNQbx/DjAKBggqhkjOPQQDAgNJADBGAiEA1Ys0RAqKCxh+
4WiZH7YOnMoGE1aYh4DS5q22DtWrVcMCIQCWa+EYn02P1g8E0Je+4/5HoIF9rRa3
wtkEYU9GH3xjMA==
-----END CERTIFICATE-----
`,
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg78H+2UglyLP9faJb
DjUBpXyb2yanSz8jiyylNm285YmhRANCAATfdZxKMTZXPj7VFU69GLnNrQKKZOKY
d+ocvJSCCDEGwvP0FJXLTf9AP69f66Re6ewCX1DmNeYFm47WGulO7RiK
-----END PRIVATE KEY-----
`,
};

/** A test certificate and what its issuer says (written out by hand, not computed by the module). */
interface Cert {
  pair: { crt: string; key: string };
  /** issuer: first O, last CN, serialNumber attribute */
  org: string;
  cn: string;
  issuerSerial: string;
  algorithm: string;
}

const A: Cert = { pair: pem('a-example'), org: '', cn: 'a.example.com', issuerSerial: '', algorithm: 'RSA' };
const WILD: Cert = {
  pair: pem('wildcard-example'),
  org: '',
  cn: '*.example.com',
  issuerSerial: '',
  algorithm: 'RSA',
};
const ECDSA: Cert = {
  pair: EC,
  org: 'Example Trust',
  cn: 'Example Issuing CA',
  issuerSerial: 'CA-2024-7',
  algorithm: 'ECDSA',
};

/** NotAfter in unix seconds and the decimal serial, from node:crypto. */
function x509Of(cert: Cert): { notAfter: number; serial: string } {
  const x509 = new X509Certificate(cert.pair.crt);
  return {
    notAfter: x509.validToDate.getTime() / 1000,
    serial: BigInt(`0x${x509.serialNumber}`).toString(10),
  };
}

interface Series {
  labels: Record<string, string>;
  value: number;
}

/** The ssl_* series a server `host` presenting Secret `secretId` (namespace/name) with `cert` must have. */
function sslSeries(host: string, secretId: string, cert: Cert): { expire: Series; info: Series } {
  const [namespace = '', secretName = ''] = secretId.split('/');
  const { notAfter, serial } = x509Of(cert);
  const base = {
    namespace,
    class: CLASS,
    host,
    secret_name: secretName,
    identifier: `${cert.issuerSerial}-${serial}`,
  };
  return {
    expire: { labels: base, value: notAfter },
    info: {
      labels: {
        ...base,
        issuer_organization: cert.org,
        issuer_common_name: cert.cn,
        serial_number: serial,
        public_key_algorithm: cert.algorithm,
      },
      value: 1,
    },
  };
}

const keyOf = (s: Series) =>
  JSON.stringify(Object.entries(s.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
const sorted = (list: Series[]) => [...list].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
const seriesOf = (families: Map<string, Family>, name: string): Series[] =>
  sorted(samplesOf(families, name).map((s) => ({ labels: s.labels, value: s.value })));

/** A fresh registry with the model metrics on it. */
function fixture() {
  const registry = new Registry();
  const metrics = createModelMetrics(registry, { controllerClass: CLASS });
  return {
    metrics,
    apply(result: BuildResult): void {
      metrics.setModel(result.model, result.diagnostics);
    },
    async scrape(): Promise<Map<string, Family>> {
      return parseExposition(await registry.metrics());
    },
  };
}

const site = (name: string, hosts: string[], tls?: IngressTLS[], namespace = 'default') =>
  ingress(name, { namespace, tls, rules: hosts.map((h) => rule(h, path('/', 'web:80'))) });

const DEFAULT_CERT: Partial<ModelOptions> = { defaultSSLCertificate: 'ingress/default-cert' };

// --- 1. ssl_expire_time_seconds and ssl_certificate_info, per server ---

interface SSLCase extends World {
  name: string;
  options?: Partial<ModelOptions>;
  /** [host, Secret id, certificate] of every server that must have series */
  expect: Array<[string, string, Cert]>;
}

const sslCases: SSLCase[] = [
  {
    name: 'a host with a usable TLS Secret; a host without a tls section has none',
    ingresses: [
      site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }]),
      site('plain', ['plain.example.org']),
    ],
    secrets: [tlsSecret('a-tls', A.pair)],
    expect: [['a.example.com', 'default/a-tls', A]],
  },
  {
    name: 'an ECDSA certificate from a CA with O, CN and serialNumber, in another namespace',
    ingresses: [
      site('ec', ['ec.example.net'], [{ hosts: ['ec.example.net'], secretName: 'ec-tls' }], 'shop'),
    ],
    secrets: [tlsSecret('ec-tls', EC, 'shop')],
    expect: [['ec.example.net', 'shop/ec-tls', ECDSA]],
  },
  {
    name: 'one Secret for two hosts: a series per host',
    ingresses: [
      site(
        'a',
        ['a.example.com', 'www.a.example.com'],
        [{ hosts: ['a.example.com', 'www.a.example.com'], secretName: 'a-tls' }],
      ),
    ],
    secrets: [tlsSecret('a-tls', A.pair)],
    expect: [
      ['a.example.com', 'default/a-tls', A],
      ['www.a.example.com', 'default/a-tls', A],
    ],
  },
  {
    name: 'a missing Secret and no --default-ssl-certificate: no series (the generated one is not in the model)',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'nope' }])],
    expect: [],
  },
  {
    name: 'a missing Secret with --default-ssl-certificate: the host and `_` show the default Secret',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'nope' }])],
    secrets: [tlsSecret('default-cert', WILD.pair, 'ingress')],
    options: DEFAULT_CERT,
    expect: [
      ['a.example.com', 'ingress/default-cert', WILD],
      ['_', 'ingress/default-cert', WILD],
    ],
  },
  {
    name: 'an unusable Secret (key of another certificate) is served with the default one',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'mixed' }])],
    secrets: [
      tlsSecret('mixed', { crt: A.pair.crt, key: WILD.pair.key }),
      tlsSecret('default-cert', WILD.pair, 'ingress'),
    ],
    options: DEFAULT_CERT,
    expect: [
      ['a.example.com', 'ingress/default-cert', WILD],
      ['_', 'ingress/default-cert', WILD],
    ],
  },
  {
    name: 'usable and missing Secrets side by side with a default certificate',
    ingresses: [
      site('ec', ['ec.example.net'], [{ hosts: ['ec.example.net'], secretName: 'ec-tls' }]),
      site('b', ['b.example.org'], [{ hosts: ['b.example.org'], secretName: 'gone' }]),
    ],
    secrets: [tlsSecret('ec-tls', EC), tlsSecret('default-cert', A.pair, 'ingress')],
    options: DEFAULT_CERT,
    expect: [
      ['ec.example.net', 'default/ec-tls', ECDSA],
      ['b.example.org', 'ingress/default-cert', A],
      ['_', 'ingress/default-cert', A],
    ],
  },
  {
    name: 'a default certificate and no tls section anywhere: only `_`',
    ingresses: [site('plain', ['plain.example.org'])],
    secrets: [tlsSecret('default-cert', WILD.pair, 'ingress')],
    options: DEFAULT_CERT,
    expect: [['_', 'ingress/default-cert', WILD]],
  },
  {
    name: 'no Ingress, no default certificate: nothing',
    ingresses: [],
    expect: [],
  },
  {
    name: 'a --default-ssl-certificate whose Secret is missing: nothing',
    ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'nope' }])],
    options: DEFAULT_CERT,
    expect: [],
  },
];

for (const c of sslCases) {
  t.test(`ssl: ${c.name}`, async (t) => {
    const m = fixture();
    m.apply(build(c, c.options));
    const families = await m.scrape();
    const wanted = c.expect.map(([host, secret, cert]) => sslSeries(host, secret, cert));
    t.strictSame(seriesOf(families, EXPIRE), sorted(wanted.map((w) => w.expire)), EXPIRE);
    t.strictSame(seriesOf(families, INFO), sorted(wanted.map((w) => w.info)), INFO);
  });
}

t.test('ssl: both are gauges, and the expiry is the certificate notAfter in unix seconds', async (t) => {
  const m = fixture();
  m.apply(
    build({
      ingresses: [site('ec', ['ec.example.net'], [{ hosts: ['ec.example.net'], secretName: 'ec-tls' }])],
      secrets: [tlsSecret('ec-tls', EC)],
    }),
  );
  const families = await m.scrape();
  t.equal(families.get(EXPIRE)?.type, 'gauge');
  t.equal(families.get(INFO)?.type, 'gauge');
  t.equal(families.get(ORPHAN)?.type, 'gauge');
  // 2126-10-30T11:09:46Z, written out
  t.equal(sampleValue(families, EXPIRE, { host: 'ec.example.net' }), Date.UTC(2126, 9, 30, 11, 9, 46) / 1000);
  t.equal(
    sampleValue(families, INFO, { host: 'ec.example.net', serial_number: '85968058272638546416180' }),
    1,
  );
});

// --- 2. certificateFacts ---

t.test('certificateFacts: null for anything that is not a certificate, never a throw', async (t) => {
  const garbage = [
    '',
    'not a certificate',
    '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
    '-----BEGIN CERTIFICATE-----\n',
    A.pair.key,
    EC.crt.slice(0, 200),
  ];
  for (const text of garbage) {
    let facts: unknown;
    t.doesNotThrow(
      () => {
        facts = certificateFacts(text);
      },
      JSON.stringify(text.slice(0, 40)),
    );
    t.equal(facts, null, `null for ${JSON.stringify(text.slice(0, 40))}`);
  }
});

t.test('certificateFacts: exact facts of the ECDSA certificate', async (t) => {
  t.strictSame(certificateFacts(EC.crt), {
    notAfter: Date.UTC(2126, 9, 30, 11, 9, 46) / 1000,
    identifier: 'CA-2024-7-85968058272638546416180',
    issuerOrganization: 'Example Trust',
    issuerCommonName: 'Example Issuing CA',
    serialNumber: '85968058272638546416180',
    publicKeyAlgorithm: 'ECDSA',
  });
});

t.test(
  'certificateFacts: identifier is `<issuer serialNumber>-<decimal serial>`, per certificate',
  async (t) => {
    for (const [name, cert] of [
      ['a-example', A],
      ['wildcard-example', WILD],
      ['ecdsa', ECDSA],
    ] as const) {
      const facts = certificateFacts(cert.pair.crt);
      const { notAfter, serial } = x509Of(cert);
      t.match(facts?.serialNumber, /^[0-9]+$/, `${name}: serial in decimal`);
      t.equal(facts?.serialNumber, serial, `${name}: serial`);
      t.equal(facts?.identifier, `${cert.issuerSerial}-${serial}`, `${name}: identifier`);
      t.equal(facts?.notAfter, notAfter, `${name}: notAfter`);
      t.equal(facts?.publicKeyAlgorithm, cert.algorithm, `${name}: key algorithm`);
      t.equal(facts?.issuerOrganization, cert.org, `${name}: issuer O`);
      t.equal(facts?.issuerCommonName, cert.cn, `${name}: issuer CN`);
    }
  },
);

t.test('certificateFacts: a bundle gives the facts of its first certificate', async (t) => {
  t.equal(certificateFacts(EC.crt + A.pair.crt)?.identifier, `CA-2024-7-${x509Of(ECDSA).serial}`);
  t.equal(certificateFacts(A.pair.crt + EC.crt)?.identifier, `-${x509Of(A).serial}`);
});

// --- 3. series follow the model ---

t.test('ssl: a host that leaves the model loses its series; the others keep theirs', async (t) => {
  const m = fixture();
  const secrets = [tlsSecret('a-tls', A.pair), tlsSecret('ec-tls', EC)];
  const a = site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }]);
  const ec = site('ec', ['ec.example.net'], [{ hosts: ['ec.example.net'], secretName: 'ec-tls' }]);
  const both = [
    sslSeries('a.example.com', 'default/a-tls', A),
    sslSeries('ec.example.net', 'default/ec-tls', ECDSA),
  ];
  const [onlyA] = both as [{ expire: Series; info: Series }];

  m.apply(build({ ingresses: [a, ec], secrets }));
  let families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), sorted(both.map((s) => s.expire)), 'two hosts');
  t.strictSame(seriesOf(families, INFO), sorted(both.map((s) => s.info)), 'two hosts');

  m.apply(build({ ingresses: [a], secrets }));
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [onlyA.expire], 'ec.example.net removed, a.example.com unchanged');
  t.strictSame(seriesOf(families, INFO), [onlyA.info], 'ec.example.net removed, a.example.com unchanged');

  // the same model again: nothing changes
  m.apply(build({ ingresses: [a], secrets }));
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [onlyA.expire], 'same model, same series');

  m.apply(build({ ingresses: [], secrets }));
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [], 'no hosts, no expiry series');
  t.strictSame(seriesOf(families, INFO), [], 'no hosts, no info series');
});

t.test('ssl: a renewed certificate replaces the old series (new identifier, new expiry)', async (t) => {
  const m = fixture();
  const ingresses = [site('plain', ['plain.example.org'])];
  m.apply(build({ ingresses, secrets: [tlsSecret('default-cert', WILD.pair, 'ingress')] }, DEFAULT_CERT));
  let families = await m.scrape();
  const before = sslSeries('_', 'ingress/default-cert', WILD);
  t.strictSame(seriesOf(families, EXPIRE), [before.expire]);

  m.apply(build({ ingresses, secrets: [tlsSecret('default-cert', EC, 'ingress')] }, DEFAULT_CERT));
  families = await m.scrape();
  const after = sslSeries('_', 'ingress/default-cert', ECDSA);
  t.not(after.expire.labels.identifier, before.expire.labels.identifier, 'the fixtures differ');
  t.strictSame(seriesOf(families, EXPIRE), [after.expire], 'only the new certificate');
  t.strictSame(seriesOf(families, INFO), [after.info], 'only the new certificate');
});

// --- 4. leader election ---

t.test('ssl: only the leader exports expiry; certificate info stays', async (t) => {
  const m = fixture();
  const secrets = [tlsSecret('a-tls', A.pair), tlsSecret('ec-tls', EC)];
  const a = site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }]);
  const ec = site('ec', ['ec.example.net'], [{ hosts: ['ec.example.net'], secretName: 'ec-tls' }]);
  const sa = sslSeries('a.example.com', 'default/a-tls', A);
  const sec = sslSeries('ec.example.net', 'default/ec-tls', ECDSA);

  m.apply(build({ ingresses: [a], secrets }));
  let families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [sa.expire], 'leader from the start');

  m.metrics.setLeader(false);
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [], 'follower: no expiry series');
  t.strictSame(seriesOf(families, INFO), [sa.info], 'follower: info kept');

  m.metrics.setLeader(false);
  m.apply(build({ ingresses: [a, ec], secrets }));
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [], 'a new model on a follower: still no expiry series');
  t.strictSame(
    seriesOf(families, INFO),
    sorted([sa.info, sec.info]),
    'a new model on a follower: info follows',
  );

  m.metrics.setLeader(true);
  families = await m.scrape();
  t.strictSame(
    seriesOf(families, EXPIRE),
    sorted([sa.expire, sec.expire]),
    'leader again: the current model',
  );
  t.strictSame(seriesOf(families, INFO), sorted([sa.info, sec.info]), 'leader again: info unchanged');
});

t.test('ssl: leadership changes before any model are harmless', async (t) => {
  const m = fixture();
  m.metrics.setLeader(false);
  m.metrics.setLeader(true);
  let families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), []);
  m.apply(
    build({
      ingresses: [site('a', ['a.example.com'], [{ hosts: ['a.example.com'], secretName: 'a-tls' }])],
      secrets: [tlsSecret('a-tls', A.pair)],
    }),
  );
  families = await m.scrape();
  t.strictSame(seriesOf(families, EXPIRE), [sslSeries('a.example.com', 'default/a-tls', A).expire]);
});

// --- 5. orphan_ingress ---

/** A Service `name` with port 80 and `ready` endpoints (none: a Service without endpoints). */
function backend(name: string, ready: number, namespace = 'default') {
  const addresses = Array.from({ length: ready }, (_, i) => `10.1.0.${i + 1}`);
  return {
    services: [service(name, [{ port: 80, targetPort: 8080 }], namespace)],
    slices: [slice(name, addresses.length > 0 ? [{ addresses }] : [], [{ port: 8080 }], { namespace })],
  };
}

function worldOf(parts: Array<ReturnType<typeof backend>>, ingresses: World['ingresses']): World {
  return {
    ingresses,
    services: parts.flatMap((p) => p.services),
    slices: parts.flatMap((p) => p.slices),
    autoBackends: false,
  };
}

/** `namespace/ingress no-service=N no-endpoint=N`, sorted (a missing type shows as undefined). */
function orphanLines(families: Map<string, Family>): string[] {
  const byIngress = new Map<string, Record<string, number>>();
  for (const s of samplesOf(families, ORPHAN)) {
    const names = Object.keys(s.labels).sort().join(',');
    if (names !== 'ingress,namespace,type') throw new Error(`orphan_ingress with labels ${names}`);
    const key = `${s.labels.namespace}/${s.labels.ingress}`;
    const entry = byIngress.get(key) ?? {};
    const type = s.labels.type ?? '';
    if (type in entry) throw new Error(`${key}: ${type} twice`);
    entry[type] = s.value;
    byIngress.set(key, entry);
  }
  return [...byIngress]
    .map(([key, v]) => `${key} no-service=${v['no-service']} no-endpoint=${v['no-endpoint']}`)
    .sort();
}

const route = (name: string, host: string, ...backends: string[]) =>
  ingress(name, { rules: [rule(host, ...backends.map((b, i) => path(`/${i}`, b)))] });

interface OrphanCase {
  name: string;
  world: World;
  options?: Partial<ModelOptions>;
  lines: string[];
}

const orphanCases: OrphanCase[] = [
  {
    name: 'a healthy Ingress has both types at 0',
    world: worldOf([backend('web', 2)], [route('ok', 'ok.test', 'web:80')]),
    lines: ['default/ok no-service=0 no-endpoint=0'],
  },
  {
    name: 'a missing Service: no-service 1',
    world: worldOf([], [route('lost', 'lost.test', 'ghost:80')]),
    lines: ['default/lost no-service=1 no-endpoint=0'],
  },
  {
    name: 'a Service without endpoints: no-endpoint 1',
    world: worldOf([backend('empty', 0)], [route('idle', 'idle.test', 'empty:80')]),
    lines: ['default/idle no-service=0 no-endpoint=1'],
  },
  {
    name: 'a Service whose only endpoint is not ready: no-endpoint 1',
    world: {
      ingresses: [route('idle', 'idle.test', 'web:80')],
      services: [service('web', [{ port: 80, targetPort: 8080 }])],
      slices: [slice('web', [{ addresses: ['10.1.0.1'], ready: false }], [{ port: 8080 }])],
      autoBackends: false,
    },
    lines: ['default/idle no-service=0 no-endpoint=1'],
  },
  {
    name: 'a Service without the port asked for: no-endpoint 1',
    world: worldOf([backend('web', 1)], [route('port', 'port.test', 'web:9999')]),
    lines: ['default/port no-service=0 no-endpoint=1'],
  },
  {
    name: 'an ExternalName Service pointing at localhost: no-endpoint 1',
    world: {
      ingresses: [route('ext', 'ext.test', 'ext:443')],
      services: [externalNameService('ext', 'localhost')],
      autoBackends: false,
    },
    lines: ['default/ext no-service=0 no-endpoint=1'],
  },
  {
    name: 'an ExternalName Service with --disable-svc-external-name: no-endpoint 1',
    world: {
      ingresses: [route('ext', 'ext.test', 'ext:443')],
      services: [externalNameService('ext', 'api.example.net')],
      autoBackends: false,
    },
    options: { disableSvcExternalName: true },
    lines: ['default/ext no-service=0 no-endpoint=1'],
  },
  {
    name: 'a usable ExternalName Service: both 0',
    world: {
      ingresses: [route('ext', 'ext.test', 'ext:443')],
      services: [externalNameService('ext', 'api.example.net')],
      autoBackends: false,
    },
    lines: ['default/ext no-service=0 no-endpoint=0'],
  },
  {
    name: 'one Ingress with a missing, an empty and a healthy backend: both 1',
    world: worldOf(
      [backend('web', 1), backend('empty', 0)],
      [route('mixed', 'mixed.test', 'web:80', 'ghost:80', 'empty:80')],
    ),
    lines: ['default/mixed no-service=1 no-endpoint=1'],
  },
  {
    name: 'two Ingresses sharing a missing Service are both orphaned; a healthy neighbour is not',
    world: worldOf(
      [backend('web', 1)],
      [
        route('one', 'one.test', 'ghost:80'),
        route('two', 'two.test', 'ghost:80'),
        route('ok', 'ok.test', 'web:80'),
      ],
    ),
    lines: [
      'default/ok no-service=0 no-endpoint=0',
      'default/one no-service=1 no-endpoint=0',
      'default/two no-service=1 no-endpoint=0',
    ],
  },
  {
    name: 'an Ingress whose only backend is spec.defaultBackend (the catch-all) counts',
    world: worldOf([], [ingress('fallback', { namespace: 'edge', defaultBackend: 'ghost:80' })]),
    lines: ['edge/fallback no-service=1 no-endpoint=0'],
  },
  {
    name: 'the same names in two namespaces are two Ingresses',
    world: worldOf(
      [backend('web', 1, 'blue')],
      [
        ingress('site', { namespace: 'blue', rules: [rule('blue.test', path('/', 'web:80'))] }),
        ingress('site', { namespace: 'green', rules: [rule('green.test', path('/', 'web:80'))] }),
      ],
    ),
    lines: ['blue/site no-service=0 no-endpoint=0', 'green/site no-service=1 no-endpoint=0'],
  },
  {
    name: 'an Ingress of another class is not ours: no series',
    world: worldOf(
      [],
      [ingress('theirs', { className: 'nginx', rules: [rule('x.test', path('/', 'ghost:80'))] })],
    ),
    lines: [],
  },
];

for (const c of orphanCases) {
  t.test(`orphan_ingress: ${c.name}`, async (t) => {
    const m = fixture();
    m.apply(build(c.world, c.options));
    t.strictSame(orphanLines(await m.scrape()), c.lines);
  });
}

t.test('orphan_ingress: HTTPRoutes are not Ingresses, even one named like an Ingress', async (t) => {
  const m = fixture();
  const world = worldOf([backend('web', 1)], [route('site', 'site.test', 'web:80')]);
  const graph = graphOf([plan('site'), plan('store', { rules: [{ backends: ['ghost:80'] }] })]);
  const result = buildWithGraph(world, graph, {}, ['ghost']);
  t.ok(
    [result.model.catchAll, ...result.model.servers].some((s) =>
      s.routes.some((r) => r.ingress?.kind === 'HTTPRoute'),
    ),
    'precondition: the HTTPRoute is routed',
  );
  m.apply(result);
  t.strictSame(orphanLines(await m.scrape()), ['default/site no-service=0 no-endpoint=0']);
});

t.test('orphan_ingress: fixed backends go back to 0, a deleted Ingress loses its series', async (t) => {
  const m = fixture();
  const ingresses = [
    route('lost', 'lost.test', 'ghost:80'),
    route('idle', 'idle.test', 'empty:80'),
    route('ok', 'ok.test', 'web:80'),
  ];

  const first = build(worldOf([backend('web', 1), backend('empty', 0)], ingresses));
  m.apply(first);
  t.strictSame(orphanLines(await m.scrape()), [
    'default/idle no-service=0 no-endpoint=1',
    'default/lost no-service=1 no-endpoint=0',
    'default/ok no-service=0 no-endpoint=0',
  ]);

  // endpoints appear: only the endpoint lists change (same routesHash), and no-endpoint goes to 0
  const second = build(worldOf([backend('web', 1), backend('empty', 2)], ingresses));
  t.equal(second.model.routesHash, first.model.routesHash, 'precondition: only endpoints changed');
  m.apply(second);
  t.strictSame(orphanLines(await m.scrape()), [
    'default/idle no-service=0 no-endpoint=0',
    'default/lost no-service=1 no-endpoint=0',
    'default/ok no-service=0 no-endpoint=0',
  ]);

  // the missing Service is created
  m.apply(build(worldOf([backend('web', 1), backend('empty', 2), backend('ghost', 1)], ingresses)));
  t.strictSame(orphanLines(await m.scrape()), [
    'default/idle no-service=0 no-endpoint=0',
    'default/lost no-service=0 no-endpoint=0',
    'default/ok no-service=0 no-endpoint=0',
  ]);

  // it breaks again, then the Ingress is deleted
  m.apply(build(worldOf([backend('web', 1), backend('empty', 2)], ingresses)));
  t.strictSame(orphanLines(await m.scrape())[1], 'default/lost no-service=1 no-endpoint=0', 'broken again');
  m.apply(build(worldOf([backend('web', 1), backend('empty', 2)], ingresses.slice(1))));
  const families = await m.scrape();
  t.strictSame(orphanLines(families), [
    'default/idle no-service=0 no-endpoint=0',
    'default/ok no-service=0 no-endpoint=0',
  ]);
  t.equal(sampleValue(families, ORPHAN, { ingress: 'lost', type: 'no-service' }), undefined, 'gone');

  m.apply(build(worldOf([], [])));
  t.strictSame(samplesOf(await m.scrape(), ORPHAN), [], 'no Ingresses, no series');
});

t.test('orphan_ingress: only backend problems of Ingresses count', async (t) => {
  // a missing TLS Secret is a diagnostic on the Ingress too, but not an orphan
  const m = fixture();
  const result = build(
    worldOf(
      [backend('web', 1)],
      [
        ingress('tls', {
          tls: [{ hosts: ['t.test'], secretName: 'nope' }],
          rules: [rule('t.test', path('/', 'web:80'))],
        }),
      ],
    ),
  );
  t.ok(
    result.diagnostics.some((d) => d.code === 'TLS_SECRET_NOT_FOUND'),
    'precondition: the build reports the Secret',
  );
  m.apply(result);
  t.strictSame(orphanLines(await m.scrape()), ['default/tls no-service=0 no-endpoint=0']);
});

t.test(
  'orphan_ingress: a backend problem reported on another kind of object is not the Ingress',
  async (t) => {
    // buildModel reports backend problems on Ingresses only; a Service that happens to share an
    // Ingress's namespace/name must still not orphan it
    const m = fixture();
    const { model, diagnostics } = build(worldOf([backend('web', 1)], [route('web', 'web.test', 'web:80')]));
    m.metrics.setModel(model, [
      ...diagnostics,
      {
        kind: 'Service',
        namespace: 'default',
        name: 'web',
        severity: 'warning',
        code: 'SERVICE_NOT_FOUND',
        message: 'x',
      },
      {
        kind: 'Service',
        namespace: 'default',
        name: 'web',
        severity: 'warning',
        code: 'ENDPOINTS_NONE',
        message: 'x',
      },
    ]);
    t.strictSame(orphanLines(await m.scrape()), ['default/web no-service=0 no-endpoint=0']);
  },
);
