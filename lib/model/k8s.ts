// Plain shapes of the Kubernetes objects the model reads: parsed JSON/YAML, never client-library
// classes. Every field is optional because standalone manifests are not validated by an API server;
// the build checks what it uses and reports what is wrong.

import type { GatewaySnapshot } from './gateway/k8s.ts';

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  /** RFC 3339, second granularity. The standalone source fills it in when a manifest omits it. */
  creationTimestamp?: string;
  /** spec generation (the API server's); Gateway API status reports it as observedGeneration */
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

export interface ServiceBackendPort {
  number?: number;
  name?: string;
}

export interface IngressBackend {
  service?: { name?: string; port?: ServiceBackendPort };
  resource?: { apiGroup?: string; kind?: string; name?: string };
}

export interface HTTPIngressPath {
  path?: string;
  pathType?: string;
  backend?: IngressBackend;
}

export interface IngressRule {
  host?: string;
  http?: { paths?: HTTPIngressPath[] };
}

export interface IngressTLS {
  hosts?: string[];
  secretName?: string;
}

export interface Ingress extends KubeObject {
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: IngressTLS[];
    rules?: IngressRule[];
  };
}

export interface IngressClass extends KubeObject {
  spec?: { controller?: string };
}

export interface ServicePort {
  name?: string;
  protocol?: string;
  port?: number;
  targetPort?: number | string;
}

export interface Service extends KubeObject {
  spec?: {
    type?: string;
    clusterIP?: string;
    externalName?: string;
    ports?: ServicePort[];
  };
}

export interface EndpointSliceEndpoint {
  addresses?: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
}

export interface EndpointSlicePort {
  name?: string;
  port?: number;
  protocol?: string;
}

export interface EndpointSlice extends KubeObject {
  addressType?: string;
  endpoints?: EndpointSliceEndpoint[];
  ports?: EndpointSlicePort[];
}

export interface Secret extends KubeObject {
  type?: string;
  /** base64-encoded values, as the API returns them */
  data?: Record<string, string>;
  /** plain values; only seen in manifests (the API server folds it into data) */
  stringData?: Record<string, string>;
}

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/** Everything the model is built from. Order inside each list does not matter. */
export interface Snapshot extends GatewaySnapshot {
  ingresses: readonly Ingress[];
  ingressClasses: readonly IngressClass[];
  services: readonly Service[];
  endpointSlices: readonly EndpointSlice[];
  secrets: readonly Secret[];
  configMaps: readonly ConfigMap[];
}

/** A snapshot with no objects. */
export const EMPTY_SNAPSHOT: Snapshot = Object.freeze({
  ingresses: [],
  ingressClasses: [],
  services: [],
  endpointSlices: [],
  secrets: [],
  configMaps: [],
});

/** Label EndpointSlices carry to name their Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Legacy class annotation, still honoured by ingress-nginx. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** A Secret's value for `key`: `stringData` as written, else `data` decoded from base64. */
export function secretValue(secret: Secret, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (typeof plain === 'string') return plain;
  const encoded = secret.data?.[key];
  if (typeof encoded !== 'string') return undefined;
  return Buffer.from(encoded, 'base64').toString('utf8');
}
