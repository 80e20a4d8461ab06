// GATEWAY-HTTP core conformance, Gateway and GatewayClass status (gateway-api v1.6.1
// conformance/tests/gateway*.go): one ingress-ts per upstream test, with the suite's base
// manifests and the test's own, and the test's status assertions. No traffic is sent.
import t from 'tap';
import type { KubeObject } from '../../support/fake-apiserver.ts';
import { INFRA_NAMESPACE, startConformance } from './harness.ts';
import {
  type ExpectedCondition,
  type ExpectedListener,
  gatewayClassMustBeAccepted,
  gatewayClassMustHaveLatestConditions,
  gatewayMustHaveCondition,
  gatewayMustHaveLatestConditions,
  gatewayStatusMustHaveListeners,
  namespacesMustBeReady,
} from './status.ts';

t.setTimeout(120_000);

const HTTP_ROUTE_KIND = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }];
const infra = (name: string) => ({ namespace: INFRA_NAMESPACE, name });
const listener = (
  name: string,
  conditions: ExpectedCondition[],
  attachedRoutes = 0,
  supportedKinds = HTTP_ROUTE_KIND,
): ExpectedListener => ({ name, supportedKinds, attachedRoutes, conditions });
const generationOf = (obj: KubeObject | undefined) => obj?.metadata?.generation as number | undefined;

t.test('GatewayClassObservedGenerationBump', async (t) => {
  const h = await startConformance(t, { manifests: ['gatewayclass-observed-generation-bump.yaml'] });
  const name = 'gatewayclass-observed-generation-bump';
  const ref = { kind: 'GatewayClass', name };
  await gatewayClassMustBeAccepted(t, h, name, '');
  const original = h.get(ref);
  await gatewayClassMustHaveLatestConditions(t, h, name);
  h.patch(ref, { spec: { description: 'new' } });
  await gatewayClassMustBeAccepted(t, h, name, '');
  await gatewayClassMustHaveLatestConditions(t, h, name);
  t.not(generationOf(h.get(ref)), generationOf(original), 'generation should change after an update');
});

t.test('GatewayObservedGenerationBump', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-observed-generation-bump.yaml'] });
  const gw = infra('gateway-observed-generation-bump');
  const ref = { kind: 'Gateway', ...gw };
  await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
  await gatewayMustHaveLatestConditions(t, h, gw);
  const original = h.get(ref);
  const listeners = (original?.spec as { listeners?: unknown[] } | undefined)?.listeners ?? [];
  h.patch(ref, {
    spec: {
      listeners: [
        ...listeners,
        {
          name: 'alternate',
          hostname: 'foo.com',
          port: 80,
          protocol: 'HTTP',
          allowedRoutes: { namespaces: { from: 'All' } },
        },
      ],
    },
  });
  await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
  await gatewayMustHaveLatestConditions(t, h, gw);
  t.not(generationOf(h.get(ref)), generationOf(original), 'generation should change after an update');
});

t.test('GatewayInvalidParametersRef', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-invalid-parameters-ref.yaml'] });
  const gw = infra('gateway-invalid-parameters-ref');
  await gatewayMustHaveLatestConditions(t, h, gw);
  await gatewayMustHaveCondition(t, h, gw, {
    type: 'Accepted',
    status: 'False',
    reason: 'InvalidParameters',
  });
});

t.test('GatewayListenerUnsupportedProtocol', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-invalid-listeners-unsupported-protocol.yaml'] });
  const invalid = listener(
    'invalid',
    [{ type: 'Accepted', status: 'False', reason: 'UnsupportedProtocol' }],
    0,
    [],
  );
  t.test(
    'Gateway with no accepted listeners should not be accepted and the listener should have the Accepted condition set to False with reason UnsupportedProtocol',
    async (t) => {
      const gw = infra('gateway-only-unsupported-protocols');
      await gatewayMustHaveLatestConditions(t, h, gw);
      await gatewayMustHaveCondition(t, h, gw, {
        type: 'Accepted',
        status: 'False',
        reason: 'ListenersNotValid',
      });
      await gatewayStatusMustHaveListeners(t, h, gw, [invalid]);
    },
  );
  t.test(
    'Gateway with at least one accepted listeners should be accepted and the listeners should have the Accepted condition set accordingly',
    async (t) => {
      const gw = infra('gateway-supported-and-unsupported-protocols');
      await gatewayMustHaveLatestConditions(t, h, gw);
      await gatewayMustHaveCondition(t, h, gw, {
        type: 'Accepted',
        status: 'True',
        reason: 'ListenersNotValid',
      });
      await gatewayStatusMustHaveListeners(t, h, gw, [
        listener('http', [{ type: 'Accepted', status: 'True', reason: 'Accepted' }]),
        invalid,
      ]);
    },
  );
});

t.test('GatewayInvalidRouteKind', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-invalid-route-kind.yaml'] });
  const invalidKinds = { type: 'ResolvedRefs', status: 'False', reason: 'InvalidRouteKinds' };
  t.test(
    'Gateway listener should have a false ResolvedRefs condition with reason InvalidRouteKinds and no supportedKinds',
    async (t) => {
      await gatewayStatusMustHaveListeners(t, h, infra('gateway-only-invalid-route-kind'), [
        listener('http', [invalidKinds], 0, []),
      ]);
    },
  );
  t.test(
    'Gateway listener should have a false ResolvedRefs condition with reason InvalidRouteKinds and HTTPRoute must be put in the supportedKinds',
    async (t) => {
      await gatewayStatusMustHaveListeners(t, h, infra('gateway-supported-and-invalid-route-kind'), [
        listener('http', [invalidKinds]),
      ]);
    },
  );
});

t.test('GatewayInvalidTLSConfiguration', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-invalid-tls-configuration.yaml'] });
  const listeners = [
    listener('https', [{ type: 'ResolvedRefs', status: 'False', reason: 'InvalidCertificateRef' }]),
  ];
  for (const [name, gateway] of [
    [
      'Nonexistent secret referenced as CertificateRef in a Gateway listener',
      'gateway-certificate-nonexistent-secret',
    ],
    [
      'Unsupported group resource referenced as CertificateRef in a Gateway listener',
      'gateway-certificate-unsupported-group',
    ],
    [
      'Unsupported kind resource referenced as CertificateRef in a Gateway listener',
      'gateway-certificate-unsupported-kind',
    ],
    [
      'Malformed secret referenced as CertificateRef in a Gateway listener',
      'gateway-certificate-malformed-secret',
    ],
  ] as const) {
    t.test(name, async (t) => {
      await gatewayStatusMustHaveListeners(t, h, infra(gateway), listeners);
    });
  }
});

t.test('GatewayModifyListeners', async (t) => {
  const h = await startConformance(t, { manifests: ['gateway-modify-listeners.yaml'] });
  const acceptedResolved = [
    { type: 'Accepted', status: 'True' },
    { type: 'ResolvedRefs', status: 'True' },
  ];
  t.test('should be able to add a listener that then becomes available for routing traffic', async (t) => {
    const gw = infra('gateway-add-listener');
    const ref = { kind: 'Gateway', ...gw };
    await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
    await gatewayMustHaveLatestConditions(t, h, gw);
    const original = h.get(ref);
    const listeners = (original?.spec as { listeners?: unknown[] } | undefined)?.listeners ?? [];
    h.patch(ref, {
      spec: {
        listeners: [
          ...listeners,
          {
            name: 'http',
            port: 80,
            protocol: 'HTTP',
            hostname: 'data.test.com',
            allowedRoutes: { namespaces: { from: 'All' } },
          },
        ],
      },
    });
    await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
    await gatewayStatusMustHaveListeners(t, h, gw, [
      listener('https', acceptedResolved, 1),
      listener('http', acceptedResolved, 1),
    ]);
    await gatewayMustHaveLatestConditions(t, h, gw);
    t.not(generationOf(h.get(ref)), generationOf(original), 'generation should change after an update');
  });
  t.test(
    'should be able to remove listeners, which would then stop routing the relevant traffic',
    async (t) => {
      const gw = infra('gateway-remove-listener');
      const ref = { kind: 'Gateway', ...gw };
      await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
      await gatewayMustHaveLatestConditions(t, h, gw);
      const original = h.get(ref);
      const listeners = (
        (original?.spec as { listeners?: Array<{ name?: string }> } | undefined)?.listeners ?? []
      ).filter((l) => l.name === 'http');
      t.equal(listeners.length, 1, 'the gateway must have the http listener');
      h.patch(ref, { spec: { listeners } });
      await namespacesMustBeReady(t, h, [INFRA_NAMESPACE]);
      await gatewayStatusMustHaveListeners(t, h, gw, [listener('http', acceptedResolved, 1)]);
      await gatewayMustHaveLatestConditions(t, h, gw);
      t.not(generationOf(h.get(ref)), generationOf(original), 'generation should change after an update');
    },
  );
});

const refNotPermitted = [
  listener('https', [{ type: 'ResolvedRefs', status: 'False', reason: 'RefNotPermitted' }]),
];
const programmedResolved = [
  listener('https', [
    { type: 'Programmed', status: 'True', reason: 'Programmed' },
    { type: 'ResolvedRefs', status: 'True' },
  ]),
];

for (const [test, file, listeners, subtest] of [
  [
    'GatewaySecretInvalidReferenceGrant',
    'gateway-secret-invalid-reference-grant',
    refNotPermitted,
    'Gateway listener should have a false ResolvedRefs condition with reason RefNotPermitted',
  ],
  [
    'GatewaySecretMissingReferenceGrant',
    'gateway-secret-missing-reference-grant',
    refNotPermitted,
    'Gateway listener should have a false ResolvedRefs condition with reason RefNotPermitted',
  ],
  [
    'GatewaySecretReferenceGrantAllInNamespace',
    'gateway-secret-reference-grant-all-in-namespace',
    programmedResolved,
    'Gateway listener should have a true ResolvedRefs condition and a true Programmed condition',
  ],
  [
    'GatewaySecretReferenceGrantSpecific',
    'gateway-secret-reference-grant-specific',
    programmedResolved,
    'Gateway listener should have a true ResolvedRefs condition and a true Programmed condition',
  ],
] as const) {
  t.test(test, async (t) => {
    const h = await startConformance(t, { manifests: [`${file}.yaml`] });
    t.test(subtest, async (t) => {
      await gatewayStatusMustHaveListeners(t, h, infra(file), listeners);
    });
  });
}
