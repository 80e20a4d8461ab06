// One copy of the strings a decoded model repeats most. v8.deserialize makes a new string for every
// string it reads, so a model whose 60,000 routes each say `pathType: 'Prefix'` holds 60,000 copies
// of "Prefix" in every thread. At 10,000 Ingresses (bench/thread-heap.ts) a model has ~580,000
// strings of which ~230,000 differ; the per-route and per-upstream fields below hold ~320,000 of
// the ~350,000 repeats (path types, paths, backend types, namespaces, load-balance names, service
// ports). Only those are visited: a walk of the whole model (every annotation object) cost more CPU
// than its deserialisation, this costs ~15% of it (55-75 ms of CPU against 350-510 ms at 10,000
// Ingresses, on a busy machine), once per whole model: a delta's few new objects keep their own. The main thread's model needs none of
// this: its strings come from the cluster's objects, which the build already shares.

import type { Model, ObjectRef, Route, Upstream } from '../../model/index.ts';

/** The first string equal to each string given: one copy per distinct value. */
class SharedStrings {
  readonly #first = new Map<string, string>();

  of(value: string): string {
    const known = this.#first.get(value);
    if (known !== undefined) return known;
    this.#first.set(value, value);
    return value;
  }

  ref(ref: ObjectRef | null): void {
    if (ref !== null) ref.namespace = this.of(ref.namespace);
  }

  route(route: Route): void {
    route.path = this.of(route.path);
    route.pathType = this.of(route.pathType) as Route['pathType'];
    route.pathTypeAsWritten = this.of(route.pathTypeAsWritten) as Route['pathTypeAsWritten'];
    route.backend.type = this.of(route.backend.type) as Route['backend']['type'];
    this.ref(route.ingress);
  }

  upstream(upstream: Upstream): void {
    upstream.loadBalance = this.of(upstream.loadBalance);
    upstream.service.namespace = this.of(upstream.service.namespace);
    upstream.service.port = this.of(upstream.service.port);
  }
}

/** Shares, in place, the repeated strings of the servers and upstreams of a decoded `model`; returns it. */
export function shareStrings(model: Model): Model {
  const strings = new SharedStrings();
  for (const server of [...model.servers, model.catchAll]) {
    strings.ref(server.ingress);
    strings.ref(server.defaultRoute.ingress);
    for (const route of server.routes) strings.route(route);
  }
  for (const name in model.upstreams) strings.upstream(model.upstreams[name] as Upstream);
  return model;
}
