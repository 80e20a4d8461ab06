// What both sources drop from an object's metadata before the store keeps it: the fields nothing in
// ingress-ts reads, and that in a real cluster make up most of an object's size.
// - `managedFields`: the API server's record of which client owns which field (server-side apply).
//   As large as the object's spec again, on every object.
// - the `kubectl.kubernetes.io/last-applied-configuration` annotation: `kubectl apply`'s copy of the
//   object as last applied, as JSON text. Not an ingress-nginx annotation (the model's annotation
//   diagnostics only look at the `nginx.ingress.kubernetes.io/` prefix), and on a Secret it is a
//   second copy of the key material.
// With 10,000 Ingresses applied by kubectl (and their Services and EndpointSlices), the two were
// two thirds of the store. Every other field stays: names, uid and resourceVersion (events' object
// references, the store's same-version check), creationTimestamp (oldest wins), labels and the
// other annotations. ingress-nginx keeps whole objects in its informers' caches (client-go's
// SetTransform would strip them; it does not use one).

import type { KubeObject } from '../model/index.ts';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

type Fields = Record<string, unknown>;

const isFields = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `metadata` without the unread fields; the same object when it has none of them. */
export function withoutUnreadMetadata<M>(metadata: M): M {
  if (!isFields(metadata)) return metadata;
  const annotations = isFields(metadata.annotations) ? metadata.annotations : null;
  const lastApplied = annotations !== null && Object.hasOwn(annotations, LAST_APPLIED_ANNOTATION);
  if (metadata.managedFields === undefined && !lastApplied) return metadata;
  // rest copies, not `delete`: a deleted property turns an object into a slower, larger dictionary
  const { managedFields: _owners, ...lean }: Fields = metadata;
  if (annotations !== null && lastApplied) {
    const { [LAST_APPLIED_ANNOTATION]: _applied, ...others } = annotations;
    lean.annotations = others;
  }
  return lean as M;
}

/**
 * Replaces `object.metadata` with its lean copy, in place: the Kubernetes client's own cache holds
 * the same object, so a copy would leave the full one alive there.
 */
export function dropUnreadMetadata<T extends KubeObject>(object: T): T {
  if (isFields(object)) {
    const lean = withoutUnreadMetadata(object.metadata);
    if (lean !== object.metadata) object.metadata = lean;
  }
  return object;
}
