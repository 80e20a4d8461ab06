// affinity: cookie in the model: the first Ingress with affinity makes the upstream sticky; only its
// routes set the cookie; a sticky canary inherits its main upstream's affinity, a legacy one does not;
// invalid values fall back to defaults.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

runCases(t, [
  {
    name: 'affinity: the upstream becomes sticky; only the affinity Ingress sets the cookie',
    ingresses: [
      ingress('plain', { created: 0, rules: [rule('a.com', path('/plain', 'web:80'))] }),
      ingress('sticky', {
        created: 10,
        nginx: {
          affinity: 'cookie',
          'affinity-mode': 'persistent',
          'session-cookie-name': 'route',
          'session-cookie-samesite': 'strict',
        },
        rules: [rule('a.com', path('/shop', 'web:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.match(model.upstreams['default-web-80']?.affinity, {
        mode: 'persistent',
        cookieName: 'route',
        sameSite: 'Strict',
        path: null,
        secure: false,
      });
      const routes = model.servers[0]?.routes ?? [];
      t.same(
        routes.map((r) => [r.path, r.setsAffinityCookie]),
        [
          ['/plain', false],
          ['/shop', true],
        ],
      );
    },
  },
  {
    name: 'affinity: a sticky canary inherits the main affinity; a legacy one does not',
    ingresses: [
      ingress('main', {
        created: 0,
        nginx: { affinity: 'cookie' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('v2', {
        created: 5,
        nginx: { canary: 'true' },
        rules: [rule('a.com', path('/', 'web-v2:80'))],
      }),
      ingress('main-b', {
        created: 0,
        nginx: { affinity: 'cookie' },
        rules: [rule('b.com', path('/', 'api:80'))],
      }),
      ingress('v3', {
        created: 5,
        nginx: { canary: 'true', 'affinity-canary-behavior': 'legacy' },
        rules: [rule('b.com', path('/', 'api-v3:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.strictSame(
        model.upstreams['default-web-v2-80']?.affinity,
        model.upstreams['default-web-80']?.affinity,
      );
      t.equal(model.upstreams['default-api-v3-80']?.affinity, null);
    },
  },
  {
    name: 'affinity: invalid values fall back to the defaults, with warnings',
    ingresses: [
      ingress('x', {
        nginx: {
          affinity: 'cookie',
          'affinity-mode': 'sticky',
          'session-cookie-expires': '1h',
          'session-cookie-samesite': 'sometimes',
        },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
      ingress('y', { nginx: { affinity: 'Cookie' }, rules: [rule('b.com', path('/', 'api:80'))] }),
    ],
    diagnostics: [
      'ANNOTATION_INVALID x',
      'ANNOTATION_INVALID x',
      'ANNOTATION_INVALID x',
      'ANNOTATION_INVALID y',
    ],
    check: (t, { model }) => {
      t.match(model.upstreams['default-web-80']?.affinity, {
        mode: 'balanced',
        expires: null,
        sameSite: null,
      });
      t.equal(model.upstreams['default-api-80']?.affinity, null, 'only "cookie", case-sensitive');
    },
  },
]);
