// affinity: cookie, ingress-nginx's sticky_balanced and sticky_persistent balancers
// (balancer/sticky_balanced.lua and sticky_persistent.lua). The cookie's value is
// `<session key>|<backend key>`, the backend key being md5hex(md5hex(upstream name) + upstream name),
// so that a cookie minted by one upstream (a canary) is told apart from another's.
// - balanced: a new session key is `<now>.<pid>.<random 0-999999>`; its endpoint is the owner of the
//   key on the chash ring (chash.ts), so sessions rebalance when endpoints change;
// - persistent: the session key is md5hex(upstream name + "ip:port"), an exact lookup: the session
//   stays until that endpoint leaves.
// A request keeps its cookie's endpoint, even one that failed on a previous try, unless
// change-on-failure is set; without a usable cookie a new session is picked (avoiding endpoints this
// request already tried) and the caller sets the cookie.

import { createHash } from 'node:crypto';
import type { Balancer, BalancerEnv, Peer } from '../balancer.ts';
import { buildRing, findOnRing } from './chash.ts';

const md5hex = (text: string): string => createHash('md5').update(text).digest('hex');

/** The backend key of an upstream's cookies. */
export const backendKeyOf = (upstream: string): string => md5hex(md5hex(upstream) + upstream);

export interface Session {
  peer: Peer;
  /** a new session key to put in the cookie, or null when the request's session stands */
  newKey: string | null;
}

export class StickyBalancer implements Balancer {
  readonly kind: 'sticky_balanced' | 'sticky_persistent';
  readonly backendKey: string;
  readonly #upstream: string;
  readonly #env: BalancerEnv;
  #peers: readonly Peer[] = [];
  #ring = buildRing([]);
  #byKey = new Map<string, Peer>();

  constructor(peers: readonly Peer[], env: BalancerEnv, upstream: string, mode: 'balanced' | 'persistent') {
    this.kind = mode === 'balanced' ? 'sticky_balanced' : 'sticky_persistent';
    this.#upstream = upstream;
    this.backendKey = backendKeyOf(upstream);
    this.#env = env;
    this.update(peers);
  }

  get peers(): readonly Peer[] {
    return this.#peers;
  }

  /** The endpoint of a session key, if it still has one. */
  find(sessionKey: string): Peer | undefined {
    if (this.kind === 'sticky_persistent') return this.#byKey.get(sessionKey);
    const owner = findOnRing(this.#ring, sessionKey);
    return owner < 0 ? undefined : this.#peers[owner];
  }

  /** The endpoint for a try: the session's, or a new session's. */
  session(
    sessionKey: string | null,
    tried: ReadonlySet<string> | undefined,
    changeOnFailure: boolean,
  ): Session | undefined {
    if (this.#peers.length === 0) return undefined;
    const failedBefore = tried !== undefined && tried.size > 0;
    const existing = sessionKey === null ? undefined : this.find(sessionKey);
    if (existing !== undefined && !(failedBefore && changeOnFailure)) return { peer: existing, newKey: null };
    if (this.kind === 'sticky_balanced') {
      let key = '';
      let peer: Peer | undefined;
      for (let attempt = 1; attempt <= 20; attempt++) {
        key = `${Date.now() / 1000 + attempt}.${process.pid}.${Math.floor(this.#env.random() * 999_999)}`;
        peer = this.find(key);
        if (peer !== undefined && !tried?.has(peer.key)) break;
      }
      return { peer: peer as Peer, newKey: key };
    }
    const untried = tried === undefined ? this.#peers : this.#peers.filter((p) => !tried.has(p.key));
    const pool = untried.length > 0 ? untried : this.#peers;
    const peer = pool[Math.floor(this.#env.random() * pool.length)] as Peer;
    return { peer, newKey: md5hex(this.#upstream + peer.key) };
  }

  /** Without a session (the Balancer contract): a new session's endpoint. */
  pick(tried?: ReadonlySet<string>): Peer | undefined {
    return this.session(null, tried, false)?.peer;
  }

  observe(): void {}

  update(peers: readonly Peer[]): void {
    this.#peers = [...peers];
    // balanced sessions live on the ring, persistent ones in the exact map
    if (this.kind === 'sticky_balanced') this.#ring = buildRing(this.#peers.map((p) => p.key));
    else this.#byKey = new Map(this.#peers.map((p) => [md5hex(this.#upstream + p.key), p]));
  }
}
