// ingress-nginx's rate limits per client address (limit-rps, limit-rpm, limit-connections), one
// zone per Ingress as its template renders them (`<namespace>_<name>_<uid>_rps` …), per replica.
//
// Requests (NGINX limit_req … burst=N nodelay): a leaky bucket per address counting "excess" in
// thousandths of a request. A new address starts at 0; each later request adds 1000 to what is left
// after draining `rate` per second since the last accepted one (never below 0); a request that would leave more
// than burst × 1000 is rejected at once and changes nothing (no delay, as with `nodelay`).
// Connections (NGINX limit_conn): requests in flight per address, released when the response ends.
//
// Memory: a request zone keeps its addresses in an LRU of at most ZONE_MAX_ADDRESSES entries,
// allocated on the zone's first request (an evicted address starts afresh, as when NGINX's zone
// runs out and drops its oldest states); a connection zone keeps only addresses with requests in
// flight and, like a full NGINX zone, rejects a new address when it holds ZONE_MAX_ADDRESSES.

import { LRUCache } from 'lru-cache';

/** Addresses one zone remembers (NGINX's 5 MB zones hold some tens of thousands). */
export const ZONE_MAX_ADDRESSES = 16_384;

interface Bucket {
  /** thousandths of a request above the rate */
  excess: number;
  /** ms (monotonic) of the last accepted request */
  last: number;
}

export class RequestZone {
  /** thousandths of a request drained per second (NGINX `ctx->rate`: 1r/m is 16) */
  readonly rate: number;
  /** thousandths of a request the bucket may hold */
  readonly burst: number;
  #buckets: LRUCache<string, Bucket> | null = null;

  /** `perMinute`: the limit counts per minute (limit-rpm), else per second (limit-rps) */
  constructor(limit: number, burst: number, perMinute: boolean) {
    this.rate = Math.floor((limit * 1000) / (perMinute ? 60 : 1));
    this.burst = Math.max(0, burst) * 1000;
  }

  /** The excess an accepted request would leave, or -1 when the request is over the limit. */
  probe(address: string, now: number): number {
    const bucket = this.#buckets?.get(address);
    if (bucket === undefined) return 0;
    const elapsed = Math.max(0, now - bucket.last);
    const excess = Math.max(0, bucket.excess - Math.floor((this.rate * elapsed) / 1000) + 1000);
    return excess > this.burst ? -1 : excess;
  }

  /** Account an accepted request with the excess `probe` gave. */
  commit(address: string, excess: number, now: number): void {
    this.#buckets ??= new LRUCache<string, Bucket>({ max: ZONE_MAX_ADDRESSES });
    const bucket = this.#buckets.get(address);
    if (bucket === undefined) this.#buckets.set(address, { excess, last: now });
    else {
      bucket.excess = excess;
      bucket.last = now;
    }
  }

  /** addresses remembered (tests, debugging) */
  get size(): number {
    return this.#buckets?.size ?? 0;
  }
}

export class ConnectionZone {
  readonly limit: number;
  readonly #inFlight = new Map<string, number>();

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Take a slot for `address`; false when it already has `limit` requests in flight. */
  acquire(address: string): boolean {
    const count = this.#inFlight.get(address) ?? 0;
    if (count >= this.limit) return false;
    if (count === 0 && this.#inFlight.size >= ZONE_MAX_ADDRESSES) return false;
    this.#inFlight.set(address, count + 1);
    return true;
  }

  release(address: string): void {
    const count = this.#inFlight.get(address);
    if (count === undefined) return;
    if (count <= 1) this.#inFlight.delete(address);
    else this.#inFlight.set(address, count - 1);
  }

  /** requests in flight for `address` */
  inFlight(address: string): number {
    return this.#inFlight.get(address) ?? 0;
  }
}

export type Zone = RequestZone | ConnectionZone;
