// Canary Ingresses in the model: a canary attaches to the main route with the same namespace, host,
// path and pathType; it never creates a host or a path; the oldest canary of a route wins; its
// annotations are validated as ingress-nginx does (an invalid value falls back to the default).
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

const main = (name = 'main', host = 'a.com', created = 0, namespace?: string) =>
  ingress(name, { created, namespace, rules: [rule(host, path('/app', 'web:80'))] });

const canary = (
  name: string,
  nginx: Record<string, string>,
  options: { host?: string; path?: string; pathType?: string; created?: number; namespace?: string } = {},
) =>
  ingress(name, {
    created: options.created ?? 10,
    namespace: options.namespace,
    nginx: { canary: 'true', ...nginx },
    rules: [rule(options.host ?? 'a.com', path(options.path ?? '/app', 'web-v2:80', options.pathType))],
  });

runCases(t, [
  {
    name: 'canary: weight attaches to the main route; no route of its own',
    ingresses: [main(), canary('v2', { 'canary-weight': '10' })],
    routes: ['a.com Prefix /app -> default-web-80 (main) ~> default-web-v2-80 (v2) w=10/100'],
  },
  {
    name: 'canary: header (value, pattern), cookie and weight-total are carried as written',
    ingresses: [
      main('m1'),
      main('m2', 'b.com'),
      main('m3', 'c.com'),
      canary('v', {
        'canary-by-header': 'X-Canary',
        'canary-by-header-value': 'yes please',
        'canary-by-cookie': 'beta',
        'canary-weight': '5',
        'canary-weight-total': '1000',
      }),
      canary(
        'p',
        { 'canary-by-header': 'x-region', 'canary-by-header-pattern': '^eu-(west|north)$' },
        { host: 'b.com' },
      ),
      canary('h', { 'canary-by-header': 'X-Only' }, { host: 'c.com' }),
    ],
    routes: [
      'a.com Prefix /app -> default-web-80 (m1) ~> default-web-v2-80 (v) w=5/1000 h=x-canary=yesplease c=beta',
      'b.com Prefix /app -> default-web-80 (m2) ~> default-web-v2-80 (p) w=0/100 h=x-region~^eu-(west|north)$',
      'c.com Prefix /app -> default-web-80 (m3) ~> default-web-v2-80 (h) w=0/100 h=x-only',
    ],
  },
  {
    name: 'canary: a host without a main Ingress is not created (requests get the catch-all 404)',
    ingresses: [main(), canary('lost', { 'canary-weight': '50' }, { host: 'new.com' })],
    routes: ['a.com Prefix /app -> default-web-80 (main)'],
    diagnostics: ['CANARY_NO_MAIN lost'],
    messages: ['no main Ingress in namespace default serves it'],
  },
  {
    name: 'canary: the path, the pathType as written and the namespace must all match',
    ingresses: [
      main(),
      canary('other-path', {}, { path: '/other' }),
      canary('other-type', {}, { pathType: 'ImplementationSpecific' }),
      canary('other-ns', {}, { namespace: 'team' }),
    ],
    routes: ['a.com Prefix /app -> default-web-80 (main)'],
    diagnostics: [
      'CANARY_NO_MAIN Ingress:team/other-ns',
      'CANARY_NO_MAIN other-path',
      'CANARY_NO_MAIN other-type',
    ],
  },
  {
    name: 'canary: two canaries of one route: the oldest wins',
    ingresses: [
      main(),
      canary('newer', { 'canary-weight': '90' }, { created: 20 }),
      canary('older', { 'canary-weight': '10' }, { created: 5 }),
    ],
    routes: ['a.com Prefix /app -> default-web-80 (main) ~> default-web-v2-80 (older) w=10/100'],
    diagnostics: ['CANARY_CONFLICT newer'],
    messages: ['the older canary default/older already shares it'],
  },
  {
    name: 'canary: older than its main Ingress still attaches (canaries never own routes)',
    ingresses: [main('main', 'a.com', 10), canary('v2', { 'canary-weight': '30' }, { created: 0 })],
    routes: ['a.com Prefix /app -> default-web-80 (main) ~> default-web-v2-80 (v2) w=30/100'],
  },
  {
    name: 'canary: the same Service and port as the main route: nothing to split',
    ingresses: [
      main(),
      ingress('same', {
        created: 10,
        nginx: { canary: 'true', 'canary-weight': '50' },
        rules: [rule('a.com', path('/app', 'web:80'))],
      }),
    ],
    routes: ['a.com Prefix /app -> default-web-80 (main)'],
  },
  {
    name: 'canary: invalid values fall back to their defaults; the canary stays',
    ingresses: [
      main(),
      canary('bad', {
        'canary-weight': 'ten',
        'canary-weight-total': '1e3',
        'canary-by-header': 'X-Canary;drop',
        'canary-by-cookie': 'a"b',
      }),
    ],
    routes: ['a.com Prefix /app -> default-web-80 (main) ~> default-web-v2-80 (bad) w=0/100'],
    diagnostics: [
      'ANNOTATION_INVALID bad',
      'ANNOTATION_INVALID bad',
      'ANNOTATION_INVALID bad',
      'ANNOTATION_INVALID bad',
    ],
    messages: ['canary-weight="ten" is invalid (expected an integer); the default is used'],
  },
  {
    name: 'canary: a pattern RE2 cannot compile is kept, with a warning (the header then routes to main)',
    ingresses: [main(), canary('re', { 'canary-by-header': 'x', 'canary-by-header-pattern': '(a' })],
    routes: ['a.com Prefix /app -> default-web-80 (main) ~> default-web-v2-80 (re) w=0/100 h=x~(a'],
    diagnostics: ['CANARY_PATTERN_INVALID re'],
    messages: [
      'canary-by-header-pattern is not a valid regular expression (missing closing )); requests carrying x',
    ],
  },
  {
    name: 'canary: the diagnostic of a bad pattern never quotes it (it spells out a shared secret)',
    ingresses: [
      main(),
      canary('re', { 'canary-by-header': 'x', 'canary-by-header-pattern': '^(beta-s3cr3t|(gamma)$' }),
    ],
    diagnostics: ['CANARY_PATTERN_INVALID re'],
    check: (t, result) => t.notMatch(JSON.stringify(result.diagnostics), /s3cr3t|gamma/),
  },
  {
    name: 'canary: a spec.defaultBackend canary shares an Ingress-provided catch-all, not the built-in one',
    ingresses: [
      ingress('catch', { created: 0, defaultBackend: 'web:80' }),
      ingress('catch-v2', {
        created: 10,
        nginx: { canary: 'true', 'canary-weight': '20' },
        defaultBackend: 'web-v2:80',
      }),
    ],
    check: (t, { model }) =>
      t.match(model.catchAll.defaultRoute, {
        backend: { upstream: 'default-web-80' },
        canary: { upstream: 'default-web-v2-80', weight: 20, ingress: { name: 'catch-v2' } },
      }),
  },
  {
    name: 'canary: a spec.defaultBackend canary without an Ingress catch-all gets no traffic',
    ingresses: [ingress('lonely', { nginx: { canary: 'true' }, defaultBackend: 'web-v2:80' })],
    diagnostics: ['CANARY_NO_MAIN lonely'],
    check: (t, { model }) => t.equal(model.catchAll.defaultRoute.canary, null),
  },
  {
    name: 'canary: canary-* without canary "true" is an ordinary Ingress, with a warning',
    ingresses: [
      ingress('plain', {
        nginx: { 'canary-weight': '10' },
        rules: [rule('b.com', path('/app', 'web-v2:80'))],
      }),
    ],
    routes: ['b.com Prefix /app -> default-web-v2-80 (plain)'],
    diagnostics: ['CANARY_NOT_ENABLED plain'],
  },
]);
