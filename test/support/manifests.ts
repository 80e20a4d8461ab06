// YAML the end-to-end tests write into a standalone controller's manifests folder.

/** The IngressClass the test controllers serve (--controller-class default), newline-terminated. */
export const INGRESS_CLASS = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: ingress-ts }
spec: { controller: ingress-ts.dev/controller }
`;

/** A kubernetes.io/tls Secret holding `pair`, newline-terminated. */
export function tlsSecret(namespace: string, name: string, pair: { crt: string; key: string }): string {
  return `apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: ${namespace} }
type: kubernetes.io/tls
data:
  tls.crt: ${Buffer.from(pair.crt).toString('base64')}
  tls.key: ${Buffer.from(pair.key).toString('base64')}
`;
}

/**
 * A Service in namespace e2e with one EndpointSlice per port (each backend of a test listens on its
 * own port of 127.0.0.1); no port: a Service without endpoints. Starts with `---`.
 */
export function serviceYaml(name: string, ports: readonly number[]): string {
  const slices = ports
    .map(
      (port, i) => `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-${i}, namespace: e2e, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
ports: [{ name: http, port: ${port}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
`,
    )
    .join('');
  return `---
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: e2e }
spec: { ports: [{ name: http, port: 80, targetPort: http }] }
${slices}`;
}

export interface IngressYaml {
  name: string;
  /** null: only a spec.defaultBackend (a catch-all) */
  host: string | null;
  service: string;
  path?: string;
  /** nginx.ingress.kubernetes.io/<key>: value */
  annotations?: Record<string, string>;
  created?: string;
}

/** An Ingress of class ingress-ts in namespace e2e, one Prefix path to port 80. Starts with `---`. */
export function ingressYaml(spec: IngressYaml): string {
  const notes = Object.entries(spec.annotations ?? {})
    .map(([k, v]) => `nginx.ingress.kubernetes.io/${k}: ${JSON.stringify(v)}`)
    .join(', ');
  const backend = `{ service: { name: ${spec.service}, port: { number: 80 } } }`;
  const body =
    spec.host === null
      ? `  defaultBackend: ${backend}\n`
      : `  rules:
    - host: ${spec.host}
      http: { paths: [{ path: ${spec.path ?? '/'}, pathType: Prefix, backend: ${backend} }] }
`;
  return `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${spec.name}, namespace: e2e, creationTimestamp: "${spec.created ?? '2026-01-01T00:00:00Z'}", annotations: { ${notes} } }
spec:
  ingressClassName: ingress-ts
${body}`;
}
