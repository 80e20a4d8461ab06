// What resolving each upstream found in the last build (endpoints from the Service's slices, or the
// problem), kept while the Service object and its slices stay the same objects; and the order of the
// upstream names, kept while the set of names stays. A one-Ingress change then resolves the
// upstreams of that Ingress and sorts nothing. --disable-svc-external-name is the memo's context.

import type { FoundUpstream, ServiceBackendRef } from './backends.ts';
import { BuildMemo, SortedNames } from './build-memo.ts';
import type { EndpointSlice, Service } from './k8s.ts';

interface Kept {
  ref: ServiceBackendRef;
  service: Service | undefined;
  slices: readonly EndpointSlice[] | undefined;
  serviceUpstream: boolean;
  found: FoundUpstream;
}

const sameList = <T>(a: readonly T[] | undefined, b: readonly T[] | undefined): boolean => {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

export class UpstreamCache extends BuildMemo<string, Kept> {
  readonly #order = new SortedNames();

  /** `find()`'s result for these inputs: the last build's when they are the same objects. */
  found(
    name: string,
    ref: ServiceBackendRef,
    service: Service | undefined,
    slices: readonly EndpointSlice[] | undefined,
    serviceUpstream: boolean,
    find: () => FoundUpstream,
  ): FoundUpstream {
    const kept = this.get(name);
    if (
      kept !== undefined &&
      kept.service === service &&
      kept.serviceUpstream === serviceUpstream &&
      kept.ref.namespace === ref.namespace &&
      kept.ref.service === ref.service &&
      kept.ref.port === ref.port &&
      sameList(kept.slices, slices)
    ) {
      return kept.found;
    }
    const found = find();
    // a copy of the list: the index hands out new lists when slices change, but a caller's may not
    this.set(name, { ref: { ...ref }, service, slices: slices && [...slices], serviceUpstream, found });
    return found;
  }

  /** The names in sorted order, kept from the last build's. */
  order(names: ReadonlyMap<string, unknown>): readonly string[] {
    return this.#order.of(names);
  }
}
