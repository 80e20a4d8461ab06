// The configuration churn that test/e2e/churn.test.ts and bench/churn-bench.ts drive through an
// in-process DataPlane: a cycle of four snapshots whose steps alternate a full swap (the path
// `/extra` added or removed) and an endpoints-only swap (a second EndpointSlice, on the second
// upstream port, added or removed). After a multiple of four steps the configuration is the first
// one again, so whatever the data plane holds then should be what it held before the churn.

import type { EndpointSlice, Ingress, Snapshot } from '../../lib/model/index.ts';

export const CHURN_HOST = 'churn.test';
const NAMESPACE = 'churn';

function slice(name: string, port: number): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port, protocol: 'TCP' }],
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
  };
}

function ingress(extra: boolean): Ingress {
  const backend = { service: { name: 'web', port: { number: 80 } } };
  const paths = [{ path: '/', pathType: 'Prefix', backend }];
  if (extra) paths.push({ path: '/extra', pathType: 'Prefix', backend });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'churn', namespace: NAMESPACE, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { ingressClassName: 'ingress-ts', rules: [{ host: CHURN_HOST, http: { paths } }] },
  };
}

/**
 * The snapshot of churn step `step` (0, 1, 2, ...) over the upstream `ports` (two of them): step 0
 * is the base (`/` only, endpoints on ports[0]); an odd step changes endpoints only, an even step
 * (other than 0) changes routes. `/` is served on every step, by ports[0] at least.
 */
export function churnSnapshot(step: number, ports: readonly [number, number]): Snapshot {
  const phase = step % 4;
  // 0: base; 1: + second slice (endpoints); 2: + /extra (full); 3: − second slice (endpoints);
  // 4 = 0: − /extra (full)
  const extra = phase === 2 || phase === 3;
  const second = phase === 1 || phase === 2;
  return {
    ingresses: [ingress(extra)],
    ingressClasses: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: 'ingress-ts' },
        spec: { controller: 'ingress-ts.dev/controller' },
      },
    ],
    services: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: NAMESPACE },
        spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    ],
    endpointSlices: second
      ? [slice('web-a', ports[0]), slice('web-b', ports[1])]
      : [slice('web-a', ports[0])],
    secrets: [],
    configMaps: [],
  };
}

/** The swap kind step `step` (≥ 1) should give. */
export const churnKind = (step: number): 'full' | 'endpoints' => (step % 2 === 1 ? 'endpoints' : 'full');

/** Active handles and requests by type (`process.getActiveResourcesInfo()`), e.g. TCPSocketWrap: 3. */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}
