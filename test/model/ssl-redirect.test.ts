// ssl-redirect, force-ssl-redirect, preserve-trailing-slash and from-to-www-redirect in the model:
// per-route values (unset = the ConfigMap decides), invalid values, the catch-all's own root that
// never redirects, and the name a from-to-www-redirect host answers.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>, host = 'a.com', created = 0) =>
  ingress(name, { created, nginx, rules: [rule(host, path('/app', 'web:80'))] });

runCases(t, [
  {
    name: 'ssl-redirect annotations: set values on the routes and the default route, unset ones null',
    ingresses: [
      site('set', {
        'ssl-redirect': 'false',
        'force-ssl-redirect': 'true',
        'preserve-trailing-slash': 'true',
        'use-port-in-redirects': 'true',
      }),
      site('unset', {}, 'b.com'),
    ],
    check: (t, { model }) => {
      const [a, b] = model.servers;
      const set = {
        sslRedirect: false,
        forceSslRedirect: true,
        preserveTrailingSlash: true,
        usePortInRedirects: true,
      };
      t.strictSame(a?.routes[0]?.annotations.sslRedirect, set);
      t.strictSame(a?.defaultRoute.annotations.sslRedirect, set, 'the host default route inherits them');
      t.strictSame(b?.routes[0]?.annotations.sslRedirect, {
        sslRedirect: null,
        forceSslRedirect: null,
        preserveTrailingSlash: false,
        usePortInRedirects: false,
      });
    },
  },
  {
    name: 'ssl-redirect annotations: invalid values fall back to the default with a warning',
    ingresses: [
      site('bad', {
        'ssl-redirect': 'maybe',
        'force-ssl-redirect': 'yes',
        'preserve-trailing-slash': '2',
        'use-port-in-redirects': 'on',
      }),
    ],
    routes: ['a.com Prefix /app -> default-web-80 (bad)'],
    diagnostics: Array(4).fill('ANNOTATION_INVALID bad'),
    messages: ['ssl-redirect="maybe" is invalid', 'the default is used'],
    check: (t, { model }) =>
      t.strictSame(model.servers[0]?.routes[0]?.annotations.sslRedirect, {
        sslRedirect: null,
        forceSslRedirect: null,
        preserveTrailingSlash: false,
        usePortInRedirects: false,
      }),
  },
  {
    name: "the catch-all's root never redirects to HTTPS, even for a catch-all Ingress that asks",
    ingresses: [
      ingress('catch', { defaultBackend: 'web:80', nginx: { 'force-ssl-redirect': 'true' } }),
      ingress('nohost', {
        rules: [rule(undefined, path('/x', 'web:80'))],
        nginx: { 'force-ssl-redirect': 'true' },
      }),
    ],
    check: (t, { model }) => {
      t.strictSame(model.catchAll.defaultRoute.annotations.sslRedirect, {
        sslRedirect: false,
        forceSslRedirect: false,
        preserveTrailingSlash: false,
        usePortInRedirects: false,
      });
      t.equal(
        model.catchAll.routes[0]?.annotations.sslRedirect.forceSslRedirect,
        true,
        'its routes keep theirs',
      );
    },
  },
  {
    name: 'a catch-all Ingress does not pass its redirect and rewrite settings to the catch-all (ingress-nginx restores them)',
    ingresses: [
      ingress('catch', {
        defaultBackend: 'web:80',
        nginx: {
          'permanent-redirect': 'https://elsewhere.example/',
          'rewrite-target': '/x',
          'ssl-redirect': 'true',
          'enable-access-log': 'false',
        },
      }),
    ],
    check: (t, { model }) => {
      const { annotations } = model.catchAll.defaultRoute;
      t.equal(annotations.redirect.redirect, null);
      t.equal(annotations.rewrite.target, null);
      t.equal(annotations.sslRedirect.sslRedirect, false);
      t.equal(annotations.accessLog.enabled, false, 'other location annotations are inherited');
      t.equal(model.catchAll.regex, false);
    },
  },
  {
    name: 'from-to-www-redirect: foo.com answers www.foo.com and www.bar.com answers bar.com',
    ingresses: [
      site('foo', { 'from-to-www-redirect': 'true' }, 'foo.com'),
      site('bar', { 'from-to-www-redirect': 'true' }, 'www.bar.com'),
      site('off', { 'from-to-www-redirect': 'false' }, 'off.com'),
    ],
    check: (t, { model }) => {
      const from = Object.fromEntries(model.servers.map((s) => [s.hostname, s.annotations.fromToWww.from]));
      t.strictSame(from, { 'foo.com': 'www.foo.com', 'off.com': null, 'www.bar.com': 'bar.com' });
    },
  },
  {
    name: 'from-to-www-redirect: skipped when the other name is a host of its own, or for a wildcard',
    ingresses: [
      site('foo', { 'from-to-www-redirect': 'true' }, 'foo.com'),
      site('www', {}, 'www.foo.com', 10),
      site('wild', { 'from-to-www-redirect': 'true' }, '*.wild.com'),
    ],
    diagnostics: ['WWW_REDIRECT_SKIPPED foo', 'WWW_REDIRECT_SKIPPED wild'],
    messages: ['www.foo.com is a host of its own', 'the host is a wildcard'],
    check: (t, { model }) => t.ok(model.servers.every((s) => s.annotations.fromToWww.from === null)),
  },
  {
    name: 'from-to-www-redirect: an invalid value drops the Ingress',
    ingresses: [site('bad', { 'from-to-www-redirect': 'sure' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['the Ingress is ignored'],
  },
  {
    name: 'from-to-www-redirect: any Ingress of the host may turn it on',
    ingresses: [
      site('first', {}, 'foo.com'),
      ingress('second', {
        created: 5,
        nginx: { 'from-to-www-redirect': 'true' },
        rules: [rule('foo.com', path('/b', 'web:80'))],
      }),
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.annotations.fromToWww.from, 'www.foo.com'),
  },
]);
