// The small cluster the Kubernetes-mode tests start from, as objects for the fake API server:
// ingress-ts's IngressClass, Services in namespace `e2e` with one ready endpoint on 127.0.0.1, and
// Ingresses that send a host's `/` to a Service's port 80.
import type { KubeObject } from './fake-apiserver.ts';

export const NAMESPACE = 'e2e';

export const INGRESS_CLASS_OBJECT: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name: 'ingress-ts' },
  spec: { controller: 'ingress-ts.dev/controller' },
};

/** Service `name` (port 80, target port `http`). */
export const serviceObject = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: NAMESPACE },
  spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
});

/** The EndpointSlice `<service>-1`: one ready endpoint, 127.0.0.1:`port`. */
export const sliceObject = (service: string, port: number): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${service}-1`, namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': service } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});

/** The IngressClass, and the Service `web` whose endpoint listens on `port`. */
export const webCluster = (port: number): KubeObject[] => [
  INGRESS_CLASS_OBJECT,
  serviceObject('web'),
  sliceObject('web', port),
];

/** Ingress `name`: `host`'s `/` (Prefix) to `service`:80. */
export const ingressObject = (name: string, host: string, service = 'web'): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: NAMESPACE },
  spec: {
    ingressClassName: 'ingress-ts',
    rules: [
      {
        host,
        http: {
          paths: [
            { path: '/', pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } },
          ],
        },
      },
    ],
  },
});
