// The object store both sources feed (the Kubernetes API, a manifests folder): one map per kind, keyed by `namespace/name`, and the
// "does this change matter?" filter in front of the scheduler.
//
// Every object is kept at its latest state, relevant or not (a Secret nobody uses today may be named
// by tomorrow's Ingress, and the build then needs its current content). What an upsert or a removal
// returns decides only whether a build is triggered. It is false for:
// - the same resourceVersion again (a relist after a 410, a replayed watch event);
// - an Ingress of another class, before and after the change, and an Ingress change outside what
//   the model reads (its status: the leader's own writes come back as updates);
// - an IngressClass this controller does not own, before and after;
// - a Service or Secret the last build did not look up (ModelReferences), and the EndpointSlices of
//   such a Service;
// - an EndpointSlice whose address type, ports, addresses and conditions did not change (kube-proxy
//   style churn: labels, annotations, targetRef, zone hints);
// - any ConfigMap but --configmap and those its keys refer to (proxy-set-headers, add-headers);
// - anything in a namespace outside --watch-namespace-selector's current set (but IngressClasses,
//   the --configmap ConfigMap and the --publish-service Service, which are no user's objects);
// - a Gateway API object (GatewayClass, Gateway, HTTPRoute, ReferenceGrant) or Namespace whose
//   labels, annotations, generation and spec did not change (the leader's status writes), and any
//   of them while the Gateway API is off. Every other change to them counts: the build reads them all.
// Until the first build reports its references every Service and Secret counts (nothing is built
// before the source is synced anyway).

import type {
  EndpointSlice,
  Ingress,
  IngressClass,
  KubeObject,
  ModelOptions,
  ModelReferences,
  Snapshot,
} from '../model/index.ts';
import { isOurIngress } from '../model/ingress-class.ts';

export const STORE_KINDS = {
  Ingress: 'ingresses',
  IngressClass: 'ingressClasses',
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Secret: 'secrets',
  ConfigMap: 'configMaps',
  GatewayClass: 'gatewayClasses',
  Gateway: 'gateways',
  HTTPRoute: 'httpRoutes',
  ReferenceGrant: 'referenceGrants',
  Namespace: 'namespaces',
} as const satisfies Record<string, keyof Snapshot>;

export type StoreKind = keyof typeof STORE_KINDS;
type ListName = (typeof STORE_KINDS)[StoreKind];

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Not subject to --watch-namespace-selector: cluster-scoped, or the controller's own (--configmap). */
const UNSCOPED: ReadonlySet<ListName> = new Set([
  'ingressClasses',
  'configMaps',
  'gatewayClasses',
  'namespaces',
]);
/** In the snapshot only once the Gateway API is on (its CRDs installed, or standalone mode). */
const GATEWAY_LISTS: ReadonlySet<ListName> = new Set([
  'gatewayClasses',
  'gateways',
  'httpRoutes',
  'referenceGrants',
  'namespaces',
]);

export type ClassOptions = Pick<
  ModelOptions,
  'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass'
>;

export interface StoreOptions {
  classes: ClassOptions;
  /** --configmap `namespace/name`, or null */
  configMap: string | null;
  /** true: objects count only in the namespaces given to setNamespaces (--watch-namespace-selector) */
  selectNamespaces?: boolean;
  /** `namespace/name` of Services in every snapshot whatever the namespaces selected (--publish-service) */
  pinnedServices?: readonly string[];
  /** the Gateway API kinds are in the snapshot from the start (standalone mode); else see enableGatewayApi */
  gatewayApi?: boolean;
}

const keyOf = (object: KubeObject): string =>
  `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;

/** The items of a list field; nothing when the field is not a list (a manifest file can hold anything
 * the API server would have refused; the model reports such objects, the filter must not throw). */
function items<T>(list: readonly T[] | undefined): ReadonlyArray<Partial<T> | null | undefined> {
  return Array.isArray(list) ? list : [];
}

/** What the data plane sees of an EndpointSlice; anything else may change without a build. */
function sliceFingerprint(slice: EndpointSlice): string {
  return JSON.stringify([
    slice.metadata?.labels?.[SERVICE_NAME_LABEL] ?? '',
    slice.addressType ?? '',
    items(slice.ports).map((p) => [p?.name ?? '', p?.port ?? 0, p?.protocol ?? '']),
    items(slice.endpoints).map((e) => [
      e?.addresses ?? [],
      e?.conditions?.ready ?? null,
      e?.conditions?.serving ?? null,
      e?.conditions?.terminating ?? null,
    ]),
  ]);
}

/** What the model reads of an Ingress: a change elsewhere (status, managedFields) builds nothing.
 * Status matters: the leader's own status writes come back as updates of every Ingress. */
function sameIngressInput(a: KubeObject, b: KubeObject): boolean {
  const input = (o: KubeObject) =>
    JSON.stringify([
      o.metadata?.labels,
      o.metadata?.annotations,
      o.metadata?.creationTimestamp,
      (o as Ingress).spec,
    ]);
  return input(a) === input(b);
}

/** What the build reads of a Gateway API object or a Namespace: the leader's status writes, which
 * come back as updates, build nothing. */
function sameGatewayInput(a: KubeObject, b: KubeObject): boolean {
  const input = (o: KubeObject) =>
    JSON.stringify([
      o.metadata?.labels,
      o.metadata?.annotations,
      o.metadata?.creationTimestamp,
      o.metadata?.generation,
      (o as { spec?: unknown }).spec,
    ]);
  return input(a) === input(b);
}

export class ObjectStore {
  readonly #options: StoreOptions;
  readonly #maps: Record<ListName, Map<string, KubeObject>> = {
    ingresses: new Map(),
    ingressClasses: new Map(),
    services: new Map(),
    endpointSlices: new Map(),
    secrets: new Map(),
    configMaps: new Map(),
    gatewayClasses: new Map(),
    gateways: new Map(),
    httpRoutes: new Map(),
    referenceGrants: new Map(),
    namespaces: new Map(),
  };
  /** the arrays of the last snapshot per list; null once that list changed */
  readonly #arrays: Record<ListName, KubeObject[] | null> = {
    ingresses: null,
    ingressClasses: null,
    services: null,
    endpointSlices: null,
    secrets: null,
    configMaps: null,
    gatewayClasses: null,
    gateways: null,
    httpRoutes: null,
    referenceGrants: null,
    namespaces: null,
  };
  #snapshot: Snapshot | null = null;
  /** names of the IngressClasses this controller owns */
  readonly #owned = new Set<string>();
  #services: ReadonlySet<string> | null = null;
  #secrets: ReadonlySet<string> | null = null;
  #configMaps: ReadonlySet<string> = new Set();
  /** the selected namespaces; null: all */
  #namespaces: ReadonlySet<string> | null;
  readonly #pinned: ReadonlySet<string>;
  #gatewayApi: boolean;

  constructor(options: StoreOptions) {
    this.#options = options;
    this.#gatewayApi = options.gatewayApi === true;
    this.#namespaces = options.selectNamespaces ? new Set() : null;
    this.#pinned = new Set(options.pinnedServices ?? []);
  }

  /** An object was added or changed; true when the model may change. */
  upsert(kind: StoreKind, object: KubeObject): boolean {
    const list = STORE_KINDS[kind];
    const map = this.#maps[list];
    const key = keyOf(object);
    const previous = map.get(key);
    const version = object.metadata?.resourceVersion;
    if (previous !== undefined && version !== undefined && previous.metadata?.resourceVersion === version) {
      return false;
    }
    map.set(key, object);
    this.#changed(list);
    return this.#matters(kind, key, previous, object);
  }

  /** An object was deleted; true when the model may change. */
  remove(kind: StoreKind, object: KubeObject): boolean {
    const list = STORE_KINDS[kind];
    const map = this.#maps[list];
    const key = keyOf(object);
    const previous = map.get(key);
    if (previous === undefined) return false;
    map.delete(key);
    this.#changed(list);
    return this.#matters(kind, key, previous, undefined);
  }

  /** The namespaces --watch-namespace-selector currently selects; true when the set changed. */
  setNamespaces(names: Iterable<string>): boolean {
    const next = new Set(names);
    const current = this.#namespaces;
    if (current !== null && current.size === next.size && [...next].every((n) => current.has(n))) {
      return false;
    }
    this.#namespaces = next;
    for (const list of Object.values(STORE_KINDS)) if (!UNSCOPED.has(list)) this.#changed(list);
    return true;
  }

  /** The Gateway API CRDs are installed: its kinds join the snapshot (the lists, even empty). */
  enableGatewayApi(): void {
    this.#gatewayApi = true;
    this.#snapshot = null;
  }

  /** RBAC forbade listing a Gateway API kind: its kinds leave the snapshot, and what was stored of
   * them is dropped. */
  disableGatewayApi(): void {
    this.#gatewayApi = false;
    for (const list of GATEWAY_LISTS) {
      this.#maps[list].clear();
      this.#changed(list);
    }
  }

  /** What the last build looked up: changes to other Services and Secrets no longer matter. */
  setReferences(references: ModelReferences): void {
    this.#services = new Set(references.services);
    this.#secrets = new Set(references.secrets);
    this.#configMaps = new Set(references.configMaps ?? []);
  }

  /** Every stored object in scope, as the model reads them; the same object until something changes. */
  snapshot(): Snapshot {
    if (this.#snapshot !== null) return this.#snapshot;
    const arrays = {} as Record<ListName, KubeObject[]>;
    for (const list of Object.values(STORE_KINDS)) {
      if (!this.#gatewayApi && GATEWAY_LISTS.has(list)) continue;
      let array = this.#arrays[list];
      if (array === null) {
        array = [];
        for (const object of this.#maps[list].values()) {
          if (
            UNSCOPED.has(list) ||
            this.#inScope(object.metadata?.namespace) ||
            (list === 'services' && this.#pinned.has(keyOf(object)))
          ) {
            array.push(object);
          }
        }
        this.#arrays[list] = array;
      }
      arrays[list] = array;
    }
    this.#snapshot = Object.freeze(arrays) as unknown as Snapshot;
    return this.#snapshot;
  }

  get size(): number {
    let size = 0;
    for (const map of Object.values(this.#maps)) size += map.size;
    return size;
  }

  #changed(list: ListName): void {
    this.#arrays[list] = null;
    this.#snapshot = null;
  }

  #inScope(namespace: string | undefined): boolean {
    return this.#namespaces === null || (namespace !== undefined && this.#namespaces.has(namespace));
  }

  #matters(
    kind: StoreKind,
    key: string,
    before: KubeObject | undefined,
    after: KubeObject | undefined,
  ): boolean {
    if (kind === 'IngressClass') return this.#classChanged(before as IngressClass, after as IngressClass);
    if (kind === 'ConfigMap') return key === this.#options.configMap || this.#configMaps.has(key);
    if (kind === 'Service' && this.#pinned.has(key)) return true;
    const namespace = (after ?? before)?.metadata?.namespace;
    const list = STORE_KINDS[kind];
    if (GATEWAY_LISTS.has(list)) {
      if (!this.#gatewayApi || (!UNSCOPED.has(list) && !this.#inScope(namespace))) return false;
      return before === undefined || after === undefined || !sameGatewayInput(before, after);
    }
    if (!this.#inScope(namespace)) return false;
    switch (kind) {
      case 'Ingress':
        if (before !== undefined && after !== undefined && sameIngressInput(before, after)) return false;
        return this.#ours(before as Ingress | undefined) || this.#ours(after as Ingress | undefined);
      case 'Service':
        return this.#services === null || this.#services.has(key);
      case 'Secret':
        return this.#secrets === null || this.#secrets.has(key);
      case 'EndpointSlice':
        return this.#sliceChanged(before as EndpointSlice | undefined, after as EndpointSlice | undefined);
      default:
        return true; // the Gateway API kinds, judged above
    }
  }

  #ours(ingress: Ingress | undefined): boolean {
    return ingress !== undefined && isOurIngress(ingress, this.#owned, this.#options.classes);
  }

  #classChanged(before: IngressClass | undefined, after: IngressClass | undefined): boolean {
    const name = (after ?? before)?.metadata?.name ?? '';
    const wasOwned = this.#owned.delete(name);
    const { controllerClass, ingressClassByName, ingressClass } = this.#options.classes;
    const owned =
      after !== undefined &&
      (after.spec?.controller === controllerClass || (ingressClassByName && name === ingressClass));
    if (owned) this.#owned.add(name);
    return wasOwned || owned;
  }

  /** `before` is the version stored last, so its fingerprint is the one to compare with; computed
   * only here, a first list of tens of thousands of slices fingerprints none of them. */
  #sliceChanged(before: EndpointSlice | undefined, after: EndpointSlice | undefined): boolean {
    const namespace = (after ?? before)?.metadata?.namespace ?? '';
    const referenced = (slice: EndpointSlice | undefined): boolean => {
      if (slice === undefined) return false;
      if (this.#services === null) return true;
      return this.#services.has(`${namespace}/${slice.metadata?.labels?.[SERVICE_NAME_LABEL] ?? ''}`);
    };
    if (after === undefined) return referenced(before);
    if (!referenced(before) && !referenced(after)) return false;
    return before === undefined || sliceFingerprint(before) !== sliceFingerprint(after);
  }
}
