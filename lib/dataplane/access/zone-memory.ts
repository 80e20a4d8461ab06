// Who holds the memory of the rate-limit zones, and how a data-plane thread gets it.
//
// A zone's key names the Ingress and its limits (`<namespace>/<name> rps <limit> <burst>`, `… rpm …`,
// `… conn <limit>`), so a zone keeps its state across changes while its Ingress's limits are
// unchanged (as NGINX keeps a zone across reloads) and starts afresh when they change. A ZoneMemory
// maps each key to the zone's SharedArrayBuffer (shared-zone.ts).
//
// One thread (worker-processes 1): the DataPlane owns a ZoneMemory (DataPlaneOptions.zoneMemory, else
// its own); each full compile asks it for the buffers of the zones it uses (allocating new keys) and
// then lets it forget the others.
//
// Several threads: the main thread owns the one ZoneMemory that counts. For each model it calls
// `buffersFor(model)`, which allocates the buffers of new keys and returns key → buffer for every zone
// of the model, and posts that map with the model; only once every thread has swapped to the model
// does it `retain` the model's keys (an apply that fails leaves the serving zones' buffers held, so a
// zone of the model still served keeps its counts)
// (postMessage shares a SharedArrayBuffer, it does not copy it). Each worker gives its DataPlane a
// ZoneMemory of its own (DataPlaneOptions.zoneMemory) and, before applying the model, `adopt`s the
// posted map, so its compile builds every zone over the main thread's buffer: all threads count in
// the same memory. A key the worker finds nothing for (it should not happen: buffersFor walks the
// same routes the compile does) gets a buffer of the worker's own, counting for that thread alone.

import type { LocationAnnotations, Model, ObjectRef, Server } from '../../model/index.ts';
import { allocateZoneBuffer } from './shared-zone.ts';

type RateLimitAnnotations = LocationAnnotations['rateLimit'];

/** The zone keys of an Ingress's limits, null for a limit that is off. */
export interface ZoneKeys {
  connections: string | null;
  rpm: string | null;
  rps: string | null;
}

export function zoneKeysOf(ingress: ObjectRef, limits: RateLimitAnnotations): ZoneKeys {
  const { rps, rpm, connections, burstMultiplier } = limits;
  const zone = `${ingress.namespace}/${ingress.name}`;
  return {
    connections: connections > 0 ? `${zone} conn ${connections}` : null,
    rpm: rpm > 0 ? `${zone} rpm ${rpm} ${rpm * burstMultiplier}` : null,
    rps: rps > 0 ? `${zone} rps ${rps} ${rps * burstMultiplier}` : null,
  };
}

/** Every zone key the routes of `model` use (a superset of what a compile builds). */
export function modelZoneKeys(model: Model): Set<string> {
  const keys = new Set<string>();
  const add = (ingress: ObjectRef | null, limits: RateLimitAnnotations): void => {
    if (ingress === null) return;
    const { connections, rpm, rps } = zoneKeysOf(ingress, limits);
    if (connections !== null) keys.add(connections);
    if (rpm !== null) keys.add(rpm);
    if (rps !== null) keys.add(rps);
  };
  const visit = (server: Server): void => {
    for (const route of server.routes) add(route.ingress, route.annotations.rateLimit);
    add(server.defaultRoute.ingress, server.defaultRoute.annotations.rateLimit);
  };
  visit(model.catchAll);
  for (const server of model.servers) visit(server);
  return keys;
}

export class ZoneMemory {
  readonly #buffers = new Map<string, SharedArrayBuffer>();

  /** zones held */
  get size(): number {
    return this.#buffers.size;
  }

  /** The buffer of zone `key`: the one held, else `current` (a zone's existing buffer), else a new one. */
  bufferOf(key: string, current?: SharedArrayBuffer): SharedArrayBuffer {
    let buffer = this.#buffers.get(key);
    if (buffer === undefined) {
      buffer = current ?? allocateZoneBuffer();
      this.#buffers.set(key, buffer);
    }
    return buffer;
  }

  /** Buffers the owning thread allocated (posted with a model): used from now on for their keys. */
  adopt(buffers: ReadonlyMap<string, SharedArrayBuffer>): void {
    for (const [key, buffer] of buffers) this.#buffers.set(key, buffer);
  }

  /** After a compile: forget the zones not in `keys`. */
  retain(keys: Iterable<string>): void {
    const kept = new Set(keys);
    for (const key of this.#buffers.keys()) if (!kept.has(key)) this.#buffers.delete(key);
  }

  /**
   * The owner's side: the buffer of every zone `model` uses (see the file's header); post it with the
   * model, and `retain` its keys once the model is applied.
   */
  buffersFor(model: Model): Map<string, SharedArrayBuffer> {
    const keys = modelZoneKeys(model);
    const buffers = new Map<string, SharedArrayBuffer>();
    for (const key of keys) buffers.set(key, this.bufferOf(key));
    return buffers;
  }
}
