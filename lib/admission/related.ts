// The Ingresses a candidate can interact with in a build, so a review builds tens of Ingresses
// instead of the whole cluster (a full build at 10,000 Ingresses takes seconds on the thread that
// runs the controller). The build links Ingresses only through:
// - a host: its server (created by the oldest), host-level annotations, TLS, routes, canaries,
//   ssl-passthrough;
// - the catch-all server: rules without a host, and spec.defaultBackend without rules;
// - names: a server-alias is refused when it is a host or another server's alias, and a
//   from-to-www-redirect is skipped when the other name is a host;
// - session affinity: Ingresses with affinity annotations that share a Service (its upstream exists
//   only when some route that won its host and path resolved it).
// Whether an alias or an affinity of another Ingress takes effect depends on the Ingresses sharing
// that Ingress's hosts, so those come too (one more step, which is enough: everything else about an
// Ingress is decided by the Ingress alone). Taking more than needed never changes the candidate's
// findings (the full build has them all), taking less could: the keys below over-approximate
// (raw host strings, aliases before validation).

import type { Ingress, IngressClass, KubeObject, ModelOptions, Snapshot } from '../model/index.ts';
import { isOurIngress, ownedClassNames } from '../model/ingress-class.ts';
import { SERVICE_NAME_LABEL } from '../model/k8s.ts';

type ClassOptions = Pick<
  ModelOptions,
  'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass'
>;

/** What links one Ingress to others, read from the object as written. */
export interface IngressLinks {
  /** rule hosts and tls hosts, lower-cased */
  hosts: string[];
  /** server-alias names, lower-cased */
  aliases: string[];
  /** a rule without host, or a spec.defaultBackend */
  catchAll: boolean;
  /** `namespace/service` of every backend */
  services: string[];
  /** affinity or affinity-mode is set */
  affinity: boolean;
}

const lower = (value: unknown): string | null =>
  typeof value === 'string' ? value.trim().toLowerCase() : null;

function backendService(backend: unknown, namespace: string, into: Set<string>): void {
  const name = (backend as { service?: { name?: unknown } } | null | undefined)?.service?.name;
  if (typeof name === 'string') into.add(`${namespace}/${name}`);
}

/** The keys of one Ingress; tolerant of any shape (a manifest can hold anything). */
export function linksOf(ingress: Ingress, annotationsPrefix: string): IngressLinks {
  const namespace = ingress.metadata?.namespace ?? '';
  const annotations = ingress.metadata?.annotations ?? {};
  const spec = (ingress.spec ?? {}) as Record<string, unknown>;
  const hosts = new Set<string>();
  const services = new Set<string>();
  let catchAll = spec.defaultBackend != null;
  if (catchAll) backendService(spec.defaultBackend, namespace, services);
  for (const rule of Array.isArray(spec.rules) ? spec.rules : []) {
    const host = lower((rule as { host?: unknown } | null)?.host) ?? '';
    if (host === '') catchAll = true;
    else hosts.add(host);
    const paths = (rule as { http?: { paths?: unknown } } | null)?.http?.paths;
    for (const path of Array.isArray(paths) ? paths : []) {
      backendService((path as { backend?: unknown } | null)?.backend, namespace, services);
    }
  }
  for (const entry of Array.isArray(spec.tls) ? spec.tls : []) {
    const tlsHosts = (entry as { hosts?: unknown } | null)?.hosts;
    for (const host of Array.isArray(tlsHosts) ? tlsHosts : []) {
      const name = lower(host);
      if (name) hosts.add(name);
    }
  }
  const alias = annotations[`${annotationsPrefix}/server-alias`];
  const aliases =
    typeof alias === 'string'
      ? alias
          .split(',')
          .map((name) => name.trim().toLowerCase())
          .filter((name) => name !== '')
      : [];
  const affinity =
    annotations[`${annotationsPrefix}/affinity`] !== undefined ||
    annotations[`${annotationsPrefix}/affinity-mode`] !== undefined;
  return { hosts: [...hosts], aliases, catchAll, services: [...services], affinity };
}

/** The links of the stored objects, kept while the object is: an index rebuilt after one change
 * reads only the Ingress that changed. */
const linksCache = new WeakMap<Ingress, { prefix: string; links: IngressLinks }>();

function cachedLinks(ingress: Ingress, prefix: string): IngressLinks {
  const cached = linksCache.get(ingress);
  if (cached !== undefined && cached.prefix === prefix) return cached.links;
  const links = linksOf(ingress, prefix);
  linksCache.set(ingress, { prefix, links });
  return links;
}

/** The other name from-to-www-redirect would use for a host. */
const wwwPartner = (host: string): string => (host.startsWith('www.') ? host.slice(4) : `www.${host}`);

/** Our Ingresses by what links them. Built once (O(Ingresses), no parsing), then patched with the
 * Ingresses that differ from one snapshot list to the next (the store keeps an unchanged object). */
export interface RelatedIndex {
  readonly ingresses: readonly Ingress[];
  readonly classes: readonly IngressClass[];
  /** our Ingresses in the snapshot */
  readonly ours: number;
  /** the Ingresses a candidate can interact with (their order carries no meaning: the build sorts) */
  related(candidate: Ingress): Ingress[];
  /** the same index for another list of Ingresses (the same IngressClasses); this one is spent */
  patched(ingresses: readonly Ingress[]): RelatedIndex;
}

type Keyed = Map<string, Set<Ingress>>;

function add(map: Keyed, key: string, ingress: Ingress): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([ingress]));
  else set.add(ingress);
}

function remove(map: Keyed, key: string, ingress: Ingress): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(ingress);
  if (set.size === 0) map.delete(key);
}

export function createRelatedIndex(
  ingresses: readonly Ingress[],
  classes: readonly IngressClass[],
  options: ClassOptions & Pick<ModelOptions, 'annotationsPrefix'>,
): RelatedIndex {
  const owned = ownedClassNames(classes, options);
  const links = new Map<Ingress, IngressLinks>();
  const byHost: Keyed = new Map();
  const byAlias: Keyed = new Map();
  const byService: Keyed = new Map();
  const catchAll = new Set<Ingress>();
  const change = (ingress: Ingress, own: IngressLinks, edit: typeof add) => {
    for (const host of own.hosts) edit(byHost, host, ingress);
    for (const alias of own.aliases) edit(byAlias, alias, ingress);
    for (const service of own.services) edit(byService, service, ingress);
  };
  const insert = (ingress: Ingress) => {
    if (!isOurIngress(ingress, owned, options)) return;
    const own = cachedLinks(ingress, options.annotationsPrefix);
    links.set(ingress, own);
    change(ingress, own, add);
    if (own.catchAll) catchAll.add(ingress);
  };
  for (const ingress of ingresses) insert(ingress);
  const linksFor = (ingress: Ingress) => links.get(ingress) ?? linksOf(ingress, options.annotationsPrefix);

  const related = (candidate: Ingress): Ingress[] => {
    const own = linksOf(candidate, options.annotationsPrefix);
    const found = new Set<Ingress>();
    /** reached through a name or a Service: whether its alias or affinity counts depends on its hosts */
    const second = new Set<Ingress>();
    const take = (set: ReadonlySet<Ingress> | undefined, into: Set<Ingress>) => {
      if (set !== undefined) for (const ingress of set) into.add(ingress);
    };
    const names = new Set([...own.hosts, ...own.aliases, ...own.hosts.map(wwwPartner)]);
    for (const name of names) {
      take(byHost.get(name), found);
      take(byAlias.get(name), second);
    }
    if (own.catchAll) take(catchAll, found);
    if (own.affinity) for (const service of own.services) take(byService.get(service), second);
    for (const ingress of second) {
      found.add(ingress);
      const theirs = linksFor(ingress);
      for (const host of theirs.hosts) take(byHost.get(host), found);
      if (theirs.catchAll) take(catchAll, found);
    }
    return [...found];
  };

  const indexFor = (list: readonly Ingress[]): RelatedIndex => ({
    ingresses: list,
    classes,
    ours: links.size,
    related,
    patched(next) {
      const kept = new Set(next);
      for (const [ingress, own] of links) {
        if (kept.has(ingress)) continue;
        links.delete(ingress);
        change(ingress, own, remove);
        catchAll.delete(ingress);
      }
      for (const ingress of next) if (!links.has(ingress)) insert(ingress);
      return indexFor(next);
    },
  });
  return indexFor(ingresses);
}

/** A list's objects by namespace, computed once per list (the store hands out the same arrays until
 * the list changes). */
const byNamespaceCache = new WeakMap<readonly KubeObject[], Map<string, KubeObject[]>>();

function byNamespace<T extends KubeObject>(list: readonly T[]): Map<string, T[]> {
  let groups = byNamespaceCache.get(list) as Map<string, T[]> | undefined;
  if (groups === undefined) {
    groups = new Map();
    for (const object of list) {
      const namespace = object.metadata?.namespace ?? '';
      const group = groups.get(namespace);
      if (group === undefined) groups.set(namespace, [object]);
      else group.push(object);
    }
    byNamespaceCache.set(list, groups as Map<string, KubeObject[]>);
  }
  return groups;
}

/** A list's objects by `namespace/<key>`, computed once per list. */
const byKeyCache = new WeakMap<readonly KubeObject[], Map<string, KubeObject[]>>();

function byKey<T extends KubeObject>(list: readonly T[], keyOf: (object: T) => string): Map<string, T[]> {
  let groups = byKeyCache.get(list) as Map<string, T[]> | undefined;
  if (groups === undefined) {
    groups = new Map();
    for (const object of list) {
      const key = `${object.metadata?.namespace ?? ''}/${keyOf(object)}`;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [object]);
      else group.push(object);
    }
    byKeyCache.set(list, groups as Map<string, KubeObject[]>);
  }
  return groups;
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
  const configMaps = byNamespace(snapshot.configMaps);
  for (const ref of flagged) {
    if (typeof ref !== 'string') continue;
    namespacesNamedIn(ref, namespaces);
    const [namespace, name] = ref.split('/');
    const configMap = configMaps.get(namespace ?? '')?.find((c) => c.metadata?.name === name);
    for (const value of Object.values(configMap?.data ?? {})) namespacesNamedIn(value, namespaces);
  }
  const pick = <T extends KubeObject>(list: readonly T[]): T[] => {
    const groups = byNamespace(list);
    const out: T[] = [];
    for (const namespace of namespaces) {
      const group = groups.get(namespace);
      if (group !== undefined) for (const object of group) out.push(object);
    }
    return out;
  };
  const named = <T extends KubeObject>(groups: Map<string, T[]>): T[] => {
    const out: T[] = [];
    for (const key of services) {
      const group = groups.get(key);
      if (group !== undefined) for (const object of group) out.push(object);
    }
    return out;
  };
  return {
    ingresses,
    ingressClasses: snapshot.ingressClasses,
    services: named(byKey(snapshot.services, (service) => service.metadata?.name ?? '')),
    endpointSlices: named(
      byKey(snapshot.endpointSlices, (slice) => slice.metadata?.labels?.[SERVICE_NAME_LABEL] ?? ''),
    ),
    secrets: pick(snapshot.secrets),
    configMaps: pick(snapshot.configMaps),
  };
}
