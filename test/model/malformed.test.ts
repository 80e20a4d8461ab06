// Malformed objects (as standalone manifests can hold) are reported on the object and never break
// the build of anything else.
import t from 'tap';
import type { Ingress } from '../../lib/model/index.ts';
import { ingress, path, rawPath, rawPaths, rule, runCases, service } from './helpers.ts';

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
  // found by test/bad-input (each of these crashed the build or went unreported)
  {
    name: 'malformed: Service ports that are not a list, or hold null, give SERVICE_PORT_NOT_FOUND',
    ingresses: [good, ingress('p', { rules: [rule('p.com', path('/', 'odd:80'), path('/n', 'nul:80'))] })],
    services: [
      raw({ metadata: { name: 'odd', namespace: 'default' }, spec: { ports: { port: 80 } } }) as never,
      raw({
        metadata: { name: 'nul', namespace: 'default' },
        spec: { ports: [null, { port: 'x' }] },
      }) as never,
    ],
    routes: [GOOD_ROUTE, 'p.com Prefix /n -> default-nul-80 (p)', 'p.com Prefix / -> default-odd-80 (p)'],
    diagnostics: ['SERVICE_PORT_NOT_FOUND p', 'SERVICE_PORT_NOT_FOUND p'],
  },
  {
    name: 'malformed: EndpointSlice ports, endpoints and addresses of the wrong type or range are skipped',
    ingresses: [good, ingress('e', { rules: [rule('e.com', path('/', 'svc:80'))] })],
    services: [service('svc', [{ port: 80, targetPort: 8080, name: 'http' }])],
    slices: [
      raw({
        metadata: { name: 's1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'svc' } },
        ports: [null, { name: 'http', port: 70000 }, { name: 'http', port: '8080' }],
        endpoints: [{ addresses: ['10.0.0.1'] }],
      }) as never,
      raw({
        metadata: { name: 's2', namespace: 'default', labels: { 'kubernetes.io/service-name': 'svc' } },
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [null, { addresses: 'x' }, { addresses: ['not-an-ip', 7, '10.0.0.9'] }],
      }) as never,
    ],
    routes: ['e.com Prefix / -> default-svc-80 (e)', GOOD_ROUTE],
    check: (t, result) =>
      t.strictSame(result.model.upstreams['default-svc-80']?.endpoints, [
        { address: '10.0.0.9', port: 8080 },
      ]),
  },
  {
    name: 'malformed: http.paths that is not a list, and a tls entry whose hosts is not a list',
    ingresses: [
      good,
      raw({
        metadata: { name: 'h', namespace: 'default' },
        spec: {
          ingressClassName: 'ingress-ts',
          tls: [{ hosts: 0, secretName: 'x' }],
          rules: [{ host: 'h.com', http: { paths: '/' } }],
        },
      }),
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID h', 'INGRESS_INVALID h'],
    messages: ['http must be an object whose paths is a list', 'spec.tls[0] needs hosts as a list'],
  },
  {
    name: 'malformed: an Ingress name or namespace that is not a DNS name',
    ingresses: [
      good,
      ingress('bad\nname', { rules: [rule('n.com', path('/', 'web:80'))] }),
      ingress('Upper', { namespace: 'a b', rules: [rule('m.com', path('/', 'web:80'))] }),
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID bad\nname', 'INGRESS_INVALID Ingress:a b/Upper'],
  },
  {
    name: 'malformed: two Ingresses with one namespace/name: neither is used, whatever the order',
    ingresses: [
      ingress('twin', { rules: [rule('a.com', path('/', 'web:80'))] }),
      good,
      ingress('twin', { rules: [rule('b.com', path('/', 'web:80'))] }),
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['INGRESS_INVALID twin'],
  },
  {
    name: 'malformed: a path with control characters',
    ingresses: [good, ingress('c', { rules: [rule('c.com', path('/a\r\nX: y', 'web:80'))] })],
    routes: [GOOD_ROUTE],
    diagnostics: ['PATH_INVALID c'],
    messages: ['must not contain control characters'],
  },
  {
    name: 'malformed: a redirect URL with CR/LF drops the Ingress (Go url.Parse refuses it)',
    ingresses: [
      good,
      ingress('r', {
        nginx: { 'permanent-redirect': 'https://ok.example/\r\nSet-Cookie: a=1' },
        rules: [rule('r.com', path('/', 'web:80'))],
      }),
    ],
    routes: [GOOD_ROUTE],
    diagnostics: ['ANNOTATION_INVALID r'],
  },
]);
