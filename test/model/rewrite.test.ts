// rewrite-target, use-regex and x-forwarded-prefix in the model: values on the routes, validators
// and their outcomes, regex mode, and paths RE2 cannot compile dropped with PATH_REGEX_INVALID.
import t from 'tap';
import { ingress, path, routeLines, rule, runCases } from './helpers.ts';

const site = (
  name: string,
  nginx: Record<string, string>,
  paths = [path('/app', 'web:80')],
  host = 'a.com',
) => ingress(name, { nginx, rules: [rule(host, ...paths)] });

runCases(t, [
  {
    name: 'rewrite-target and x-forwarded-prefix reach the routes and the host default route',
    ingresses: [
      site('rw', { 'rewrite-target': '/$2', 'x-forwarded-prefix': '/app' }, [
        path('/app(/|$)(.*)', 'web:80', 'ImplementationSpecific'),
      ]),
    ],
    check: (t, { model }) => {
      const server = model.servers[0];
      t.equal(server?.regex, true, 'regex mode');
      t.strictSame(server?.routes[0]?.annotations.rewrite, {
        useRegex: false,
        target: '/$2',
        forwardedPrefix: '/app',
      });
      t.equal(server?.defaultRoute.annotations.rewrite.target, '/$2', 'the root placeholder inherits it');
    },
  },
  {
    name: 'rewrite-target with other characters: no rewrite, a warning (ingress-nginx ignores it)',
    ingresses: [site('bad', { 'rewrite-target': '/foo bar' })],
    routes: ['a.com Prefix /app -> default-web-80 (bad)'],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['the default is used'],
    check: (t, { model }) => {
      t.equal(model.servers[0]?.routes[0]?.annotations.rewrite.target, null);
      t.equal(model.servers[0]?.regex, false, 'no regex mode');
    },
  },
  {
    name: 'x-forwarded-prefix with other characters drops the Ingress (ingress-nginx propagates the error)',
    ingresses: [site('bad', { 'rewrite-target': '/', 'x-forwarded-prefix': '/a;b' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['the Ingress is ignored'],
  },
  {
    name: 'x-forwarded-prefix is validated with its spaces removed',
    ingresses: [site('ok', { 'rewrite-target': '/', 'x-forwarded-prefix': '/a b' })],
    routes: ['a.com Prefix /app -> default-web-80 (ok)'],
    check: (t, { model }) =>
      t.equal(model.servers[0]?.routes[0]?.annotations.rewrite.forwardedPrefix, '/a b'),
  },
  {
    name: 'a rewrite-target equal to every path leaves the routes in Prefix mode (the root placeholder aside)',
    ingresses: [site('same', { 'rewrite-target': '/' }, [path('/', 'web:80')])],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, false),
  },
  {
    name: 'regex mode: paths RE2 cannot compile are dropped with PATH_REGEX_INVALID, the others kept',
    ingresses: [
      site('re', { 'use-regex': 'true' }, [
        path('/(x)\\1', 'web:80', 'ImplementationSpecific'),
        path('/(?=look)', 'web:80', 'ImplementationSpecific'),
        path('/ok/[0-9]+', 'web:80', 'ImplementationSpecific'),
      ]),
      // another Ingress on the host: its paths are regexes too
      ingress('plain', { created: 10, rules: [rule('a.com', path('/(unclosed', 'api:80'))] }),
      // no regex mode on this host: the same path is a literal prefix
      ingress('literal', { rules: [rule('b.com', path('/(x)\\1', 'web:80'))] }),
    ],
    routes: [
      'a.com Prefix /ok/[0-9]+ -> default-web-80 (re)',
      'b.com Prefix /(x)\\1 -> default-web-80 (literal)',
    ],
    diagnostics: ['PATH_REGEX_INVALID re', 'PATH_REGEX_INVALID re', 'PATH_REGEX_INVALID plain'],
    messages: ['/(x)\\1 on host a.com is matched as a regex', 'this path is not served'],
  },
]);

t.test('regex mode keeps ingress-nginx order: longest path first, every path of the host', async (t) => {
  const { build } = await import('./helpers.ts');
  const result = build({
    ingresses: [
      site('rw', { 'rewrite-target': '/$1' }, [
        path('/foo/bar/[a-z]{3}', 'web:80', 'ImplementationSpecific'),
      ]),
      ingress('other', {
        created: 10,
        rules: [rule('a.com', path('/foo/bar/bar', 'api:80'), path('/foo', 'api:80', 'Exact'))],
      }),
    ],
  });
  t.strictSame(routeLines(result.model), [
    'a.com Prefix /foo/bar/[a-z]{3} -> default-web-80 (rw)',
    'a.com Prefix /foo/bar/bar -> default-api-80 (other)',
    'a.com Exact /foo -> default-api-80 (other)',
  ]);
  t.equal(result.model.servers[0]?.regex, true);
});
