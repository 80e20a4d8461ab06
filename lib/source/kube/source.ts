// The Kubernetes source: one resilient informer per kind feeding the object store, and a synced gate.
//
// Watched: IngressClasses (cluster-scoped), Ingresses, Services, EndpointSlices, Secrets and ConfigMaps
// (every namespace, or --watch-namespace; ConfigMaps also in the --configmap, --tcp-services-configmap and
// --udp-services-configmap namespaces: the global one, the TCP and UDP services,
// the ones its proxy-set-headers / add-headers keys name, and the ones custom-headers and
// auth-proxy-set-headers annotations name; the store ignores changes to any other ConfigMap),
// and with --watch-namespace-selector the Namespaces it selects (the API server evaluates the
// selector; the store keeps only those namespaces' objects in the snapshot). Helm release Secrets
// (type helm.sh/release.v1, large and never TLS material) are filtered out by the server.
// With --enable-gateway-api (the default) and the Gateway API CRDs installed, also GatewayClasses,
// Gateways, HTTPRoutes, ReferenceGrants and every Namespace (gateway-sources.ts).
//
// start() resolves when every informer has delivered its first list: nothing is built from a partial
// cluster. After that, a change the store calls relevant triggers onChange; the rest is only stored.
// While the API server is unreachable the informers retry with backoff and the snapshot, and so the
// last build, stays as it was.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject, ModelOptions, ModelReferences, Snapshot } from '../../model/index.ts';
import { ObjectStore, type StoreKind } from '../../store/store.ts';
import { dropUnreadMetadata } from '../../store/unread.ts';
import {
  discoverGatewayApi,
  forbiddenListState,
  type GatewayApiState,
  type GatewayWatchTarget,
  gatewayWatchTargets,
} from './gateway-sources.ts';
import { type Backoff, createInformer, type ResilientInformer, type WatchTarget } from './informer.ts';

export interface KubeSourceOptions {
  kubeConfig: KubeConfig;
  /** --watch-namespace: one namespace, or null for all */
  watchNamespace: string | null;
  /** --watch-namespace-selector: a label selector on Namespaces, or null */
  namespaceSelector: string | null;
  model: Pick<
    ModelOptions,
    | 'controllerClass'
    | 'ingressClass'
    | 'ingressClassByName'
    | 'watchIngressWithoutClass'
    | 'configMap'
    | 'tcpServicesConfigMap'
    | 'udpServicesConfigMap'
  >;
  /** `namespace/name` of Services that matter although no route uses them (--publish-service) */
  watchedServices?: readonly string[];
  /** --enable-gateway-api: ask discovery whether the Gateway API CRDs are installed (default false) */
  gatewayApi?: boolean;
  /** once, during start(): off (discovery said so, or RBAC forbade a first list), or on once the
   * Gateway API kinds are listed */
  onGatewayApi?(state: GatewayApiState): void;
  /** a relevant change after the first sync */
  onChange(): void;
  /** a watch failed and is retried in retryInMs */
  onWatchError?(kind: string, error: unknown, retryInMs: number): void;
  backoff?: Backoff;
}

export interface KubeSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  snapshot(): Snapshot;
  /** the last build's references: changes to anything else are only stored */
  setReferences(references: ModelReferences): void;
  /** per kind: synced yet, restarts after errors */
  informers(): Array<{ kind: string; synced: boolean; restarts: number }>;
  /** the Gateway API CRDs were found at start (and --enable-gateway-api): its kinds are watched */
  readonly gatewayApi: boolean;
}

/** Lists and watch events both arrive as plain JSON here (informer.ts), with string timestamps,
 * whatever client-node's types say. */
const plain = (object: KubernetesObject): KubeObject => object as unknown as KubeObject;

const HELM_RELEASE_SECRETS = 'type!=helm.sh/release.v1';

/** The collection path of a kind, cluster-wide or in one namespace. */
export function collectionPath(prefix: string, plural: string, namespace: string | null): string {
  return namespace === null
    ? `${prefix}/${plural}`
    : `${prefix}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
}

function splitRef(ref: string): { namespace: string; name: string } {
  const slash = ref.indexOf('/');
  return { namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

/** The kinds always watched. A target whose store is 'Namespace' is --watch-namespace-selector's
 * selection (the namespaces in scope), not the Namespace objects the Gateway API reads. */
export function watchTargets(
  options: Pick<KubeSourceOptions, 'watchNamespace' | 'namespaceSelector' | 'model' | 'watchedServices'>,
): Array<WatchTarget & { store: StoreKind | 'Namespace' }> {
  const ns = options.watchNamespace;
  const targets: Array<WatchTarget & { store: StoreKind | 'Namespace' }> = [
    {
      kind: 'IngressClass',
      store: 'IngressClass',
      path: collectionPath('/apis/networking.k8s.io/v1', 'ingressclasses', null),
    },
    {
      kind: 'Ingress',
      store: 'Ingress',
      path: collectionPath('/apis/networking.k8s.io/v1', 'ingresses', ns),
    },
    { kind: 'Service', store: 'Service', path: collectionPath('/api/v1', 'services', ns) },
    {
      kind: 'EndpointSlice',
      store: 'EndpointSlice',
      path: collectionPath('/apis/discovery.k8s.io/v1', 'endpointslices', ns),
    },
    {
      kind: 'Secret',
      store: 'Secret',
      path: collectionPath('/api/v1', 'secrets', ns),
      fieldSelector: HELM_RELEASE_SECRETS,
    },
  ];
  // ConfigMaps where Ingresses are watched (annotations name them), and the --configmap namespace
  targets.push({ kind: 'ConfigMap', store: 'ConfigMap', path: collectionPath('/api/v1', 'configmaps', ns) });
  // and the namespaces of the TCP and UDP services ConfigMaps
  const controllerMaps = [
    options.model.configMap,
    options.model.tcpServicesConfigMap ?? null,
    options.model.udpServicesConfigMap ?? null,
  ];
  const mapNamespaces = new Set<string>();
  for (const ref of controllerMaps) {
    if (ref !== null && ns !== null) mapNamespaces.add(splitRef(ref).namespace);
  }
  mapNamespaces.delete(ns ?? '');
  for (const namespace of mapNamespaces) {
    targets.push({
      kind: 'ConfigMap',
      store: 'ConfigMap',
      path: collectionPath('/api/v1', 'configmaps', namespace),
    });
  }
  // --publish-service outside the namespace served: that one Service, by name (RBAC may grant just it)
  for (const ref of options.watchedServices ?? []) {
    const { namespace, name } = splitRef(ref);
    if (ns !== null && namespace !== ns) {
      targets.push({
        kind: 'Service',
        store: 'Service',
        path: collectionPath('/api/v1', 'services', namespace),
        fieldSelector: `metadata.name=${name}`,
      });
    }
  }
  if (options.namespaceSelector !== null) {
    targets.push({
      kind: 'Namespace',
      store: 'Namespace',
      path: '/api/v1/namespaces',
      labelSelector: options.namespaceSelector,
    });
  }
  return targets;
}

export function createKubeSource(options: KubeSourceOptions): KubeSource {
  const store = new ObjectStore({
    classes: options.model,
    configMap: options.model.configMap,
    selectNamespaces: options.namespaceSelector !== null,
    pinnedServices: options.watchedServices,
  });
  let synced = false;
  const namespaces = new Set<string>();
  const changed = (relevant: boolean): void => {
    if (relevant && synced) options.onChange();
  };

  const informer = (
    target: WatchTarget,
    handlers: Pick<Parameters<typeof createInformer>[0], 'onUpsert' | 'onDelete' | 'onFirstListForbidden'>,
  ): ResilientInformer =>
    createInformer({
      ...target,
      ...handlers,
      kubeConfig: options.kubeConfig,
      backoff: options.backoff,
      onError: (error, retryInMs) => options.onWatchError?.(target.kind, error, retryInMs),
    });
  const stored = (kind: StoreKind) => ({
    onUpsert: (object: KubernetesObject) => changed(store.upsert(kind, dropUnreadMetadata(plain(object)))),
    onDelete: (object: KubernetesObject) => changed(store.remove(kind, plain(object))),
  });
  const informers: ResilientInformer[] = watchTargets(options).map((target) =>
    informer(
      target,
      target.store === 'Namespace'
        ? {
            onUpsert: (object: KubernetesObject) => {
              namespaces.add(object.metadata?.name ?? '');
              changed(store.setNamespaces(namespaces));
            },
            onDelete: (object: KubernetesObject) => {
              namespaces.delete(object.metadata?.name ?? '');
              changed(store.setNamespaces(namespaces));
            },
          }
        : stored(target.store),
    ),
  );
  let stopped = false;
  let gatewayApi = false;
  /** discovery, then the Gateway API informers' first lists (nothing when it is off) */
  const startGatewayApi = async (): Promise<void> => {
    if (options.gatewayApi !== true) return;
    const state = await discoverGatewayApi({
      kubeConfig: options.kubeConfig,
      backoff: options.backoff,
      onError: (error, retryInMs) => options.onWatchError?.('Gateway API discovery', error, retryInMs),
      stopped: () => stopped,
    });
    if (stopped) return;
    if (!state.enabled) {
      options.onGatewayApi?.(state);
      return;
    }
    gatewayApi = true;
    store.enableGatewayApi();
    let refused: GatewayApiState | null = null;
    const added: ResilientInformer[] = [];
    // RBAC that forbids a first list turns the Gateway API off rather than holding the first build
    // (and so the Ingresses) back for good
    const forbidden = (target: GatewayWatchTarget, error: unknown): void => {
      if (refused !== null) return;
      refused = forbiddenListState(target, error);
      gatewayApi = false;
      store.disableGatewayApi();
      for (const one of added) {
        void one.stop();
        informers.splice(informers.indexOf(one), 1);
      }
    };
    for (const target of gatewayWatchTargets(options.watchNamespace)) {
      const { onUpsert, onDelete } = stored(target.store);
      const one = informer(target, {
        // a list already under way when the Gateway API was turned off still delivers its items
        onUpsert: (object) => {
          if (gatewayApi) onUpsert(object);
        },
        onDelete: (object) => {
          if (gatewayApi) onDelete(object);
        },
        onFirstListForbidden: (error) => forbidden(target, error),
      });
      added.push(one);
    }
    informers.push(...added);
    await Promise.all(added.map((one) => one.start()));
    if (!stopped) options.onGatewayApi?.(refused ?? state);
  };

  return {
    async start() {
      await Promise.all([...informers.map((one) => one.start()), startGatewayApi()]);
      synced = true;
    },
    async stop() {
      stopped = true;
      await Promise.all(informers.map((one) => one.stop()));
    },
    snapshot: () => store.snapshot(),
    setReferences: (references) =>
      store.setReferences({
        ...references,
        services: [...references.services, ...(options.watchedServices ?? [])],
      }),
    informers: () => informers.map(({ kind, synced, restarts }) => ({ kind, synced, restarts })),
    get gatewayApi() {
      return gatewayApi;
    },
  };
}
