// The content hash is written field by field (lib/model/hash.ts) for speed. This test changes every
// leaf of a model that uses every model feature and requires the right hash to change, so a field
// added to the model but forgotten in the hash fails here.
import t from 'tap';
import { FingerprintCache, modelFingerprints, modelHashes } from '../../lib/model/hash.ts';
import type { Model } from '../../lib/model/index.ts';
import { buildWithGraph, graphOf, listenerCertificate, plan } from './gateway/helpers.ts';
import {
  build,
  externalNameService,
  ingress,
  path,
  pem,
  rule,
  service,
  slice,
  tlsSecret,
} from './helpers.ts';
import { caSecret } from './helpers-client-auth.ts';

// an HTTPRoute with every field a route's Gateway match has, on a host of its own with a listener's
// certificate, and on the Ingress host a.example.com beside its paths
const gatewayGraph = graphOf(
  [
    plan('gw-route', {
      listeners: [
        { hostnames: ['gw.example.com', 'a.example.com'] },
        { protocol: 'HTTPS', hostnames: ['gw.example.com'] },
      ],
      rules: [
        {
          matches: [{ path: '/g', method: 'GET', headers: ['x-h=1'], query: ['q=1'] }],
          backends: ['web:80*2', '!RefNotPermitted*1'],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'x-s', value: 's' }],
                add: [{ name: 'x-a', value: 'a' }],
                remove: ['x-r'],
              },
            },
            {
              type: 'ResponseHeaderModifier',
              responseHeaderModifier: { set: [{ name: 'x-o', value: 'o' }] },
            },
            {
              type: 'URLRewrite',
              urlRewrite: {
                hostname: 'in.example.com',
                path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/n' },
              },
            },
          ],
          mirrors: ['copy:81'],
        },
        {
          matches: [{ path: '/r', exact: true }],
          backends: [],
          filters: [
            {
              type: 'RequestRedirect',
              requestRedirect: {
                scheme: 'https',
                hostname: 'r.example.com',
                port: 8443,
                path: { type: 'ReplaceFullPath', replaceFullPath: '/x' },
              },
            },
          ],
        },
      ],
    }),
  ],
  [listenerCertificate('gw-cert', 'gw.example.com')],
);

const { model } = buildWithGraph(
  {
    ingresses: [
      ingress('catch', { created: 1, defaultBackend: 'fallback:80' }),
      ingress('site', {
        created: 2,
        defaultBackend: 'site-default:80',
        nginx: {
          'server-alias': 'alias.example.com',
          'use-regex': 'true',
          'rewrite-target': '/$1',
          'auth-tls-secret': 'client-ca',
          'auth-tls-match-cn': 'CN=client',
          'auth-tls-error-page': 'https://example.com/cert-error',
        },
        tls: [{ hosts: ['a.example.com'], secretName: 'a-tls' }],
        rules: [
          rule(
            'a.example.com',
            path('/api/(.*)', 'api:80', 'ImplementationSpecific'),
            path('/exact', 'web:80', 'Exact'),
          ),
        ],
      }),
      ingress('ext', {
        created: 3,
        nginx: { 'ssl-passthrough': 'true' },
        rules: [rule('ext.example.com', path('/', 'ext:443')), rule(undefined, path('/any', 'web:80'))],
      }),
    ],
    services: [
      externalNameService('ext', 'api.example.org', { ports: [{ port: 443 }] }),
      service('db', [{ port: 80 }], 'infra'),
    ],
    slices: [slice('db', [{ addresses: ['10.9.0.1'] }], [{ port: 80 }], { namespace: 'infra' })],
    secrets: [
      tlsSecret('gw-cert', pem('wildcard-example'), 'infra'),
      tlsSecret('a-tls', pem('a-example')),
      caSecret('client-ca', pem('a-example').crt),
      tlsSecret('default-cert', pem('wildcard-example'), 'infra'),
    ],
  },
  gatewayGraph,
  {
    defaultBackendService: 'infra/db',
    defaultSSLCertificate: 'infra/default-cert',
    enableSslPassthrough: true,
  },
);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every leaf of the model as a path of keys, skipping the hashes (contentHashes too: derived, not input) and the PEM texts (covered by sha256). */
function leaves(value: Json, at: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [at];
  const out: string[][] = [];
  for (const [key, child] of Object.entries(value)) {
    if (at.length === 0 && (key === 'hash' || key === 'routesHash' || key === 'contentHashes')) continue;
    if (key === 'certPem' || key === 'keyPem' || key === 'caPem') continue;
    out.push(...leaves(child, [...at, key]));
  }
  return out;
}

/** A different value of the same type; object-typed nulls become a valid object. */
function changed(value: Json, key: string): Json {
  if (value === null && key === 'ingress') return { namespace: 'n', name: 'x' };
  if (value === null && key === 'passthrough') {
    return { ingress: { namespace: 'n', name: 'x' }, backendIngress: null, backend: { type: 'default' } };
  }
  if (value === null && key === 'tls') return { certificate: null, ingress: { namespace: 'n', name: 'x' } };
  if (typeof value === 'string') return `${value}x`;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'boolean') return !value;
  return 'x';
}

function mutate(source: Model, keys: string[]): Model {
  const copy = structuredClone(source) as unknown as Json;
  let node = copy as { [key: string]: Json };
  for (const key of keys.slice(0, -1)) node = node[key] as { [key: string]: Json };
  const last = keys[keys.length - 1] as string;
  node[last] = changed(node[last] as Json, last);
  return copy as unknown as Model;
}

const { hash, routesHash, ...body } = model;

t.test('the rich model really uses every feature', async (t) => {
  t.ok(model.catchAll.defaultRoute.ingress, 'catch-all Ingress');
  t.ok(
    model.servers.some((s) => s.tls?.certificate),
    'TLS',
  );
  t.ok(
    model.servers.some((s) => s.regex),
    'regex mode',
  );
  t.ok(
    model.servers.some((s) => s.annotations.alias.aliases.length > 0),
    'aliases',
  );
  t.ok(
    Object.values(model.upstreams).some((u) => u.externalName),
    'ExternalName',
  );
  t.ok(model.defaultBackend && model.defaultCertificate, 'controller defaults');
  t.ok(model.catchAll.routes.length > 0, 'host-less rule');
  t.ok(
    model.servers.some((s) => s.clientAuth?.caPem),
    'client certificate authentication',
  );
  t.ok(
    model.servers.some((s) => s.passthrough !== null),
    'ssl-passthrough',
  );
  t.ok(
    model.servers.some((s) => s.routes.some((r) => r.gateway !== undefined && r.backend.type === 'weighted')),
    "an HTTPRoute's routes",
  );
  t.equal(model.servers.find((s) => s.hostname === 'gw.example.com')?.tls?.ingress.kind, 'Gateway');
  t.strictSame(modelHashes(body), { hash, routesHash }, 'recomputing gives the same hashes');
});

t.test('changing any leaf changes the hash; endpoints change only `hash`', async (t) => {
  const paths = leaves(model as unknown as Json);
  t.ok(paths.length > 60, `${paths.length} leaves`);
  for (const keys of paths) {
    const { hash: mutatedHash, routesHash: mutatedRoutes, ...rest } = mutate(model, keys);
    void mutatedHash;
    void mutatedRoutes;
    const next = modelHashes(rest);
    const label = keys.join('.');
    t.not(next.hash, hash, `hash covers ${label}`);
    if (keys.includes('endpoints')) t.equal(next.routesHash, routesHash, `routesHash ignores ${label}`);
    else t.not(next.routesHash, routesHash, `routesHash covers ${label}`);
  }
});

t.test('a fingerprint that reuses the last one still sees any leaf changed', async (t) => {
  for (const keys of leaves(model as unknown as Json)) {
    const kept = new FingerprintCache();
    t.equal(modelFingerprints(body, kept).hash, hash, 'the first fingerprint is the plain one');
    const { hash: _hash, routesHash: _routes, ...rest } = mutate(model, keys);
    const label = keys.join('.');
    const next = modelFingerprints(rest, kept);
    t.not(next.hash, hash, `hash covers ${label}`);
    t.strictSame(next, modelFingerprints(rest), `equal to a fingerprint from scratch (${label})`);
    t.equal(modelFingerprints(body, kept).hash, hash, `and back (${label})`);
  }
});

t.test('adding or removing list entries changes the hash', async (t) => {
  const grow = structuredClone(model);
  grow.servers[0]?.routes.push(structuredClone(grow.servers[0].routes[0]!));
  t.not(modelHashes(grow).routesHash, routesHash, 'one more route');
  const shrink = structuredClone(model);
  const upstream = Object.values(shrink.upstreams).find((u) => u.endpoints.length > 0)!;
  upstream.endpoints.pop();
  t.not(modelHashes(shrink).hash, hash, 'one endpoint fewer');
  t.equal(modelHashes(shrink).routesHash, routesHash, 'one endpoint fewer is an endpoints-only change');
  upstream.endpoints.push({ address: '10.9.9.9', port: 1 }, { address: '10.9.9.8', port: 2 });
  t.equal(modelHashes(shrink).routesHash, routesHash, 'more endpoints is an endpoints-only change');
  const alias = structuredClone(model);
  alias.servers
    .find((s) => s.annotations.alias.aliases.length > 0)!
    .annotations.alias.aliases.push('more.example.com');
  t.not(modelHashes(alias).routesHash, routesHash, 'one more alias');
});

t.test(
  'large models (the fingerprint is hashed in 64 KiB chunks) still see a change deep inside',
  async (t) => {
    const many = Array.from({ length: 600 }, (_, i) =>
      ingress(`app-${i}`, {
        created: i,
        rules: [rule(`app-${i}.example.com`, path('/', 'web:80'), path('/api', 'api:80'))],
      }),
    );
    const { hash: baseHash, routesHash: baseRoutes, ...base } = build({ ingresses: many }).model;
    t.strictSame(modelHashes(structuredClone(base)), { hash: baseHash, routesHash: baseRoutes }, 'stable');
    const changed = structuredClone(base);
    const route = changed.servers[300]?.routes[1];
    if (route === undefined) throw new Error('fixture too small');
    route.path = '/apix';
    t.not(modelHashes(changed).routesHash, baseRoutes, 'a route in the middle');
  },
);

t.test('equal models hash alike however their objects are shared', async (t) => {
  const shared = build({
    ingresses: [ingress('a', { rules: [rule('a.com', path('/', 'web:80'), path('/b', 'web:80'))] })],
  }).model;
  const { hash: sharedHash, routesHash: sharedRoutes, ...body } = shared;
  // JSON gives every route its own copy of the objects the build shares between routes
  t.strictSame(modelHashes(JSON.parse(JSON.stringify(body))), { hash: sharedHash, routesHash: sharedRoutes });
});
