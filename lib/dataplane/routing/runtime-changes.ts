// The server step of a compile over a previous runtime whose compiles still hold (same ConfigMap and
// default backend): only the servers whose content changed are compiled, with those whose compile
// looked at an upstream that changed, and the host table is patched for the names they touch. Work
// and garbage follow the change, not the cluster: at 10,000 Ingresses a one-Ingress change walks the
// two sorted server lists once (string compares, no allocation), where it used to build a new
// 20,000-entry record map, a 20,000-entry host table and the lists in between on the thread that
// serves traffic.
//
// The result must equal a compile from scratch (test/dataplane/incremental-compile.test.ts compares
// every name of the host table and what each request meets), and the previous runtime is left as
// it is: the patched maps share its entries without changing them (layered-map.ts).

import type { Server } from '../../model/index.ts';
import type { HostTable } from './router.ts';
import type { CompiledServer, Runtime } from './runtime.ts';
import type { CompiledServerRecord, HostClaims, ServerReuse } from './runtime-reuse.ts';
import type { RouteCompileState } from './runtime-routes.ts';

/** A record whose compile counts in rate-limit zones or uses backend TLS (the runtime collects those). */
export const isStateful = (record: CompiledServerRecord): boolean =>
  record.deps.zones.size > 0 || record.deps.backendTlsIds.size > 0;

/** The entry of a from-to-www name: the host's compile, redirecting to the host. */
export function wwwRedirect(entry: CompiledServer, from: string, hostname: string): CompiledServer {
  return { ...entry, hostname: from, redirectTo: hostname, appRoot: null, clientAuth: null };
}

/** A server to look at again: changed, added, removed, or kept but needing a check or a compile. */
interface Work {
  hostname: string;
  /** in the previous model (null: added) */
  before: Server | null;
  /** in this model (null: removed) */
  server: Server | null;
  hash: string;
  /** kept in content: its compile may be taken over (after reuse.take's checks) */
  kept: CompiledServerRecord | null;
}

const byHostname = (a: Work, b: Work): number =>
  a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0;

/** The servers whose content differs between the two models (both sorted by hostname). */
function changedServers(previous: Runtime, state: RouteCompileState): Map<string, Work> {
  const before = previous.model.servers;
  const beforeHashes = previous.model.contentHashes?.servers ?? [];
  const now = state.model.servers;
  const hashes = state.model.contentHashes?.servers ?? [];
  const work = new Map<string, Work>();
  const add = (before: Server | null, server: Server | null, hash: string): void => {
    const hostname = (server ?? before)?.hostname as string;
    work.set(hostname, { hostname, before, server, hash, kept: null });
  };
  let j = 0;
  for (let i = 0; i < now.length; i++) {
    const server = now[i] as Server;
    const hash = hashes[i] ?? '';
    while (j < before.length && (before[j] as Server).hostname < server.hostname) {
      add(before[j] as Server, null, '');
      j++;
    }
    const old = before[j];
    if (old !== undefined && old.hostname === server.hostname) {
      if (beforeHashes[j] !== hash || hash === '') add(old, server, hash);
      j++;
    } else add(null, server, hash);
  }
  for (; j < before.length; j++) add(before[j] as Server, null, '');
  return work;
}

/** The server of `hostname` in a list sorted by hostname, or undefined. */
function serverNamed(servers: readonly Server[], hostname: string): Server | undefined {
  let low = 0;
  let high = servers.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const server = servers[middle] as Server;
    if (server.hostname === hostname) return server;
    if (server.hostname < hostname) low = middle + 1;
    else high = middle - 1;
  }
  return undefined;
}

/**
 * The servers to look at: those that changed, those whose compile used a changed upstream, and the
 * kept ones that count in zones or use backend TLS (reuse.take hands those to this runtime), in
 * the model's order, as a compile from scratch meets them.
 */
function workOf(state: RouteCompileState, reuse: ServerReuse, previous: Runtime): Work[] {
  const work = changedServers(previous, state);
  const index = previous.reuse;
  const keep = (hostname: string, record: CompiledServerRecord): void => {
    if (work.has(hostname)) return;
    const server = serverNamed(state.model.servers, hostname);
    if (server !== undefined)
      work.set(hostname, { hostname, before: server, server, hash: record.hash, kept: record });
  };
  // an upstream's content changes rarely (its Service or its balancing annotations): a plain walk
  if (reuse.upstreamsChanged)
    for (const [hostname, record] of index.servers) if (reuse.usesChanged(record)) keep(hostname, record);
  for (const [hostname, record] of index.stateful) keep(hostname, record);
  return [...work.values()].sort(byHostname);
}

/** `claims` with `hostname`'s claims of `before` replaced by those of `server`. */
function reclaim(
  claims: Map<string, readonly string[]>,
  hostname: string,
  before: readonly string[],
  now: readonly string[],
  touched: Set<string>,
): void {
  for (const name of before) {
    touched.add(name);
    const rest = (claims.get(name) ?? []).filter((claimant) => claimant !== hostname);
    if (rest.length === 0) claims.delete(name);
    else claims.set(name, rest);
  }
  for (const name of now) {
    touched.add(name);
    const list = [...(claims.get(name) ?? []), hostname].sort();
    claims.set(name, list);
  }
}

const aliasesOf = (server: Server | null): readonly string[] => server?.annotations.alias.aliases ?? [];
const fromOf = (server: Server | null): readonly string[] => {
  const from = server?.annotations.fromToWww.from ?? null;
  return from === null ? [] : [from];
};

/** What the host table holds for `name`: its host, else the first alias claim, else a from-to-www claim. */
function entryFor(
  name: string,
  records: ReadonlyMap<string, CompiledServerRecord>,
  claims: HostClaims,
): CompiledServer | undefined {
  const own = records.get(name);
  if (own !== undefined) return own.compiled;
  const alias = claims.aliases.get(name)?.[0];
  if (alias !== undefined) return records.get(alias)?.compiled;
  const from = claims.wwwFrom.get(name)?.[0];
  const entry = from === undefined ? undefined : records.get(from)?.compiled;
  return entry === undefined || from === undefined ? undefined : wwwRedirect(entry, name, from);
}

/**
 * The server step over `previous` (compileServers decided its compiles still hold); `compile`
 * compiles one server with what it used (runtime-hosts.ts).
 */
export function compileChangedServers(
  state: RouteCompileState,
  reuse: ServerReuse,
  previous: Runtime,
  compileRecord: (server: Server, hash: string | undefined) => CompiledServerRecord,
): { catchAll: CompiledServer; hosts: HostTable<CompiledServer>; reuse: Runtime['reuse'] } {
  const { model } = state;
  const index = previous.reuse;
  const hashes = model.contentHashes;
  const catchAllHash = hashes?.catchAll;
  const catchAll =
    index.catchAll !== null && reuse.take(index.catchAll, catchAllHash) !== null
      ? index.catchAll
      : compileRecord(model.catchAll, catchAllHash);
  const records = new Map<string, CompiledServerRecord | undefined>();
  const stateful = new Map(index.stateful);
  const aliases = new Map(index.claims.aliases);
  const wwwFrom = new Map(index.claims.wwwFrom);
  const touched = new Set<string>();
  let passthroughs = index.passthroughs;
  for (const work of workOf(state, reuse, previous)) {
    const { hostname, server, before } = work;
    if (work.kept !== null && reuse.take(work.kept, work.hash) !== null) continue;
    const record = server === null ? undefined : compileRecord(server, work.hash);
    records.set(hostname, record);
    if (record !== undefined && isStateful(record)) stateful.set(hostname, record);
    else stateful.delete(hostname);
    touched.add(hostname);
    reclaim(aliases, hostname, aliasesOf(before), aliasesOf(server), touched);
    reclaim(wwwFrom, hostname, fromOf(before), fromOf(server), touched);
    passthroughs += (server?.passthrough != null ? 1 : 0) - (before?.passthrough != null ? 1 : 0);
  }
  const servers = records.size === 0 ? index.servers : index.servers.patched(records);
  const claims = { aliases, wwwFrom };
  const changes = new Map<string, CompiledServer | undefined>();
  for (const name of touched) changes.set(name, entryFor(name, servers, claims));
  const hosts =
    changes.size === 0 && catchAll === index.catchAll
      ? previous.hosts
      : previous.hosts.patched(catchAll.compiled, changes);
  return {
    catchAll: catchAll.compiled,
    hosts,
    reuse: { globalKey: index.globalKey, servers, catchAll, claims, stateful, passthroughs },
  };
}
