// Several Ingresses on one Service port (one upstream): ingress-nginx's getBackendServers sets the
// affinity mode once (the oldest Ingress that names one) and overwrites the cookie settings with each
// Ingress that has affinity (the newest wins). The settings that lose are reported on their Ingress.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

runCases(t, [
  {
    name: 'shared upstream: the newest Ingress with affinity gives the cookie, the older is told',
    ingresses: [
      ingress('old', {
        created: 0,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'old', 'session-cookie-max-age': '60' },
        rules: [rule('a.com', path('/a', 'web:80'))],
      }),
      ingress('new', {
        created: 10,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'new', 'session-cookie-samesite': 'Lax' },
        rules: [rule('b.com', path('/b', 'web:80'))],
      }),
    ],
    diagnostics: ['AFFINITY_CONFLICT old'],
    messages: [
      'the affinity cookie of Service default/web port 80 follows the newer Ingress default/new',
      'session-cookie-name "new" instead of "old", session-cookie-max-age unset instead of 60, session-cookie-samesite "Lax" instead of unset',
    ],
    check: (t, { model }) => {
      t.match(model.upstreams['default-web-80']?.affinity, {
        cookieName: 'new',
        maxAge: null,
        sameSite: 'Lax',
      });
      const cookieRoutes = model.servers.flatMap((s) => s.routes).filter((r) => r.setsAffinityCookie);
      t.same(
        cookieRoutes.map((r) => r.path),
        ['/a', '/b'],
        'both Ingresses with affinity set the cookie on their paths',
      );
    },
  },
  {
    name: 'shared upstream: the mode comes from the oldest Ingress that names one, even without affinity',
    ingresses: [
      ingress('plain', { created: 0, rules: [rule('a.com', path('/', 'web:80'))] }),
      ingress('moder', {
        created: 5,
        nginx: { 'affinity-mode': 'persistent' },
        rules: [rule('b.com', path('/', 'web:80'))],
      }),
      ingress('sticky', {
        created: 10,
        nginx: { affinity: 'cookie', 'affinity-mode': 'balanced', 'session-cookie-name': 's' },
        rules: [rule('c.com', path('/', 'web:80'))],
      }),
    ],
    diagnostics: ['AFFINITY_CONFLICT sticky'],
    messages: [
      'affinity-mode="balanced" has no effect on Service default/web port 80: the older Ingress default/moder also uses it and its affinity-mode "persistent" applies',
    ],
    check: (t, { model }) => {
      t.match(model.upstreams['default-web-80']?.affinity, { mode: 'persistent', cookieName: 's' });
    },
  },
  {
    name: 'shared upstream: the same settings written twice are no conflict',
    ingresses: [
      ingress('one', {
        created: 0,
        nginx: { affinity: 'cookie', 'affinity-mode': 'persistent', 'session-cookie-name': 'x' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('two', {
        created: 10,
        nginx: { affinity: 'cookie', 'affinity-mode': 'persistent', 'session-cookie-name': 'x' },
        rules: [rule('b.com', path('/', 'web:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.match(model.upstreams['default-web-80']?.affinity, { mode: 'persistent', cookieName: 'x' });
    },
  },
  {
    name: 'shared upstream: a path that lost its host+path still gives its cookie (ingress-nginx does not skip it)',
    ingresses: [
      ingress('first', {
        created: 0,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'first' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('second', {
        created: 10,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'second' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
    ],
    diagnostics: ['PATH_CONFLICT second', 'AFFINITY_CONFLICT first'],
    check: (t, { model }) => {
      t.equal(model.upstreams['default-web-80']?.affinity?.cookieName, 'second');
    },
  },
  {
    name: 'shared upstream: other Service ports are separate upstreams, with their own affinity',
    ingresses: [
      ingress('p80', {
        created: 0,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'a' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('p81', {
        created: 10,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'b' },
        rules: [rule('b.com', path('/', 'web:81'))],
      }),
      ingress('other-ns', {
        namespace: 'team',
        created: 20,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'c' },
        rules: [rule('c.com', path('/', 'web:80'))],
      }),
    ],
    diagnostics: ['SERVICE_PORT_NOT_FOUND p81'],
    check: (t, { model }) => {
      t.equal(model.upstreams['default-web-80']?.affinity?.cookieName, 'a');
      t.equal(model.upstreams['default-web-81']?.affinity?.cookieName, 'b');
      t.equal(model.upstreams['team-web-80']?.affinity?.cookieName, 'c');
    },
  },
  {
    name: 'shared upstream: a sticky canary inherits the combined affinity of its main upstream',
    ingresses: [
      ingress('main', {
        created: 0,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'main' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('later', {
        created: 5,
        nginx: { affinity: 'cookie', 'session-cookie-name': 'later' },
        rules: [rule('b.com', path('/', 'web:80'))],
      }),
      ingress('v2', {
        created: 10,
        nginx: { canary: 'true' },
        rules: [rule('a.com', path('/', 'web-v2:80'))],
      }),
    ],
    diagnostics: ['AFFINITY_CONFLICT main'],
    check: (t, { model }) => {
      t.equal(model.upstreams['default-web-v2-80']?.affinity?.cookieName, 'later');
    },
  },
]);
