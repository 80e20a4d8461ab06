// Ordering (creationTimestamp, then namespace/name descending) and oldest-wins merging.
import t from 'tap';
import { ingress, path, rule, runCases } from './helpers.ts';

runCases(t, [
  {
    name: 'order: the older Ingress wins the same host, path and pathType, whatever the list order',
    ingresses: [
      ingress('newer', { created: 10, rules: [rule('a.com', path('/api', 'new:80'))] }),
      ingress('older', { created: 5, rules: [rule('a.com', path('/api', 'old:80'))] }),
    ],
    routes: ['a.com Prefix /api -> default-old-80 (older)'],
    diagnostics: ['PATH_CONFLICT newer'],
    messages: ['already defined by the older Ingress default/older'],
  },
  {
    name: 'order: equal timestamps are broken by namespace/name descending (b before a)',
    ingresses: [
      ingress('a', { rules: [rule('a.com', path('/', 'sa:80'))] }),
      ingress('b', { rules: [rule('a.com', path('/', 'sb:80'))] }),
    ],
    routes: ['a.com Prefix / -> default-sb-80 (b)'],
    diagnostics: ['PATH_CONFLICT a'],
  },
  {
    name: 'order: the tie-break compares namespace first (zeta/x before alpha/x)',
    ingresses: [
      ingress('x', { namespace: 'alpha', rules: [rule('a.com', path('/', 'svc:80'))] }),
      ingress('x', { namespace: 'zeta', rules: [rule('a.com', path('/', 'svc:80'))] }),
    ],
    routes: ['a.com Prefix / -> zeta-svc-80 (zeta/x)'],
    diagnostics: ['PATH_CONFLICT Ingress:alpha/x'],
  },
  {
    name: 'order: timestamps count in whole seconds, so sub-second differences tie',
    ingresses: [
      {
        ...ingress('a', { rules: [rule('a.com', path('/', 'sa:80'))] }),
        metadata: { name: 'a', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00.100Z' },
      },
      {
        ...ingress('b', { rules: [rule('a.com', path('/', 'sb:80'))] }),
        metadata: { name: 'b', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00.900Z' },
      },
    ],
    routes: ['a.com Prefix / -> default-sb-80 (b)'],
    diagnostics: ['PATH_CONFLICT a'],
  },
  {
    name: 'merge: different paths of one host from several Ingresses are merged',
    ingresses: [
      ingress('api', { created: 1, rules: [rule('a.com', path('/api', 'api:80'))] }),
      ingress('web', { created: 2, rules: [rule('a.com', path('/', 'web:80'))] }),
    ],
    routes: ['a.com Prefix /api -> default-api-80 (api)', 'a.com Prefix / -> default-web-80 (web)'],
  },
  {
    name: 'merge: the same path with Exact and Prefix gives two routes, in Ingress order',
    ingresses: [
      ingress('prefix', { created: 1, rules: [rule('a.com', path('/x', 'p:80'))] }),
      ingress('exact', { created: 2, rules: [rule('a.com', path('/x', 'e:80', 'Exact'))] }),
    ],
    routes: ['a.com Prefix /x -> default-p-80 (prefix)', 'a.com Exact /x -> default-e-80 (exact)'],
  },
  {
    name: 'merge: a path repeated inside one Ingress keeps the first occurrence',
    ingresses: [ingress('dup', { rules: [rule('a.com', path('/x', 'one:80'), path('/x', 'two:80'))] })],
    routes: ['a.com Prefix /x -> default-one-80 (dup)'],
    diagnostics: ['PATH_CONFLICT dup'],
    messages: ['appears twice in this Ingress'],
  },
  {
    name: 'merge: the host’s default route belongs to the oldest Ingress naming the host',
    ingresses: [
      ingress('young', {
        created: 9,
        defaultBackend: 'young-default:80',
        rules: [rule('a.com', path('/y', 'y:80'))],
      }),
      ingress('old', { created: 1, rules: [rule('a.com', path('/o', 'o:80'))] }),
    ],
    defaults: ['a.com -> default (old)', '_ -> default (-)'],
  },
  {
    name: 'merge: the oldest Ingress wins a host+path even when it comes from another namespace',
    ingresses: [
      ingress('shop', { namespace: 'team-b', created: 3, rules: [rule('a.com', path('/shop', 'shop:80'))] }),
      ingress('shop', { namespace: 'team-a', created: 2, rules: [rule('a.com', path('/shop', 'shop:80'))] }),
    ],
    routes: ['a.com Prefix /shop -> team-a-shop-80 (team-a/shop)'],
    diagnostics: ['PATH_CONFLICT Ingress:team-b/shop'],
    messages: ['older Ingress team-a/shop'],
  },

  {
    name: 'order: an Ingress without creationTimestamp counts as the oldest',
    ingresses: [
      {
        ...ingress('a', { rules: [rule('a.com', path('/', 'sa:80'))] }),
        metadata: { name: 'a', namespace: 'default' },
      },
      ingress('b', { rules: [rule('a.com', path('/', 'sb:80'))] }),
    ],
    routes: ['a.com Prefix / -> default-sa-80 (a)'],
    diagnostics: ['PATH_CONFLICT b'],
  },
  {
    name: 'order: an unparsable creationTimestamp counts as the oldest',
    ingresses: [
      {
        ...ingress('a', { rules: [rule('a.com', path('/', 'sa:80'))] }),
        metadata: { name: 'a', namespace: 'default', creationTimestamp: 'yesterday' },
      },
      ingress('b', { rules: [rule('a.com', path('/', 'sb:80'))] }),
    ],
    routes: ['a.com Prefix / -> default-sa-80 (a)'],
    diagnostics: ['PATH_CONFLICT b'],
  },
  {
    name: 'order: in regex mode equal paths keep Ingress order (stable sort), so the older Prefix /x is tried first',
    ingresses: [
      ingress('old', {
        created: 1,
        nginx: { 'use-regex': 'true' },
        rules: [rule('a.com', path('/x', 'p:80'))],
      }),
      ingress('new', { created: 2, rules: [rule('a.com', path('/x', 'e:80', 'Exact'))] }),
    ],
    routes: ['a.com Prefix /x -> default-p-80 (old)', 'a.com Exact /x -> default-e-80 (new)'],
  },
]);
