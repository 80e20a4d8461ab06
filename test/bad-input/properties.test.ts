// Property-based tests of buildModel (fast-check): arbitrary Kubernetes-ish snapshots, from valid
// looking to garbage, never make it throw; the same objects in another order give the same model hash
// and the same set of diagnostics; the model survives structuredClone and a JSON round trip; and
// compileRuntime accepts every model buildModel produces. Seeded: set FC_SEED to replay a failure
// (the seed and the shrunk counterexample are printed when a property fails).
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import type { Test } from 'tap';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { type BuildResult, buildModel, type Snapshot } from '../../lib/model/index.ts';
import { pem } from '../model/helpers.ts';
import { describeDiagnostic, snapshotFrom } from './corpus.ts';

t.setTimeout(120_000);
const SEED = process.env.FC_SEED === undefined ? 20261123 : Number(process.env.FC_SEED);
const RUNS = 200;
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { random: () => 0, now: () => 0 },
  ewmaStore: createEwmaStore(),
};

const P = 'nginx.ingress.kubernetes.io/';
const PAIR = pem('a-example');
const OTHER = pem('other');

// Small vocabularies so that objects refer to each other (hosts collide, Services exist, ...).
const namespace = fc.constantFrom('default', 'team', '');
const objectName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('web', 'api', 'site', 'canary', 'cfg', 'tls') },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const host = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a.example.com', 'b.test', '*.example.com', 'www.a.example.com') },
  { weight: 1, arbitrary: fc.constantFrom('', 'A.EXAMPLE', '1.2.3.4', 'bad_host', '*.*.x', 'x.example:80') },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const pathText = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('/', '/api', '/api/', '/app/v1', '/(a+)+$', '/x(?=y)', '/.*') },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }).map((s) => `/${s}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);
const pathType = fc.constantFrom('Prefix', 'Exact', 'ImplementationSpecific', 'Regex', undefined);
const port = fc.oneof(
  fc.constantFrom(80, 443, 8080, 0, -1, 70000),
  fc.constantFrom('http', 'https', '80', ''),
);
/** null, numbers, lists and objects where something else belongs */
const garbage: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.boolean(),
  fc.string({ maxLength: 5 }),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2, noNullPrototype: true }),
);
/** usually `value`, sometimes garbage */
const maybe = <T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> =>
  fc.oneof({ weight: 9, arbitrary: value }, { weight: 1, arbitrary: garbage });

const backend = fc.record({
  service: maybe(
    fc.record({
      name: maybe(objectName),
      port: maybe(
        port.map((p) =>
          typeof p === 'number' ? { number: p } : /^\d+$/.test(p) ? { number: p } : { name: p },
        ),
      ),
    }),
  ),
});

const annotationValues: Record<string, fc.Arbitrary<string>> = {
  'use-regex': fc.constantFrom('true', 'false', 'yes'),
  'rewrite-target': fc.constantFrom('/$1', '/', '/x;y'),
  'ssl-redirect': fc.constantFrom('true', 'false'),
  canary: fc.constantFrom('true', 'false'),
  'canary-weight': fc.constantFrom('0', '50', '100', '-1', 'x'),
  'canary-by-header': fc.constantFrom('X-Canary', ''),
  'canary-by-header-pattern': fc.constantFrom('^a+$', '(a)\\1', '(('),
  'permanent-redirect': fc.constantFrom('https://x.example/', 'ftp://x', 'https://x/\r\nA: b'),
  'server-alias': fc.constantFrom('alias.example', 'b.test', 'bad alias'),
  'proxy-read-timeout': fc.constantFrom('30', '-5', '1e9'),
  'enable-cors': fc.constantFrom('true', 'false'),
  'cors-allow-headers': fc.constantFrom('X-A,X-B', `${'X-A'.repeat(50)};`),
  affinity: fc.constantFrom('cookie', 'none'),
  'upstream-hash-by': fc.constantFrom('$request_uri', '$remote_addr$x'),
  'configuration-snippet': fc.constant('return 200;'),
  'from-to-www-redirect': fc.constantFrom('true', 'false'),
  'whitelist-source-range': fc.constantFrom('10.0.0.0/8', 'x'),
  'custom-headers': fc.constantFrom('default/cfg', 'team/cfg', 'nope'),
  'auth-type': fc.constantFrom('basic', 'digest', 'x'),
  'auth-secret': fc.constantFrom('tls', 'default/web', 'a/b/c'),
  'auth-secret-type': fc.constantFrom('auth-file', 'auth-map', 'x'),
  'auth-realm': fc.constantFrom('Realm', '"\r\n'),
  'auth-tls-secret': fc.constantFrom('default/tls', 'tls', '/'),
  'auth-tls-verify-client': fc.constantFrom('on', 'optional', 'optional_no_ca', 'off', 'x'),
  'auth-tls-verify-depth': fc.constantFrom('1', '-1', 'x'),
  'auth-tls-match-cn': fc.constantFrom('CN=a', '(('),
  'auth-url': fc.constantFrom('http://auth.example/check', 'auth', 'http://a/\r\n'),
};
const annotationsChain = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .subarray(Object.keys(annotationValues), { maxLength: 5 })
      .chain((keys) =>
        fc
          .tuple(
            ...keys.map((k) => (annotationValues[k] ?? fc.constant('')).map((v) => [`${P}${k}`, v] as const)),
          )
          .map((pairs) => Object.fromEntries(pairs)),
      ),
  },
  { weight: 1, arbitrary: garbage },
);

const ingress = fc.record({
  apiVersion: fc.constant('networking.k8s.io/v1'),
  kind: fc.constant('Ingress'),
  metadata: maybe(
    fc.record({
      name: maybe(objectName),
      namespace: maybe(namespace),
      creationTimestamp: fc.constantFrom(
        '2026-01-01T00:00:00Z',
        '2026-01-02T00:00:00Z',
        'garbage',
        undefined,
      ),
      annotations: annotationsChain,
    }),
  ),
  spec: maybe(
    fc.record(
      {
        ingressClassName: fc.constantFrom('ingress-ts', 'ingress-ts', 'other', undefined),
        defaultBackend: backend,
        tls: maybe(
          fc.array(
            maybe(fc.record({ hosts: maybe(fc.array(host, { maxLength: 2 })), secretName: objectName })),
            {
              maxLength: 2,
            },
          ),
        ),
        rules: maybe(
          fc.array(
            maybe(
              fc.record({
                host: maybe(host),
                http: maybe(
                  fc.record({
                    paths: maybe(
                      fc.array(maybe(fc.record({ path: maybe(pathText), pathType, backend })), {
                        maxLength: 4,
                      }),
                    ),
                  }),
                ),
              }),
            ),
            { maxLength: 3 },
          ),
        ),
      },
      { requiredKeys: ['ingressClassName'] },
    ),
  ),
});

const service = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('Service'),
  metadata: fc.record({ name: objectName, namespace }),
  spec: maybe(
    fc.record({
      type: fc.constantFrom('ClusterIP', 'ExternalName', undefined),
      externalName: maybe(fc.constantFrom('backend.example', 'localhost', '127.0.0.1', 'bad name')),
      clusterIP: maybe(fc.constantFrom('10.96.0.1', 'None', '')),
      ports: maybe(
        fc.array(
          maybe(fc.record({ name: fc.constantFrom('http', 'https', undefined), port, targetPort: port })),
          {
            maxLength: 3,
          },
        ),
      ),
    }),
  ),
});

const endpointSlice = fc.record({
  apiVersion: fc.constant('discovery.k8s.io/v1'),
  kind: fc.constant('EndpointSlice'),
  metadata: fc.record({
    name: objectName.map((n) => `${n}-slice`),
    namespace,
    labels: maybe(fc.record({ 'kubernetes.io/service-name': maybe(objectName) })),
  }),
  addressType: fc.constantFrom('IPv4', 'IPv6', 'FQDN'),
  ports: maybe(
    fc.array(maybe(fc.record({ name: fc.constantFrom('http', 'https', undefined), port: maybe(port) })), {
      maxLength: 2,
    }),
  ),
  endpoints: maybe(
    fc.array(
      maybe(
        fc.record({
          addresses: maybe(
            fc.array(maybe(fc.constantFrom('10.0.0.1', '10.0.0.2', '::1', 'not-an-ip', '')), {
              maxLength: 2,
            }),
          ),
          conditions: maybe(fc.record({ ready: maybe(fc.boolean()) })),
        }),
      ),
      { maxLength: 3 },
    ),
  ),
});

const b64 = (text: string) => Buffer.from(text).toString('base64');
const secret = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('Secret'),
  type: fc.constant('kubernetes.io/tls'),
  metadata: fc.record({ name: objectName, namespace }),
  data: maybe(
    fc.constantFrom(
      { 'tls.crt': b64(PAIR.crt), 'tls.key': b64(PAIR.key) },
      { 'tls.crt': b64(PAIR.crt), 'tls.key': b64(OTHER.key) },
      { 'tls.crt': b64(PAIR.crt.slice(0, 200)), 'tls.key': b64(PAIR.key) },
      { 'tls.crt': b64(OTHER.crt) },
      {},
    ),
  ),
});

const configMap = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('ConfigMap'),
  metadata: fc.record({ name: fc.constant('cfg'), namespace }),
  data: maybe(
    fc.dictionary(
      fc.constantFrom(
        'ssl-redirect',
        'proxy-body-size',
        'use-forwarded-headers',
        'server-snippet',
        'X-A',
        'nope',
      ),
      maybe(fc.constantFrom('true', '1m', 'x', '', 'value')),
      { maxKeys: 3, noNullPrototype: true },
    ),
  ),
});

const ingressClass = fc.record({
  apiVersion: fc.constant('networking.k8s.io/v1'),
  kind: fc.constant('IngressClass'),
  metadata: fc.record({ name: fc.constantFrom('ingress-ts', 'other') }),
  spec: maybe(
    fc.record({ controller: maybe(fc.constantFrom('ingress-ts.dev/controller', 'k8s.io/ingress-nginx')) }),
  ),
});

const key = (o: unknown): string => {
  const object = o as { kind?: unknown; metadata?: { namespace?: unknown; name?: unknown } | null };
  return JSON.stringify([object.kind, object.metadata?.namespace, object.metadata?.name]);
};

/**
 * A snapshot's objects. One kind/namespace/name is held once (as every real source guarantees: the
 * model reports a repeated Ingress key, but which copy comes first is input order by nature).
 */
const objects = fc
  .tuple(
    fc.array(ingress, { maxLength: 6 }),
    fc.array(service, { maxLength: 4 }),
    fc.array(endpointSlice, { maxLength: 4 }),
    fc.array(secret, { maxLength: 2 }),
    fc.array(configMap, { maxLength: 1 }),
    fc.array(ingressClass, { maxLength: 2 }),
  )
  .map((lists) => {
    const seen = new Set<string>();
    return lists.flat().filter((o) => {
      const k = key(o);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  });

const optionsArbitrary = fc.record({
  configMap: fc.constantFrom('default/cfg', 'team/cfg', null),
  watchIngressWithoutClass: fc.boolean(),
});

function build(list: readonly unknown[], options: Record<string, unknown>): BuildResult {
  return buildModel(snapshotFrom(list) as Snapshot, options);
}

const diagnosticSet = (result: BuildResult): string[] =>
  [...new Set(result.diagnostics.map((d) => `${describeDiagnostic(d)} ${d.severity} ${d.message}`))].sort();

const params = { seed: SEED, numRuns: RUNS };

function check(t: Test, name: string, property: fc.IPropertyWithHooks<unknown[]> | fc.IProperty<unknown[]>) {
  const details = fc.check(property, params);
  if (details.failed) {
    t.fail(`${name}: ${fc.defaultReportMessage(details)}\n(replay with FC_SEED=${SEED})`);
  } else {
    t.pass(`${name} (${details.numRuns} runs, seed ${SEED})`);
  }
}

t.test('buildModel never throws and compileRuntime accepts what it builds', async (t) => {
  check(
    t,
    'build and compile',
    fc.property(objects, optionsArbitrary, (list, options) => {
      const result = build(list, options);
      compileRuntime(result.model, null, deps);
    }),
  );
});

t.test(
  'buildModel is deterministic: any order of the same objects → same hash and diagnostics',
  async (t) => {
    check(
      t,
      'order independence',
      fc.property(
        objects.chain((list) =>
          fc.tuple(fc.constant(list), fc.shuffledSubarray(list, { minLength: list.length })),
        ),
        optionsArbitrary,
        ([list, shuffled], options) => {
          const a = build(list, options);
          const b = build(shuffled, options);
          const again = build(list, options);
          return (
            a.model.hash === b.model.hash &&
            a.model.routesHash === b.model.routesHash &&
            a.model.hash === again.model.hash &&
            JSON.stringify(diagnosticSet(a)) === JSON.stringify(diagnosticSet(b))
          );
        },
      ),
    );
  },
);

t.test('the model survives structuredClone and JSON', async (t) => {
  check(
    t,
    'clone and JSON',
    fc.property(objects, optionsArbitrary, (list, options) => {
      const { model } = build(list, options);
      const cloned = structuredClone(model);
      const json = JSON.parse(JSON.stringify(model)) as typeof model;
      // the clones compile too, and JSON drops nothing (no undefined, NaN, Map or class instance)
      compileRuntime(cloned, null, deps);
      return isDeepStrictEqual(cloned, model) && isDeepStrictEqual(json, model);
    }),
  );
});
