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
