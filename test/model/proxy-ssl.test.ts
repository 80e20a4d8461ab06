// proxy-ssl-* in the model: per Ingress (every route of it), the Secret resolved as ingress-nginx's
// store reads it (tls.crt+tls.key and/or ca.crt), ingress-nginx's validators and fallbacks, and a
// Secret that cannot be used → the routes are denied (503) with a diagnostic, other Ingresses intact.
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { ProxySslAnnotations } from '../../lib/model/annotations/proxy-ssl.ts';
import type { Model, Secret } from '../../lib/model/index.ts';
import { build, ingress, path, rule, runCases } from './helpers.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/backend-tls/${name}`, import.meta.url), 'utf8');
const CA = fixture('ca.crt');
const OTHER_CA = fixture('other-ca.crt');
const CLIENT = { crt: fixture('client.crt'), key: fixture('client.key') };
const BACKEND = { crt: fixture('backend.crt'), key: fixture('backend.key') };

function secret(name: string, data: Record<string, string>, namespace = 'default'): Secret {
  const encoded: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) encoded[key] = Buffer.from(value).toString('base64');
  return { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name, namespace }, data: encoded };
}
const full = (name = 'backend-tls', namespace = 'default') =>
  secret(name, { 'tls.crt': CLIENT.crt, 'tls.key': CLIENT.key, 'ca.crt': CA }, namespace);

const site = (name: string, nginx: Record<string, string>, host = 'a.com', created = 0) =>
  ingress(name, {
    created,
    nginx: { 'backend-protocol': 'HTTPS', ...nginx },
    rules: [rule(host, path(`/${name}`, 'web:443'), path(`/${name}/two`, 'web:443'))],
  });
const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});

/** the proxy-ssl value of the routes of Ingress `name` (all its routes must carry the same one) */
function proxySslOf(model: Model, name: string): ProxySslAnnotations | undefined {
  const values = model.servers
    .flatMap((s) => s.routes)
    .filter((r) => r.ingress.name === name)
    .map((r) => r.annotations.proxySsl);
  return values.every((v) => v === values[0]) ? values[0] : undefined;
}
/** without the PEMs: which parts the Secret gave */
function summary(value: ProxySslAnnotations | undefined) {
  if (value === undefined) return undefined;
  const { material, ...rest } = value;
  return {
    ...rest,
    material:
      material === null
        ? null
        : {
            secret: material.secret,
            cert: material.certPem?.includes('BEGIN CERTIFICATE') ?? false,
            key: material.keyPem?.includes('PRIVATE KEY') ?? false,
            ca: material.caPem?.includes('BEGIN CERTIFICATE') ?? false,
            sha: /^[0-9a-f]{64}$/.test(material.sha256),
          },
  };
}

runCases(t, [
  {
    name: 'proxy-ssl: defaults with only proxy-ssl-secret; the Secret is a reference; other Ingresses have none',
    ingresses: [site('a', { 'proxy-ssl-secret': 'default/backend-tls' }), site('b', {}, 'b.com')],
    secrets: [full()],
    check: (t, { model, references }) => {
      t.strictSame(summary(proxySslOf(model, 'a')), {
        secret: 'default/backend-tls',
        verify: false,
        verifyDepth: 1,
        name: null,
        serverName: false,
        ciphers: 'DEFAULT',
        protocols: ['TLSv1.2'],
        denied: null,
        material: { secret: 'default/backend-tls', cert: true, key: true, ca: true, sha: true },
      });
      t.match(proxySslOf(model, 'b'), { secret: null, material: null, denied: null });
      t.ok(references.secrets.includes('default/backend-tls'), 'watched: a change to it rebuilds');
    },
  },
  {
    name: 'proxy-ssl: every annotation set; a bare name is in the Ingress namespace',
    ingresses: [
      site('a', {
        'proxy-ssl-secret': 'backend-tls',
        'proxy-ssl-verify': 'on',
        'proxy-ssl-verify-depth': '3',
        'proxy-ssl-name': 'backend.internal',
        'proxy-ssl-server-name': 'on',
        'proxy-ssl-ciphers': 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256',
        'proxy-ssl-protocols': 'TLSv1.3 TLSv1.2',
      }),
    ],
    secrets: [full()],
    check: (t, { model }) => {
      t.match(summary(proxySslOf(model, 'a')), {
        secret: 'backend-tls',
        verify: true,
        verifyDepth: 3,
        name: 'backend.internal',
        serverName: true,
        ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256',
        protocols: ['TLSv1.2', 'TLSv1.3'],
        material: { secret: 'default/backend-tls' },
      });
    },
  },
  {
    name: 'proxy-ssl: a Secret with only ca.crt, or only tls.crt/tls.key, is usable',
    ingresses: [
      site('a', { 'proxy-ssl-secret': 'ca-only' }),
      site('b', { 'proxy-ssl-secret': 'pair-only' }, 'b.com'),
    ],
    secrets: [
      secret('ca-only', { 'ca.crt': `${CA}\n${OTHER_CA}` }),
      secret('pair-only', { 'tls.crt': CLIENT.crt, 'tls.key': CLIENT.key }),
    ],
    check: (t, { model }) => {
      t.match(summary(proxySslOf(model, 'a'))?.material, { cert: false, key: false, ca: true });
      t.equal(proxySslOf(model, 'a')?.material?.caPem?.match(/BEGIN CERTIFICATE/g)?.length, 2, 'the bundle');
      t.match(summary(proxySslOf(model, 'b'))?.material, { cert: true, key: true, ca: false });
    },
  },
  {
    name: 'proxy-ssl: proxy-ssl-verify on without a ca.crt is reported (nothing to verify against)',
    ingresses: [site('a', { 'proxy-ssl-secret': 'pair-only', 'proxy-ssl-verify': 'on' })],
    secrets: [secret('pair-only', { 'tls.crt': CLIENT.crt, 'tls.key': CLIENT.key })],
    diagnostics: ['PROXY_SSL_NOT_VERIFIED a'],
    messages: ['has no ca.crt'],
    check: (t, { model }) => t.match(proxySslOf(model, 'a'), { verify: true, denied: null }),
  },
  {
    name: 'proxy-ssl: invalid values fall back to their defaults with warnings; depth 0 means 1',
    ingresses: [
      site('a', {
        'proxy-ssl-secret': 'backend-tls',
        'proxy-ssl-verify': 'yes',
        'proxy-ssl-verify-depth': 'deep',
        'proxy-ssl-name': 'a b',
        'proxy-ssl-server-name': 'true',
        'proxy-ssl-ciphers': 'NOT-A-CIPHER',
        'proxy-ssl-protocols': 'TLSv1.1 TLSv1.2',
      }),
      site('b', { 'proxy-ssl-secret': 'backend-tls', 'proxy-ssl-verify-depth': '0' }, 'b.com'),
      site('c', { 'proxy-ssl-secret': 'backend-tls', 'proxy-ssl-ciphers': 'ALL;rm' }, 'c.com'),
      site('d', { 'proxy-ssl-secret': 'backend-tls', 'proxy-ssl-name': '$host' }, 'd.com'),
    ],
    secrets: [full()],
    diagnostics: [
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID a',
      'ANNOTATION_INVALID c',
      'ANNOTATION_INVALID d',
    ],
    messages: [
      'proxy-ssl-verify="yes" is invalid',
      'proxy-ssl-protocols="TLSv1.1 TLSv1.2" is invalid',
      'proxy-ssl-ciphers="NOT-A-CIPHER" is invalid',
      'the default is used',
    ],
    check: (t, { model }) => {
      t.match(proxySslOf(model, 'a'), {
        verify: false,
        verifyDepth: 1,
        name: null,
        serverName: false,
        ciphers: 'DEFAULT',
        protocols: ['TLSv1.2'],
        denied: null,
      });
      t.match(proxySslOf(model, 'b'), { verifyDepth: 1 });
      t.match(proxySslOf(model, 'c'), { ciphers: 'DEFAULT' });
      t.match(proxySslOf(model, 'd'), { name: null });
      t.equal(model.servers.flatMap((s) => s.routes).length, 8, 'every Ingress is still served');
    },
  },
  {
    name: 'proxy-ssl: an invalid proxy-ssl-secret value drops the Ingress (its validator error propagates)',
    ingresses: [site('a', { 'proxy-ssl-secret': 'backend-tls;rm' }), site('b', {}, 'b.com')],
    secrets: [full()],
    routes: ['b.com Prefix /b/two -> default-web-443 (b)', 'b.com Prefix /b -> default-web-443 (b)'],
    diagnostics: ['ANNOTATION_INVALID a'],
    messages: ['the Ingress is ignored'],
  },
  {
    name: 'proxy-ssl: without proxy-ssl-secret the others have no effect, and say so',
    ingresses: [site('a', { 'proxy-ssl-verify': 'on', 'proxy-ssl-name': 'backend.internal' })],
    diagnostics: ['ANNOTATION_INVALID a', 'ANNOTATION_INVALID a'],
    messages: ['it has no effect without proxy-ssl-secret'],
    check: (t, { model }) => t.match(proxySslOf(model, 'a'), { secret: null, verify: false, name: null }),
  },
  {
    name: 'proxy-ssl: a missing Secret denies the paths of that Ingress only; the Secret is still watched',
    ingresses: [
      site('a', { 'proxy-ssl-secret': 'nope' }),
      site('b', { 'proxy-ssl-secret': 'backend-tls' }, 'b.com'),
    ],
    secrets: [full()],
    diagnostics: ['PROXY_SSL_UNAVAILABLE a'],
    messages: ['proxy-ssl-secret default/nope does not exist', 'the paths of this Ingress answer 503'],
    check: (t, { model, references }) => {
      t.match(proxySslOf(model, 'a'), { material: null, denied: /does not exist/ });
      t.match(proxySslOf(model, 'b'), { denied: null, material: { secret: 'default/backend-tls' } });
      t.ok(references.secrets.includes('default/nope'), 'creating it fixes the Ingress');
    },
  },
  {
    name: 'proxy-ssl: unusable Secrets (no keys, broken PEMs, a key of another certificate) deny with a reason',
    ingresses: [
      site('a', { 'proxy-ssl-secret': 'empty' }),
      site('b', { 'proxy-ssl-secret': 'junk-ca' }, 'b.com'),
      site('c', { 'proxy-ssl-secret': 'junk-cert' }, 'c.com'),
      site('d', { 'proxy-ssl-secret': 'mismatch' }, 'd.com'),
    ],
    secrets: [
      secret('empty', { other: 'x' }),
      secret('junk-ca', { 'ca.crt': 'not a certificate' }),
      secret('junk-cert', { 'tls.crt': 'junk', 'tls.key': CLIENT.key, 'ca.crt': CA }),
      secret('mismatch', { 'tls.crt': CLIENT.crt, 'tls.key': BACKEND.key }),
    ],
    diagnostics: [
      'PROXY_SSL_UNAVAILABLE a',
      'PROXY_SSL_UNAVAILABLE b',
      'PROXY_SSL_UNAVAILABLE c',
      'PROXY_SSL_UNAVAILABLE d',
    ],
    messages: [
      'it has neither tls.crt with tls.key nor ca.crt',
      'ca.crt holds no PEM certificate',
      'tls.crt is not a PEM certificate',
      'tls.key does not belong to the certificate',
    ],
    check: (t, { model }) => {
      for (const name of ['a', 'b', 'c', 'd']) t.not(proxySslOf(model, name)?.denied, null, `${name} denied`);
    },
  },
  {
    name: 'proxy-ssl: a malformed reference (a/b/c) denies',
    ingresses: [site('a', { 'proxy-ssl-secret': 'a/b/c' })],
    diagnostics: ['PROXY_SSL_UNAVAILABLE a'],
    messages: ['is not a name or namespace/name'],
  },
  {
    name: 'proxy-ssl: another namespace is refused without allow-cross-namespace-resources',
    ingresses: [site('a', { 'proxy-ssl-secret': 'certs/backend-tls' })],
    secrets: [full('backend-tls', 'certs')],
    diagnostics: ['PROXY_SSL_UNAVAILABLE a'],
    messages: ['allow-cross-namespace-resources is false'],
    check: (t, { model }) => t.match(proxySslOf(model, 'a'), { material: null, denied: /another namespace/ }),
  },
  {
    name: 'proxy-ssl: another namespace is read with allow-cross-namespace-resources: "true"',
    ingresses: [site('a', { 'proxy-ssl-secret': 'certs/backend-tls' })],
    secrets: [full('backend-tls', 'certs')],
    configMaps: [configMap({ 'allow-cross-namespace-resources': 'true' })],
    options: { configMap: 'ingress/ingress-ts' },
    check: (t, { model }) =>
      t.match(proxySslOf(model, 'a'), { denied: null, material: { secret: 'certs/backend-tls' } }),
  },
  {
    name: "proxy-ssl: a canary Ingress keeps its main route's settings (its own are never used)",
    ingresses: [
      site('main', { 'proxy-ssl-secret': 'backend-tls' }),
      ingress('canary', {
        created: 1,
        nginx: { canary: 'true', 'canary-weight': '50', 'proxy-ssl-secret': 'nope' },
        rules: [rule('a.com', path('/main', 'other:443'))],
      }),
    ],
    secrets: [full()],
    check: (t, { model }) => {
      const route = model.servers[0]?.routes.find((r) => r.path === '/main');
      t.match(route?.annotations.proxySsl, { denied: null, material: { secret: 'default/backend-tls' } });
      t.equal(route?.canary?.upstream, 'default-other-443');
    },
  },
]);

t.test(
  'proxy-ssl: a new ca.crt in the Secret changes the routes hash (it reaches the data plane)',
  async (t) => {
    const world = (ca: string) => ({
      ingresses: [site('a', { 'proxy-ssl-secret': 'backend-tls' })],
      secrets: [secret('backend-tls', { 'ca.crt': ca })],
    });
    const one = build(world(CA)).model;
    const two = build(world(OTHER_CA)).model;
    t.not(one.routesHash, two.routesHash);
  },
);

t.test('proxy-ssl: the model stays plain data (structuredClone)', async (t) => {
  const { model } = build({
    ingresses: [site('a', { 'proxy-ssl-secret': 'backend-tls' })],
    secrets: [full()],
  });
  t.strictSame(structuredClone(model), model);
});
