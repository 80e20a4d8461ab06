// The balancers of one compile: one per upstream a route, canary, error backend or passthrough host
// uses, created on first use. A balancer of the previous runtime is taken over while its kind (and
// chash subset size) still fits, with its endpoint set updated in place: its state (round-robin
// position, EWMA scores, sticky sessions) survives the swap.

import type { Model, Upstream } from '../../model/index.ts';
import { type Balancer, type Peer, peerKey } from '../upstream/balancer.ts';
import type { ChashBalancer } from '../upstream/balancers/chash.ts';
import { balancerKindFor, createBalancer } from '../upstream/balancers/index.ts';
import { compileHashKey, type HashKey } from '../upstream/hash-key.ts';
import { LayeredMap } from './layered-map.ts';
import type { RuntimeDeps } from './runtime.ts';

/** Every peer key in use, with the number of balancers that use it (a peer may serve several upstreams). */
export type PeerKeys = LayeredMap<number>;

export function peersOf(upstream: Upstream): Peer[] {
  return upstream.endpoints.map((e) => ({
    address: e.address,
    port: e.port,
    key: peerKey(e.address, e.port),
  }));
}

/** Whether `peers` are exactly `endpoints`, in order (compared without building Peer objects). */
function samePeers(peers: readonly Peer[], endpoints: Upstream['endpoints']): boolean {
  if (peers.length !== endpoints.length) return false;
  for (let i = 0; i < peers.length; i++) {
    const peer = peers[i] as Peer;
    const endpoint = endpoints[i] as Upstream['endpoints'][number];
    if (peer.port !== endpoint.port || peer.address !== endpoint.address) return false;
  }
  return true;
}

/** Gives `balancer` the upstream's current endpoints unless it already has exactly those. */
export function updatePeers(balancer: Balancer, upstream: Upstream | undefined): void {
  const endpoints = upstream?.endpoints ?? [];
  if (!samePeers(balancer.peers, endpoints)) balancer.update(upstream === undefined ? [] : peersOf(upstream));
}

export class UpstreamBalancers {
  #balancers = new Map<string, Balancer>();
  /** peer key → how many balancers use it (a LayeredMap while it is the previous runtime's) */
  #peerKeys: Map<string, number> | LayeredMap<number> = new Map();
  /** true while #balancers and #peerKeys are the previous runtime's own: copied before a change */
  #shared = false;
  readonly #model: Model;
  readonly #previous: ReadonlyMap<string, Balancer> | undefined;
  readonly #deps: RuntimeDeps;
  /** upstream-hash-by keys, compiled once per upstream */
  readonly #hashKeys = new Map<string, HashKey | null>();
  /** where the names of the upstreams asked for go (the compile of one server), or null */
  #recording: Set<string> | null = null;

  constructor(model: Model, previous: ReadonlyMap<string, Balancer> | undefined, deps: RuntimeDeps) {
    this.#model = model;
    this.#previous = previous;
    this.#deps = deps;
  }

  /** From now on, the names of the upstreams asked for are also added to `into` (null: stop). */
  record(into: Set<string> | null): void {
    this.#recording = into;
  }

  /**
   * Upstream `name` of the model, or undefined. Compiled routes look upstreams up only here, so
   * that what a server's compile depended on is known (its kept copy is valid while these are).
   */
  upstream(name: string): Upstream | undefined {
    this.#recording?.add(name);
    return this.#model.upstreams[name];
  }

  /** by upstream name */
  get balancers(): ReadonlyMap<string, Balancer> {
    return this.#balancers;
  }

  /** every peer key of those balancers */
  get peerKeys(): PeerKeys {
    if (this.#peerKeys instanceof LayeredMap) return this.#peerKeys;
    // from now on shared with the runtime: a later addition copies it first
    this.#peerKeys = new LayeredMap(this.#peerKeys);
    this.#shared = true;
    return this.#peerKeys;
  }

  #count(balancer: Balancer): void {
    const counts = this.#peerKeys as Map<string, number>;
    for (const peer of balancer.peers) counts.set(peer.key, (counts.get(peer.key) ?? 0) + 1);
  }

  #own(): void {
    if (!this.#shared) return;
    this.#balancers = new Map(this.#balancers);
    this.#peerKeys = new Map(this.#peerKeys);
    this.#shared = false;
  }

  /**
   * Takes over every balancer of `previous` whose upstream is in the model and not in `changed`
   * (by content, endpoints aside), its endpoints synced: what a kept compiled server holds. When no
   * upstream and no endpoint changed, the previous runtime's map and peer keys serve as they are
   * (until this compile adds a balancer).
   */
  carryOver(
    previous: { balancers: ReadonlyMap<string, Balancer>; peerKeys: PeerKeys },
    changed: ReadonlySet<string>,
    sameEndpoints: boolean,
  ): void {
    const asBefore = [...this.#balancers].every(
      ([name, balancer]) => previous.balancers.get(name) === balancer,
    );
    if (changed.size === 0 && sameEndpoints && asBefore) {
      this.#balancers = previous.balancers as Map<string, Balancer>;
      this.#peerKeys = previous.peerKeys;
      this.#shared = true;
      return;
    }
    this.#own();
    const upstreams = this.#model.upstreams;
    for (const [name, balancer] of previous.balancers) {
      const upstream = upstreams[name];
      if (upstream === undefined || changed.has(name) || this.#balancers.has(name)) continue;
      if (!sameEndpoints) updatePeers(balancer, upstream);
      this.#balancers.set(name, balancer);
      this.#count(balancer);
    }
  }

  /** The balancer of upstream `name`, or null when the model has no such upstream. */
  balancerFor(name: string): Balancer | null {
    const upstream = this.upstream(name);
    if (upstream === undefined) return null;
    let balancer = this.#balancers.get(name);
    if (balancer === undefined) {
      this.#own();
      const kind = balancerKindFor(upstream.loadBalance, upstream.hashBy, upstream.affinity);
      const reused = this.#previous?.get(name);
      const subsetSize = upstream.hashBy?.subsetSize ?? 3;
      const sameSubsets =
        kind !== 'chashsubset' || (reused as ChashBalancer | undefined)?.subsetSize === subsetSize;
      if (reused !== undefined && reused.kind === kind && sameSubsets) {
        updatePeers(reused, upstream);
        balancer = reused;
      } else {
        const { balancerEnv, ewmaStore } = this.#deps;
        balancer = createBalancer(kind, peersOf(upstream), balancerEnv, ewmaStore, subsetSize, name);
      }
      this.#balancers.set(name, balancer);
      this.#count(balancer);
    }
    return balancer;
  }

  /** The compiled upstream-hash-by key of upstream `name`, or null when it hashes by nothing. */
  hashKeyOf(name: string): HashKey | null {
    const upstream = this.upstream(name);
    let key = this.#hashKeys.get(name);
    if (key === undefined) {
      const template = upstream?.hashBy?.key;
      key = template === undefined ? null : compileHashKey(template);
      this.#hashKeys.set(name, key);
    }
    return key;
  }
}
