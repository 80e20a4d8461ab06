// Path types, path validation, Prefix normalisation and route order.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

runCases(t, [
  {
    name: 'paths: ImplementationSpecific behaves as Prefix and the written type is kept',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/x', 'svc:80', 'ImplementationSpecific'))] })],
    routes: ['a.com Prefix /x -> default-svc-80 (a)'],
    check: (t, { model }) =>
      t.equal(model.servers[0]?.routes[0]?.pathTypeAsWritten, 'ImplementationSpecific'),
  },
  {
    name: 'paths: an empty ImplementationSpecific path means /',
    ingresses: [
      ingress('a', { rules: [rule('a.com', { backend: 'svc:80', pathType: 'ImplementationSpecific' })] }),
    ],
    routes: ['a.com Prefix / -> default-svc-80 (a)'],
  },
  {
    name: 'paths: Prefix /foo and /foo/ match the same requests; the older one is kept',
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.com', path('/foo', 'old:80'))] }),
      ingress('new', { created: 2, rules: [rule('a.com', path('/foo/', 'new:80'))] }),
    ],
    routes: ['a.com Prefix /foo -> default-old-80 (old)'],
    diagnostics: ['PATH_CONFLICT new'],
  },
  {
    name: 'paths: Prefix /foo/ written first is the one kept',
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.com', path('/foo/', 'old:80'))] }),
      ingress('new', { created: 2, rules: [rule('a.com', path('/foo', 'new:80'))] }),
    ],
    routes: ['a.com Prefix /foo/ -> default-old-80 (old)'],
    diagnostics: ['PATH_CONFLICT new'],
  },
  {
    name: 'paths: Exact /foo and Exact /foo/ are different routes',
    ingresses: [
      ingress('a', {
        rules: [rule('a.com', path('/foo', 'one:80', 'Exact'), path('/foo/', 'two:80', 'Exact'))],
      }),
    ],
    routes: ['a.com Exact /foo/ -> default-two-80 (a)', 'a.com Exact /foo -> default-one-80 (a)'],
  },
  {
    name: 'paths: Prefix / and a longer Prefix coexist, longest first',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/', 'root:80'), path('/app', 'app:80'))] })],
    routes: ['a.com Prefix /app -> default-app-80 (a)', 'a.com Prefix / -> default-root-80 (a)'],
  },
  {
    name: 'paths: routes sort longest first, ties by reverse-lexicographic path',
    ingresses: [
      ingress('a', {
        rules: [
          rule('a.com', path('/a', 's:80'), path('/ab', 's:80'), path('/', 's:80'), path('/bb', 's:80')),
        ],
      }),
    ],
    routes: [
      'a.com Prefix /bb -> default-s-80 (a)',
      'a.com Prefix /ab -> default-s-80 (a)',
      'a.com Prefix /a -> default-s-80 (a)',
      'a.com Prefix / -> default-s-80 (a)',
    ],
  },
  {
    name: 'paths: a missing pathType drops that path only',
    ingresses: [
      ingress('a', { rules: [rule('a.com', { path: '/x', backend: 's:80' }, path('/y', 's:80'))] }),
    ],
    routes: ['a.com Prefix /y -> default-s-80 (a)'],
    diagnostics: ['PATH_TYPE_INVALID a'],
    messages: ['pathType is required'],
  },
  {
    name: 'paths: an unknown pathType drops that path',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/x', 's:80', 'Regex'))] })],
    routes: [],
    diagnostics: ['PATH_TYPE_INVALID a'],
    messages: ['"Regex" is not supported'],
  },
  {
    name: 'paths: a Prefix path must be absolute',
    ingresses: [ingress('a', { rules: [rule('a.com', path('x', 's:80'))] })],
    routes: [],
    diagnostics: ['PATH_INVALID a'],
    messages: ['must be an absolute path'],
  },
  {
    name: 'paths: an Exact or Prefix path must be given',
    ingresses: [ingress('a', { rules: [rule('a.com', { backend: 's:80', pathType: 'Exact' })] })],
    routes: [],
    diagnostics: ['PATH_INVALID a'],
  },
  {
    name: 'paths: Exact and Prefix paths may not contain //, /./, /../ or %2f',
    ingresses: [
      ingress('a', {
        rules: [
          rule(
            'a.com',
            path('/a//b', 's:80', 'Exact'),
            path('/a/./b', 's:80'),
            path('/a/../b', 's:80'),
            path('/a%2fb', 's:80'),
            path('/ok', 's:80'),
          ),
        ],
      }),
    ],
    routes: ['a.com Prefix /ok -> default-s-80 (a)'],
    diagnostics: ['PATH_INVALID a', 'PATH_INVALID a', 'PATH_INVALID a', 'PATH_INVALID a'],
  },
  {
    name: 'paths: Exact and Prefix paths may not end with /. or /..',
    ingresses: [
      ingress('a', { rules: [rule('a.com', path('/a/..', 's:80'), path('/a/.', 's:80', 'Exact'))] }),
    ],
    routes: [],
    diagnostics: ['PATH_INVALID a', 'PATH_INVALID a'],
  },
  {
    name: 'paths: ImplementationSpecific accepts regex-looking paths',
    ingresses: [
      ingress('a', { rules: [rule('a.com', path('/api/(.*)', 's:80', 'ImplementationSpecific'))] }),
    ],
    routes: ['a.com Prefix /api/(.*) -> default-s-80 (a)'],
  },
  {
    name: 'paths: in regex mode /foo and /foo/ are different regexes and both stay',
    ingresses: [
      ingress('old', {
        created: 1,
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.com', path('/foo', 'old:80'))],
      }),
      ingress('new', { created: 2, rules: [rule('a.com', path('/foo/', 'new:80'))] }),
    ],
    routes: ['a.com Prefix /foo/ -> default-new-80 (new)', 'a.com Prefix /foo -> default-old-80 (old)'],
  },
  {
    name: 'paths: rules without http add no routes',
    ingresses: [ingress('a', { rules: [{ host: 'a.com' }], defaultBackend: 'svc:80' })],
    routes: [],
    defaults: ['a.com -> default-svc-80 (a)', '_ -> default (-)'],
  },

  {
    name: 'paths: a longer path sorts first even when it is lexicographically smaller',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/b', 's:80'), path('/ab', 's:80'))] })],
    routes: ['a.com Prefix /ab -> default-s-80 (a)', 'a.com Prefix /b -> default-s-80 (a)'],
  },
  {
    name: 'paths: every trailing slash is ignored when Prefix paths are compared',
    ingresses: [
      ingress('old', { created: 1, rules: [rule('a.com', path('/foo', 'old:80'))] }),
      ingress('new', {
        created: 2,
        rules: [rule('a.com', path('/foo//', 'new:80', 'ImplementationSpecific'))],
      }),
    ],
    routes: ['a.com Prefix /foo -> default-old-80 (old)'],
    diagnostics: ['PATH_CONFLICT new'],
  },
  {
    name: 'paths: Exact and Prefix paths may not contain %2F (upper case)',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/a%2Fb', 's:80'), path('/ok', 's:80'))] })],
    routes: ['a.com Prefix /ok -> default-s-80 (a)'],
    diagnostics: ['PATH_INVALID a'],
    messages: ['must not contain "%2F"'],
  },
  {
    name: 'paths: a non-empty ImplementationSpecific path must be absolute',
    ingresses: [ingress('a', { rules: [rule('a.com', path('x', 's:80', 'ImplementationSpecific'))] })],
    routes: [],
    diagnostics: ['PATH_INVALID a'],
    messages: ['must be an absolute path'],
  },

  {
    name: 'paths: Exact /foo and Prefix /foo/ are different routes (only Prefix paths collapse)',
    ingresses: [
      ingress('a', { rules: [rule('a.com', path('/foo', 'web:80', 'Exact'), path('/foo/', 'web:80'))] }),
    ],
    routes: ['a.com Prefix /foo/ -> default-web-80 (a)', 'a.com Exact /foo -> default-web-80 (a)'],
  },
]);
