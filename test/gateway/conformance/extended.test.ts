// GATEWAY-HTTP extended conformance (gateway-api v1.6.1 conformance/tests/) for the features the
// data plane serves: method and query parameter matches. One ingress-ts per upstream test; each
// request of the test's table is a subtest named as the suite names it.
import t, { type Test } from 'tap';
import {
  CONTROLLER_NAME,
  type Conformance,
  expectAll,
  INFRA_NAMESPACE,
  startConformance,
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
