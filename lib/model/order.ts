// The order in which Ingresses are considered; every "oldest wins" rule follows it.
// ingress-nginx: creationTimestamp ascending (second granularity), ties by "<ns>/<name>" descending.

import type { Ingress } from './k8s.ts';

/** Seconds since the epoch; a missing or unparsable timestamp counts as the oldest possible. */
export function creationSeconds(object: { metadata?: { creationTimestamp?: string } }): number {
  const stamp = object.metadata?.creationTimestamp;
  if (typeof stamp !== 'string') return 0;
  const ms = Date.parse(stamp);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

interface Sortable {
  seconds: number;
  key: string;
}

export function compareOldestFirst(a: Sortable, b: Sortable): number {
  if (a.seconds !== b.seconds) return a.seconds - b.seconds;
  if (a.key === b.key) return 0;
  return a.key > b.key ? -1 : 1;
}

/** A sorted copy: oldest first, ties broken as ingress-nginx breaks them. */
export function sortIngresses<T extends Ingress>(ingresses: readonly T[]): T[] {
  return ingresses
    .map((ingress) => ({
      ingress,
      seconds: creationSeconds(ingress),
      key: `${ingress.metadata?.namespace ?? ''}/${ingress.metadata?.name ?? ''}`,
    }))
    .sort(compareOldestFirst)
    .map((entry) => entry.ingress);
}

interface Ordered<T> extends Sortable {
  ingress: T;
}

/**
 * sortIngresses kept from build to build (BuildCaches.ingressOrder): the same Ingress objects as
 * last time are not sorted again, and a few replaced, added or removed are dropped from and inserted
 * into the last order. Two Ingresses with one namespace/name compare equal, and then the order of
 * the input decides: with such a pair the list is sorted in full.
 */
export class IngressOrder<T extends Ingress = Ingress> {
  #sorted: Ordered<T>[] = [];
  #members = new Set<T>();

  sort(ingresses: readonly T[]): T[] {
    const next = new Set(ingresses);
    const added: T[] = [];
    for (const ingress of next) if (!this.#members.has(ingress)) added.push(ingress);
    let sorted: Ordered<T>[] | null = null;
    if (next.size === ingresses.length && added.length <= 64) {
      sorted = this.#sorted.filter((entry) => next.has(entry.ingress));
      for (const ingress of added) {
        const entry = ordered(ingress);
        let low = 0;
        let high = sorted.length;
        while (low < high) {
          const middle = (low + high) >>> 1;
          const order = compareOldestFirst(sorted[middle] as Ordered<T>, entry);
          if (order === 0) break;
          if (order < 0) low = middle + 1;
          else high = middle;
        }
        if (low < high) {
          sorted = null;
          break;
        }
        sorted.splice(low, 0, entry);
      }
    }
    // a tie between neighbours (one namespace/name twice) leaves the order to the input
    if (sorted === null || hasTie(sorted)) sorted = ingresses.map(ordered).sort(compareOldestFirst);
    this.#sorted = sorted;
    this.#members = next;
    return sorted.map((entry) => entry.ingress);
  }
}

function ordered<T extends Ingress>(ingress: T): Ordered<T> {
  return {
    ingress,
    seconds: creationSeconds(ingress),
    key: `${ingress.metadata?.namespace ?? ''}/${ingress.metadata?.name ?? ''}`,
  };
}

function hasTie(sorted: readonly Sortable[]): boolean {
  for (let i = 1; i < sorted.length; i++) {
    if (compareOldestFirst(sorted[i - 1] as Sortable, sorted[i] as Sortable) === 0) return true;
  }
  return false;
}
