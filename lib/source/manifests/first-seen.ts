// Ingresses, Gateways and HTTPRoutes without metadata.creationTimestamp get the time their
// namespace/name was first seen, kept while such an object exists (also across edits and moves
// between files), so oldest-wins is stable; one removed and added later is new. (Only these kinds
// are ordered by age; other kinds are left as written, which spares 10,000s of object copies.)

import type { KubeObject } from '../../model/k8s.ts';
import type { StoreKind } from '../../store/store.ts';
import type { Entry } from './parse.ts';

/** An object as handed to the store. */
export interface Delivered {
  kind: StoreKind;
  object: KubeObject;
}

export interface FirstSeen {
  /** The winning entries as the store gets them; the same object for an entry that did not change. */
  objects(winners: ReadonlyMap<string, Entry>): Map<string, Delivered>;
}

/** The kinds the build orders by age (oldest wins). */
const AGED: ReadonlySet<StoreKind> = new Set(['Ingress', 'Gateway', 'HTTPRoute']);

function rfc3339Seconds(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function createFirstSeen(now: () => Date): FirstSeen {
  /** key → creationTimestamp given when first seen. */
  let firstSeen = new Map<string, string>();
  /** The filled-in object per key, reused while its source object and timestamp stay. */
  let filled = new Map<string, { source: KubeObject; timestamp: string; out: KubeObject }>();

  return {
    objects(winners) {
      const stamp = rfc3339Seconds(now());
      const nextFirstSeen = new Map<string, string>();
      const nextFilled = new Map<string, { source: KubeObject; timestamp: string; out: KubeObject }>();
      const objects = new Map<string, Delivered>();
      for (const [key, { kind, object: source }] of winners) {
        if (!AGED.has(kind)) {
          objects.set(key, { kind, object: source });
          continue;
        }
        const timestamp = firstSeen.get(key) ?? stamp;
        nextFirstSeen.set(key, timestamp);
        let object = source;
        if (typeof source.metadata?.creationTimestamp !== 'string') {
          const cached = filled.get(key);
          if (cached && cached.source === source && cached.timestamp === timestamp) object = cached.out;
          else object = { ...source, metadata: { ...source.metadata, creationTimestamp: timestamp } };
          nextFilled.set(key, { source, timestamp, out: object });
        }
        objects.set(key, { kind, object });
      }
      firstSeen = nextFirstSeen;
      filled = nextFilled;
      return objects;
    },
  };
}
