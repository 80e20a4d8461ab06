// GATEWAY-HTTP core conformance, route attachment and status (gateway-api v1.6.1
// conformance/tests/): which parent accepts a route and why not, what a Gateway's listeners count,
// and observedGeneration as a route changes. One ingress-ts per upstream test; no traffic is sent.
import t from 'tap';
import type { KubeObject } from '../../support/fake-apiserver.ts';
import { INFRA_NAMESPACE, startConformance, WEB_BACKEND_NAMESPACE } from './harness.ts';
import {
  type ExpectedCondition,
  gatewayMustHaveZeroRoutes,
  gatewayStatusMustHaveListeners,
  httpRouteMustHaveCondition,
  httpRouteMustHaveLatestConditions,
  httpRouteMustHaveNoAcceptedParents,
  httpRouteMustHaveResolvedRefsConditionsTrue,
  namespacesMustBeReady,
} from './status.ts';

t.setTimeout(120_000);

const HTTP_ROUTE_KIND = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
const infra = (name: string) => ({ namespace: INFRA_NAMESPACE, name });
const acceptedResolved: ExpectedCondition[] = [
  { type: 'Accepted', status: 'True' },
  { type: 'ResolvedRefs', status: 'True' },
];

t.test('GatewayWithAttachedRoutes', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-with-attached-routes.yaml'] });
  t.test('Gateway listener should have one valid http routes attached', async (t) => {
    await gatewayStatusMustHaveListeners(t, h, infra('gateway-with-one-attached-route'), [
      { name: 'http', supportedKinds: HTTP_ROUTE_KIND, attachedRoutes: 1, conditions: acceptedResolved },
    ]);
  });
  t.test('Gateway listener should have two valid http routes attached', async (t) => {
    const gw = infra('gateway-with-two-attached-routes');
    await gatewayStatusMustHaveListeners(t, h, gw, [
      { name: 'http', supportedKinds: HTTP_ROUTE_KIND, attachedRoutes: 2, conditions: acceptedResolved },
    ]);
    await httpRouteMustHaveCondition(t, h, infra('http-route-not-accepted'), gw, {
      type: 'Accepted',
      status: 'False',
      reason: 'NoMatchingListenerHostname',
    });
  });
  t.test(
    'Gateway listener should have AttachedRoutes set even when Gateway has unresolved refs',
    async (t) => {
      const gw = infra('unresolved-gateway-with-one-attached-unresolved-route');
      await gatewayStatusMustHaveListeners(t, h, gw, [
        {
          name: 'tls',
          supportedKinds: HTTP_ROUTE_KIND,
          attachedRoutes: 1,
          conditions: [
            { type: 'Programmed', status: 'False' },
            { type: 'ResolvedRefs', status: 'False' },
          ],
        },
      ]);
      await httpRouteMustHaveCondition(t, h, infra('http-route-4'), gw, {
        type: 'ResolvedRefs',
        status: 'False',
      });
    },
  );
});

t.test('HTTPRouteInvalidCrossNamespaceParentRef', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-invalid-cross-namespace-parent-ref.yaml'] });
  const gw = infra('same-namespace');
  const route = { namespace: WEB_BACKEND_NAMESPACE, name: 'invalid-cross-namespace-parent-ref' };
  await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
  t.test(
    'HTTPRoute should have an Accepted: false condition with reason NotAllowedByListeners',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, gw, {
        type: 'Accepted',
        status: 'False',
        reason: 'NotAllowedByListeners',
      });
    },
  );
  t.test('Route should not have Parents set in status', async (t) => {
    await httpRouteMustHaveNoAcceptedParents(t, h, route);
  });
  t.test('Gateway should have 0 Routes attached', async (t) => {
    await gatewayMustHaveZeroRoutes(t, h, gw);
  });
});

t.test('HTTPRouteInvalidParentRefNotMatchingSectionName', async (t) => {
  const h = await startConformance(t, {
    manifests: ['httproute-invalid-parentref-not-matching-section-name.yaml'],
  });
  const gw = infra('same-namespace');
  const route = infra('httproute-listener-not-matching-section-name');
  t.test(
    'HTTPRoute with no matching sectionName in ParentRef has an Accepted Condition with status False and Reason NoMatchingParent',
    async (t) => {
      await httpRouteMustHaveCondition(t, h, route, gw, {
        type: 'Accepted',
        status: 'False',
        reason: 'NoMatchingParent',
      });
    },
  );
  t.test('Route should not have Parents accepted in status', async (t) => {
    await httpRouteMustHaveNoAcceptedParents(t, h, route);
  });
  t.test('Gateway should have 0 Routes attached', async (t) => {
    await gatewayMustHaveZeroRoutes(t, h, gw);
  });
});

t.test('HTTPRouteObservedGenerationBump', async (t) => {
  const h = await startConformance(t, { manifests: ['httproute-observed-generation-bump.yaml'] });
  const gw = infra('same-namespace');
  const route = infra('observed-generation-bump');
  const ref = { kind: 'HTTPRoute', ...route };
  t.test('observedGeneration should increment', async (t) => {
    await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
    const original = h.get(ref) as KubeObject;
    await httpRouteMustHaveLatestConditions(t, h, route);
    const rules = structuredClone(
      (original.spec as { rules: Array<{ backendRefs: Array<{ name: string }> }> }).rules,
    );
    (rules[0]?.backendRefs[0] as { name: string }).name = 'infra-backend-v2';
    h.patch(ref, { spec: { rules } });
    await httpRouteMustHaveCondition(t, h, route, gw, { type: 'Accepted', status: 'True' });
    await httpRouteMustHaveResolvedRefsConditionsTrue(t, h, route, gw);
    await httpRouteMustHaveLatestConditions(t, h, route);
    t.not(
      h.get(ref)?.metadata?.generation,
      original.metadata?.generation,
      'generation should change after an update',
    );
  });
});
