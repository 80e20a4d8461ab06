// ssl-passthrough: which hosts pass TLS through and to which backend (the host's Prefix `/`, else its
// default route), "any true" across the host's Ingresses, and the warning without
// --enable-ssl-passthrough (the annotation then has no effect).
import type { Test } from 'tap';
import t from 'tap';
import type { BuildResult, Model } from '../../lib/model/index.ts';
import { ingress, path, pem, rule, runCases, tlsSecret } from './helpers.ts';

const ON = { enableSslPassthrough: true };
const PASS = { 'ssl-passthrough': 'true' };

/** `host => backend (backend's Ingress) by (annotating Ingress)` for every passthrough host. */
function passthroughLines(model: Model): string[] {
  const who = (ref: { name: string } | null) => (ref === null ? '-' : ref.name);
  return [...model.servers, model.catchAll]
    .filter((server) => server.passthrough !== null)
    .map((server) => {
      const p = server.passthrough!;
      const to = p.backend.type === 'default' ? 'default' : p.backend.upstream;
      return `${server.hostname} => ${to} (${who(p.backendIngress)}) by ${who(p.ingress)}`;
    });
}

const expect =
  (lines: string[]) =>
  (t: Test, { model }: BuildResult): void => {
    t.strictSame(passthroughLines(model), lines, 'passthrough hosts');
  };

runCases(t, [
  {
    name: 'passthrough: the backend of Prefix / on the host',
    options: ON,
    ingresses: [
      ingress('argocd', {
        nginx: PASS,
        rules: [rule('argocd.test', path('/', 'argocd-server:443'), path('/api', 'api:80'))],
      }),
    ],
    check: expect(['argocd.test => default-argocd-server-443 (argocd) by argocd']),
  },
  {
    name: 'passthrough: ImplementationSpecific / counts as Prefix /',
    options: ON,
    ingresses: [
      ingress('a', { nginx: PASS, rules: [rule('a.test', path('/', 'tls:443', 'ImplementationSpecific'))] }),
    ],
    check: expect(['a.test => default-tls-443 (a) by a']),
  },
  {
    name: 'passthrough: without a / path, the Ingress spec.defaultBackend (the root location)',
    options: ON,
    ingresses: [
      ingress('a', { nginx: PASS, defaultBackend: 'tls:443', rules: [rule('a.test', path('/x', 'web:80'))] }),
    ],
    check: expect(['a.test => default-tls-443 (a) by a']),
  },
  {
    name: 'passthrough: an Exact / is not the root location; no defaultBackend → the controller default',
    options: ON,
    ingresses: [ingress('a', { nginx: PASS, rules: [rule('a.test', path('/', 'tls:443', 'Exact'))] })],
    check: expect(['a.test => default (a) by a']),
  },
  {
    name: 'passthrough: any Ingress of the host that sets it, even a newer one, and no conflict warning',
    options: ON,
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.test', path('/', 'tls:443'))] }),
      ingress('new', { created: 2, nginx: PASS, rules: [rule('a.test', path('/new', 'web:80'))] }),
      ingress('newer', { created: 3, nginx: PASS, rules: [rule('a.test', path('/newer', 'web:80'))] }),
    ],
    check: expect(['a.test => default-tls-443 (old) by new']),
  },
  {
    name: 'passthrough: "false" on an older Ingress does not stop a newer "true"',
    options: ON,
    ingresses: [
      ingress('old', {
        created: 1,
        nginx: { 'ssl-passthrough': 'false' },
        rules: [rule('a.test', path('/', 'tls:443'))],
      }),
      ingress('new', { created: 2, nginx: PASS, rules: [rule('a.test', path('/x', 'web:80'))] }),
    ],
    check: expect(['a.test => default-tls-443 (old) by new']),
  },
  {
    name: 'passthrough: only the hosts of the annotated Ingress; other hosts terminate TLS',
    options: ON,
    ingresses: [
      ingress('pass', {
        nginx: PASS,
        rules: [rule('p.test', path('/', 'tls:443')), rule('*.w.test', path('/', 'tls:443'))],
      }),
      ingress('web', { rules: [rule('web.test', path('/', 'web:80'))] }),
    ],
    check: expect(['*.w.test => default-tls-443 (pass) by pass', 'p.test => default-tls-443 (pass) by pass']),
  },
  {
    name: 'passthrough: the paths stay for plain HTTP, and the certificate is still read',
    options: ON,
    ingresses: [
      ingress('a', {
        nginx: PASS,
        rules: [rule('a.example.com', path('/', 'tls:443'), path('/x', 'web:80'))],
        tls: [{ hosts: ['a.example.com'], secretName: 'a' }],
      }),
    ],
    secrets: [tlsSecret('a', pem('a-example'))],
    routes: [
      'a.example.com Prefix /x -> default-web-80 (a)',
      'a.example.com Prefix / -> default-tls-443 (a)',
    ],
    check: (t, result) => {
      expect(['a.example.com => default-tls-443 (a) by a'])(t, result);
      t.equal(result.model.servers[0]?.tls?.certificate, 'default/a');
    },
  },
  {
    name: 'passthrough: a host-less rule does not make the catch-all passthrough',
    options: ON,
    ingresses: [ingress('a', { nginx: PASS, rules: [rule(undefined, path('/', 'tls:443'))] })],
    check: expect([]),
  },
  {
    name: 'passthrough: a canary never makes a host passthrough',
    options: ON,
    ingresses: [
      ingress('main', { created: 1, rules: [rule('a.test', path('/', 'tls:443'))] }),
      ingress('canary', {
        created: 2,
        nginx: { ...PASS, canary: 'true', 'canary-weight': '10' },
        rules: [rule('a.test', path('/', 'tls2:443'))],
      }),
    ],
    check: expect([]),
  },
  {
    name: 'passthrough: an invalid value is false, with a warning',
    options: ON,
    ingresses: [
      ingress('a', { nginx: { 'ssl-passthrough': 'yes' }, rules: [rule('a.test', path('/', 'tls:443'))] }),
    ],
    diagnostics: ['ANNOTATION_INVALID a'],
    check: expect([]),
  },
  {
    name: 'passthrough: without --enable-ssl-passthrough no host passes through, with a warning per Ingress',
    ingresses: [
      ingress('a', {
        nginx: PASS,
        rules: [rule('a.test', path('/', 'tls:443')), rule('b.test', path('/', 'tls:443'))],
      }),
      ingress('off', {
        nginx: { 'ssl-passthrough': 'false' },
        rules: [rule('c.test', path('/', 'tls:443'))],
      }),
    ],
    diagnostics: ['SSL_PASSTHROUGH_DISABLED a'],
    messages: ['needs the controller flag --enable-ssl-passthrough', 'TLS to a.test, b.test is terminated'],
    check: expect([]),
  },
]);

t.test('passthrough: the model hash follows the passthrough hosts and their backend', async (t) => {
  const { build } = await import('./helpers.ts');
  const world = (nginx: Record<string, string>, backend = 'tls:443') => ({
    ingresses: [ingress('a', { nginx, rules: [rule('a.test', path('/', backend))] })],
  });
  const off = build(world({}), ON).model;
  const on = build(world(PASS), ON).model;
  const other = build(world(PASS, 'tls2:443'), ON).model;
  t.not(on.routesHash, off.routesHash, 'turning it on changes the routes hash');
  t.not(other.routesHash, on.routesHash, 'another backend changes it');
  t.equal(build(world(PASS), {}).model.routesHash, off.routesHash, 'without the flag: as if unset');
});
