// ingress-nginx `ewma` (rootfs/etc/nginx/lua/balancer/ewma.lua): power of two choices over a decaying
// exponentially weighted moving average of each endpoint's connect + header time.
//
// The per-endpoint state lives in a store shared by every ewma balancer (ingress-nginx keeps it in
// shared dicts keyed by "ip:port", common to all backends): an endpoint behind two Services is one
// peer with one latency.
import type { Balancer, BalancerEnv, Peer } from '../balancer.ts';
import { peerKeys, randomIndex, sameKeys } from './round-robin.ts';

/** seconds: an observation's weight falls to 1/e after this long */
export const DECAY_TIME = 10;

export interface EwmaState {
  /** seconds */
  ewma: number;
  /** `BalancerEnv.now()` of the last update */
  lastTouched: number;
}

/** Per-endpoint state keyed by `Peer.key`; one per data plane, shared by all its ewma balancers. */
export type EwmaStore = Map<string, EwmaState>;

export function createEwmaStore(): EwmaStore {
  return new Map();
}

/** `ewma*w + rtt*(1-w)` with `w = exp(-max(now - lastTouched, 0) / DECAY_TIME)`. */
export function decayEwma(ewma: number, lastTouched: number, rtt: number, now: number): number {
  const elapsed = now - lastTouched;
  const weight = Math.exp(-(elapsed > 0 ? elapsed : 0) / DECAY_TIME);
  return ewma * weight + rtt * (1 - weight);
}

/** The score a pick compares: the stored ewma decayed toward 0 until `now`; 0 without state. */
export function ewmaScore(store: EwmaStore, key: string, now: number): number {
  const state = store.get(key);
  return state === undefined ? 0 : decayEwma(state.ewma, state.lastTouched, 0, now);
}

export class EwmaBalancer implements Balancer {
  readonly kind = 'ewma' as const;
  readonly #env: BalancerEnv;
  readonly #store: EwmaStore;
  #peers: readonly Peer[];
  /** holds the untried peers of a pick with `tried`; sized to the peer set so a pick never allocates */
  #scratch: Peer[];

  constructor(peers: readonly Peer[], env: BalancerEnv, store: EwmaStore) {
    this.#env = env;
    this.#store = store;
    this.#peers = peers;
    this.#scratch = peers.slice();
  }

  get peers(): readonly Peer[] {
    return this.#peers;
  }

  pick(tried?: ReadonlySet<string>): Peer | undefined {
    const peers = this.#peers;
    const n = peers.length;
    if (n <= 1) return peers[0];
    let candidates: readonly Peer[] = peers;
    let count = n;
    if (tried !== undefined && tried.size > 0) {
      const scratch = this.#scratch;
      let untried = 0;
      for (let i = 0; i < n; i++) {
        const peer = peers[i] as Peer;
        if (!tried.has(peer.key)) scratch[untried++] = peer;
      }
      if (untried === 1) return scratch[0];
      if (untried > 1) {
        candidates = scratch;
        count = untried;
      } // untried === 0: every peer was tried, choose among all of them
    }
    // Two distinct candidates uniformly at random: the same draw as a two-step partial Fisher–Yates
    // shuffle (first uniform over all, second uniform over the rest), without moving anything.
    const first = randomIndex(this.#env, count);
    let second = randomIndex(this.#env, count - 1);
    if (second >= first) second++;
    const a = candidates[first] as Peer;
    const b = candidates[second] as Peer;
    const now = this.#env.now();
    return ewmaScore(this.#store, b.key, now) < ewmaScore(this.#store, a.key, now) ? b : a;
  }

  observe(peer: Peer, seconds: number): void {
    if (!(seconds >= 0) || seconds === Number.POSITIVE_INFINITY) return;
    const now = this.#env.now();
    const state = this.#store.get(peer.key);
    if (state === undefined) {
      // ingress-nginx reads a missing value as 0 touched at time 0; with its epoch clock that decays
      // fully, so the first observation is the ewma. Our clock starts near 0: say so directly.
      this.#store.set(peer.key, { ewma: seconds, lastTouched: now });
      return;
    }
    state.ewma = decayEwma(state.ewma, state.lastTouched, seconds, now);
    state.lastTouched = now;
  }

  update(peers: readonly Peer[]): void {
    const keys = peerKeys(peers);
    // gathered per update, not kept per balancer (round-robin.ts says why)
    const old = peerKeys(this.#peers);
    if (sameKeys(keys, old)) return; // ingress-nginx: "endpoints did not change", nothing happens
    const store = this.#store;
    for (const key of old) if (!keys.has(key)) store.delete(key);
    // Slow start: new endpoints begin at the average raw ewma of the kept endpoints that have one, so
    // they do not get every request while their score is 0. No such endpoint: nothing is stored.
    let total = 0;
    let withValue = 0;
    for (const key of old) {
      const state = store.get(key);
      if (state !== undefined) {
        total += state.ewma;
        withValue++;
      }
    }
    if (withValue > 0) {
      const ewma = total / withValue;
      const now = this.#env.now();
      for (const key of keys) if (!old.has(key)) store.set(key, { ewma, lastTouched: now });
    }
    this.#peers = peers;
    this.#scratch = peers.slice();
  }
}
