// The objects a review builds besides the related Ingresses: the Services they name and their
// EndpointSlices, and the Secrets and ConfigMaps of the namespaces they live in or name. Each kind
// is grouped once and then patched with the objects that differ from one list to the next (the
// store keeps an unchanged object and hands out a new array when any object of the kind changes;
// list-changes.ts): regrouping 30,000 EndpointSlices after every endpoint change would cost the
// next review ~80 ms.

import type {
  ConfigMap,
  EndpointSlice,
  Ingress,
  KubeObject,
  ModelOptions,
  Secret,
  Service,
  Snapshot,
} from '../model/index.ts';
import { SERVICE_NAME_LABEL } from '../model/k8s.ts';
import { listChanges } from './list-changes.ts';
import { linksOf } from './related.ts';

/** One kind's objects by a key, patched to the list of the moment. */
class Groups<T extends KubeObject> {
  readonly #keyOf: (object: T) => string;
  #list: readonly T[] | null = null;
  readonly #keys = new Map<T, string>();
  readonly #groups = new Map<string, Set<T>>();

  constructor(keyOf: (object: T) => string) {
    this.#keyOf = keyOf;
  }

  of(list: readonly T[]): ReadonlyMap<string, ReadonlySet<T>> {
    if (list === this.#list) return this.#groups;
    const { removed, added } = listChanges(this.#list ?? [], list);
    for (const object of removed) {
      const key = this.#keys.get(object);
      if (key === undefined) continue;
      this.#keys.delete(object);
      const group = this.#groups.get(key);
      group?.delete(object);
      if (group?.size === 0) this.#groups.delete(key);
    }
    for (const object of added) {
      if (this.#keys.has(object)) continue;
      const key = this.#keyOf(object);
      this.#keys.set(object, key);
      const group = this.#groups.get(key);
      if (group === undefined) this.#groups.set(key, new Set([object]));
      else group.add(object);
    }
    this.#list = list;
    return this.#groups;
  }
}

const namespaceOf = (object: KubeObject): string => object.metadata?.namespace ?? '';

/** The groups a reviewer keeps from review to review. */
export interface ScopeIndexes {
  services: Groups<Service>;
  endpointSlices: Groups<EndpointSlice>;
  secrets: Groups<Secret>;
  configMaps: Groups<ConfigMap>;
}

export function createScopeIndexes(): ScopeIndexes {
  return {
    services: new Groups((service) => `${namespaceOf(service)}/${service.metadata?.name ?? ''}`),
    endpointSlices: new Groups(
      (slice) => `${namespaceOf(slice)}/${slice.metadata?.labels?.[SERVICE_NAME_LABEL] ?? ''}`,
    ),
    secrets: new Groups(namespaceOf),
    configMaps: new Groups(namespaceOf),
  };
}

/** `namespace/...` at the start of a value or after a separator: a reference that may cross namespaces. */
const NAMESPACE_REF = /(?:^|[\s,;:="'])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\//g;

function namespacesNamedIn(value: unknown, into: Set<string>): void {
  if (typeof value !== 'string' || !value.includes('/')) return;
  for (const match of value.matchAll(NAMESPACE_REF)) into.add(match[1] as string);
}

/**
 * The snapshot a review builds: the related Ingresses; the Services they name (backends, the
 * default-backend annotation, --default-backend-service) and their EndpointSlices; the Secrets and
 * ConfigMaps of the namespaces they live in or name (an annotation such as auth-tls-secret: ns/name,
 * the controller's flags, the values of its ConfigMaps). The build looks objects up by namespace and
 * name, so the rest cannot change what it finds about them; without this, every review would index
 * every Service, EndpointSlice and Secret of the cluster. (The TCP/UDP services' Services are left
 * out: what the build says about them is said of their ConfigMap, never of an Ingress.)
 */
export function scopedSnapshot(
  snapshot: Snapshot,
  ingresses: readonly Ingress[],
  options: ModelOptions,
  indexes: ScopeIndexes = createScopeIndexes(),
): Snapshot {
  const namespaces = new Set<string>();
  /** `namespace/name` of the Services a backend, the default-backend annotation or the flag names */
  const services = new Set<string>();
  if (options.defaultBackendService !== null) services.add(options.defaultBackendService);
  for (const ingress of ingresses) {
    const namespace = ingress.metadata?.namespace ?? '';
    namespaces.add(namespace);
    for (const service of linksOf(ingress, options.annotationsPrefix).services) services.add(service);
    const defaultBackend = ingress.metadata?.annotations?.[`${options.annotationsPrefix}/default-backend`];
    if (typeof defaultBackend === 'string') services.add(`${namespace}/${defaultBackend.trim()}`);
    for (const value of Object.values(ingress.metadata?.annotations ?? {}))
      namespacesNamedIn(value, namespaces);
  }
  const flagged = [
    options.configMap,
    options.defaultBackendService,
    options.defaultSSLCertificate,
    options.tcpServicesConfigMap,
    options.udpServicesConfigMap,
  ];
  const configMaps = indexes.configMaps.of(snapshot.configMaps);
  for (const ref of flagged) {
    if (typeof ref !== 'string') continue;
    namespacesNamedIn(ref, namespaces);
    const [namespace, name] = ref.split('/');
    for (const configMap of configMaps.get(namespace ?? '') ?? []) {
      if (configMap.metadata?.name !== name) continue;
      for (const value of Object.values(configMap.data ?? {})) namespacesNamedIn(value, namespaces);
    }
  }
  const take = <T>(groups: ReadonlyMap<string, ReadonlySet<T>>, keys: ReadonlySet<string>): T[] => {
    const out: T[] = [];
    for (const key of keys) {
      const group = groups.get(key);
      if (group !== undefined) for (const object of group) out.push(object);
    }
    return out;
  };
  return {
    ingresses,
    ingressClasses: snapshot.ingressClasses,
    services: take(indexes.services.of(snapshot.services), services),
    endpointSlices: take(indexes.endpointSlices.of(snapshot.endpointSlices), services),
    secrets: take(indexes.secrets.of(snapshot.secrets), namespaces),
    configMaps: take(configMaps, namespaces),
  };
}
