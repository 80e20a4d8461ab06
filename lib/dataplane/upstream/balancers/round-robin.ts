// ingress-nginx `round_robin` (lua-resty-balancer v0.05 `resty.roundrobin`): every endpoint has weight 1,
// so its gcd/current-weight scan degenerates to strict cyclic order. The start position is a random
// peer when the balancer is created and whenever the peer set changes (`reinit`); an update with the
// same set (in any order) keeps the position, so the cycle stays exact across endpoint re-syncs.
//
// One addition to resty.roundrobin: `pick(tried)` skips peers this request already tried while untried
// ones remain, so a retry goes to another endpoint even when concurrent requests moved the cycle.
import type { Balancer, BalancerEnv, Peer } from '../balancer.ts';

/** A uniform index in [0, n) (n ≥ 1), robust to a `random()` that returns exactly 1. */
export function randomIndex(env: BalancerEnv, n: number): number {
  const index = Math.floor(env.random() * n);
  return index < n ? index : n - 1;
}

/** The distinct keys of a peer list. */
export function peerKeys(peers: readonly Peer[]): Set<string> {
  const keys = new Set<string>();
  for (const peer of peers) keys.add(peer.key);
  return keys;
}

/** Whether two key sets hold the same keys. */
export function sameKeys(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const key of a) if (!b.has(key)) return false;
  return true;
}

export class RoundRobinBalancer implements Balancer {
  readonly kind = 'round_robin' as const;
  readonly #env: BalancerEnv;
  #peers: readonly Peer[];
  /** index of the peer the next pick starts from */
  #next: number;

  constructor(peers: readonly Peer[], env: BalancerEnv) {
    this.#env = env;
    this.#peers = peers;
    this.#next = peers.length === 0 ? 0 : randomIndex(env, peers.length);
  }

  get peers(): readonly Peer[] {
    return this.#peers;
  }

  pick(tried?: ReadonlySet<string>): Peer | undefined {
    const peers = this.#peers;
    const n = peers.length;
    if (n === 0) return undefined;
    let index = this.#next;
    if (tried !== undefined && tried.size > 0) {
      // Each skip passes a distinct tried peer, so after `tried.size` skips the peer at `index` is
      // untried; after n skips every peer was tried and `index` is back where it started: that one.
      const limit = tried.size < n ? tried.size : n;
      for (let skips = 0; skips < limit && tried.has((peers[index] as Peer).key); skips++) {
        index = index + 1 === n ? 0 : index + 1;
      }
    }
    this.#next = index + 1 === n ? 0 : index + 1;
    return peers[index];
  }

  observe(_peer: Peer, _seconds: number): void {}

  update(peers: readonly Peer[]): void {
    // same set: keep the cycle (and its order) untouched. The keys are gathered here, not kept: an
    // update is rare, and a Set per balancer was ~5 MiB per data-plane thread at 30,000 upstreams
    if (sameKeys(peerKeys(peers), peerKeys(this.#peers))) return;
    this.#peers = peers;
    this.#next = peers.length === 0 ? 0 : randomIndex(this.#env, peers.length);
  }
}
