// What a model is known to change over another, when whoever made it knows: a data-plane thread
// rebuilds its model from a delta that names every upstream whose content or endpoints changed.
// An endpoints-only change then updates those balancers alone, where without it the compile looks
// at every balancer (30,000 at 10,000 Ingresses) on the thread that serves, in the commit's task.
// Kept beside the model, not in it: the model stays plain data, and a model nobody noted is
// compiled as before.

import type { Model } from '../../model/index.ts';

// the base by its hash, not the object: a model holding its base would keep every model before it alive
const known = new WeakMap<Model, { base: string; upstreams: readonly string[] }>();

/** `model` differs from `base` in these upstreams only (changed, added or removed), endpoints included. */
export function noteChangedUpstreams(model: Model, base: Model, upstreams: readonly string[]): void {
  known.set(model, { base: base.hash, upstreams });
}

/** The upstreams `model` changes over `base` (or a model of the same content), or null when nobody noted them. */
export function changedUpstreamsOver(model: Model, base: Model): readonly string[] | null {
  const noted = known.get(model);
  return noted !== undefined && noted.base === base.hash ? noted.upstreams : null;
}
