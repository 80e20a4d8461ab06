// Balancer construction and the choice of implementation (ingress-nginx balancer.lua
// `get_implementation`). Session affinity and upstream-hash-by (sticky, chash, chashsubset) take
// precedence over `load-balance` there; they are not implemented yet and fall back to round_robin.
import type { Balancer, BalancerEnv, BalancerKind, Peer } from '../balancer.ts';
import { EwmaBalancer, type EwmaStore } from './ewma.ts';
import { RoundRobinBalancer } from './round-robin.ts';

export type { EwmaState, EwmaStore } from './ewma.ts';
export { createEwmaStore, DECAY_TIME, decayEwma, EwmaBalancer, ewmaScore } from './ewma.ts';
export { RoundRobinBalancer } from './round-robin.ts';

/** `Math.random` and a monotonic clock in seconds. */
export const defaultBalancerEnv: BalancerEnv = {
  random: Math.random,
  now: () => performance.now() / 1000,
};

/**
 * The implementation for a `load-balance` value (annotation, else ConfigMap): `ewma` → ewma;
 * `round_robin`, empty, absent or unknown → round_robin (names match exactly, as the Lua table lookup
 * does). `chash`, `chashsubset`, `sticky_*` are not implemented yet: round_robin.
 */
export function balancerKindFor(loadBalance: string | undefined): BalancerKind {
  return loadBalance === 'ewma' ? 'ewma' : 'round_robin';
}

/** A balancer over `peers`; ewma balancers keep their per-endpoint state in `ewmaStore`. */
export function createBalancer(
  kind: BalancerKind,
  peers: readonly Peer[],
  env: BalancerEnv,
  ewmaStore: EwmaStore,
): Balancer {
  return kind === 'ewma' ? new EwmaBalancer(peers, env, ewmaStore) : new RoundRobinBalancer(peers, env);
}
