// Hosts: case, wildcards, validation, the catch-all server, server order.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

runCases(t, [
  {
    name: 'hosts: host names are case-insensitive and stored lower-case',
    ingresses: [
      ingress('upper', { created: 1, rules: [rule('Shop.Example.COM', path('/', 'a:80'))] }),
      ingress('lower', { created: 2, rules: [rule('shop.example.com', path('/', 'b:80'))] }),
    ],
    routes: ['shop.example.com Prefix / -> default-a-80 (upper)'],
    diagnostics: ['PATH_CONFLICT lower'],
  },
  {
    name: 'hosts: a single-label wildcard host is a server of its own',
    ingresses: [
      ingress('w', {
        rules: [rule('*.example.com', path('/', 'a:80')), rule('example.com', path('/', 'b:80'))],
      }),
    ],
    routes: ['*.example.com Prefix / -> default-a-80 (w)', 'example.com Prefix / -> default-b-80 (w)'],
  },
  {
    name: 'hosts: a wildcard that is not the whole first label is refused',
    ingresses: [
      ingress('w', { rules: [rule('*foo.com', path('/', 'a:80')), rule('ok.com', path('/', 'a:80'))] }),
    ],
    routes: ['ok.com Prefix / -> default-a-80 (w)'],
    diagnostics: ['HOST_INVALID w'],
    messages: ['wildcard must be the whole first label'],
  },
  {
    name: 'hosts: wildcards elsewhere than the first label are refused',
    ingresses: [
      ingress('w', { rules: [rule('a.*.com', path('/', 'a:80')), rule('*.*.com', path('/', 'a:80'))] }),
    ],
    routes: [],
    diagnostics: ['HOST_INVALID w', 'HOST_INVALID w'],
  },
  {
    name: 'hosts: an IP address is not a valid host',
    ingresses: [ingress('ip', { rules: [rule('10.0.0.1', path('/', 'a:80'))] })],
    routes: [],
    diagnostics: ['HOST_INVALID ip'],
    messages: ['not an IP address'],
  },
  {
    name: 'hosts: characters outside DNS names are refused',
    ingresses: [
      ingress('bad', {
        rules: [
          rule('foo_bar.com', path('/', 'a:80')),
          rule('foo.com:8080', path('/', 'a:80')),
          rule('-a.com', path('/', 'a:80')),
        ],
      }),
    ],
    routes: [],
    diagnostics: ['HOST_INVALID bad', 'HOST_INVALID bad', 'HOST_INVALID bad'],
  },
  {
    name: 'hosts: a rule without host goes to the catch-all server',
    ingresses: [ingress('any', { rules: [rule(undefined, path('/status', 'a:80'))] })],
    routes: ['_ Prefix /status -> default-a-80 (any)'],
    defaults: ['_ -> default (-)'],
  },
  {
    name: 'hosts: servers are sorted by name, * before letters, catch-all last',
    ingresses: [
      ingress('m', {
        rules: [
          rule('b.com', path('/', 'a:80')),
          rule('a.com', path('/', 'a:80')),
          rule('*.a.com', path('/', 'a:80')),
        ],
      }),
    ],
    check: (t, { model }) =>
      t.strictSame(
        [...model.servers.map((s) => s.hostname), model.catchAll.hostname],
        ['*.a.com', 'a.com', 'b.com', '_'],
      ),
  },
  {
    name: 'hosts: a rule with a host but no http still creates the host',
    ingresses: [ingress('h', { rules: [{ host: 'empty.com' }] })],
    routes: [],
    defaults: ['empty.com -> default (h)', '_ -> default (-)'],
  },
  {
    name: 'hosts: a server remembers the Ingress that created it',
    ingresses: [
      ingress('second', { created: 2, rules: [rule('a.com', path('/2', 'a:80'))] }),
      ingress('first', { created: 1, rules: [rule('a.com', path('/1', 'a:80'))] }),
    ],
    check: (t, { model }) => t.strictSame(model.servers[0]?.ingress, { namespace: 'default', name: 'first' }),
  },

  {
    name: 'hosts: a host longer than 253 characters is refused',
    ingresses: [
      ingress('long', { rules: [rule(Array(4).fill('a'.repeat(63)).join('.'), path('/', 'a:80'))] }),
    ],
    routes: [],
    diagnostics: ['HOST_INVALID long'],
    messages: ['longer than 253 characters'],
  },
]);
