// Malformed objects (as standalone manifests can hold) are reported on the object and never break
// the build of anything else.
import t from 'tap';
import type { Ingress } from '../../lib/model/index.ts';
import { ingress, path, rawPath, rawPaths, rule, runCases } from './helpers.ts';

const good = ingress('good', { rules: [rule('good.com', path('/', 'web:80'))] });
const GOOD_ROUTE = 'good.com Prefix / -> default-web-80 (good)';
const raw = (value: unknown) => value as Ingress;

runCases(t, [
  {
    name: 'malformed: an Ingress without a name is reported and skipped',
    ingresses: [raw({ metadata: { namespace: 'default' }, spec: { ingressClassName: 'ingress-ts' } }), good],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID '],
  },
  {
    name: 'malformed: an Ingress without a namespace is reported and skipped',
    ingresses: [
      raw({ metadata: { name: 'nons' }, spec: { ingressClassName: 'ingress-ts', rules: [] } }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID Ingress:/nons'],
  },
  {
    name: 'malformed: spec.rules that is not a list',
    ingresses: [
      raw({
        metadata: { name: 'r', namespace: 'default' },
        spec: { ingressClassName: 'ingress-ts', rules: 'a.com' },
      }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID r'],
    messages: ['spec.rules must be a list'],
  },
  {
    name: 'malformed: spec.tls that is not a list',
    ingresses: [
      raw({
        metadata: { name: 'tl', namespace: 'default' },
        spec: { ingressClassName: 'ingress-ts', tls: {} },
      }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID tl'],
  },
  {
    name: 'malformed: annotations that are not a map',
    ingresses: [
      raw({
        metadata: { name: 'an', namespace: 'default', annotations: ['x'] },
        spec: { ingressClassName: 'ingress-ts' },
      }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID an'],
  },
  {
    name: 'malformed: a rule that is not an object, and a host that is not a string',
    ingresses: [
      raw({
        metadata: { name: 'm', namespace: 'default' },
        spec: {
          ingressClassName: 'ingress-ts',
          rules: [
            'a.com',
            { host: 42, http: { paths: [] } },
            {
              host: 'ok.com',
              http: {
                paths: [
                  {
                    path: '/',
                    pathType: 'Prefix',
                    backend: { service: { name: 'web', port: { number: 80 } } },
                  },
                ],
              },
            },
          ],
        },
      }),
    ],
    routes: ['ok.com Prefix / -> default-web-80 (m)'],
    diagnostics: ['HOST_INVALID m', 'INGRESS_INVALID m'],
  },
  {
    name: 'malformed: a path entry that is not an object, and a path that is not a string',
    ingresses: [rawPaths('p', 'a.com', [null, rawPath(7), rawPath('/')])],
    routes: ['a.com Prefix / -> default-web-80 (p)'],
    diagnostics: ['PATH_INVALID p', 'PATH_INVALID p'],
  },
  {
    name: 'malformed: a spec that is not an object',
    ingresses: [raw({ metadata: { name: 's', namespace: 'default' }, spec: 'nope' }), good],
    routes: [GOOD_ROUTE],
    check: (t, { diagnostics }) => t.strictSame(diagnostics, []),
  },
  {
    name: 'malformed: a fractional or negative port number',
    ingresses: [
      rawPaths('n', 'a.com', [
        rawPath('/a', { service: { name: 'web', port: { number: 80.5 } } }),
        rawPath('/b', { service: { name: 'web', port: { number: -1 } } }),
      ]),
    ],
    routes: [],
    diagnostics: ['BACKEND_INVALID n', 'BACKEND_INVALID n'],
  },
  {
    name: 'malformed: a huge Ingress with 2,000 invalid hosts is reported, the others still build',
    ingresses: [
      ingress('huge', {
        rules: Array.from({ length: 2000 }, (_, i) => rule(`bad_${i}.com`, path('/', 'web:80'))),
      }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: Array.from({ length: 2000 }, () => 'HOST_INVALID huge'),
  },
  {
    name: 'malformed: services, slices and secrets without metadata are ignored',
    ingresses: [good],
    services: [raw({}) as never, raw({ metadata: { name: 'x' } }) as never],
    slices: [raw({ metadata: { namespace: 'default' } }) as never],
    secrets: [raw({}) as never],
    routes: [GOOD_ROUTE],
  },

  {
    name: 'malformed: a spec that is not an object, on an Ingress of our class (legacy annotation)',
    ingresses: [
      raw({
        metadata: {
          name: 's',
          namespace: 'default',
          annotations: { 'kubernetes.io/ingress.class': 'ingress-ts' },
        },
        spec: 'nope',
      }),
      good,
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID s'],
    messages: ['spec must be an object'],
  },
]);
