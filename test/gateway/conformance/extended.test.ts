// GATEWAY-HTTP extended conformance (gateway-api v1.6.1 conformance/tests/) for the features the
// data plane serves: method and query parameter matches, response header edits, host and path
// rewrites, scheme, port and path redirects, request mirrors. One ingress-ts per upstream test; each
// request of the test's table is a subtest named as the suite names it.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import {
  CONTROLLER_NAME,
  type Conformance,
  expectAll,
  INFRA_NAMESPACE,
  startConformance,
  testCaseName,
} from './harness.ts';
import type { ExpectedResponse, RoundTripRequest } from './roundtrip.ts';
import {
  gatewayAndHTTPRoutesMustBeAccepted,
  httpRouteMustHaveResolvedRefsConditionsTrue,
  type NamespacedName,
} from './status.ts';

t.setTimeout(180_000);

const ns = INFRA_NAMESPACE;
const infra = (name: string) => ({ namespace: ns, name });
const SAME_NAMESPACE = infra('same-namespace');
const to = (backend: string, request: RoundTripRequest): ExpectedResponse => ({
  request,
  backend,
  namespace: ns,
});
const notFound = (request: RoundTripRequest): ExpectedResponse => ({
  request,
  response: { statusCodes: [404] },
});
const v1 = (request: RoundTripRequest) => to('infra-backend-v1', request);
const v2 = (request: RoundTripRequest) => to('infra-backend-v2', request);
const v3 = (request: RoundTripRequest) => to('infra-backend-v3', request);

/** The common head of these tests: the route accepted by the Gateway, its refs resolved. */
async function accepted(t: Test, h: Conformance, route: NamespacedName, gw = SAME_NAMESPACE): Promise<void> {
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
}

t.test('HTTPRouteMethodMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-method-matching.yaml'] });
  await accepted(t, h, infra('method-matching'));
  await expectAll(t, h, [
    v1({ method: 'POST', path: '/' }),
    v2({ method: 'GET', path: '/' }),
    notFound({ method: 'HEAD', path: '/' }),
    // with the core matches
    v1({ path: '/path1', method: 'GET' }),
    v2({ headers: { version: 'one' }, path: '/', method: 'PUT' }),
    v3({ headers: { version: 'two' }, path: '/path2', method: 'POST' }),
    // ORed matches: one is enough
    v1({ path: '/path3', method: 'PATCH' }),
    v1({ headers: { version: 'three' }, path: '/path4', method: 'DELETE' }),
    // ANDed match types: a subset is not enough
    notFound({ path: '/', method: 'PUT' }),
    notFound({ path: '/path4', method: 'DELETE' }),
    // precedence among matching rules
    v1({ path: '/path5', method: 'PATCH' }),
    v2({ headers: { version: 'four' }, path: '/', method: 'PATCH' }),
  ]);
});

t.test('HTTPRouteQueryParamMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-query-param-matching.yaml'] });
  await accepted(t, h, infra('query-param-matching'));
  await expectAll(t, h, [
    v1({ path: '/?animal=whale' }),
    v2({ path: '/?animal=dolphin' }),
    v3({ path: '/?animal=dolphin&color=blue' }),
    v3({ path: '/?ANIMAL=Whale' }),
    v1({ path: '/?animal=whale&otherparam=irrelevant' }),
    v2({ path: '/?animal=dolphin&color=yellow' }),
    notFound({ path: '/?color=blue' }),
    notFound({ path: '/?animal=dog' }),
    notFound({ path: '/?animal=whaledolphin' }),
    notFound({ path: '/' }),
    // with the core matches
    v1({ path: '/path1?animal=whale' }),
    v2({ headers: { version: 'one' }, path: '/?animal=whale' }),
    v3({ headers: { version: 'two' }, path: '/path2?animal=whale' }),
    // ORed matches: one is enough
    v1({ path: '/path3?animal=shark' }),
    v1({ headers: { version: 'three' }, path: '/path4?animal=kraken' }),
    // ANDed match types: a subset is not enough
    notFound({ path: '/?animal=shark' }),
    notFound({ path: '/path4?animal=kraken' }),
    // precedence among matching rules
    v1({ path: '/path5?animal=hydra' }),
    v3({ headers: { version: 'four' }, path: '/?animal=hydra' }),
  ]);
});

t.test('HTTPRouteResponseHeaderModifier', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-response-header-modifier.yaml'] });
  await accepted(t, h, infra('response-header-modifier'));
  const answering = (
    path: string,
    backendSetResponseHeaders: Record<string, string>,
    response: { headers?: Record<string, string>; absentHeaders?: string[] },
  ): ExpectedResponse => ({
    ...v1({ path, backendSetResponseHeaders }),
    expectedRequest: { path },
    response,
  });
  await expectAll(t, h, [
    answering(
      '/set',
      { 'Some-Other-Header': 'val' },
      { headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' } },
    ),
    answering(
      '/set',
      { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' },
      { headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' } },
    ),
    answering(
      '/add',
      { 'Some-Other-Header': 'val' },
      { headers: { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' } },
    ),
    answering(
      '/add',
      { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value' },
      { headers: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' } },
    ),
    answering('/remove', { 'X-Header-Remove': 'val' }, { absentHeaders: ['X-Header-Remove'] }),
    answering(
      '/multiple',
      {
        'X-Header-Set-2': 'set-val-2',
        'X-Header-Add-2': 'add-val-2',
        'X-Header-Remove-2': 'remove-val-2',
        'Another-Header': 'another-header-val',
        'X-Header-Remove-1': 'val',
      },
      {
        headers: {
          'X-Header-Set-1': 'header-set-1',
          'X-Header-Set-2': 'header-set-2',
          'X-Header-Add-1': 'header-add-1',
          'X-Header-Add-2': 'add-val-2,header-add-2',
          'X-Header-Add-3': 'header-add-3',
          'Another-Header': 'another-header-val',
        },
        absentHeaders: ['X-Header-Remove-1', 'X-Header-Remove-2'],
      },
    ),
    answering(
      '/case-insensitivity',
      {
        'x-header-set': 'original-val-set',
        'x-header-add': 'original-val-add',
        'x-header-remove': 'original-val-remove',
        'Another-Header': 'another-header-val',
      },
      {
        headers: {
          'X-Header-Set': 'header-set',
          'X-Header-Add': 'original-val-add,header-add',
          'X-Lowercase-Add': 'lowercase-add',
          'X-Mixedcase-Add-1': 'mixedcase-add-1',
          'X-Mixedcase-Add-2': 'mixedcase-add-2',
          'X-Uppercase-Add': 'uppercase-add',
          'Another-Header': 'another-header-val',
        },
        absentHeaders: ['x-header-remove', 'X-Header-Remove'],
      },
    ),
    {
      ...v1({
        path: '/response-and-request-header-modifiers',
        headers: {
          'X-Header-Remove': 'remove-val',
          'X-Header-Add-Append': 'append-val-1',
          'X-Header-Echo': 'echo',
        },
        backendSetResponseHeaders: {
          'X-Header-Set-2': 'set-val-2',
          'X-Header-Add-2': 'add-val-2',
          'X-Header-Remove-2': 'remove-val-2',
          'Another-Header': 'another-header-val',
          'X-Header-Remove-1': 'remove-val-1',
          'X-Header-Echo': 'echo',
        },
      }),
      expectedRequest: {
        path: '/response-and-request-header-modifiers',
        headers: {
          'X-Header-Add': 'header-val-1',
          'X-Header-Set': 'set-overwrites-values',
          'X-Header-Add-Append': 'append-val-1,header-val-2',
          'X-Header-Echo': 'echo',
        },
        absentHeaders: ['X-Header-Remove'],
      },
      response: {
        headers: {
          'X-Header-Set-1': 'header-set-1',
          'X-Header-Set-2': 'header-set-2',
          'X-Header-Add-1': 'header-add-1',
          'X-Header-Add-2': 'add-val-2,header-add-2',
          'Another-Header': 'another-header-val',
          'X-Header-Echo': 'echo',
        },
        absentHeaders: ['X-Header-Remove-1', 'X-Header-Remove-2'],
      },
    },
  ]);
});

/** Headers edited on the way to the backend, as the rewrite tests combine them with a rewrite. */
const EDITED = {
  'X-Header-Add': 'header-val-1',
  'X-Header-Add-Append': 'append-val-1,header-val-2',
  'X-Header-Set': 'set-overwrites-values',
};

t.test('HTTPRouteRewriteHost', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-rewrite-host.yaml'] });
  await accepted(t, h, infra('rewrite-host'));
  await expectAll(t, h, [
    {
      ...v1({ path: '/one', host: 'rewrite.example' }),
      expectedRequest: { path: '/one', host: 'one.example.org' },
    },
    {
      ...v2({ path: '/two', host: 'rewrite.example' }),
      expectedRequest: { path: '/two', host: 'example.org' },
    },
    {
      ...v2({
        path: '/rewrite-host-and-modify-headers',
        host: 'rewrite.example',
        headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
      }),
      expectedRequest: {
        path: '/rewrite-host-and-modify-headers',
        host: 'test.example.org',
        headers: EDITED,
        absentHeaders: ['X-Header-Remove'],
      },
    },
  ]);
});

t.test('HTTPRouteRewritePath', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-rewrite-path.yaml'] });
  await accepted(t, h, infra('rewrite-path'));
  const editing = {
    'X-Header-Remove': 'remove-val',
    'X-Header-Add-Append': 'append-val-1',
    'X-Header-Set': 'set-val',
  };
  await expectAll(t, h, [
    { ...v1({ path: '/prefix/one/two' }), expectedRequest: { path: '/one/two' } },
    { ...v1({ path: '/strip-prefix/three' }), expectedRequest: { path: '/three' } },
    { ...v1({ path: '/strip-prefix' }), expectedRequest: { path: '/' } },
    { ...v1({ path: '/full/one/two' }), expectedRequest: { path: '/one' } },
    {
      ...v1({ path: '/full/rewrite-path-and-modify-headers/test', headers: editing }),
      expectedRequest: { path: '/test', headers: EDITED, absentHeaders: ['X-Header-Remove'] },
    },
    {
      ...v1({ path: '/prefix/rewrite-path-and-modify-headers/one', headers: editing }),
      expectedRequest: { path: '/prefix/one', headers: EDITED, absentHeaders: ['X-Header-Remove'] },
    },
  ]);
});

/** An unfollowed redirect: its status and what the Location must name (unset parts as sent). */
const redirect = (
  path: string,
  status: number,
  redirectRequest: NonNullable<ExpectedResponse['redirectRequest']>,
): ExpectedResponse => ({
  request: { path },
  response: { statusCodes: [status] },
  redirectRequest,
  namespace: ns,
});

t.test('HTTPRouteRedirectScheme', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-redirect-scheme.yaml'] });
  await accepted(t, h, infra('redirect-scheme'));
  await expectAll(t, h, [
    redirect('/scheme', 302, { scheme: 'https' }),
    redirect('/scheme-and-host', 302, { host: 'example.org', scheme: 'https' }),
    redirect('/scheme-and-status', 301, { scheme: 'https' }),
    redirect('/scheme-and-host-and-status', 302, { scheme: 'https', host: 'example.org' }),
  ]);
});

t.test('HTTPRouteRedirectPort', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-redirect-port.yaml'] });
  await accepted(t, h, infra('redirect-port'));
  await expectAll(t, h, [
    redirect('/port', 302, { port: '8083' }),
    redirect('/port-and-host', 302, { host: 'example.org', port: '8083' }),
    redirect('/port-and-status', 301, { port: '8083' }),
    redirect('/port-and-host-and-status', 302, { port: '8083', host: 'example.org' }),
  ]);
});

t.test('HTTPRouteRedirectPath', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-redirect-path.yaml'] });
  await accepted(t, h, infra('redirect-path'));
  await expectAll(t, h, [
    redirect('/original-prefix/lemon', 302, { path: '/replacement-prefix/lemon' }),
    redirect('/full/path/original', 302, { path: '/full-path-replacement' }),
    redirect('/path-and-host', 302, { host: 'example.org', path: '/replacement-prefix' }),
    redirect('/path-and-status', 301, { path: '/replacement-prefix' }),
    redirect('/full-path-and-host', 302, { host: 'example.org', path: '/replacement-full' }),
    redirect('/full-path-and-status', 301, { path: '/replacement-full' }),
  ]);
});

t.test('HTTPRouteRequestMirror', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-request-mirror.yaml'] });
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [infra('request-mirror')]);
  const cases: ExpectedResponse[] = [
    { ...v1({ path: '/mirror' }), expectedRequest: { path: '/mirror' } },
    {
      ...v1({
        path: '/mirror-and-modify-headers',
        headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
      }),
      expectedRequest: {
        path: '/mirror-and-modify-headers',
        headers: EDITED,
        absentHeaders: ['X-Header-Remove'],
      },
    },
  ];
  for (const [i, tc] of cases.entries()) {
    const name = testCaseName(tc, i);
    await t.test(name, async (t) => {
      // AddRequestIDQueryParam: the mirrored request is told from others by a query parameter
      const target = `${tc.request.path}?gateway-api-conformance-request-id=${randomUUID()}`;
      const expected = {
        ...tc,
        request: { ...tc.request, path: target },
        expectedRequest: { ...tc.expectedRequest, path: target },
      };
      // ExpectMirroredRequest, listening before the request is sent (RequestTimeout: 10s)
      const mirrored = h.echoed(ns, 'infra-backend-v2', target, 10_000);
      await h.expectResponse(t, expected, name);
      t.ok(await mirrored, `the mirrored request for ${target} reached ${ns}/infra-backend-v2`);
    });
  }
});
