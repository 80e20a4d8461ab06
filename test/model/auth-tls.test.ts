// auth-tls-* in the model: per host (the oldest Ingress that sets auth-tls-secret wins), the Secret's
// ca.crt resolved (same namespace, or another one with allow-cross-namespace-resources), ingress-nginx's
// validators and outcomes, and a Secret that cannot be used → the host is denied (caPem null), never open.
import t from 'tap';
import type { ClientAuth } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, runCases } from './helpers.ts';
import { caSecret } from './helpers-client-auth.ts';

const CA = pem('a-example').crt;
const OTHER_CA = pem('other').crt;
const site = (name: string, nginx: Record<string, string>, host = 'a.com', created = 0, namespace?: string) =>
  ingress(name, { created, nginx, namespace, rules: [rule(host, path(`/${name}`, 'web:80'))] });
const configMap = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const OPTIONS = { configMap: 'ingress/ingress-ts' };

const auth = (server: { clientAuth: ClientAuth | null } | undefined) => {
  const value = server?.clientAuth;
  if (value === null || value === undefined) return value;
  const { caPem, caSha256, ...rest } = value;
  return { ...rest, ca: caPem === null ? null : caPem.includes('BEGIN CERTIFICATE'), sha: caSha256 !== '' };
};

runCases(t, [
  {
    name: 'auth-tls: defaults with only auth-tls-secret; hosts without it have none',
    ingresses: [site('a', { 'auth-tls-secret': 'ca' }), site('b', {}, 'b.com')],
    secrets: [caSecret('ca', CA)],
    check: (t, { model, references }) => {
      t.strictSame(auth(model.servers[0]), {
        ingress: { namespace: 'default', name: 'a' },
        secret: 'default/ca',
        verifyClient: 'on',
        verifyDepth: 1,
        passCertificate: false,
        matchCN: null,
        errorPage: null,
        ca: true,
        sha: true,
      });
      t.equal(model.servers[1]?.clientAuth, null);
      t.ok(references.secrets.includes('default/ca'), 'the Secret is a model reference');
    },
  },
  {
    name: 'auth-tls: every annotation set',
    ingresses: [
      site('a', {
        'auth-tls-secret': 'default/ca',
        'auth-tls-verify-client': 'optional_no_ca',
        'auth-tls-verify-depth': '3',
        'auth-tls-pass-certificate-to-upstream': 'true',
        'auth-tls-match-cn': 'CN=(alice|bob)',
        'auth-tls-error-page': 'https://errors.example.com/cert',
      }),
    ],
    secrets: [caSecret('ca', `${CA}\n${OTHER_CA}`)],
    check: (t, { model }) => {
      t.match(auth(model.servers[0]), {
        verifyClient: 'optional_no_ca',
        verifyDepth: 3,
        passCertificate: true,
        matchCN: 'CN=(alice|bob)',
        errorPage: 'https://errors.example.com/cert',
      });
      t.equal(
        model.servers[0]?.clientAuth?.caPem?.match(/BEGIN CERTIFICATE/g)?.length,
        2,
        'the whole bundle',
      );
    },
  },
  {
    name: 'auth-tls: the oldest Ingress of the host decides; a newer one is reported',
    ingresses: [
      site('old', { 'auth-tls-secret': 'ca', 'auth-tls-verify-client': 'optional' }, 'a.com', 1),
      site('new', { 'auth-tls-secret': 'other', 'auth-tls-verify-client': 'off' }, 'a.com', 2),
      site('plain', {}, 'a.com', 3),
    ],
    secrets: [caSecret('ca', CA), caSecret('other', OTHER_CA)],
    diagnostics: ['SERVER_ANNOTATION_CONFLICT new'],
    check: (t, { model }) => {
      t.match(auth(model.servers[0]), { secret: 'default/ca', verifyClient: 'optional' });
      t.equal(model.servers[0]?.routes.length, 3, 'the paths of all three are served');
    },
  },
  {
    name: 'auth-tls: invalid verify-client and verify-depth fall back to on and 1 with warnings; 0 means 1',
    ingresses: [
      site('a', {
        'auth-tls-secret': 'ca',
        'auth-tls-verify-client': 'sometimes',
        'auth-tls-verify-depth': 'x',
      }),
      site('b', { 'auth-tls-secret': 'ca', 'auth-tls-verify-depth': '0' }, 'b.com'),
    ],
    secrets: [caSecret('ca', CA)],
    diagnostics: ['ANNOTATION_INVALID a', 'ANNOTATION_INVALID a'],
    messages: ['auth-tls-verify-client="sometimes" is invalid', 'the default is used'],
    check: (t, { model }) => {
      t.match(auth(model.servers[0]), { verifyClient: 'on', verifyDepth: 1 });
      t.match(auth(model.servers[1]), { verifyDepth: 1 });
    },
  },
  ...(
    [
      ['auth-tls-secret', 'ca;rm'],
      ['auth-tls-pass-certificate-to-upstream', 'yes'],
      ['auth-tls-match-cn', 'alice'],
      ['auth-tls-match-cn', 'CN=(unclosed'],
      ['auth-tls-error-page', 'https://e.com/x?y=1'],
    ] as const
  ).map(([name, value]) => ({
    name: `auth-tls: ${name}=${JSON.stringify(value)} drops the Ingress (ingress-nginx's validator error)`,
    ingresses: [site('a', { 'auth-tls-secret': 'ca', [name]: value })],
    secrets: [caSecret('ca', CA)],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID a'],
    messages: ['the Ingress is ignored'],
  })),
  {
    name: 'auth-tls: without auth-tls-secret the others are not read (not even validated)',
    ingresses: [site('a', { 'auth-tls-verify-client': 'on', 'auth-tls-match-cn': 'bad' })],
    routes: ['a.com Prefix /a -> default-web-80 (a)'],
    check: (t, { model }) => t.equal(model.servers[0]?.clientAuth, null),
  },
  {
    name: 'auth-tls: a missing Secret denies the host (caPem null) with a diagnostic',
    ingresses: [site('a', { 'auth-tls-secret': 'nope' })],
    diagnostics: ['AUTH_TLS_SECRET_NOT_FOUND a'],
    messages: ['auth-tls-secret default/nope not found', 'every request to host a.com answers 503'],
    check: (t, { model, references }) => {
      t.match(auth(model.servers[0]), { secret: 'default/nope', ca: null, sha: false });
      t.ok(references.secrets.includes('default/nope'), 'watched, so creating it fixes the host');
    },
  },
  {
    name: 'auth-tls: a Secret without ca.crt, or with no certificate in it, denies the host',
    ingresses: [site('a', { 'auth-tls-secret': 'empty' }), site('b', { 'auth-tls-secret': 'junk' }, 'b.com')],
    secrets: [caSecret('empty', null), caSecret('junk', 'not a certificate')],
    diagnostics: ['AUTH_TLS_SECRET_INVALID a', 'AUTH_TLS_SECRET_INVALID b'],
    messages: ['it has no ca.crt', 'ca.crt holds no PEM certificate'],
    check: (t, { model }) => {
      t.match(auth(model.servers[0]), { ca: null });
      t.match(auth(model.servers[1]), { ca: null });
    },
  },
  {
    name: 'auth-tls: a malformed reference (a/b/c) denies the host',
    ingresses: [site('a', { 'auth-tls-secret': 'a/b/c' })],
    diagnostics: ['AUTH_TLS_SECRET_INVALID a'],
    check: (t, { model }) => t.match(auth(model.servers[0]), { ca: null }),
  },
  {
    name: 'auth-tls: another namespace is refused without allow-cross-namespace-resources',
    ingresses: [site('a', { 'auth-tls-secret': 'certs/ca' })],
    secrets: [caSecret('ca', CA, 'certs')],
    diagnostics: ['AUTH_TLS_CROSS_NAMESPACE a'],
    messages: ['allow-cross-namespace-resources is false'],
    check: (t, { model }) => t.match(auth(model.servers[0]), { secret: 'certs/ca', ca: null }),
  },
  {
    name: 'auth-tls: another namespace is read with allow-cross-namespace-resources: "true"',
    ingresses: [site('a', { 'auth-tls-secret': 'certs/ca' })],
    secrets: [caSecret('ca', CA, 'certs')],
    configMaps: [configMap({ 'allow-cross-namespace-resources': 'true' })],
    options: OPTIONS,
    check: (t, { model }) => {
      t.equal(model.config.allowCrossNamespaceResources, true);
      t.match(auth(model.servers[0]), { secret: 'certs/ca', ca: true });
    },
  },
  {
    name: 'allow-cross-namespace-resources: an invalid value keeps false',
    ingresses: [],
    configMaps: [configMap({ 'allow-cross-namespace-resources': 'maybe' })],
    options: OPTIONS,
    diagnostics: ['CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'],
    check: (t, { model }) => t.equal(model.config.allowCrossNamespaceResources, false),
  },
]);

t.test(
  'auth-tls: a new ca.crt in the Secret changes the model hash (it reaches the data plane)',
  async (t) => {
    const world = (ca: string) => ({
      ingresses: [site('a', { 'auth-tls-secret': 'ca' })],
      secrets: [caSecret('ca', ca)],
    });
    const one = build(world(CA)).model;
    const two = build(world(OTHER_CA)).model;
    t.not(one.hash, two.hash);
    t.not(one.routesHash, two.routesHash);
  },
);
