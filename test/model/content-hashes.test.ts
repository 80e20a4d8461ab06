// contentHashes name each server and each upstream by its own content, so a compile may keep what it
// made for a server whose hash is unchanged. Reuse is only safe when every field a server holds is in
// its hash: this test changes each leaf of a model that uses many features and requires exactly the
// owner's hash to change (and no hash for endpoints, which are updated in place).
import t from 'tap';
import { modelFingerprints } from '../../lib/model/hash.ts';
import type { ContentHashes, Model } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, service, slice, tlsSecret } from './helpers.ts';
import { caSecret } from './helpers-client-auth.ts';

const { model } = build(
  {
    ingresses: [
      ingress('catch', {
        created: 1,
        defaultBackend: 'fallback:80',
        rules: [rule(undefined, path('/any', 'web:80'))],
      }),
      ingress('site', {
        created: 2,
        defaultBackend: 'site-default:80',
        nginx: {
          'server-alias': 'alias.example.com',
          'use-regex': 'true',
          'rewrite-target': '/$1',
          'auth-tls-secret': 'client-ca',
          'limit-rps': '5',
          affinity: 'cookie',
          'custom-http-errors': '404,503',
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
      ingress('other', {
        created: 3,
        nginx: { 'upstream-hash-by': '$request_uri', 'proxy-read-timeout': '7' },
        rules: [rule('b.example.com', path('/', 'db:80'))],
      }),
    ],
    services: [service('db', [{ port: 80 }])],
    slices: [slice('db', [{ addresses: ['10.9.0.1'] }], [{ port: 80 }])],
    secrets: [tlsSecret('a-tls', pem('a-example')), caSecret('client-ca', pem('a-example').crt)],
  },
  {},
);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every leaf but nulls (an object-typed null has no valid one-word replacement) and PEM texts. */
function leaves(value: Json, at: string[]): string[][] {
  if (value === null) return [];
  if (typeof value !== 'object') return [at];
  return Object.entries(value).flatMap(([key, child]) =>
    key === 'caPem' || key === 'certPem' || key === 'keyPem' ? [] : leaves(child, [...at, key]),
  );
}

/** A copy with one leaf changed; JSON unshares the objects the build shares, so only that leaf changes. */
function mutate(keys: string[]): Model {
  const copy = JSON.parse(JSON.stringify(model)) as { [key: string]: Json };
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as { [key: string]: Json };
  const last = keys[keys.length - 1] as string;
  const value = node[last] as Json;
  node[last] =
    typeof value === 'string'
      ? `${value}x`
      : typeof value === 'number'
        ? value + 1
        : typeof value === 'boolean'
          ? !value
          : 'x';
  return copy as unknown as Model;
}

/** Which hashes differ between `a` and `b`: `servers.<i>`, `catchAll`, `upstreams.<name>`. */
function changedParts(a: ContentHashes, b: ContentHashes): string[] {
  const out: string[] = [];
  a.servers.forEach((hash, i) => {
    if (b.servers[i] !== hash) out.push(`servers.${i}`);
  });
  if (a.catchAll !== b.catchAll) out.push('catchAll');
  for (const [name, hash] of Object.entries(a.upstreams))
    if (b.upstreams[name] !== hash) out.push(`upstreams.${name}`);
  return out;
}

const base = model.contentHashes;
if (base === undefined) throw new Error('the build gives content hashes');

t.test('the build gives each server and upstream a hash; recomputing is stable', async (t) => {
  t.equal(base.servers.length, model.servers.length);
  t.strictSame(Object.keys(base.upstreams), Object.keys(model.upstreams).sort());
  t.ok(
    model.servers.some((s) => s.routes.some((r) => r.annotations.rateLimit.rps > 0)),
    'rate limits',
  );
  t.ok(model.catchAll.routes.length > 0, 'a host-less rule');
  const { hash: _h, routesHash: _r, contentHashes: _c, ...body } = model;
  t.strictSame(
    modelFingerprints(JSON.parse(JSON.stringify(body))).contentHashes,
    base,
    'however objects are shared',
  );
});

t.test('a leaf of a server changes that server’s hash and no other', async (t) => {
  const paths = [
    ...model.servers.flatMap((server, i) => leaves(server as unknown as Json, ['servers', String(i)])),
    ...leaves(model.catchAll as unknown as Json, ['catchAll']),
  ];
  t.ok(paths.length > 100, `${paths.length} leaves`);
  for (const keys of paths) {
    const { hash: _h, routesHash: _r, contentHashes: _c, ...body } = mutate(keys);
    const owner = keys[0] === 'catchAll' ? 'catchAll' : `servers.${keys[1]}`;
    t.strictSame(changedParts(base, modelFingerprints(body).contentHashes), [owner], keys.join('.'));
  }
});

t.test('a leaf of an upstream changes its hash unless it is an endpoint', async (t) => {
  for (const [name, upstream] of Object.entries(model.upstreams)) {
    for (const keys of leaves(upstream as unknown as Json, ['upstreams', name])) {
      const { hash: _h, routesHash: _r, contentHashes: _c, ...body } = mutate(keys);
      const expected = keys.includes('endpoints') ? [] : [`upstreams.${name}`];
      const next = modelFingerprints(body).contentHashes;
      t.strictSame(changedParts(base, next), expected, keys.join('.'));
      if (keys.includes('endpoints'))
        t.equal(next.allUpstreams, base.allUpstreams, 'all upstreams hash ignores endpoints');
      else t.not(next.allUpstreams, base.allUpstreams, `all upstreams hash covers ${keys.join('.')}`);
      if (keys.includes('endpoints'))
        t.not(next.endpoints, base.endpoints, `endpoints hash covers ${keys.join('.')}`);
    }
  }
});

t.test(
  'the ConfigMap, certificates and defaults change no part hash (a compile checks them apart)',
  async (t) => {
    const paths = [
      ...leaves(model.config as unknown as Json, ['config']).slice(0, 40),
      ...leaves(model.certificates as unknown as Json, ['certificates']),
    ];
    for (const keys of paths) {
      const { hash: _h, routesHash: _r, contentHashes: _c, ...body } = mutate(keys);
      t.strictSame(changedParts(base, modelFingerprints(body).contentHashes), [], keys.join('.'));
    }
  },
);

t.test('the upstream record’s order (first use) does not change the hashes', async (t) => {
  const { hash: _h, routesHash: _r, contentHashes: _c, ...body } = model;
  const reversed = Object.fromEntries(Object.entries(model.upstreams).reverse());
  t.strictSame(modelFingerprints({ ...body, upstreams: reversed }), modelFingerprints(body));
});
