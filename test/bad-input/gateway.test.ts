// Malformed Gateway API objects (standalone manifests and the fake API server have no CRD schema):
// a good Gateway world with one to three fields replaced by garbage (wrong types, objects with their
// own toString key, null entries in lists, huge strings, NaN) goes through buildModel and
// compileRuntime, which never throw: one bad object must not stop every configuration change. The
// mutations are seeded, so a failure names a reproducible case. Then the review's cases one by one.
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { buildModel } from '../../lib/model/index.ts';
import {
  APP,
  baseWorld,
  type GatewayWorld,
  GROUP,
  http,
  httpRoute,
  https,
  INFRA,
  referenceGrant,
  snapshotOfWorld,
} from '../model/gateway/fixtures.ts';

const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { random: () => 0.5, now: () => 0 },
  ewmaStore: createEwmaStore(),
};

/** Every kind of value JSON or YAML can give where a field is expected. */
const GARBAGE: ReadonlyArray<() => unknown> = [
  () => null,
  () => undefined,
  () => 0,
  () => -1,
  () => 1.5,
  () => 1e308,
  () => Number.NaN,
  () => true,
  () => '',
  () => 'x',
  () => '*',
  () => '//',
  () => '\r\n',
  () => 'a'.repeat(100_000),
  () => [],
  () => [null],
  () => [1, 'a'],
  () => ({}),
  () => ['__proto__'],
  () => ({ toString: 1 }),
  () => ({ valueOf: 1, toString: 1 }),
  () => [{ toString: 1 }],
  () => ({ name: 1 }),
  () => [{ name: 'a', value: 1 }],
  () => ({ matchLabels: 'x' }),
  () => ({ matchExpressions: [null] }),
  () => ({ numerator: 1, denominator: 0 }),
  () => 'GET',
  () => 'HTTPRoute',
  () => 'All',
  () => 'Selector',
  () => 'Exact',
  () => 65_536,
  () => 443,
];

function world(): GatewayWorld {
  const w = baseWorld();
  w.gateways.push({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'g2', namespace: INFRA, creationTimestamp: '2026-01-01T00:00:05Z', generation: 1 },
    spec: {
      gatewayClassName: 'gateway-conformance',
      listeners: [
        http('h', { from: 'All', hostname: '*.example.com' }),
        https('s', {
          allowedRoutes: {
            namespaces: {
              from: 'Selector',
              selector: {
                matchLabels: { a: 'b' },
                matchExpressions: [{ key: 'a', operator: 'In', values: ['b'] }],
              },
            },
            kinds: [{ kind: 'HTTPRoute' }],
          },
        }),
      ],
    },
  });
  w.httpRoutes.push(
    httpRoute(
      'r',
      [{ name: 'g2', namespace: INFRA, sectionName: 'h' }, { name: 'same-namespace' }],
      [
        {
          matches: [
            {
              path: { type: 'Exact', value: '/a' },
              method: 'GET',
              headers: [{ name: 'X', value: 'y' }],
              queryParams: [{ name: 'q', value: 'v' }],
            },
          ],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'a', value: 'b' }],
                add: [{ name: 'c', value: 'd' }],
                remove: ['e'],
              },
            },
            { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'a', value: 'b' }] } },
            {
              type: 'RequestMirror',
              requestMirror: {
                backendRef: { name: 'infra-backend-v2', port: 8080 },
                fraction: { numerator: 1, denominator: 2 },
              },
            },
            {
              type: 'URLRewrite',
              urlRewrite: { hostname: 'h.example', path: { type: 'ReplaceFullPath', replaceFullPath: '/z' } },
            },
          ],
          backendRefs: [
            { name: 'infra-backend-v1', port: 8080, weight: 3 },
            { name: 'app-backend-v1', namespace: APP, port: 8080, weight: 1 },
          ],
        },
        {
          matches: [{ path: { type: 'PathPrefix', value: '/p' } }],
          filters: [
            {
              type: 'RequestRedirect',
              requestRedirect: {
                scheme: 'https',
                hostname: 'x.example.com',
                port: 8443,
                statusCode: 301,
                path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/q' },
              },
            },
          ],
        },
        {
          matches: [{ path: { type: 'PathPrefix', value: '/r' } }],
          filters: [{ type: 'ExtensionRef', extensionRef: { group: 'g', kind: 'K', name: 'n' } }],
          backendRefs: [{ name: 'infra-backend-v1', port: 8080 }],
        },
      ],
      { namespace: INFRA, hostnames: ['a.example.com', '*.example.com'] },
    ),
  );
  w.referenceGrants.push(
    referenceGrant(
      'rg',
      APP,
      [{ group: GROUP, kind: 'HTTPRoute', namespace: INFRA }],
      [{ group: '', kind: 'Service' }],
    ),
  );
  w.gatewayClasses.push({
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: { name: 'second', creationTimestamp: '2026-01-01T00:00:01Z', generation: 1 },
    spec: {
      controllerName: 'ingress-ts.dev/gateway-controller',
      parametersRef: { group: 'g', kind: 'K', name: 'p' },
    },
  });
  return w;
}

type Path = Array<string | number>;

/** Every field path of the Gateway API objects (the kinds' lists themselves included). */
function fieldPaths(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const path = [...prefix, Array.isArray(value) ? Number(key) : key];
      out.push(path);
      fieldPaths(child, path, out);
    }
  }
  return out;
}

const KINDS = ['gatewayClasses', 'gateways', 'httpRoutes', 'referenceGrants', 'namespaces'] as const;
const PATHS = fieldPaths(Object.fromEntries(KINDS.map((kind) => [kind, world()[kind]]))).filter(
  (path) => path.length >= 2,
);

function mutated(random: () => number): { world: GatewayWorld; what: string[] } {
  const w = world();
  const what: string[] = [];
  const count = 1 + Math.floor(random() * 3);
  for (let m = 0; m < count; m++) {
    const path = PATHS[Math.floor(random() * PATHS.length)] as Path;
    let parent: unknown = w;
    for (const key of path.slice(0, -1)) parent = (parent as Record<string | number, unknown> | null)?.[key];
    if (parent === null || typeof parent !== 'object') continue;
    const value = (GARBAGE[Math.floor(random() * GARBAGE.length)] as () => unknown)();
    const key = path[path.length - 1] as string | number;
    if (value === undefined && !Array.isArray(parent)) delete (parent as Record<string, unknown>)[key];
    else (parent as Record<string | number, unknown>)[key] = value;
    what.push(
      `${path.join('.')}=${typeof value === 'string' ? JSON.stringify(value.slice(0, 20)) : String(JSON.stringify(value)).slice(0, 40)}`,
    );
  }
  return { world: w, what };
}

function survives(w: GatewayWorld): string | null {
  try {
    const result = buildModel(snapshotOfWorld(w));
    compileRuntime(result.model, null, deps);
    JSON.stringify(result.gatewayStatus);
    return null;
  } catch (error) {
    return String((error as Error).stack)
      .split('\n')
      .slice(0, 3)
      .join(' | ');
  }
}

t.test('seeded mutations of a good Gateway world never throw out of buildModel', async (t) => {
  for (const start of [1, 7, 99]) {
    let seed = start;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const failures: string[] = [];
    for (let i = 0; i < 300; i++) {
      const { world: w, what } = mutated(random);
      const thrown = survives(w);
      if (thrown !== null && failures.length < 5) failures.push(`${what.join(' ; ')}: ${thrown}`);
    }
    t.strictSame(failures, [], `seed ${start}: 300 mutated worlds`);
  }
});

const evil = { toString: 1 } as unknown as string;

t.test("the review's cases: a field given as an object with its own toString, a null entry", async (t) => {
  const cases: Array<[string, (w: GatewayWorld) => void]> = [
    [
      'listener protocol',
      (w) => ((w.gateways.at(-1)?.spec?.listeners?.[0] as { protocol: unknown }).protocol = evil),
    ],
    [
      'allowedRoutes from',
      (w) => {
        const listener = w.gateways.at(-1)?.spec?.listeners?.[0];
        if (listener !== undefined) listener.allowedRoutes = { namespaces: { from: evil } };
      },
    ],
    [
      'filter type',
      (w) => ((w.httpRoutes[0]?.spec?.rules?.[0]?.filters?.[0] as { type: unknown }).type = evil),
    ],
    [
      'path type',
      (w) => ((w.httpRoutes[0]?.spec?.rules?.[0]?.matches?.[0]?.path as { type: unknown }).type = evil),
    ],
    [
      'method',
      (w) => ((w.httpRoutes[0]?.spec?.rules?.[0]?.matches?.[0] as { method: unknown }).method = evil),
    ],
    [
      'header match type',
      (w) =>
        ((w.httpRoutes[0]?.spec?.rules?.[0]?.matches?.[0]?.headers?.[0] as { type: unknown }).type = evil),
    ],
    [
      'redirect statusCode',
      (w) => {
        const filter = w.httpRoutes[0]?.spec?.rules?.[1]?.filters?.[0] as {
          requestRedirect: { statusCode: unknown };
        };
        filter.requestRedirect.statusCode = evil;
      },
    ],
    [
      'backendRef weight',
      (w) => ((w.httpRoutes[0]?.spec?.rules?.[0]?.backendRefs?.[0] as { weight: unknown }).weight = evil),
    ],
    [
      'certificateRef group',
      (w) => {
        const listener = w.gateways.at(-1)?.spec?.listeners?.[1];
        if (listener?.tls?.certificateRefs?.[0] !== undefined)
          (listener.tls.certificateRefs[0] as { group: unknown }).group = evil;
      },
    ],
    [
      'parentRef namespace',
      (w) => ((w.httpRoutes[0]?.spec?.parentRefs?.[0] as { namespace: unknown }).namespace = evil),
    ],
    [
      'parentRef sectionName',
      (w) => ((w.httpRoutes[0]?.spec?.parentRefs?.[0] as { sectionName: unknown }).sectionName = evil),
    ],
    ['a null Gateway', (w) => w.gateways.push(null as never)],
    ['a null HTTPRoute', (w) => w.httpRoutes.push(null as never)],
    ['a null GatewayClass', (w) => w.gatewayClasses.push(null as never)],
    ['a null ReferenceGrant', (w) => w.referenceGrants.push(null as never)],
    ['a null Namespace', (w) => w.namespaces.push(null as never)],
  ];
  for (const [name, mutate] of cases) {
    const w = world();
    mutate(w);
    t.equal(survives(w), null, name);
  }
});
