// The one swappable part of the proxy: which endpoint a try goes to. Implementations live in
// balancers/ (round_robin, ewma); the runtime creates one per route target and reuses it across
// swaps while its endpoint set is unchanged.

export interface Peer {
  address: string;
  port: number;
  /** `ip:port`, IPv6 bracketed (`[fd00::1]:8080`); identifies the peer in balancer state */
  key: string;
}

export type BalancerKind =
  | 'round_robin'
  | 'ewma'
  | 'chash'
  | 'chashsubset'
  | 'sticky_balanced'
  | 'sticky_persistent';

export interface Balancer {
  readonly kind: BalancerKind;
  readonly peers: readonly Peer[];
  /**
   * The peer for the next try, or undefined when there are no peers. `tried` holds the keys already
   * tried by this request: implementations avoid them while untried peers remain. `hashKey`: the
   * request's upstream-hash-by key (chash ignores `tried`, as ingress-nginx's does).
   */
  pick(tried?: ReadonlySet<string>, hashKey?: string): Peer | undefined;
  /** The outcome of a try: connect + header time in seconds (ewma learns from it; others ignore it). */
  observe(peer: Peer, seconds: number): void;
  /** Replace the endpoint set in place (an endpoints-only change); state of kept peers survives. */
  update(peers: readonly Peer[]): void;
}

/** Clock and randomness, injectable so tests are deterministic. */
export interface BalancerEnv {
  /** uniform in [0, 1) */
  random(): number;
  /** seconds, monotonic */
  now(): number;
}

export function peerKey(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}
