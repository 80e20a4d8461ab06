// Default backends: catch-all Ingress, per-host defaultBackend, --default-backend-service,
// --disable-catch-all.
import t from 'tap';
import { ingress, path, rule, runCases, service, slice } from './helpers.ts';

runCases(t, [
  {
    name: 'default: without catch-all or flag everything unmatched gets the built-in 404',
    ingresses: [ingress('a', { rules: [rule('a.com', path('/x', 's:80'))] })],
    defaults: ['a.com -> default (a)', '_ -> default (-)'],
    check: (t, { model }) => t.equal(model.defaultBackend, null),
  },
  {
    name: 'default: the oldest rule-less Ingress with a defaultBackend becomes the catch-all',
    ingresses: [ingress('catch', { defaultBackend: 'fallback:80' })],
    defaults: ['_ -> default-fallback-80 (catch)'],
  },
  {
    name: 'default: a second rule-less catch-all loses to the older one',
    ingresses: [
      ingress('second', { created: 2, defaultBackend: 'two:80' }),
      ingress('first', { created: 1, defaultBackend: 'one:80' }),
    ],
    defaults: ['_ -> default-one-80 (first)'],
    diagnostics: ['DEFAULT_BACKEND_CONFLICT second'],
    messages: ['older Ingress default/first already provides the catch-all'],
  },
  {
    name: 'default: an Ingress with rules and a defaultBackend serves it for unmatched paths of its hosts only',
    ingresses: [
      ingress('site', { defaultBackend: 'site-default:80', rules: [rule('a.com', path('/x', 's:80'))] }),
    ],
    defaults: ['a.com -> default-site-default-80 (site)', '_ -> default (-)'],
  },
  {
    name: 'default: a newer Ingress cannot give an existing host its defaultBackend',
    ingresses: [
      ingress('creator', { created: 1, rules: [rule('a.com', path('/x', 's:80'))] }),
      ingress('late', { created: 2, defaultBackend: 'late:80', rules: [rule('a.com', path('/y', 's:80'))] }),
    ],
    defaults: ['a.com -> default (creator)', '_ -> default (-)'],
  },
  {
    name: 'default: a defaultBackend with a host-less rule does not become the catch-all',
    ingresses: [ingress('mixed', { defaultBackend: 'd:80', rules: [rule(undefined, path('/x', 's:80'))] })],
    routes: ['_ Prefix /x -> default-s-80 (mixed)'],
    defaults: ['_ -> default (-)'],
  },
  {
    name: 'default: --default-backend-service uses the first port of the Service',
    ingresses: [],
    services: [
      service(
        'default-http-backend',
        [
          { port: 8080, targetPort: 8080, name: 'http' },
          { port: 9090, name: 'metrics' },
        ],
        'ingress',
      ),
    ],
    slices: [
      slice('default-http-backend', [{ addresses: ['10.1.0.1'] }], [{ port: 8080, name: 'http' }], {
        namespace: 'ingress',
      }),
    ],
    options: { defaultBackendService: 'ingress/default-http-backend' },
    check: (t, { model }) => {
      t.equal(model.defaultBackend, 'upstream-default-backend');
      t.strictSame(model.upstreams['upstream-default-backend']?.endpoints, [
        { address: '10.1.0.1', port: 8080 },
      ]);
    },
  },
  {
    name: 'default: a missing --default-backend-service falls back to the built-in 404',
    ingresses: [],
    options: { defaultBackendService: 'ingress/nope' },
    diagnostics: ['DEFAULT_BACKEND_SERVICE_UNUSABLE Service:ingress/nope'],
    check: (t, { model }) => t.equal(model.defaultBackend, null),
  },
  {
    name: 'default: a --default-backend-service without endpoints is kept, the data plane answers 404 meanwhile',
    ingresses: [],
    services: [service('db', [{ port: 80 }], 'ingress')],
    options: { defaultBackendService: 'ingress/db' },
    diagnostics: ['DEFAULT_BACKEND_SERVICE_UNUSABLE Service:ingress/db'],
    messages: ['has no ready endpoints'],
    check: (t, { model }) => {
      t.equal(model.defaultBackend, 'upstream-default-backend');
      t.strictSame(model.upstreams['upstream-default-backend']?.endpoints, []);
    },
  },
  {
    name: 'default: a malformed --default-backend-service is reported',
    ingresses: [],
    options: { defaultBackendService: 'no-namespace' },
    diagnostics: ['DEFAULT_BACKEND_SERVICE_UNUSABLE Service:/no-namespace'],
  },
  {
    name: 'default: --disable-catch-all ignores every Ingress with a defaultBackend, rules or not',
    ingresses: [
      ingress('catch', { defaultBackend: 'd:80' }),
      ingress('site', { defaultBackend: 'd:80', rules: [rule('a.com', path('/', 's:80'))] }),
      ingress('plain', { rules: [rule('b.com', path('/', 's:80'))] }),
    ],
    options: { disableCatchAll: true },
    routes: ['b.com Prefix / -> default-s-80 (plain)'],
    defaults: ['b.com -> default (plain)', '_ -> default (-)'],
    diagnostics: ['CATCH_ALL_DISABLED catch', 'CATCH_ALL_DISABLED site'],
  },
  {
    name: 'default: the catch-all does not inherit rewrite annotations; a host default route does',
    ingresses: [
      ingress('catch', { created: 1, defaultBackend: 'd:80', nginx: { 'rewrite-target': '/' } }),
      ingress('site', {
        created: 2,
        nginx: { 'rewrite-target': '/' },
        rules: [rule('a.com', path('/app', 's:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.equal(model.catchAll.defaultRoute.annotations.rewrite.target, null);
      t.equal(model.servers[0]?.defaultRoute.annotations.rewrite.target, '/');
    },
  },
  {
    name: 'default: an Ingress with neither rules nor defaultBackend is reported',
    ingresses: [ingress('empty')],
    diagnostics: ['INGRESS_EMPTY empty'],
  },

  {
    name: 'default: a --default-backend-service that declares no port falls back to the built-in 404',
    ingresses: [],
    services: [service('db', [], 'ingress')],
    options: { defaultBackendService: 'ingress/db' },
    diagnostics: ['DEFAULT_BACKEND_SERVICE_UNUSABLE Service:ingress/db'],
    messages: ['declares no port'],
    check: (t, { model }) => t.equal(model.defaultBackend, null),
  },
  {
    name: 'default: an Ingress whose only rule is invalid still has rules, so it is not the catch-all',
    ingresses: [ingress('x', { defaultBackend: 'd:80', rules: [rule('bad_host.com', path('/', 's:80'))] })],
    defaults: ['_ -> default (-)'],
    diagnostics: ['HOST_INVALID x'],
  },
]);
