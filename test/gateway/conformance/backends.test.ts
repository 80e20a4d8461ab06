// GATEWAY-HTTP core conformance, backends (gateway-api v1.6.1 conformance/tests/): rules without
// backends, backendRefs that cannot be used (missing, unknown kind, another namespace without a
// ReferenceGrant) and the 500 they answer, weights, and ReferenceGrants given and taken away.
// One ingress-ts per upstream test.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import {
  APP_BACKEND_NAMESPACE,
  CONTROLLER_NAME,
  expectAll,
  INFRA_NAMESPACE,
  startConformance,
  WEB_BACKEND_NAMESPACE,
} from './harness.ts';
import {
  compareRoundTrip,
  type ExpectedResponse,
  WEIGHT_ATTEMPTS,
  weightedDistributionProblems,
} from './roundtrip.ts';
import {
  gatewayAndHTTPRoutesMustBeAccepted,
  httpRouteMustHaveCondition,
  httpRouteMustHaveResolvedRefsConditionsTrue,
} from './status.ts';

t.setTimeout(180_000);

const ns = INFRA_NAMESPACE;
const infra = (name: string) => ({ namespace: ns, name });
const SAME_NAMESPACE = infra('same-namespace');
const serverError = (path: string): ExpectedResponse => ({
  request: { method: 'GET', path },
  response: { statusCodes: [500] },
});

t.test('HTTPRouteNoBackendRefs', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-omitted-backendrefs.yaml'] });
  const route = infra('omitted-backendrefs');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, SAME_NAMESPACE);
  await expectAll(t, h, [
    { request: { path: '/forward' }, backend: 'infra-backend-v1', namespace: ns },
    { request: { path: '/omitted-no-forward' }, response: { statusCodes: [500] } },
    { request: { path: '/empty-no-forward' }, response: { statusCodes: [500] } },
  ]);
});

t.test('HTTPRouteInvalidNonExistentBackendRef', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-invalid-nonexistent-backendref.yaml'] });
  const route = infra('invalid-nonexistent-backend-ref');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  t.test(
    'HTTPRoute with only a nonexistent BackendRef has a ResolvedRefs Condition with status False and Reason BackendNotFound',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, SAME_NAMESPACE, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'BackendNotFound',
      });
    },
  );
  t.test('HTTP Request to invalid nonexistent backend receive a 500', async (t) => {
    await h.expectResponse(t, serverError('/'));
  });
});

t.test('HTTPRouteInvalidBackendRefUnknownKind', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-invalid-backendref-unknown-kind.yaml'] });
  const route = infra('invalid-backend-ref-unknown-kind');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  t.test(
    'HTTPRoute with Invalid Kind has a ResolvedRefs Condition with status False and Reason InvalidKind',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, SAME_NAMESPACE, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'InvalidKind',
      });
    },
  );
  t.test('HTTP Request to invalid backend with invalid Kind receives a 500', async (t) => {
    await h.expectResponse(t, serverError('/v2'));
  });
});

t.test('HTTPRouteWeight', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-weight.yaml'] });
  const route = infra('weighted-backends');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, SAME_NAMESPACE);
  t.test('Requests should have a distribution that matches the weight', async (t) => {
    const expected: ExpectedResponse = {
      request: { path: '/' },
      response: { statusCodes: [200] },
      namespace: ns,
    };
    await h.expectResponse(t, expected);
    const weights = { 'infra-backend-v1': 0.7, 'infra-backend-v2': 0.3, 'infra-backend-v3': 0 };
    // AddEntropy: every request differs, so that nothing keyed on the request can pin a backend
    const send = async () => {
      const captured = await h.request({
        path: '/',
        headers: { 'X-Jitter': randomBytes(8).toString('hex') },
      });
      const problem = compareRoundTrip(expected, captured);
      if (problem !== undefined) throw new Error(`response expectation failed for request: ${problem}`);
      return captured.echoed?.pod ?? '';
    };
    const failures: string[] = [];
    for (let attempt = 1; attempt <= WEIGHT_ATTEMPTS; attempt++) {
      const problems = await weightedDistributionProblems(send, weights);
      if (problems.length === 0) break;
      failures.push(`attempt ${attempt}: ${problems.join('; ')}`);
    }
    t.ok(failures.length < WEIGHT_ATTEMPTS, 'the distribution matches the weights', { failures });
  });
});

t.test('HTTPRouteReferenceGrant', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-reference-grant.yaml'] });
  const route = infra('reference-grant');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, SAME_NAMESPACE);
  await t.test('Simple HTTP request should reach web-backend', async (t) => {
    await h.expectResponse(t, {
      request: { method: 'GET', path: '/' },
      response: { statusCodes: [200] },
      backend: 'web-backend',
      namespace: WEB_BACKEND_NAMESPACE,
    });
  });
  h.remove({ kind: 'ReferenceGrant', namespace: WEB_BACKEND_NAMESPACE, name: 'reference-grant' });
  await t.test(
    'Simple HTTP request should return 500 after deleting the relevant reference grant',
    async (t) => {
      await h.expectResponse(t, serverError('/'));
    },
  );
});

t.test('HTTPRouteInvalidReferenceGrant', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-invalid-reference-grant.yaml'] });
  const route = infra('reference-grant');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  t.test(
    'HTTPRoute with BackendRef in another namespace and no ReferenceGrant covering the Service has a ResolvedRefs Condition with status False and Reason RefNotPermitted',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, SAME_NAMESPACE, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      });
    },
  );
  t.test('Simple HTTP request not should reach web-backend', async (t) => {
    await h.expectResponse(t, {
      ...serverError('/'),
      backend: 'web-backend',
      namespace: WEB_BACKEND_NAMESPACE,
    });
  });
});

t.test('HTTPRouteInvalidCrossNamespaceBackendRef', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-invalid-cross-namespace-backend-ref.yaml'] });
  const route = infra('invalid-cross-namespace-backend-ref');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  t.test(
    'HTTPRoute with a cross-namespace BackendRef and no ReferenceGrant has a ResolvedRefs Condition with status False and Reason RefNotPermitted',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, SAME_NAMESPACE, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      });
    },
  );
  t.test('HTTP Request to invalid cross-namespace backend must receive a 500', async (t) => {
    await h.expectResponse(t, serverError('/'));
  });
});

t.test('HTTPRoutePartiallyInvalidViaInvalidReferenceGrant', async (t) => {
  const h = await startConformance(t, {
    manifests: ['httproute-partially-invalid-via-invalid-reference-grant.yaml'],
  });
  const route = infra('invalid-reference-grant');
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, SAME_NAMESPACE, [route]);
  t.test(
    'HTTPRoute with BackendRef in another namespace and no ReferenceGrant covering the Service has a ResolvedRefs Condition with status False and Reason RefNotPermitted',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, SAME_NAMESPACE, {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      });
    },
  );
  t.test('HTTP Request to invalid backend with missing referenceGrant should receive a 500', async (t) => {
    await h.expectResponse(t, serverError('/v2'));
  });
  t.test('HTTP Request to valid sibling backend should succeed', async (t) => {
    await h.expectResponse(t, {
      request: { method: 'GET', path: '/' },
      response: { statusCodes: [200] },
      backend: 'app-backend-v1',
      namespace: APP_BACKEND_NAMESPACE,
    });
  });
});
