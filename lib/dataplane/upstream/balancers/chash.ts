// upstream-hash-by: ingress-nginx's chash and chashsubset balancers (balancer/chash.lua over
// lua-resty-balancer 0.05's resty.chash).
//
// The ring: 160 points per node; point 0 is CRC-32 of the node id followed by 4 little-endian zero
// bytes, point i the CRC-32 of the id followed by point i-1 as 4 little-endian bytes. A key goes to
// the owner of the first point ≥ CRC-32(key), wrapping to the lowest point. Only keys near a changed
// node move when endpoints change. The same key always gives the same node, retries included (as in
// ingress-nginx, where chash does not avoid a peer that failed).
//
// chashsubset: the endpoints, in backend order, cut into ceil(n / size) subsets of `size` (the last
// one padded with endpoints from the start); the ring is over the subset ids, and within the subset a
// node is picked uniformly at random.

import { crc32 } from 'node:zlib';
import type { Balancer, BalancerEnv, Peer } from '../balancer.ts';

const POINTS_PER_NODE = 160;

interface Ring {
  /** point hashes, ascending */
  points: Uint32Array;
  /** the owner of each point (an index into the caller's node list) */
  owners: Uint32Array;
}

/** The ring over node ids (`ip:port`, or subset ids). */
export function buildRing(ids: readonly string[]): Ring {
  const entries: Array<[hash: number, owner: number]> = [];
  const le32 = Buffer.alloc(4);
  ids.forEach((id, owner) => {
    const idCrc = crc32(id); // CRC-32 over id ‖ LE32(previous), continued from the id's own
    let previous = 0;
    for (let i = 0; i < POINTS_PER_NODE; i++) {
      le32.writeUInt32LE(previous >>> 0, 0);
      previous = crc32(le32, idCrc);
      entries.push([previous, owner]);
    }
  });
  entries.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return {
    points: Uint32Array.from(entries, (e) => e[0]),
    owners: Uint32Array.from(entries, (e) => e[1]),
  };
}

/** The owner of the first point ≥ CRC-32(key), wrapping around; -1 on an empty ring. */
export function findOnRing(ring: Ring, key: string): number {
  const { points, owners } = ring;
  if (points.length === 0) return -1;
  const hash = crc32(key);
  let low = 0;
  let high = points.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((points[middle] as number) < hash) low = middle + 1;
    else high = middle;
  }
  return owners[low === points.length ? 0 : low] as number;
}

export class ChashBalancer implements Balancer {
  readonly kind: 'chash' | 'chashsubset';
  #peers: readonly Peer[] = [];
  #ring: Ring = buildRing([]);
  /** chashsubset: the peers of each subset */
  #subsets: Peer[][] = [];
  readonly #subsetSize: number;
  readonly #env: BalancerEnv;

  constructor(peers: readonly Peer[], env: BalancerEnv, subsetSize: number | null) {
    this.kind = subsetSize === null ? 'chash' : 'chashsubset';
    this.#subsetSize = subsetSize ?? 0;
    this.#env = env;
    this.update(peers);
  }

  /** chashsubset: endpoints per subset; null for chash */
  get subsetSize(): number | null {
    return this.kind === 'chash' ? null : this.#subsetSize;
  }

  get peers(): readonly Peer[] {
    return this.#peers;
  }

  pick(_tried?: ReadonlySet<string>, key = ''): Peer | undefined {
    const owner = findOnRing(this.#ring, key);
    if (owner < 0) return undefined;
    if (this.kind === 'chash') return this.#peers[owner];
    const subset = this.#subsets[owner] as Peer[];
    return subset[Math.floor(this.#env.random() * subset.length)];
  }

  observe(): void {}

  update(peers: readonly Peer[]): void {
    this.#peers = [...peers];
    if (this.kind === 'chash') {
      this.#ring = buildRing(this.#peers.map((p) => p.key));
      return;
    }
    const size = this.#subsetSize;
    const count = Math.ceil(this.#peers.length / size);
    this.#subsets = [];
    for (let s = 0; s < count; s++) {
      const subset: Peer[] = [];
      for (let i = 0; i < size; i++) subset.push(this.#peers[(s * size + i) % this.#peers.length] as Peer);
      this.#subsets.push(subset);
    }
    this.#ring = buildRing(this.#subsets.map((_, s) => `set${s + 1}`));
  }
}
