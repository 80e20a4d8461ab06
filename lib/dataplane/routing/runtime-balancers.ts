// The balancers of one compile: one per upstream a route, canary, error backend or passthrough host
// uses, created on first use. A balancer of the previous runtime is taken over while its kind (and
// chash subset size) still fits, with its endpoint set updated in place: its state (round-robin
// position, EWMA scores, sticky sessions) survives the swap.

import type { Model, Upstream } from '../../model/index.ts';
import { type Balancer, type Peer, peerKey } from '../upstream/balancer.ts';
import type { ChashBalancer } from '../upstream/balancers/chash.ts';
import { balancerKindFor, createBalancer } from '../upstream/balancers/index.ts';
import { compileHashKey, type HashKey } from '../upstream/hash-key.ts';
import type { RuntimeDeps } from './runtime.ts';

export function peersOf(upstream: Upstream): Peer[] {
  return upstream.endpoints.map((e) => ({
    address: e.address,
    port: e.port,
    key: peerKey(e.address, e.port),
  }));
}

function samePeers(a: readonly Peer[], b: readonly Peer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]?.key !== b[i]?.key) return false;
  return true;
}

/** Gives `balancer` the upstream's current endpoints unless it already has exactly those. */
export function updatePeers(balancer: Balancer, peers: readonly Peer[]): void {
  if (!samePeers(balancer.peers, peers)) balancer.update(peers);
}

export class UpstreamBalancers {
  /** by upstream name, in order of first use */
  readonly balancers = new Map<string, Balancer>();
  /** every peer key of those balancers */
  readonly peerKeys = new Set<string>();
  readonly #model: Model;
  readonly #previous: ReadonlyMap<string, Balancer> | undefined;
  readonly #deps: RuntimeDeps;
  /** upstream-hash-by keys, compiled once per upstream */
  readonly #hashKeys = new Map<string, HashKey | null>();

  constructor(model: Model, previous: ReadonlyMap<string, Balancer> | undefined, deps: RuntimeDeps) {
    this.#model = model;
    this.#previous = previous;
    this.#deps = deps;
  }

  /** The balancer of upstream `name`, or null when the model has no such upstream. */
  balancerFor(name: string): Balancer | null {
    const upstream = this.#model.upstreams[name];
    if (upstream === undefined) return null;
    let balancer = this.balancers.get(name);
    if (balancer === undefined) {
      const kind = balancerKindFor(upstream.loadBalance, upstream.hashBy, upstream.affinity);
      const peers = peersOf(upstream);
      const reused = this.#previous?.get(name);
      const subsetSize = upstream.hashBy?.subsetSize ?? 3;
      const sameSubsets =
        kind !== 'chashsubset' || (reused as ChashBalancer | undefined)?.subsetSize === subsetSize;
      if (reused !== undefined && reused.kind === kind && sameSubsets) {
        updatePeers(reused, peers);
        balancer = reused;
      } else {
        const { balancerEnv, ewmaStore } = this.#deps;
        balancer = createBalancer(kind, peers, balancerEnv, ewmaStore, subsetSize, name);
      }
      this.balancers.set(name, balancer);
      for (const peer of peers) this.peerKeys.add(peer.key);
    }
    return balancer;
  }

  /** The compiled upstream-hash-by key of upstream `name`, or null when it hashes by nothing. */
  hashKeyOf(name: string): HashKey | null {
    let key = this.#hashKeys.get(name);
    if (key === undefined) {
      const template = this.#model.upstreams[name]?.hashBy?.key;
      key = template === undefined ? null : compileHashKey(template);
      this.#hashKeys.set(name, key);
    }
    return key;
  }
}
