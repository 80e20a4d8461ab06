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

import type { Ingress, IngressClass, ModelOptions } from '../model/index.ts';
import { isOurIngress, ownedClassNames } from '../model/ingress-class.ts';
import { listChanges } from './list-changes.ts';

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
      const { removed, added } = listChanges(list, next);
      for (const ingress of removed) {
        const own = links.get(ingress);
        if (own === undefined) continue;
        links.delete(ingress);
        change(ingress, own, remove);
        catchAll.delete(ingress);
      }
      for (const ingress of added) if (!links.has(ingress)) insert(ingress);
      return indexFor(next);
    },
  });
  return indexFor(ingresses);
}
