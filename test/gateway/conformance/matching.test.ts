// GATEWAY-HTTP core conformance, matching (gateway-api v1.6.1 conformance/tests/): Exact and
// PathPrefix paths, header matches and their precedence within a route and across routes, and the
// hostnames a route gets from the listeners it attaches to. One ingress-ts per upstream test; each
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
  type ExpectedCondition,
  gatewayAndHTTPRoutesMustBeAccepted,
  gatewayStatusMustHaveListeners,
  httpRouteMustHaveParents,
  httpRouteMustHaveResolvedRefsConditionsTrue,
  type NamespacedName,
  namespacesMustBeReady,
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

/** The common head of these tests: the routes accepted by the Gateway, their refs resolved. */
async function accepted(
  t: Test,
  h: Conformance,
  gw: NamespacedName,
  routes: NamespacedName[],
): Promise<void> {
  await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, routes);
  for (const route of routes) await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
}

t.test('HTTPRouteExactPathMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-exact-path-matching.yaml'] });
  await accepted(t, h, SAME_NAMESPACE, [infra('exact-matching')]);
  await expectAll(t, h, [
    v1({ path: '/one' }),
    v2({ path: '/two' }),
    notFound({ path: '/' }),
    notFound({ path: '/one/example' }),
    notFound({ path: '/two/' }),
    notFound({ path: '/Two' }),
  ]);
});

t.test('HTTPRouteMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-matching.yaml'] });
  await accepted(t, h, SAME_NAMESPACE, [infra('matching')]);
  await expectAll(t, h, [
    v1({ path: '/' }),
    v1({ path: '/example' }),
    v1({ path: '/', headers: { Version: 'one' } }),
    v2({ path: '/v2' }),
    v2({ path: '/v2/example' }),
    v2({ path: '/', headers: { Version: 'two' } }),
    v2({ path: '/v2/' }),
    v1({ path: '/v2example' }),
    v1({ path: '/foo/v2/example' }),
  ]);
});

t.test('HTTPRouteHeaderMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-header-matching.yaml'] });
  await accepted(t, h, SAME_NAMESPACE, [infra('header-matching')]);
  await expectAll(t, h, [
    v1({ path: '/', headers: { Version: 'one' } }),
    v2({ path: '/', headers: { Version: 'two' } }),
    v1({ path: '/', headers: { Version: 'two', Color: 'orange' } }),
    v2({ path: '/', headers: { Version: 'two', Color: 'blue' } }),
    notFound({ path: '/', headers: { Color: 'orange' } }),
    notFound({ path: '/', headers: { 'Some-Other-Header': 'one' } }),
    v1({ path: '/', headers: { Color: 'blue' } }),
    v1({ path: '/', headers: { Color: 'green' } }),
    v2({ path: '/', headers: { Color: 'red' } }),
    v2({ path: '/', headers: { Color: 'yellow' } }),
    notFound({ path: '/', headers: { Color: 'purple' } }),
  ]);
});

t.test('HTTPRouteMatchingAcrossRoutes', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-matching-across-routes.yaml'] });
  await accepted(t, h, SAME_NAMESPACE, [infra('matching-part1'), infra('matching-part2')]);
  await expectAll(t, h, [
    v1({ host: 'example.com', path: '/' }),
    v1({ host: 'example.com', path: '/example' }),
    v1({ host: 'example.net', path: '/example' }),
    v1({ host: 'example.com', path: '/example', headers: { Version: 'one' } }),
    v2({ host: 'example.com', path: '/v2' }),
    v1({ host: 'example.net', path: '/v2' }),
    v2({ host: 'example.com', path: '/v2/example' }),
    v2({ host: 'example.com', path: '/', headers: { Version: 'two' } }),
  ]);
});

t.test('HTTPRoutePathMatchOrder', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-path-match-order.yaml'] });
  await accepted(t, h, SAME_NAMESPACE, [infra('path-matching-order')]);
  await expectAll(t, h, [
    v3({ path: '/match/exact/one' }),
    v2({ path: '/match/exact' }),
    v1({ path: '/match' }),
    v2({ path: '/match/prefix/one/any' }),
    v1({ path: '/match/prefix/any' }),
    v3({ path: '/match/any' }),
  ]);
});

t.test('HTTPRouteHostnameIntersection', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-hostname-intersection.yaml'] });
  const gw = infra('httproute-hostname-intersection');
  await namespacesMustBeReady(t, h, [ns]);

  t.test('HTTPRoutes that do intersect with listener hostnames', async (t) => {
    await accepted(t, h, gw, [
      infra('specific-host-matches-listener-specific-host'),
      infra('specific-host-matches-listener-wildcard-host'),
      infra('wildcard-host-matches-listener-specific-host'),
      infra('wildcard-host-matches-listener-wildcard-host'),
    ]);
    await expectAll(t, h, [
      v1({ host: 'very.specific.com', path: '/s1' }),
      v1({ host: 'very.specific.com:1234', path: '/s1' }),
      notFound({ host: 'non.matching.com', path: '/s1' }),
      notFound({ host: 'foo.nonmatchingwildcard.io', path: '/s1' }),
      notFound({ host: 'foo.wildcard.io', path: '/s1' }),
      notFound({ host: 'very.specific.com', path: '/non-matching-prefix' }),

      v2({ host: 'foo.wildcard.io', path: '/s2' }),
      v2({ host: 'bar.wildcard.io', path: '/s2' }),
      v2({ host: 'foo.bar.wildcard.io', path: '/s2' }),
      notFound({ host: 'non.matching.com', path: '/s2' }),
      notFound({ host: 'wildcard.io', path: '/s2' }),
      notFound({ host: 'very.specific.com', path: '/s2' }),
      notFound({ host: 'foo.wildcard.io', path: '/non-matching-prefix' }),

      v3({ host: 'very.specific.com', path: '/s3' }),
      notFound({ host: 'non.matching.com', path: '/s3' }),
      notFound({ host: 'foo.specific.com', path: '/s3' }),
      notFound({ host: 'foo.wildcard.io', path: '/s3' }),
      notFound({ host: 'very.specific.com', path: '/non-matching-prefix' }),

      v1({ host: 'foo.anotherwildcard.io', path: '/s4' }),
      v1({ host: 'bar.anotherwildcard.io', path: '/s4' }),
      v1({ host: 'foo.bar.anotherwildcard.io', path: '/s4' }),
      notFound({ host: 'anotherwildcard.io', path: '/s4' }),
      notFound({ host: 'foo.wildcard.io', path: '/s4' }),
      notFound({ host: 'very.specific.com', path: '/s4' }),
      notFound({ host: 'foo.anotherwildcard.io', path: '/non-matching-prefix' }),
    ]);
  });

  t.test('HTTPRoutes that do not intersect with listener hostnames', async (t) => {
    await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, gw, []);
    await httpRouteMustHaveParents(
      t,
      h,
      infra('no-intersecting-hosts'),
      [
        {
          parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: ns, name: gw.name },
          controllerName: CONTROLLER_NAME,
          conditions: [{ type: 'Accepted', status: 'False', reason: 'NoMatchingListenerHostname' }],
        },
      ],
      true,
    );
    await expectAll(t, h, [
      notFound({ host: 'specific.but.wrong.com', path: '/s5' }),
      notFound({ host: 'wildcard.io', path: '/s5' }),
    ]);
  });

  t.test('HTTPRoutes have to be counted in AttachedRoutes only if they are Accepted', async (t) => {
    const conditions: ExpectedCondition[] = [
      { type: 'Accepted', status: 'True' },
      { type: 'ResolvedRefs', status: 'True' },
    ];
    const supportedKinds = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
    await gatewayStatusMustHaveListeners(t, h, gw, [
      // specific-host-matches-listener-specific-host and wildcard-host-matches-listener-specific-host
      { name: 'listener-1', supportedKinds, conditions, attachedRoutes: 2 },
      { name: 'listener-2', supportedKinds, conditions, attachedRoutes: 1 },
      { name: 'listener-3', supportedKinds, conditions, attachedRoutes: 1 },
    ]);
  });

  t.test('HTTPRoutes intersects with an unspecified hostname listener', async (t) => {
    await accepted(t, h, infra('httproute-hostname-intersection-all'), [
      infra('httproute-hostname-intersection-all'),
    ]);
    await expectAll(t, h, [
      v2({ host: 'first.com', path: '/' }),
      v2({ host: 'sub.first.com', path: '/' }),
      v2({ host: 'second.com', path: '/' }),
      v2({ host: 'sub.second.com', path: '/' }),
      { ...notFound({ host: 'third.com', path: '/' }), namespace: ns },
      { ...notFound({ host: 'sub.third.com', path: '/' }), namespace: ns },
    ]);
  });
});

t.test('HTTPRouteListenerHostnameMatching', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-listener-hostname-matching.yaml'] });
  const gw = infra('httproute-listener-hostname-matching');
  await namespacesMustBeReady(t, h, [ns]);
  for (const [route, listenerNames] of [
    ['backend-v1', ['listener-1']],
    ['backend-v2', ['listener-2']],
    ['backend-v3', ['listener-3', 'listener-4']],
  ] as const) {
    await gatewayAndHTTPRoutesMustBeAccepted(t, h, CONTROLLER_NAME, { ...gw, listenerNames }, [infra(route)]);
    await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, infra(route), gw);
  }
  await expectAll(t, h, [
    v1({ host: 'bar.com', path: '/' }),
    v2({ host: 'foo.bar.com', path: '/' }),
    v3({ host: 'baz.bar.com', path: '/' }),
    v3({ host: 'boo.bar.com', path: '/' }),
    v3({ host: 'multiple.prefixes.bar.com', path: '/' }),
    v3({ host: 'multiple.prefixes.foo.com', path: '/' }),
    notFound({ host: 'foo.com', path: '/' }),
    notFound({ host: 'no.matching.host', path: '/' }),
  ]);
});
