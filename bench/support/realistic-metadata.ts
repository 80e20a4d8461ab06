// The metadata a real cluster adds to the objects the scale manifests describe, so that memory is
// measured on objects of a realistic size: the API server's `managedFields` (server-side field
// ownership, on every object since Kubernetes 1.18) and, on what `kubectl apply` created, the
// `kubectl.kubernetes.io/last-applied-configuration` annotation (the applied object again, as JSON).
//
// - Ingresses and Services: applied with kubectl (the annotation, and a `kubectl-client-side-apply`
//   entry owning every field written); Ingresses also carry the controller's status entry.
// - EndpointSlices: written by kube-controller-manager (one `kube-controller-manager` entry, no
//   annotation).
// The fieldsV1 sets are derived from the objects as the API server derives them: `f:` per field,
// `.` for a map that is owned as a whole, `k:` for list items keyed by their merge key (`name`,
// `port`/`protocol`, `host`, `path`) and `i:`/`v:` otherwise.

import type { KubeObject } from '../../lib/model/index.ts';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Fields = { [key: string]: Fields };

const isMap = (value: unknown): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The merge key of a list item, as the API server's schema names it. */
function itemKey(item: Json, index: number): string {
  if (!isMap(item)) return `v:${JSON.stringify(item)}`;
  for (const keys of [['port', 'protocol'], ['name'], ['host'], ['path']]) {
    if (keys.every((key) => item[key] !== undefined)) {
      const key: Record<string, Json> = {};
      for (const name of keys) key[name] = item[name] ?? null;
      return `k:${JSON.stringify(key)}`;
    }
  }
  return `i:${index}`;
}

/** The fieldsV1 set that owns every field of `value`. */
export function fieldsOf(value: Json): Fields {
  if (Array.isArray(value)) {
    const owned: Fields = {};
    value.forEach((item, index) => {
      owned[itemKey(item, index)] = { '.': {}, ...fieldsOf(item) };
    });
    return owned;
  }
  if (!isMap(value)) return {};
  const owned: Fields = {};
  for (const [key, child] of Object.entries(value)) {
    owned[`f:${key}`] = isMap(child) ? { '.': {}, ...fieldsOf(child) } : fieldsOf(child);
  }
  return owned;
}

const TIME = '2026-11-20T09:14:07Z';

function entry(object: KubeObject, manager: string, owned: Fields, subresource?: string) {
  return {
    manager,
    operation: 'Update',
    apiVersion: object.apiVersion,
    time: TIME,
    fieldsType: 'FieldsV1',
    fieldsV1: owned,
    ...(subresource === undefined ? {} : { subresource }),
  };
}

/** `object` as `kubectl apply` leaves it: the annotation and the field manager of the apply. */
export function applied<T extends KubeObject>(object: T, withStatus = false): T {
  const metadata = object.metadata ?? {};
  const { name, namespace, labels, annotations } = metadata;
  const asWritten = {
    ...(object as unknown as Record<string, Json>),
    metadata: { annotations: annotations ?? null, labels: labels ?? null, name, namespace } as Json,
  };
  const text = `${JSON.stringify(asWritten, (_key, value) => (value === null ? undefined : value))}\n`;
  const withAnnotation = { ...metadata, annotations: { ...annotations, [LAST_APPLIED]: text } };
  const {
    metadata: _metadata,
    apiVersion: _v,
    kind: _k,
    ...rest
  } = object as unknown as Record<string, Json>;
  const owned = fieldsOf({
    metadata: { annotations: withAnnotation.annotations, labels: labels ?? null } as Json,
    ...rest,
  });
  const managedFields = [entry(object, 'kubectl-client-side-apply', owned)];
  if (withStatus)
    managedFields.push(
      entry(object, 'ingress-ts', { 'f:status': { 'f:loadBalancer': { 'f:ingress': {} } } }, 'status'),
    );
  return { ...object, metadata: { ...withAnnotation, managedFields } };
}

/** `object` as a controller's Update leaves it: one field manager, no annotation. */
export function managed<T extends KubeObject>(object: T, manager: string): T {
  const { metadata, apiVersion: _v, kind: _k, ...rest } = object as unknown as Record<string, Json>;
  const { labels } = (object.metadata ?? {}) as Record<string, Json>;
  const owned = fieldsOf({ metadata: { labels: labels ?? null } as Json, ...rest });
  return {
    ...object,
    metadata: { ...(metadata as object), managedFields: [entry(object, manager, owned)] },
  } as T;
}
