// The webhook builds only the Ingresses a candidate can interact with (lib/admission/related.ts).
// Property: on random clusters dense in shared hosts, aliases, www names, catch-alls, canaries and
// session affinity, the verdict, reasons and warnings for every candidate are the same as with the
// whole snapshot built, for updates of stored Ingresses and for new ones.

import t from 'tap';
import { createRelatedIndex } from '../../lib/admission/related.ts';
import { type ReviewInput, reviewIngress, type Verdict } from '../../lib/admission/review.ts';
import { createScopeIndexes } from '../../lib/admission/scope.ts';
import {
  createBuildCaches,
  DEFAULT_MODEL_OPTIONS,
  type Ingress,
  type ModelOptions,
  type Secret,
} from '../../lib/model/index.ts';
import { ingress, type PathSpec, pem, type RuleSpec, snapshotOf, tlsSecret } from '../model/helpers.ts';

/** mulberry32: a small seeded generator, so a failing seed can be replayed */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

const HOSTS = [
  'a.test',
  'www.a.test',
  'b.test',
  'c.test',
  'alias.test',
  '*.w.test',
  'x.w.test',
  'd.test',
  'e.test',
];
const PATHS = ['/', '/api', '/api/', '/v1', '/(a)\\1'];
const TYPES = ['Prefix', 'Exact', 'ImplementationSpecific'];
const SERVICES = ['s0', 's1', 's2', 's3'];
const SEEDS = Number(process.env.SEEDS ?? 20);

// a few thousand builds: seconds on an idle machine, more on a loaded one
t.setTimeout(120_000);

function randomIngress(rand: () => number, name: string): Ingress {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
  const chance = (p: number) => rand() < p;
  const nginx: Record<string, string> = {};
  if (chance(0.2)) nginx.canary = pick(['true', 'true', 'false']);
  if (chance(0.1)) nginx['canary-weight'] = '30';
  if (chance(0.15)) nginx['server-alias'] = `${pick(HOSTS.filter((h) => !h.startsWith('*')))}, alias.test`;
  if (chance(0.15)) nginx['from-to-www-redirect'] = 'true';
  if (chance(0.2)) nginx.affinity = 'cookie';
  if (chance(0.15)) nginx['session-cookie-name'] = pick(['one', 'two']);
  if (chance(0.1)) nginx['affinity-mode'] = pick(['balanced', 'persistent']);
  if (chance(0.1)) nginx['use-regex'] = 'true';
  if (chance(0.05)) nginx['whitelist-source-range'] = 'nope';
  if (chance(0.1)) nginx['ssl-passthrough'] = 'true';
  if (chance(0.1)) nginx['default-backend'] = pick(SERVICES);
  if (chance(0.1)) nginx['ssl-redirect'] = pick(['true', 'false']);
  if (chance(0.05)) nginx['enable-opentelemetry'] = 'true';
  // objects of other namespaces, named across: only with allow-cross-namespace-resources
  if (chance(0.1)) nginx['auth-tls-secret'] = pick(['shared/ca', 'ca', 'shared/missing']);
  if (chance(0.05)) nginx['proxy-ssl-secret'] = pick(['shared/client', 'client']);
  const rules: RuleSpec[] = [];
  const ruleCount = chance(0.15) ? 0 : 1 + Math.floor(rand() * 2);
  for (let r = 0; r < ruleCount; r++) {
    const paths: PathSpec[] = [];
    for (let p = 0, n = 1 + Math.floor(rand() * 2); p < n; p++) {
      paths.push({ path: pick(PATHS), pathType: pick(TYPES), backend: pick(SERVICES) });
    }
    rules.push({ host: chance(0.15) ? undefined : pick(HOSTS), paths });
  }
  const hosts = rules.map((r) => r.host).filter((h): h is string => h !== undefined);
  return ingress(name, {
    namespace: chance(0.8) ? 'default' : 'other',
    created: Math.floor(rand() * 5),
    nginx,
    rules,
    ...(ruleCount === 0 || chance(0.1) ? { defaultBackend: pick(SERVICES) } : {}),
    ...(hosts.length > 0 && chance(0.3)
      ? { tls: [{ hosts: [pick(hosts)], secretName: pick(['a-tls', 'missing']) }] }
      : {}),
  });
}

function caSecret(name: string, namespace: string): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    data: { 'ca.crt': Buffer.from(pem('a-example').crt).toString('base64') },
  };
}

const shown = (v: Verdict) => ({ allowed: v.allowed, reasons: v.reasons, warnings: v.warnings });

t.test('the related Ingresses give the verdict and findings of the full build', async (t) => {
  let compared = 0;
  let subsetSmaller = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const rand = random(seed);
    const stored = Array.from({ length: 30 }, (_, i) => randomIngress(rand, `i${i}`));
    // services for each namespace, so both Service problems and clean backends occur
    const world = {
      ingresses: stored,
      secrets: [
        tlsSecret('a-tls', { ...pem('a-example') }),
        caSecret('ca', 'default'),
        caSecret('ca', 'shared'),
        { ...tlsSecret('client', pem('other'), 'shared') },
      ],
      configMaps: [
        {
          metadata: { name: 'controller', namespace: 'ingress' },
          data: { 'allow-cross-namespace-resources': seed % 3 === 0 ? 'true' : 'false' },
        },
      ],
    };
    const snapshot = snapshotOf(world);
    const options: ModelOptions = {
      ...DEFAULT_MODEL_OPTIONS,
      disableCatchAll: seed % 7 === 0,
      configMap: 'ingress/controller',
      enableSslPassthrough: seed % 2 === 0,
    };
    const index = createRelatedIndex(snapshot.ingresses, snapshot.ingressClasses, options);
    const caches = createBuildCaches();
    const scope = createScopeIndexes();
    const fresh = Array.from({ length: 10 }, (_, i) => randomIngress(rand, `new${i}`));
    const inputs: ReviewInput[] = [
      ...stored.map((object) => ({
        operation: 'UPDATE' as const,
        object: randomIngress(rand, object.metadata?.name as string),
        oldObject: object,
        namespace: 'default',
      })),
      ...stored.map((object) => ({
        operation: 'UPDATE' as const,
        object,
        oldObject: object,
        namespace: 'default',
      })),
      ...fresh.map((object) => ({
        operation: 'CREATE' as const,
        object,
        oldObject: null,
        namespace: 'default',
      })),
    ];
    for (const input of inputs) {
      // the same namespace as the old version: an update cannot move an Ingress
      if (input.oldObject !== null && input.object !== null) {
        input.object.metadata = { ...input.object.metadata, namespace: input.oldObject.metadata?.namespace };
      }
      const context = { snapshot, options, caches, scope, now: '2026-01-01T00:00:03Z' };
      const subset = reviewIngress(input, { ...context, index });
      const whole = reviewIngress(input, { ...context, index, fullBuild: true });
      const label = `seed ${seed} ${input.operation} ${input.object?.metadata?.namespace}/${input.object?.metadata?.name}`;
      if (JSON.stringify(shown(subset)) !== JSON.stringify(shown(whole))) {
        t.strictSame(shown(subset), shown(whole), label);
      }
      compared++;
      if (subset.tested < whole.tested) subsetSmaller++;
    }
  }
  t.equal(compared, SEEDS * 70, 'every candidate compared');
  t.ok(subsetSmaller > compared / 2, `most reviews build fewer Ingresses (${subsetSmaller} of ${compared})`);
});

t.test('the related Ingresses: by host, alias, www name, catch-all and shared affinity', async (t) => {
  const options = DEFAULT_MODEL_OPTIONS;
  const world = [
    ingress('same-host', { rules: [{ host: 'a.test', paths: [{ path: '/', backend: 's0' }] }] }),
    ingress('tls-host', { tls: [{ hosts: ['A.test'], secretName: 'x' }], rules: [] }),
    ingress('alias-of-a', { nginx: { 'server-alias': 'a.test' }, rules: [{ host: 'z.test', paths: [] }] }),
    ingress('z-sharer', { rules: [{ host: 'z.test', paths: [{ path: '/', backend: 's9' }] }] }),
    ingress('www', { rules: [{ host: 'www.a.test', paths: [{ path: '/', backend: 's0' }] }] }),
    ingress('catch-all', { defaultBackend: 's0' }),
    ingress('sticky-s1', {
      nginx: { affinity: 'cookie' },
      rules: [{ host: 'q.test', paths: [{ path: '/', backend: 's1' }] }],
    }),
    ingress('q-sharer', { rules: [{ host: 'q.test', paths: [{ path: '/x', backend: 's2' }] }] }),
    ingress('unrelated', { rules: [{ host: 'u.test', paths: [{ path: '/', backend: 's1' }] }] }),
    ingress('other-class', { className: 'nginx', rules: [{ host: 'a.test', paths: [] }] }),
  ];
  const snapshot = snapshotOf({ ingresses: world });
  const index = createRelatedIndex(snapshot.ingresses, snapshot.ingressClasses, options);
  const names = (candidate: Ingress) =>
    index
      .related(candidate)
      .map((i) => i.metadata?.name)
      .sort();
  t.equal(index.ours, 9);
  t.strictSame(names(ingress('c', { rules: [{ host: 'a.test', paths: [{ path: '/', backend: 's1' }] }] })), [
    'alias-of-a',
    'same-host',
    'tls-host',
    'www',
    'z-sharer',
  ]);
  t.strictSame(names(ingress('c', { defaultBackend: 's3' })), ['catch-all']);
  t.strictSame(
    names(
      ingress('c', {
        nginx: { affinity: 'cookie' },
        rules: [{ host: 'n.test', paths: [{ path: '/', backend: 's1' }] }],
      }),
    ),
    ['q-sharer', 'sticky-s1', 'unrelated'],
  );
  t.strictSame(
    names(ingress('c', { rules: [{ host: 'n.test', paths: [{ path: '/', backend: 's1' }] }] })),
    [],
  );
});

t.test('an index patched with the Ingresses that changed answers as one built afresh', async (t) => {
  const rand = random(7);
  const options = DEFAULT_MODEL_OPTIONS;
  let list = Array.from({ length: 60 }, (_, i) => randomIngress(rand, `i${i}`));
  const classes = snapshotOf({ ingresses: [] }).ingressClasses;
  let index = createRelatedIndex(list, classes, options);
  const names = (found: Ingress[]) => found.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`).sort();
  for (let round = 0; round < 20; round++) {
    // replace, remove and add a few; the untouched objects stay the same objects
    list = list
      .filter(() => rand() > 0.05)
      .map((i) => (rand() < 0.1 ? randomIngress(rand, i.metadata?.name as string) : i));
    list.push(randomIngress(rand, `added${round}`));
    index = index.patched(list);
    const fresh = createRelatedIndex(list, classes, options);
    t.equal(index.ours, fresh.ours, `round ${round}: size`);
    for (const candidate of Array.from({ length: 10 }, (_, i) => randomIngress(rand, `c${i}`))) {
      t.strictSame(names(index.related(candidate)), names(fresh.related(candidate)), `round ${round}`);
    }
  }
});
