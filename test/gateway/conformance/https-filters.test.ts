// GATEWAY-HTTP core conformance, the HTTPS listener and the core filters (gateway-api v1.6.1
// conformance/tests/): routes on the base Gateway's four HTTPS listeners reached with SNI and the
// suite's certificate as the only trusted root, request header edits, and host redirects with
// their status. One ingress-ts per upstream test.
import t from 'tap';
import { CONTROLLER_NAME, expectAll, INFRA_NAMESPACE, startConformance, testCaseName } from './harness.ts';
import type { ExpectedResponse } from './roundtrip.ts';
import { gatewayAndHTTPRoutesMustBeAccepted, httpRouteMustHaveResolvedRefsConditionsTrue } from './status.ts';

t.setTimeout(120_000);

const ns = INFRA_NAMESPACE;
const infra = (name: string) => ({ namespace: ns, name });

t.test('HTTPRouteHTTPSListener', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-https-listener.yaml'] });
  const gw = infra('same-namespace-with-https-listener');
  const routes = [infra('httproute-https-test'), infra('httproute-https-test-no-hostname')];
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, routes);
  for (const route of routes) await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
  const cases: Array<[host: string, status: number, backend?: string]> = [
    ['example.org', 200, 'infra-backend-v1'],
    ['unknown-example.org', 404],
    ['second-example.org', 200, 'infra-backend-v2'],
  ];
  for (const [i, [host, status, backend]] of cases.entries()) {
    // MakeTLSRequestAndExpectEventuallyConsistentResponse: SNI is the host, the root is the
    // Secret's certificate
    const expected: ExpectedResponse = {
      request: { host, path: '/', https: true, sni: host },
      response: { statusCodes: [status] },
      backend,
      namespace: ns,
    };
    const name = testCaseName(expected, i);
    await t.test(name, async (t) => {
      await h.expectResponse(t, expected, name);
    });
  }
});

t.test('HTTPRouteRequestHeaderModifier', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-request-header-modifier.yaml'] });
  const route = infra('request-header-modifier');
  const gw = infra('same-namespace');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
  const v1 = { backend: 'infra-backend-v1', namespace: ns };
  await expectAll(t, h, [
    {
      request: { path: '/set', headers: { 'Some-Other-Header': 'val' } },
      expectedRequest: {
        path: '/set',
        headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      },
      ...v1,
    },
    {
      request: { path: '/set', headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' } },
      expectedRequest: {
        path: '/set',
        headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      },
      ...v1,
    },
    {
      request: { path: '/add', headers: { 'Some-Other-Header': 'val' } },
      expectedRequest: {
        path: '/add',
        headers: { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' },
      },
      ...v1,
    },
    {
      request: { path: '/add', headers: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value' } },
      expectedRequest: {
        path: '/add',
        headers: { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' },
      },
      ...v1,
    },
    {
      request: { path: '/remove', headers: { 'X-Header-Remove': 'val' } },
      expectedRequest: { path: '/remove', absentHeaders: ['X-Header-Remove'] },
      ...v1,
    },
    {
      request: {
        path: '/multiple',
        headers: {
          'X-Header-Set-2': 'set-val-2',
          'X-Header-Add-2': 'add-val-2',
          'X-Header-Remove-2': 'remove-val-2',
          'Another-Header': 'another-header-val',
        },
      },
      expectedRequest: {
        path: '/multiple',
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
      ...v1,
    },
    {
      request: {
        path: '/case-insensitivity',
        headers: {
          'x-header-set': 'original-val-set',
          'x-header-add': 'original-val-add',
          'x-header-remove': 'original-val-remove',
          'Another-Header': 'another-header-val',
        },
      },
      expectedRequest: {
        path: '/case-insensitivity',
        headers: {
          'X-Header-Set': 'header-set',
          'X-Header-Add': 'original-val-add,header-add',
          'Another-Header': 'another-header-val',
        },
        absentHeaders: ['x-header-remove', 'X-Header-Remove'],
      },
      ...v1,
    },
  ]);
});

t.test('HTTPRouteRedirectHostAndStatus', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-redirect-host-and-status.yaml'] });
  const route = infra('redirect-host-and-status');
  const gw = infra('same-namespace');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
  // the Location must name the listener's port (80, so none), not the test port ingress-ts listens on
  await expectAll(t, h, [
    {
      request: { path: '/hostname-redirect' },
      response: { statusCodes: [302] },
      redirectRequest: { host: 'example.org' },
      namespace: ns,
    },
    {
      request: { path: '/host-and-status' },
      response: { statusCodes: [301] },
      redirectRequest: { host: 'example.org' },
      namespace: ns,
    },
  ]);
});
