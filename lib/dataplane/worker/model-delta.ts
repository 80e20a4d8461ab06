// What a data-plane thread is sent for a change instead of the whole model: the servers, upstreams
// and certificates whose content differs from the model the thread already serves (named by the
// model's content hashes), the keys that went away, and the small global parts. The thread rebuilds
// the full model from the one it holds plus the delta (`patchModel`), sharing every unchanged object
// with it, and compiles that as usual. At 10,000 Ingresses the whole model is ~30 MB of serialised
// objects that each thread would decode on the event loop that serves traffic; a one-Ingress change
// is a few servers and upstreams.
//
// Only content hashes and the order of keys decide what is sent, so previous + delta deep-equals the
// model it was made from (test/dataplane/worker/model-delta.test.ts checks it over random changes).

import type { ErrorCode } from '../../errors.ts';
import type { Certificate, ContentHashes, Model, Server, Upstream } from '../../model/index.ts';

/** Entries of one keyed part of the model that changed, and the keys that left it. */
export interface PartDelta<V> {
  /** added or changed entries, by key */
  changed: Array<[string, V]>;
  removed: string[];
  /**
   * every key in the new model's order; null when the rule of `keyOrder` gives that order (kept
   * keys in their order, added ones sorted in for servers, appended for records)
   */
  order: string[] | null;
}

export interface ServerEntry {
  server: Server;
  hash: string;
}

export interface UpstreamEntry {
  upstream: Upstream;
  hash: string;
}

export interface ModelDelta {
  /** the hash of the model this delta applies to */
  base: string;
  hash: string;
  routesHash: string;
  servers: PartDelta<ServerEntry>;
  /** null: the catch-all server is unchanged */
  catchAll: ServerEntry | null;
  upstreams: PartDelta<UpstreamEntry>;
  certificates: PartDelta<Certificate>;
  defaultCertificate: string | null;
  defaultBackend: string | null;
  /** null: the ConfigMap's settings are unchanged (they are ~4 KB serialised) */
  config: Model['config'] | null;
  allUpstreams: string;
  endpoints: string;
}

/** The thread holds another model than the delta was made for: the sender must send the whole model. */
export class DeltaBaseError extends Error {
  readonly code: ErrorCode = 'DATAPLANE_DELTA_BASE_MISMATCH';
}

type Hashed = Model & { contentHashes: ContentHashes };

const hasHashes = (model: Model): model is Hashed => model.contentHashes !== undefined;

/**
 * The delta from `previous` to `next`, or null when one of them carries no content hashes (a model
 * made by hand): then only the whole model says what changed.
 */
export function diffModel(previous: Model, next: Model): ModelDelta | null {
  if (!hasHashes(previous) || !hasHashes(next)) return null;
  const before = previous.contentHashes;
  const after = next.contentHashes;
  const previousServers = serverEntries(previous);
  const nextServers = serverEntries(next);
  return {
    base: previous.hash,
    hash: next.hash,
    routesHash: next.routesHash,
    servers: diffPart(previousServers, nextServers, (a, b) => a.hash === b.hash, true),
    catchAll: before.catchAll === after.catchAll ? null : { server: next.catchAll, hash: after.catchAll },
    upstreams: diffPart(
      upstreamEntries(previous),
      upstreamEntries(next),
      (a, b) => a.hash === b.hash && sameEndpoints(a.upstream.endpoints, b.upstream.endpoints),
      false,
    ),
    certificates: diffPart(
      new Map(Object.entries(previous.certificates)),
      new Map(Object.entries(next.certificates)),
      sameCertificate,
      false,
    ),
    defaultCertificate: next.defaultCertificate,
    defaultBackend: next.defaultBackend,
    config: JSON.stringify(previous.config) === JSON.stringify(next.config) ? null : next.config,
    allUpstreams: after.allUpstreams,
    endpoints: after.endpoints,
  };
}

/**
 * `previous` with `delta` applied: a new model object that shares every unchanged server, upstream
 * and certificate with `previous` (neither is modified). Throws DeltaBaseError when `previous` is
 * not the model the delta was made from.
 */
export function patchModel(previous: Model | null, delta: ModelDelta): Model {
  if (previous === null || previous.hash !== delta.base || !hasHashes(previous)) {
    throw new DeltaBaseError(
      `the delta applies to model ${delta.base}, this thread serves ${previous?.hash ?? 'none'}`,
    );
  }
  const servers = patchPart(serverEntries(previous), delta.servers, true);
  const upstreams = patchPart(upstreamEntries(previous), delta.upstreams, false);
  const certificates = patchPart(new Map(Object.entries(previous.certificates)), delta.certificates, false);
  const upstreamHashes = patchUpstreamHashes(previous.contentHashes.upstreams, delta.upstreams);
  const catchAll = delta.catchAll ?? { server: previous.catchAll, hash: previous.contentHashes.catchAll };
  return {
    servers: servers.map(([, entry]) => entry.server),
    catchAll: catchAll.server,
    upstreams: Object.fromEntries(upstreams.map(([name, entry]) => [name, entry.upstream])),
    certificates: Object.fromEntries(certificates),
    defaultCertificate: delta.defaultCertificate,
    defaultBackend: delta.defaultBackend,
    config: delta.config ?? previous.config,
    hash: delta.hash,
    routesHash: delta.routesHash,
    contentHashes: {
      servers: servers.map(([, entry]) => entry.hash),
      catchAll: catchAll.hash,
      upstreams: upstreamHashes,
      allUpstreams: delta.allUpstreams,
      endpoints: delta.endpoints,
    },
  };
}

function serverEntries(model: Hashed): Map<string, ServerEntry> {
  const hashes = model.contentHashes.servers;
  const entries = new Map<string, ServerEntry>();
  model.servers.forEach((server, index) => {
    entries.set(server.hostname, { server, hash: hashes[index] ?? '' });
  });
  return entries;
}

function upstreamEntries(model: Hashed): Map<string, UpstreamEntry> {
  const hashes = model.contentHashes.upstreams;
  const entries = new Map<string, UpstreamEntry>();
  for (const [name, upstream] of Object.entries(model.upstreams)) {
    entries.set(name, { upstream, hash: hashes[name] ?? '' });
  }
  return entries;
}

function diffPart<V>(
  previous: ReadonlyMap<string, V>,
  next: ReadonlyMap<string, V>,
  same: (a: V, b: V) => boolean,
  sorted: boolean,
): PartDelta<V> {
  const changed: Array<[string, V]> = [];
  const added: string[] = [];
  for (const [key, value] of next) {
    const before = previous.get(key);
    if (before === undefined) added.push(key);
    if (before === undefined || !same(before, value)) changed.push([key, value]);
  }
  const removed: string[] = [];
  for (const key of previous.keys()) if (!next.has(key)) removed.push(key);
  const derived = keyOrder([...previous.keys()], new Set(removed), added, sorted);
  const order = sameKeys(derived, next.keys()) ? null : [...next.keys()];
  return { changed, removed, order };
}

function patchPart<V>(
  previous: ReadonlyMap<string, V>,
  delta: PartDelta<V>,
  sorted: boolean,
): Array<[string, V]> {
  const changed = new Map(delta.changed);
  const added = delta.changed.filter(([key]) => !previous.has(key)).map(([key]) => key);
  const order = delta.order ?? keyOrder([...previous.keys()], new Set(delta.removed), added, sorted);
  return order.map((key) => {
    const value = changed.get(key) ?? previous.get(key);
    if (value === undefined) throw new DeltaBaseError(`the delta names ${key}, which neither model holds`);
    return [key, value];
  });
}

/**
 * The keys of a part after a change, by the rule both sides apply: kept keys in their order, and the
 * added ones merged in by code unit order (servers, which the build sorts by hostname) or appended
 * in the order given (records, whose order is that of first use: the delta then carries the order
 * whenever the rule does not give it).
 */
export function keyOrder(
  previous: readonly string[],
  removed: ReadonlySet<string>,
  added: readonly string[],
  sorted: boolean,
): string[] {
  const kept = removed.size === 0 ? [...previous] : previous.filter((key) => !removed.has(key));
  if (added.length === 0) return kept;
  if (!sorted) return [...kept, ...added];
  const fresh = [...added].sort();
  const merged: string[] = [];
  let i = 0;
  for (const key of kept) {
    while (i < fresh.length && (fresh[i] as string) < key) merged.push(fresh[i++] as string);
    merged.push(key);
  }
  while (i < fresh.length) merged.push(fresh[i++] as string);
  return merged;
}

function sameKeys(order: readonly string[], keys: Iterable<string>): boolean {
  let index = 0;
  for (const key of keys) if (order[index++] !== key) return false;
  return index === order.length;
}

function sameEndpoints(a: Upstream['endpoints'], b: Upstream['endpoints']): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Upstream['endpoints'][number];
    const y = b[i] as Upstream['endpoints'][number];
    if (x.address !== y.address || x.port !== y.port) return false;
  }
  return true;
}

function sameCertificate(a: Certificate, b: Certificate): boolean {
  return (
    a.sha256 === b.sha256 &&
    a.notAfter === b.notAfter &&
    a.dnsNames.length === b.dnsNames.length &&
    a.dnsNames.every((name, index) => name === b.dnsNames[index])
  );
}

/** The upstreams' content hashes after the change, keys in name order as the model's fingerprint has them. */
function patchUpstreamHashes(
  previous: Readonly<Record<string, string>>,
  delta: PartDelta<UpstreamEntry>,
): Record<string, string> {
  const removed = new Set(delta.removed);
  const hashes: Record<string, string> = {};
  for (const [name, hash] of Object.entries(previous)) if (!removed.has(name)) hashes[name] = hash;
  let added = false;
  for (const [name, { hash }] of delta.changed) {
    if (!(name in hashes)) added = true;
    hashes[name] = hash;
  }
  if (!added) return hashes;
  const sorted: Record<string, string> = {};
  for (const name of Object.keys(hashes).sort()) sorted[name] = hashes[name] as string;
  return sorted;
}
