// The security review's takeover repros, built from objects through buildModel (resolveGateways and
// addGatewayRoutes) and decided by the compiled runtime: a newer HTTPRoute on a shared listener
// without a hostname takes neither the certificate nor the paths of an older Ingress's host, and a
// Gateway's certificate never makes an Ingress host redirect to HTTPS.
import { IncomingMessage } from 'node:http';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { type Decision, decide } from '../../lib/dataplane/pipeline/decide.ts';
import { compileRuntime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import { type BuildResult, buildModel, type HTTPRouteMatch } from '../../lib/model/index.ts';
import {
  baseWorld,
  gateway,
  http,
  httpRoute,
  https,
  INFRA,
  snapshotOfWorld,
  tlsSecret,
} from '../model/gateway/fixtures.ts';
import { ingress, path, rule, service, slice, snapshotOf } from '../model/helpers.ts';

const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: { random: () => 0.5, now: () => 0 },
  ewmaStore: createEwmaStore(),
};

interface World {
  /** the victim Ingress (t=50) on `host` with `/` to site:80; with tls when set */
  tls: boolean;
  /** the attacker's HTTPRoute (t=100) in namespace attacker, or none */
  route: { sectionName?: string; matches: HTTPRouteMatch[] } | null;
  /** a hostname on the shared Gateway's HTTPS listener (default none) */
  listenerHostname?: string;
  /** the shared Gateway's creation second (default 0) */
  gatewayCreated?: number;
}

const HOST = 'www.example.com';

function buildWorld(world: World): BuildResult {
  const w = baseWorld();
  w.gateways.push(
    gateway(
      'shared',
      [
        http('http', { from: 'All' }),
        https('https', {
          from: 'All',
          ...(world.listenerHostname === undefined ? {} : { hostname: world.listenerHostname }),
        }),
      ],
      { created: world.gatewayCreated ?? 0 },
    ),
  );
  w.services.push({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'evil', namespace: 'attacker' },
    spec: { ports: [{ port: 80 }] },
  });
  if (world.route !== null) {
    w.httpRoutes.push(
      httpRoute(
        'steal',
        [
          {
            name: 'shared',
            namespace: INFRA,
            ...(world.route.sectionName ? { sectionName: world.route.sectionName } : {}),
          },
        ],
        [{ matches: world.route.matches, backendRefs: [{ name: 'evil', port: 80 }] }],
        { namespace: 'attacker', created: 100, hostnames: [HOST] },
      ),
    );
  }
  const snapshot = snapshotOfWorld(w);
  const victim = snapshotOf({
    ingresses: [
      ingress('site', {
        namespace: 'victim',
        created: 50,
        rules: [rule(HOST, path('/', 'site:80'))],
        ...(world.tls ? { tls: [{ hosts: [HOST], secretName: 'victim-tls' }] } : {}),
      }),
    ],
    services: [service('site', [{ port: 80, targetPort: 8080 }], 'victim')],
    slices: [slice('site', [{ addresses: ['10.0.0.9'] }], [{ port: 8080 }], { namespace: 'victim' })],
  });
  return buildModel({
    ...snapshot,
    ingresses: victim.ingresses,
    ingressClasses: victim.ingressClasses,
    services: [...snapshot.services, ...victim.services],
    endpointSlices: victim.endpointSlices,
    secrets: [...snapshot.secrets, tlsSecret('victim-tls', 'victim', 'wildcard-example')],
  });
}

function request(result: BuildResult, https: boolean, url = '/'): string {
  const runtime = compileRuntime(result.model, null, deps);
  const req = new IncomingMessage({ remoteAddress: '10.1.2.3' } as unknown as IncomingMessage['socket']);
  req.method = 'GET';
  req.url = url;
  req.rawHeaders = ['Host', HOST];
  req.headers = { host: HOST };
  const decision: Decision = decide(runtime, { https, port: https ? 443 : 80, random: () => 0.5 }, req);
  if (decision.kind === 'redirect') return `redirect ${decision.code}`;
  const route = decision.match?.value.route;
  return `${decision.kind} ${route == null ? '-' : `${route.namespace}/${route.ingress}`}`;
}

const tlsOf = (result: BuildResult): string => {
  const server = result.model.servers.find((s) => s.hostname === HOST);
  if (server?.tls == null) return 'none';
  return `${server.tls.certificate}@${server.tls.ingress.kind ?? 'Ingress'}${server.tls.gatewayOnly ? ' gateway-only' : ''}`;
};

const codes = (result: BuildResult): string[] =>
  result.diagnostics
    .filter((d) => d.code.startsWith('HTTPROUTE_') || d.code === 'TLS_CONFLICT')
    .map((d) => `${d.code} ${d.namespace}/${d.name}`);

t.test(
  'repro 1: a newer HTTPRoute with GET / takes neither the tls nor the / of an older Ingress',
  async (t) => {
    const result = buildWorld({
      tls: true,
      route: { matches: [{ path: { type: 'PathPrefix', value: '/' }, method: 'GET' }] },
    });
    t.equal(tlsOf(result), 'victim/victim-tls@Ingress');
    t.equal(request(result, true), 'proxy victim/site', 'HTTPS GET / stays the victim');
    t.equal(request(result, false), 'redirect 308', "plain HTTP still follows the victim's own tls");
    t.strictSame(codes(result), ['HTTPROUTE_PATH_TAKEN attacker/steal']);
  },
);

t.test('repro 2: a newer HTTPRoute on an unused path never turns a plain Ingress host to TLS', async (t) => {
  const result = buildWorld({
    tls: false,
    route: { sectionName: 'https', matches: [{ path: { type: 'Exact', value: '/nothing-to-see' } }] },
  });
  t.equal(tlsOf(result), 'none');
  t.equal(request(result, false), 'proxy victim/site', 'HTTP GET / is proxied, no redirect');
  // its own path still goes to its route (no endpoints: 503)
  t.equal(request(result, true, '/nothing-to-see'), 'error attacker/steal');
  t.strictSame(codes(result), []);
});

t.test(
  "a newer Gateway's listener naming a plain Ingress host: its certificate, but no ssl-redirect",
  async (t) => {
    const result = buildWorld({ tls: false, route: null, listenerHostname: HOST, gatewayCreated: 200 });
    t.equal(tlsOf(result), `${INFRA}/tls-validity-checks-certificate@Gateway gateway-only`);
    t.equal(request(result, false), 'proxy victim/site', 'HTTP GET / is proxied, no redirect');
  },
);

t.test(
  "an older Gateway's listener naming the host wins over a newer Ingress's tls; redirects stay",
  async (t) => {
    const result = buildWorld({ tls: true, route: null, listenerHostname: HOST, gatewayCreated: 0 });
    t.equal(tlsOf(result), `${INFRA}/tls-validity-checks-certificate@Gateway`);
    t.equal(request(result, false), 'redirect 308');
    t.strictSame(codes(result), ['TLS_CONFLICT victim/site']);
  },
);

t.test("a newer Gateway's listener naming the host loses to an older Ingress's tls", async (t) => {
  const result = buildWorld({ tls: true, route: null, listenerHostname: HOST, gatewayCreated: 200 });
  t.equal(tlsOf(result), 'victim/victim-tls@Ingress');
});
