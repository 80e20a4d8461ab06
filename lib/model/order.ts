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
