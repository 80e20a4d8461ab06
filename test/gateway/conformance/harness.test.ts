// The conformance harness checked on its own, without the Gateway API: the echo answers as
// echo-basic does, the response and status checks accept and refuse what the suite's do, and a
// harness started with an Ingress serves the base backends over HTTP and HTTPS, follows a change
// through the swap it awaits, and sees a status write through its watch.
import { request } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import t from 'tap';
import { conformanceEcho, type EchoedRequest } from '../../support/conformance-echo.ts';
import type { KubeObject } from '../../support/fake-apiserver.ts';
import { listen, send } from '../../support/http.ts';
import {
  CONTROLLER_NAME,
  GATEWAY_ADDRESS,
  GATEWAY_CLASS_NAME,
  INFRA_NAMESPACE,
  readManifests,
  startConformance,
} from './harness.ts';
import {
  type CapturedResponse,
  compareRoundTrip,
  type ExpectedResponse,
  expectEventually,
  goVerifyHostname,
  SwapCounter,
  weightedDistributionProblems,
} from './roundtrip.ts';
import { conditionsMatch, listenersMatch, parentsMatch, staleConditions } from './status.ts';

t.setTimeout(90_000);

t.test("the vendored manifests get the suite's placeholders filled in", async (t) => {
  const [gatewayClass] = readManifests('gatewayclass-observed-generation-bump.yaml');
  t.equal((gatewayClass?.spec as { controllerName?: string } | undefined)?.controllerName, CONTROLLER_NAME);
  const gateways = readManifests('base.yaml').filter((o) => o.kind === 'Gateway');
  t.equal(gateways.length, 4, 'the four shared Gateways');
  t.same(
    new Set(gateways.map((o) => (o.spec as { gatewayClassName?: string }).gatewayClassName)),
    new Set([GATEWAY_CLASS_NAME]),
  );
});

t.test('the echo answers as echo-basic does', async (t) => {
  const server = conformanceEcho({ namespace: 'ns-a', backend: 'infra-backend-v1' });
  const port = await listen(server);
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const reply = await new Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }>((resolve, reject) => {
    const req = request(
      {
        port,
        host: '127.0.0.1',
        path: '/some/path?x=1',
        // two lines of one header: Go's http.Header keeps both values
        headers: [
          ['Host', 'example.com:8080'],
          ['x-header-add', 'one'],
          ['X-HEADER-ADD', 'two'],
          ['x-echo-set-header', 'X-From-Echo:a, X-From-Echo:b,Other:c'],
        ].flat(),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
  t.equal(reply.status, 200);
  t.equal(reply.headers['content-type'], 'application/json', 'exactly the type the suite parses');
  t.equal(reply.headers['x-from-echo'], 'a,b', 'X-Echo-Set-Header: a repeated name joined with a comma');
  t.equal(reply.headers.other, 'c');
  const echoed = JSON.parse(reply.body) as EchoedRequest;
  t.equal(echoed.path, '/some/path?x=1', 'the request target with its query');
  t.equal(echoed.host, 'example.com:8080', 'Host as received, port included');
  t.equal(echoed.method, 'GET');
  t.equal(echoed.proto, 'HTTP/1.1');
  t.equal(echoed.namespace, 'ns-a');
  t.equal(echoed.httpPort, String(port));
  t.match(echoed.pod, /^infra-backend-v1-[0-9a-f]{10}-[0-9a-f]{6}$/, 'a pod name of the Deployment');
  t.same(echoed.headers['X-Header-Add'], ['one', 'two'], 'canonical name, one entry per line');
  t.notOk('Host' in echoed.headers || 'host' in echoed.headers, 'no Host among the headers');
  t.same(Object.keys(echoed).sort(), [
    'headers',
    'host',
    'httpPort',
    'ingress',
    'method',
    'namespace',
    'path',
    'pod',
    'proto',
    'service',
  ]);
});

const echoed = (over: Partial<EchoedRequest> = {}): CapturedResponse => ({
  status: 200,
  headers: { 'content-type': ['application/json'] },
  body: '',
  echoed: {
    path: '/',
    host: 'example.com',
    method: 'GET',
    proto: 'HTTP/1.1',
    headers: {},
    httpPort: '3000',
    namespace: 'infra',
    ingress: '',
    service: '',
    pod: 'infra-backend-v1-abc-def',
    ...over,
  },
});

t.test('compareRoundTrip accepts and refuses as the suite does', async (t) => {
  const base: ExpectedResponse = { request: { path: '/' }, backend: 'infra-backend-v1', namespace: 'infra' };
  const cases: Array<[string, ExpectedResponse, CapturedResponse, RegExp | undefined]> = [
    ['the expected backend', base, echoed(), undefined],
    [
      'another backend',
      base,
      echoed({ pod: 'infra-backend-v2-abc-def' }),
      /pod name to start with infra-backend-v1/,
    ],
    ['another namespace', base, echoed({ namespace: 'web' }), /namespace to be infra/],
    ['another path', { ...base, request: { path: '/a' } }, echoed(), /path to be \/a, got \//],
    ['a 404 for a 200', base, { status: 404, headers: {}, body: '' }, /one of 200, got 404/],
    [
      'a 404 expected: the body is not read',
      { ...base, response: { statusCodes: [404] } },
      { status: 404, headers: {}, body: 'x' },
      undefined,
    ],
    [
      'a 504 when a timeout is expected',
      { ...base, response: { statusCodes: [408] } },
      { status: 504, headers: {}, body: '' },
      undefined,
    ],
    ['no echo JSON in a 200', base, { status: 200, headers: {}, body: '<html>' }, /no echoed request/],
    [
      'request headers are expected by default',
      { ...base, request: { path: '/', headers: { Version: 'one' } } },
      echoed({ headers: { Version: ['one'] } }),
      undefined,
    ],
    [
      'a header missing at the backend',
      { ...base, request: { path: '/', headers: { Version: 'one' } } },
      echoed(),
      /Version header to be set/,
    ],
    [
      'values of several lines joined with a comma',
      { ...base, expectedRequest: { path: '/', headers: { 'x-header-add': 'a,b' } } },
      echoed({ headers: { 'X-Header-Add': ['a', 'b'] } }),
      undefined,
    ],
    [
      'an absent header that is there',
      { ...base, expectedRequest: { path: '/', absentHeaders: ['X-Header-Remove'] } },
      echoed({ headers: { 'X-Header-Remove': ['v'] } }),
      /X-Header-Remove header to not be set/,
    ],
    [
      'an expectedRequest without a path expects the empty path',
      { ...base, expectedRequest: {} },
      echoed(),
      /path to be , got \//,
    ],
    [
      'a redirect to the expected host, the port left out',
      {
        request: { path: '/r', host: 'a.com' },
        response: { statusCodes: [302] },
        redirectRequest: { host: 'foo.wildcard.org' },
      },
      { status: 302, headers: { location: ['http://foo.wildcard.org/r'] }, body: '' },
      undefined,
    ],
    [
      'a redirect with port 80 written',
      {
        request: { path: '/r', host: 'a.com' },
        response: { statusCodes: [302] },
        redirectRequest: { host: 'foo.wildcard.org' },
      },
      { status: 302, headers: { location: ['http://foo.wildcard.org:80/r'] }, body: '' },
      undefined,
    ],
    [
      'a redirect to a port that is not the listener port',
      {
        request: { path: '/r', host: 'a.com' },
        response: { statusCodes: [302] },
        redirectRequest: { host: 'foo.wildcard.org' },
      },
      { status: 302, headers: { location: ['http://foo.wildcard.org:8080/r'] }, body: '' },
      /redirected port/,
    ],
    [
      'a redirect to another path',
      {
        request: { path: '/r', host: 'a.com' },
        response: { statusCodes: [301] },
        redirectRequest: { host: 'foo.wildcard.org' },
      },
      { status: 301, headers: { location: ['http://foo.wildcard.org/other'] }, body: '' },
      /redirected path to be "\/r"/,
    ],
    [
      'a redirect with the wrong status',
      {
        request: { path: '/r', host: 'a.com' },
        response: { statusCodes: [301] },
        redirectRequest: { host: 'foo.wildcard.org' },
      },
      { status: 302, headers: { location: ['http://foo.wildcard.org/r'] }, body: '' },
      /one of 301, got 302/,
    ],
  ];
  for (const [name, expected, captured, problem] of cases) {
    const got = compareRoundTrip(expected, captured);
    if (problem === undefined) t.equal(got, undefined, name);
    else t.match(got, problem, name);
  }
});

t.test("the HTTPS client accepts the names Go's client accepts", async (t) => {
  const cert = { subjectaltname: 'DNS:*, DNS:*.org, DNS:*.wildcard.org' } as PeerCertificate;
  const cases: Array<[string, boolean]> = [
    ['example.org', true],
    ['second-example.org', true],
    ['fourth-example.wildcard.org', true],
    ['a.b.wildcard.org', false],
    ['org', true], // `*` is one whole label, as in Go
    ['a.example.org', false],
    ['example.com', false],
  ];
  for (const [host, valid] of cases) t.equal(goVerifyHostname(host, cert) === undefined, valid, host);
});

t.test('the weight check counts shares as the suite counts them', async (t) => {
  const weights = { 'infra-backend-v1': 0.7, 'infra-backend-v2': 0.3, 'infra-backend-v3': 0 };
  const cycling = (pods: string[]) => {
    let i = 0;
    return async () => pods[i++ % pods.length] as string;
  };
  const seventyThirty = [...Array(7).fill('infra-backend-v1-a-b'), ...Array(3).fill('infra-backend-v2-c-d')];
  t.same(await weightedDistributionProblems(cycling(seventyThirty), weights), [], '70/30 exactly');
  // one in a hundred to the weight-0 backend: every share within tolerance, one backend too many
  const oneStray = [
    ...Array(69).fill('infra-backend-v1-a-b'),
    ...Array(30).fill('infra-backend-v2-c-d'),
    'infra-backend-v3-e-f',
  ];
  t.same(
    await weightedDistributionProblems(cycling(oneStray), weights),
    ['expected 2 backends to receive traffic, but got 3'],
    'a weight-0 backend that answers at all',
  );
  t.match(
    await weightedDistributionProblems(cycling(['infra-backend-v1-a-b', 'infra-backend-v2-c-d']), weights),
    [/"infra-backend-v1" weighted traffic of 0.5/, /"infra-backend-v2" weighted traffic of 0.5/],
    'half and half is off by 20 points',
  );
  await t.rejects(weightedDistributionProblems(cycling(['web-backend-a-b']), weights), /unexpected pod/);
});

t.test('the status checks match as the suite matches', async (t) => {
  const accepted = { type: 'Accepted', status: 'True', reason: 'Accepted', observedGeneration: 2 };
  const programmed = { type: 'Programmed', status: 'True', reason: 'Programmed', observedGeneration: 2 };
  t.same(
    conditionsMatch([{ type: 'Accepted', status: 'True' }], [accepted, programmed]),
    [],
    'a subset, any reason',
  );
  t.not(
    conditionsMatch([{ type: 'Accepted', status: 'True', reason: 'ListenersNotValid' }], [accepted]).length,
    0,
    'the reason when given',
  );
  t.not(conditionsMatch([{ type: 'Accepted', status: 'False' }], [accepted]).length, 0, 'the status');
  const gw: KubeObject = { metadata: { name: 'g', generation: 2 } };
  t.same(staleConditions(gw, [accepted, programmed]), [], 'the latest generation');
  t.match(staleConditions({ metadata: { generation: 3 } }, [accepted]), [/stale: Accepted \(generation 2\)/]);

  const listener = {
    name: 'http',
    supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
    attachedRoutes: 1,
    conditions: [accepted],
  };
  const want = {
    name: 'http',
    supportedKinds: [{ kind: 'HTTPRoute' }],
    attachedRoutes: 1,
    conditions: [{ type: 'Accepted', status: 'True' }],
  };
  t.same(listenersMatch([want], [listener]), [], 'a nil group is the Gateway API group');
  t.match(
    listenersMatch([want], [listener, { ...listener, name: 'stale' }]),
    [/expected 1 listener statuses, got 2/],
    'exactly as many listeners',
  );
  t.match(listenersMatch([{ ...want, attachedRoutes: 2 }], [listener]), [/attachedRoutes 2, got 1/]);
  t.match(
    listenersMatch([{ ...want, supportedKinds: [] }], [listener]),
    [/expected no supportedKinds/],
    'an empty list means none',
  );

  const parent = {
    parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'g', sectionName: 'http' },
    controllerName: 'me',
    conditions: [accepted],
  };
  const expected = {
    parentRef: {
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
      name: 'g',
      namespace: 'infra',
      sectionName: '',
    },
    controllerName: 'me',
    conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
  };
  t.same(
    parentsMatch([expected], [parent], false),
    [],
    'sectionName is not compared; a nil namespace in the same namespace',
  );
  t.not(
    parentsMatch([expected], [parent], true).length,
    0,
    'the namespace is required from another namespace',
  );
  t.not(
    parentsMatch([expected], [{ ...parent, controllerName: 'other' }], false).length,
    0,
    "another controller's entry",
  );
  const { group: _group, ...noGroup } = parent.parentRef;
  t.not(
    parentsMatch([expected], [{ ...parent, parentRef: noGroup }], false).length,
    0,
    'the group must be written',
  );
});

t.test('the harness with an Ingress: base backends, HTTPS, swaps and status', async (t) => {
  const h = await startConformance(t, { gatewayApi: false });
  const ingress = (backend: string): KubeObject => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    // HTTP and HTTPS both answer, as a Gateway's two listeners would
    metadata: {
      name: 'site',
      namespace: INFRA_NAMESPACE,
      annotations: { 'nginx.ingress.kubernetes.io/ssl-redirect': 'false' },
    },
    spec: {
      ingressClassName: 'ingress-ts',
      tls: [{ hosts: ['foo.wildcard.org'], secretName: 'tls-validity-checks-certificate' }],
      rules: [
        {
          host: 'foo.wildcard.org',
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: backend, port: { number: 8080 } } },
              },
            ],
          },
        },
      ],
    },
  });
  h.apply([
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'ingress-ts' },
      spec: { controller: 'ingress-ts.dev/controller' },
    },
    ingress('infra-backend-v1'),
  ]);
  const expected: ExpectedResponse = {
    // *.wildcard.org: ingress-ts (OpenSSL) does not let the certificate's `*.org` cover example.org
    request: { host: 'foo.wildcard.org', path: '/get?x=1', headers: { Version: 'one' } },
    backend: 'infra-backend-v1',
    namespace: INFRA_NAMESPACE,
  };
  await h.expectResponse(t, expected);
  const model = (await (await fetch(`http://127.0.0.1:${h.controller.healthz.port}/debug/model`)).json()) as {
    backends: Array<{ service: string; endpoints: string[] }>;
  };
  t.same(
    model.backends.find((b) => b.service === `${INFRA_NAMESPACE}/infra-backend-v1:8080`)?.endpoints,
    [`127.0.0.1:${h.echoPort(INFRA_NAMESPACE, 'infra-backend-v1')}`],
    'the echo is the one endpoint: no Service port targets a port nobody listens on',
  );
  await h.expectResponse(
    t,
    { ...expected, request: { ...expected.request, https: true } },
    'over HTTPS, trusting the suite certificate',
  );

  await h.waitFor(
    'Ingress',
    { namespace: INFRA_NAMESPACE, name: 'site' },
    ([site]) => {
      const lb = JSON.stringify(
        (site?.status as { loadBalancer?: unknown } | undefined)?.loadBalancer ?? null,
      );
      return lb.includes(GATEWAY_ADDRESS) ? [] : [`loadBalancer ${lb}`];
    },
    'the Ingress status carries the published address',
  );
  t.pass('a status write seen through the watch');

  // a change: the expectation converges once the swap that serves it has happened
  h.apply([ingress('infra-backend-v2')]);
  await h.expectResponse(t, { ...expected, backend: 'infra-backend-v2' }, 'the change is followed');

  const swaps = new SwapCounter();
  t.teardown(() => swaps.close());
  await t.rejects(
    expectEventually(h.request, swaps, { ...expected, backend: 'app-backend-v1' }, 0),
    /pod name to start with app-backend-v1.*no swap within 0 ms/,
    'a wrong answer with no swap coming fails, saying why',
  );
  t.equal((await send(h.controller.http.port, 'unknown.test', '/')).status, 404, 'an unknown host is 404');
});
