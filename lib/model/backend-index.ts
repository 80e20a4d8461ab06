// The snapshot's Services by namespace and name, and its EndpointSlices by the Service they belong
// to: what every backend lookup of a build reads. Indexing 10,000 Services and 30,000 slices is a
// tenth of a build, so the index is kept from build to build (BackendIndexCache) and patched with
// what differs between the last lists and these: the store's lists keep an object replaced in its
// place and append new ones, so a change is a short walk. The patched index equals the index built
// from scratch for any pair of lists; lists that differ in other ways are indexed again.

import { type EndpointSlice, SERVICE_NAME_LABEL, type Service } from './k8s.ts';

/** namespace → name → value: lookups without building `namespace/name` strings (hot at 10k+ objects). */
export class ByNamespace<T> {
  readonly #namespaces = new Map<string, Map<string, T>>();
  // consecutive lookups mostly share a namespace (every path of one Ingress)
  #lastNamespace: string | undefined;
  #lastNames: Map<string, T> | undefined;

  get(namespace: string, name: string): T | undefined {
    if (namespace !== this.#lastNamespace) {
      this.#lastNamespace = namespace;
      this.#lastNames = this.#namespaces.get(namespace);
    }
    return this.#lastNames?.get(name);
  }

  set(namespace: string, name: string, value: T): void {
    let names = this.#namespaces.get(namespace);
    if (names === undefined) {
      names = new Map();
      this.#namespaces.set(namespace, names);
      if (namespace === this.#lastNamespace) this.#lastNames = names;
    }
    names.set(name, value);
  }

  delete(namespace: string, name: string): void {
    this.#namespaces.get(namespace)?.delete(name);
  }
}

export interface BackendIndex {
  readonly services: ByNamespace<Service>;
  /** the slices of each Service, in list order */
  readonly slices: ByNamespace<EndpointSlice[]>;
}

/** `namespace` and `name` of an object whose metadata has both as strings. */
function namesOf(namespace: unknown, name: unknown): [string, string] | null {
  return typeof namespace === 'string' && typeof name === 'string' ? [namespace, name] : null;
}
const serviceNames = (service: Service) => namesOf(service.metadata?.namespace, service.metadata?.name);
const sliceOwner = (slice: EndpointSlice) =>
  namesOf(slice.metadata?.namespace, slice.metadata?.labels?.[SERVICE_NAME_LABEL]);
const sameNames = (a: [string, string] | null, b: [string, string] | null): boolean =>
  a === null ? b === null : b !== null && a[0] === b[0] && a[1] === b[1];

interface ListChanges<T> {
  removed: T[];
  /** [previous, next] at the same place */
  replaced: Array<[T, T]>;
  appended: readonly T[];
}

/**
 * `next` as `previous` with items replaced in their place (same key), removed, and appended; null
 * when more than `limit` items differ. Every item of `next` is then either at its place in
 * `previous`'s order or in `appended`, which is what makes a patch equal a rebuild.
 */
function listChanges<T>(
  previous: readonly T[],
  next: readonly T[],
  limit: number,
  sameKey: (a: T, b: T) => boolean,
): ListChanges<T> | null {
  const removed: T[] = [];
  const replaced: Array<[T, T]> = [];
  let i = 0;
  let j = 0;
  while (i < previous.length && j < next.length) {
    const before = previous[i] as T;
    const after = next[j] as T;
    if (before === after) {
      i++;
      j++;
      continue;
    }
    if (removed.length + replaced.length >= limit) return null;
    if (sameKey(before, after)) {
      replaced.push([before, after]);
      j++;
    } else {
      removed.push(before);
    }
    i++;
  }
  const appended = next.slice(j);
  if (removed.length + replaced.length + (previous.length - i) + appended.length > limit) return null;
  for (; i < previous.length; i++) removed.push(previous[i] as T);
  return { removed, replaced, appended };
}

function indexServices(services: readonly Service[]): { index: ByNamespace<Service>; duplicates: boolean } {
  const index = new ByNamespace<Service>();
  let duplicates = false;
  for (const service of services) {
    const names = serviceNames(service);
    if (names === null) continue;
    if (index.get(names[0], names[1]) !== undefined) duplicates = true;
    index.set(names[0], names[1], service);
  }
  return { index, duplicates };
}

function indexSlices(slices: readonly EndpointSlice[]): ByNamespace<EndpointSlice[]> {
  const index = new ByNamespace<EndpointSlice[]>();
  for (const slice of slices) {
    const owner = sliceOwner(slice);
    if (owner === null) continue;
    const list = index.get(owner[0], owner[1]);
    if (list === undefined) index.set(owner[0], owner[1], [slice]);
    else list.push(slice);
  }
  return index;
}

/** Patched in place; false when it cannot be (the caller indexes again). */
function patchServices(index: ByNamespace<Service>, changes: ListChanges<Service>): boolean {
  for (const removed of changes.removed) {
    const names = serviceNames(removed);
    if (names === null) continue;
    if (index.get(names[0], names[1]) !== removed) return false;
    index.delete(names[0], names[1]);
  }
  for (const [before, after] of changes.replaced) {
    const names = serviceNames(after);
    if (names === null || index.get(names[0], names[1]) !== before) return false;
    index.set(names[0], names[1], after);
  }
  for (const added of changes.appended) {
    const names = serviceNames(added);
    // two Services with one name: the later wins, which only a full index can tell after a removal
    if (names === null || index.get(names[0], names[1]) !== undefined) return false;
    index.set(names[0], names[1], added);
  }
  return true;
}

/** Patched with new lists for the Services whose slices changed (a list once handed out never
 * changes: the upstream cache compares them); false when it cannot be. */
function patchSlices(index: ByNamespace<EndpointSlice[]>, changes: ListChanges<EndpointSlice>): boolean {
  const edit = (owner: [string, string], change: (list: EndpointSlice[]) => boolean): boolean => {
    const list = [...(index.get(owner[0], owner[1]) ?? [])];
    if (!change(list)) return false;
    index.set(owner[0], owner[1], list);
    return true;
  };
  const once = (list: EndpointSlice[], slice: EndpointSlice): number => {
    const at = list.indexOf(slice);
    return at >= 0 && list.lastIndexOf(slice) === at ? at : -1;
  };
  for (const removed of changes.removed) {
    const owner = sliceOwner(removed);
    if (owner === null) continue;
    const done = edit(owner, (list) => {
      const at = once(list, removed);
      if (at >= 0) list.splice(at, 1);
      return at >= 0;
    });
    if (!done) return false;
  }
  for (const [before, after] of changes.replaced) {
    const owner = sliceOwner(before);
    if (!sameNames(owner, sliceOwner(after))) return false;
    if (owner === null) continue;
    const done = edit(owner, (list) => {
      const at = once(list, before);
      if (at >= 0) list[at] = after;
      return at >= 0;
    });
    if (!done) return false;
  }
  for (const added of changes.appended) {
    const owner = sliceOwner(added);
    if (owner !== null) edit(owner, (list) => list.push(added) > 0);
  }
  return true;
}

const sameServiceKey = (a: Service, b: Service): boolean => sameNames(serviceNames(a), serviceNames(b));
const sameSliceKey = (a: EndpointSlice, b: EndpointSlice): boolean =>
  sameNames(
    namesOf(a.metadata?.namespace, a.metadata?.name),
    namesOf(b.metadata?.namespace, b.metadata?.name),
  );
/** beyond this many changed objects, indexing again is about as cheap as patching */
const patchLimit = (length: number): number => Math.max(16, length >> 5);

/** The last lists indexed and their index, owned by the caller's BuildCaches. */
export class BackendIndexCache {
  #services: readonly Service[] = [];
  #serviceIndex: ByNamespace<Service> | null = null;
  #duplicateServices = false;
  #slices: readonly EndpointSlice[] = [];
  #sliceIndex: ByNamespace<EndpointSlice[]> | null = null;

  /** The index of these lists, patched from the last one where that is possible. */
  index(services: readonly Service[], slices: readonly EndpointSlice[]): BackendIndex {
    return { services: this.#indexServices(services), slices: this.#indexSlices(slices) };
  }

  #indexServices(services: readonly Service[]): ByNamespace<Service> {
    let index = this.#serviceIndex;
    if (index !== null && services === this.#services) return index;
    const changes =
      index === null || this.#duplicateServices
        ? null
        : listChanges(this.#services, services, patchLimit(services.length), sameServiceKey);
    if (index === null || changes === null || !patchServices(index, changes)) {
      const built = indexServices(services);
      index = built.index;
      this.#duplicateServices = built.duplicates;
    }
    this.#services = services;
    this.#serviceIndex = index;
    return index;
  }

  #indexSlices(slices: readonly EndpointSlice[]): ByNamespace<EndpointSlice[]> {
    let index = this.#sliceIndex;
    if (index !== null && slices === this.#slices) return index;
    const changes =
      index === null ? null : listChanges(this.#slices, slices, patchLimit(slices.length), sameSliceKey);
    if (index === null || changes === null || !patchSlices(index, changes)) index = indexSlices(slices);
    this.#slices = slices;
    this.#sliceIndex = index;
    return index;
  }
}
