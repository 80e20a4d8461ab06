// What a compile keeps from the previous runtime: a compiled server (its path matcher, route table and
// every per-route piece: actions, access policy, auth, headers, rewrites, hash keys, custom errors,
// canary) is taken over as it is when the model says the server's content is unchanged
// (`Model.contentHashes`) and so is everything outside the server its compile looked at: the
// ConfigMap, the default backend, and each upstream it asked for (by content hash, endpoints left
// out: those reach the kept balancers in place). A one-Ingress change then compiles the servers of
// that Ingress only. What stays proportional to the cluster is kept to a few tight passes: the
// upstream hashes compared once, balancers carried over with their endpoints synced, and the host
// table rebuilt.
//
// Safety rests on two things, each tested: the content hash covers every field of a server
// (test/model/content-hashes.test.ts), and the compile of a server reads other parts of the model
// only through what is recorded here (test/dataplane/incremental-compile.test.ts compares kept and
// fresh compiles over random changes).

import type { Model } from '../../model/index.ts';
import type { Zone } from '../access/rate-limit.ts';
import type { LayeredMap } from './layered-map.ts';
import type { CompiledServer, Runtime } from './runtime.ts';
import type { RouteCompileState } from './runtime-routes.ts';

/** What the compile of one server used besides the server itself. */
export interface ServerDeps {
  /** the upstreams it asked for, present or not */
  readonly upstreams: readonly string[];
  /** rate-limit zones its access policies count in, by key */
  readonly zones: ReadonlyMap<string, Zone>;
  /** BackendTls ids of its proxy-ssl settings */
  readonly backendTlsIds: ReadonlySet<string>;
}

export interface CompiledServerRecord {
  /** the server's content hash ('' when the model had none: never kept) */
  readonly hash: string;
  readonly compiled: CompiledServer;
  readonly deps: ServerDeps;
}

/** What the next compile may take over, stored on the runtime. */
export interface ReuseIndex {
  /** the inputs every server's compile shares (globalKeyOf) */
  readonly globalKey: string;
  /** by hostname (a LayeredMap: the next compile patches it instead of copying 20,000 entries) */
  readonly servers: LayeredMap<CompiledServerRecord>;
  readonly catchAll: CompiledServerRecord | null;
  /** who answers to names besides their own: the host table's claims, patched with it */
  readonly claims: HostClaims;
  /** the records that count in rate-limit zones or use backend TLS: a kept one hands them on */
  readonly stateful: ReadonlyMap<string, CompiledServerRecord>;
  /** how many servers pass TLS through (the passthrough table is built only when some do) */
  readonly passthroughs: number;
}

/** Aliases and from-to-www names, each with the hostnames that claim it, in the model's order. */
export interface HostClaims {
  readonly aliases: ReadonlyMap<string, readonly string[]>;
  readonly wwwFrom: ReadonlyMap<string, readonly string[]>;
}

/** The ConfigMap and the default backend (its upstream by content): inputs of every route. */
export function globalKeyOf(model: Model): string {
  const backend = model.defaultBackend;
  const backendHash = backend === null ? '-' : (model.contentHashes?.upstreams[backend] ?? '?');
  return `${backend ?? '-'}\n${backendHash}\n${JSON.stringify(model.config)}`;
}

/** The upstream names whose content differs between two models: changed, added or removed. */
function changedUpstreams(before: Record<string, string>, now: Record<string, string>): Set<string> {
  const changed = new Set<string>();
  let common = 0;
  for (const name in now) {
    const hash = before[name];
    if (hash === undefined) changed.add(name);
    else {
      common++;
      if (hash !== now[name]) changed.add(name);
    }
  }
  // names only `before` has: looked for only when some are missing from `now`
  if (common !== Object.keys(before).length)
    for (const name in before) if (now[name] === undefined) changed.add(name);
  return changed;
}

/**
 * One compile's decisions about `previous`: which servers' compiles still hold. Created before any
 * server compiles: it carries the balancers of unchanged upstreams over (their endpoints synced), so
 * a kept server's balancers are the ones this runtime updates.
 */
export class ServerReuse {
  readonly #state: RouteCompileState;
  /** null: nothing is kept (no previous runtime, other shared inputs, or no content hashes) */
  readonly previous: ReuseIndex | null;
  readonly #changed: ReadonlySet<string>;

  constructor(state: RouteCompileState, previous: Runtime | null, globalKey: string) {
    this.#state = state;
    const before = previous?.model.contentHashes;
    const now = state.model.contentHashes;
    if (
      previous === null ||
      previous.reuse.globalKey !== globalKey ||
      before === undefined ||
      now === undefined
    ) {
      this.previous = null;
      this.#changed = new Set();
      return;
    }
    this.previous = previous.reuse;
    this.#changed =
      before.allUpstreams === now.allUpstreams
        ? new Set()
        : changedUpstreams(before.upstreams, now.upstreams);
    state.upstreams.carryOver(previous, this.#changed, before.endpoints === now.endpoints);
  }

  /** Whether the compile of `record` looked at an upstream whose content changed. */
  usesChanged(record: CompiledServerRecord): boolean {
    const changed = this.#changed;
    if (changed.size > 0) for (const name of record.deps.upstreams) if (changed.has(name)) return true;
    return false;
  }

  /** Whether some upstream's content changed (then kept servers are checked by usesChanged). */
  get upstreamsChanged(): boolean {
    return this.#changed.size > 0;
  }

  /** `record`'s compile when it is of content `hash` and nothing it used has changed, else null. */
  take(record: CompiledServerRecord | null | undefined, hash: string | undefined): CompiledServer | null {
    if (record === undefined || record === null || hash === undefined || record.hash !== hash) return null;
    if (this.usesChanged(record)) return null;
    const { zones, backendTlsIds } = record.deps;
    if (zones.size > 0 && !this.#state.access.adopt(zones)) return null;
    for (const id of backendTlsIds) this.#state.backendTlsIds.add(id);
    return record.compiled;
  }
}

const NO_ZONES: ReadonlyMap<string, Zone> = new Map();
const NO_IDS: ReadonlySet<string> = new Set();

/** Compiles with `state` while recording what the compile looks at. */
export function recorded(
  state: RouteCompileState,
  compile: () => CompiledServer,
): { compiled: CompiledServer; deps: ServerDeps } {
  const upstreams = new Set<string>();
  const zones = new Map<string, Zone>();
  const backendTlsIds = new Set<string>();
  state.upstreams.record(upstreams);
  state.access.record(zones);
  state.recording.backendTlsIds = backendTlsIds;
  try {
    const compiled = compile();
    // most servers use no zone and no backend TLS: 20,000 empty collections are worth sharing
    return {
      compiled,
      deps: {
        upstreams: [...upstreams],
        zones: zones.size === 0 ? NO_ZONES : zones,
        backendTlsIds: backendTlsIds.size === 0 ? NO_IDS : backendTlsIds,
      },
    };
  } finally {
    state.upstreams.record(null);
    state.access.record(null);
    state.recording.backendTlsIds = null;
  }
}
