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
// Both sides run once per change over 10,000 servers and upstreams, so they walk arrays and look
// keys up; they do not turn the records into entry lists (Object.entries of a 10,000-key record
// alone costs tens of milliseconds).

import type { ErrorCode } from '../../errors.ts';
import type { Certificate, ContentHashes, Model, Server, Upstream } from '../../model/index.ts';
import { noteChangedUpstreams } from '../routing/model-changes.ts';

/**
 * The keys of a part in their new order, as runs of the previous keys ([start, length]: that many
 * keys from position `start` of the previous order) and keys of their own (added ones). A change
 * moves a few keys at most, so this is a handful of entries where the keys themselves are 10,000
 * names. Every part of a built model is sorted by name, so keys move only when one is added or removed.
 */
export type KeyOrder = Array<string | [number, number]>;

/** Entries of one keyed part of the model that changed, and the keys that left it. */
export interface PartDelta<V> {
  /** added or changed entries, by key */
  changed: Array<[string, V]>;
  removed: string[];
  /** the keys in the new model's order; null: the same keys as before, in the same order */
  order: KeyOrder | null;
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
  /** the TCP and UDP services: a few entries, sent whole */
  streams: Model['streams'];
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
  return {
    base: previous.hash,
    hash: next.hash,
    routesHash: next.routesHash,
    servers: diffServers(previous, next),
    catchAll: before.catchAll === after.catchAll ? null : { server: next.catchAll, hash: after.catchAll },
    // equal digests of every upstream's content (names included) and of every endpoint: nothing to
    // look for among 30,000 upstreams (and the build sorts them by name: the same order)
    upstreams:
      before.allUpstreams === after.allUpstreams && before.endpoints === after.endpoints
        ? { changed: [], removed: [], order: null }
        : diffRecord(
            previous.upstreams,
            next.upstreams,
            (name, a, b) =>
              before.upstreams[name] === after.upstreams[name] && sameEndpoints(a.endpoints, b.endpoints),
            (name, upstream) => ({ upstream, hash: after.upstreams[name] ?? '' }),
          ),
    certificates: diffRecord(
      previous.certificates,
      next.certificates,
      (_, a, b) => sameCertificate(a, b),
      (_, certificate) => certificate,
    ),
    defaultCertificate: next.defaultCertificate,
    defaultBackend: next.defaultBackend,
    config: JSON.stringify(previous.config) === JSON.stringify(next.config) ? null : next.config,
    streams: next.streams,
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
  const before = previous.contentHashes;
  const servers = patchServers(previous, delta.servers);
  const upstreams = patchRecord(previous.upstreams, delta.upstreams, (entry) => entry.upstream);
  const catchAll = delta.catchAll ?? { server: previous.catchAll, hash: before.catchAll };
  const model: Model = {
    servers: servers.servers,
    catchAll: catchAll.server,
    upstreams,
    certificates: patchRecord(previous.certificates, delta.certificates, (certificate) => certificate),
    defaultCertificate: delta.defaultCertificate,
    defaultBackend: delta.defaultBackend,
    config: delta.config ?? previous.config,
    ...(delta.streams === undefined ? {} : { streams: delta.streams }),
    hash: delta.hash,
    routesHash: delta.routesHash,
    contentHashes: {
      servers: servers.hashes,
      catchAll: catchAll.hash,
      // equal digests of all upstream hashes (names included): the very same record, shared
      upstreams:
        delta.allUpstreams === before.allUpstreams
          ? before.upstreams
          : patchUpstreamHashes(before.upstreams, upstreams, delta.upstreams),
      allUpstreams: delta.allUpstreams,
      endpoints: delta.endpoints,
    },
  };
  // the delta names every upstream whose content or endpoints changed: the compile of an
  // endpoints-only change looks at those balancers alone
  const upstreamsChanged = delta.upstreams.changed.map(([name]) => name);
  noteChangedUpstreams(model, previous, [...upstreamsChanged, ...delta.upstreams.removed]);
  return model;
}

/**
 * Servers are an array sorted by hostname, their hashes a parallel one: both models are walked side
 * by side (string compares, no map of 20,000 positions), the kept servers becoming runs.
 */
function diffServers(previous: Hashed, next: Hashed): PartDelta<ServerEntry> {
  const before = previous.servers;
  const beforeHashes = previous.contentHashes.servers;
  const after = next.contentHashes.servers;
  const changed: Array<[string, ServerEntry]> = [];
  const removed: string[] = [];
  const order: KeyOrder = [];
  let run: [number, number] | null = null;
  let j = 0;
  let last = '';
  for (let i = 0; i < next.servers.length; i++) {
    const server = next.servers[i] as Server;
    const hostname = server.hostname;
    // a model made otherwise than by the build may not be sorted: then positions say it
    if (i > 0 && !(last < hostname)) return diffServersByPosition(previous, next);
    last = hostname;
    while (j < before.length && (before[j] as Server).hostname < hostname)
      removed.push((before[j++] as Server).hostname);
    const hash = after[i] ?? '';
    if (j < before.length && (before[j] as Server).hostname === hostname) {
      if (beforeHashes[j] !== hash) changed.push([hostname, { server, hash }]);
      if (run !== null && run[0] + run[1] === j) run[1]++;
      else {
        run = [j, 1];
        order.push(run);
      }
      j++;
    } else {
      changed.push([hostname, { server, hash }]);
      order.push(hostname);
      run = null;
    }
  }
  while (j < before.length) removed.push((before[j++] as Server).hostname);
  return { changed, removed, order };
}

/** diffServers for servers in any order: by a map of the previous positions. */
function diffServersByPosition(previous: Hashed, next: Hashed): PartDelta<ServerEntry> {
  const position = new Map<string, number>();
  previous.servers.forEach((server, index) => {
    position.set(server.hostname, index);
  });
  const before = previous.contentHashes.servers;
  const after = next.contentHashes.servers;
  const changed: Array<[string, ServerEntry]> = [];
  let kept = 0;
  next.servers.forEach((server, index) => {
    const at = position.get(server.hostname);
    if (at !== undefined) kept++;
    const hash = after[index] ?? '';
    if (at === undefined || before[at] !== hash) changed.push([server.hostname, { server, hash }]);
  });
  let removed: string[] = [];
  if (kept !== previous.servers.length) {
    const now = new Set(next.servers.map((server) => server.hostname));
    removed = previous.servers.filter((server) => !now.has(server.hostname)).map((server) => server.hostname);
  }
  return {
    changed,
    removed,
    order: orderOf(
      position,
      next.servers.map((server) => server.hostname),
    ),
  };
}

/**
 * The servers and their hashes after the change: the runs copied as they are, then each changed
 * server put in its place (found by the order: a changed kept server sits inside a run).
 */
function patchServers(
  previous: Hashed,
  delta: PartDelta<ServerEntry>,
): { servers: Server[]; hashes: string[] } {
  const before = previous.contentHashes.servers;
  const changed = new Map(delta.changed);
  const servers: Server[] = [];
  const hashes: string[] = [];
  const all: KeyOrder = delta.order ?? [[0, previous.servers.length]];
  for (const part of all) {
    if (typeof part === 'string') {
      const entry = changed.get(part);
      if (entry === undefined)
        throw new DeltaBaseError(`the delta names server ${part}, which neither model holds`);
      servers.push(entry.server);
      hashes.push(entry.hash);
      changed.delete(part);
      continue;
    }
    const [start, length] = part;
    if (start + length > previous.servers.length)
      throw new DeltaBaseError('the delta names servers the previous model does not hold');
    for (let index = start; index < start + length; index++) {
      servers.push(previous.servers[index] as Server);
      hashes.push(before[index] ?? '');
    }
  }
  // what is left changed in place: found by hostname among the previous servers it replaces
  for (const [hostname, entry] of changed) {
    const at = positionIn(servers, hostname);
    if (at < 0) throw new DeltaBaseError(`the delta names server ${hostname}, which neither model holds`);
    servers[at] = entry.server;
    hashes[at] = entry.hash;
  }
  return { servers, hashes };
}

/** The position of `hostname` in `servers` (sorted by hostname, or not: then a walk), or -1. */
function positionIn(servers: readonly Server[], hostname: string): number {
  let low = 0;
  let high = servers.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const name = (servers[middle] as Server).hostname;
    if (name === hostname) return middle;
    if (name < hostname) low = middle + 1;
    else high = middle - 1;
  }
  return servers.findIndex((server) => server.hostname === hostname);
}

function diffRecord<T, V>(
  previous: Readonly<Record<string, T>>,
  next: Readonly<Record<string, T>>,
  same: (key: string, a: T, b: T) => boolean,
  entry: (key: string, value: T) => V,
): PartDelta<V> {
  const changed: Array<[string, V]> = [];
  let kept = 0;
  for (const key in next) {
    const value = next[key] as T;
    const before = own(previous, key);
    if (before !== undefined) kept++;
    if (before === undefined || !same(key, before, value)) changed.push([key, entry(key, value)]);
  }
  const previousKeys = Object.keys(previous);
  const removed =
    kept === previousKeys.length ? [] : previousKeys.filter((key) => own(next, key) === undefined);
  const nextKeys = Object.keys(next);
  let order: KeyOrder | null = null;
  if (removed.length > 0 || nextKeys.length !== previousKeys.length || !sameList(previousKeys, nextKeys)) {
    const position = new Map<string, number>();
    previousKeys.forEach((key, index) => {
      position.set(key, index);
    });
    order = orderOf(position, nextKeys);
  }
  return { changed, removed, order };
}

function patchRecord<T, V>(
  previous: Readonly<Record<string, T>>,
  delta: PartDelta<V>,
  toValue: (entry: V) => T,
): Record<string, T> {
  // models are never modified: an unchanged record is shared rather than copied (10,000 keys)
  if (delta.order === null && delta.changed.length === 0) return previous;
  if (delta.order === null) {
    // same keys in the same order: a copy (keys keep their places), the changed ones overwritten
    const record = copyRecord(previous);
    for (const [key, entry] of delta.changed) record[key] = toValue(entry);
    return record;
  }
  const changed = new Map(delta.changed);
  const record: Record<string, T> = {};
  for (const key of keysOf(delta.order, Object.keys(previous))) {
    const entry = changed.get(key);
    const value = entry === undefined ? own(previous, key) : toValue(entry);
    if (value === undefined) throw new DeltaBaseError(`the delta names ${key}, which neither model holds`);
    record[key] = value;
  }
  return record;
}

/** `next` as runs of the previous keys (their positions in `position`) and keys of their own. */
export function orderOf(position: ReadonlyMap<string, number>, next: Iterable<string>): KeyOrder {
  const order: KeyOrder = [];
  let run: [number, number] | null = null;
  for (const key of next) {
    const at = position.get(key);
    if (at === undefined) {
      order.push(key);
      run = null;
    } else if (run !== null && run[0] + run[1] === at) {
      run[1]++;
    } else {
      run = [at, 1];
      order.push(run);
    }
  }
  return order;
}

/** The keys `order` stands for, over the previous keys. */
export function keysOf(order: KeyOrder, previous: readonly string[]): string[] {
  const keys: string[] = [];
  for (const part of order) {
    if (typeof part === 'string') keys.push(part);
    else for (let index = part[0]; index < part[0] + part[1]; index++) keys.push(previous[index] as string);
  }
  return keys;
}

/**
 * A copy of a record, keys in its order. A decoded 30,000-key record is a dictionary, and a loop over
 * its keys copies it in about half the time of Object.assign or a spread (~18 against ~42 ms).
 */
function copyRecord<T>(previous: Readonly<Record<string, T>>): Record<string, T> {
  const record: Record<string, T> = {};
  const keys = Object.keys(previous);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index] as string;
    record[key] = previous[key] as T;
  }
  return record;
}

/** A record's own value of `key` (never one of Object.prototype's). */
function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return a.length === b.length;
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

/**
 * The upstreams' content hashes after the change, keys in name order as the model's fingerprint
 * writes them: a copy with the changed ones overwritten while the names stay the same, else rebuilt.
 */
function patchUpstreamHashes(
  previous: Readonly<Record<string, string>>,
  upstreams: Readonly<Record<string, Upstream>>,
  delta: PartDelta<UpstreamEntry>,
): Record<string, string> {
  const changed = new Map(delta.changed);
  const sameNames =
    delta.removed.length === 0 && delta.changed.every(([name]) => own(previous, name) !== undefined);
  if (sameNames) {
    const hashes = copyRecord(previous);
    for (const [name, { hash }] of delta.changed) hashes[name] = hash;
    return hashes;
  }
  const hashes: Record<string, string> = {};
  for (const name of Object.keys(upstreams).sort()) {
    const hash = changed.get(name)?.hash ?? own(previous, name);
    if (hash !== undefined) hashes[name] = hash;
  }
  return hashes;
}
