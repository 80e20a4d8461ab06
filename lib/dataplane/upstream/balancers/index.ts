// Balancer construction and the choice of implementation (ingress-nginx balancer.lua
// `get_implementation`). Session affinity and upstream-hash-by take precedence over `load-balance`
// there: affinity (sticky_balanced, sticky_persistent) > upstream-hash-by (chash, chashsubset) >
// load-balance (ewma, round_robin).

import { performance } from 'node:perf_hooks';
import type { Affinity, HashBy } from '../../../model/index.ts';
import type { Balancer, BalancerEnv, BalancerKind, Peer } from '../balancer.ts';
import { ChashBalancer } from './chash.ts';
import { EwmaBalancer, type EwmaStore } from './ewma.ts';
import { RoundRobinBalancer } from './round-robin.ts';
import { StickyBalancer } from './sticky.ts';

export { buildRing, ChashBalancer, findOnRing } from './chash.ts';
export type { EwmaState, EwmaStore } from './ewma.ts';
export { createEwmaStore, DECAY_TIME, decayEwma, EwmaBalancer, ewmaScore } from './ewma.ts';
export { RoundRobinBalancer } from './round-robin.ts';
export { backendKeyOf, StickyBalancer } from './sticky.ts';

/** `Math.random` and a monotonic clock in seconds. */
export const defaultBalancerEnv: BalancerEnv = {
  random: Math.random,
  now: () => performance.now() / 1000,
};

/**
 * The implementation for an upstream (ingress-nginx `get_implementation`): upstream-hash-by → chash,
 * or chashsubset with -subset; else `load-balance`: `ewma` → ewma; `round_robin`, empty, absent or
 * unknown → round_robin (names match exactly, as the Lua table lookup does). affinity: cookie wins
 * over both.
 */
export function balancerKindFor(
  loadBalance: string | undefined,
  hashBy: HashBy | null = null,
  affinity: Affinity | null = null,
): BalancerKind {
  if (affinity !== null) return affinity.mode === 'persistent' ? 'sticky_persistent' : 'sticky_balanced';
  if (hashBy !== null) return hashBy.subset ? 'chashsubset' : 'chash';
  return loadBalance === 'ewma' ? 'ewma' : 'round_robin';
}

/** A balancer over `peers`; ewma balancers keep their per-endpoint state in `ewmaStore`. */
export function createBalancer(
  kind: BalancerKind,
  peers: readonly Peer[],
  env: BalancerEnv,
  ewmaStore: EwmaStore,
  subsetSize = 3,
  upstream = '',
): Balancer {
  switch (kind) {
    case 'sticky_balanced':
      return new StickyBalancer(peers, env, upstream, 'balanced');
    case 'sticky_persistent':
      return new StickyBalancer(peers, env, upstream, 'persistent');
    case 'ewma':
      return new EwmaBalancer(peers, env, ewmaStore);
    case 'chash':
      return new ChashBalancer(peers, env, null);
    case 'chashsubset':
      return new ChashBalancer(peers, env, subsetSize);
    default:
      return new RoundRobinBalancer(peers, env);
  }
}
