// ingress-nginx's rate limits per client address (limit-rps, limit-rpm, limit-connections), one
// zone per Ingress as its template renders them (`<namespace>_<name>_<uid>_rps` …), per replica:
// every data-plane thread counts in the same zone, as NGINX's workers share one zone's memory.
//
// Requests (NGINX limit_req … burst=N nodelay): a leaky bucket per address counting "excess" in
// thousandths of a request. A new address starts at 0; each later request adds 1000 to what is left
// after draining `rate` per second since the last accepted one (never below 0); a request that would leave more
// than burst × 1000 is rejected at once and changes nothing (no delay, as with `nodelay`).
// Connections (NGINX limit_conn): requests in flight per address, released when the response ends.
//
// Memory: each zone is a SharedArrayBuffer table of at most ZONE_MAX_ADDRESSES addresses
// (shared-zone.ts; the buffer comes from a ZoneMemory, zone-memory.ts). A request zone keeps its
// addresses in least-recently-seen order and, when full, drops the oldest for a new one (which then
// starts afresh, as when NGINX's zone runs out and drops its oldest states); a connection zone keeps
// only addresses with requests in flight and, like a full NGINX zone, rejects a new address when it
// holds ZONE_MAX_ADDRESSES. Times are zoneNow() ms, the clock every thread agrees on.

import { allocateZoneBuffer, SharedAddressTable } from './shared-zone.ts';

export { ZONE_MAX_ADDRESSES } from './shared-zone.ts';

export class RequestZone {
  /** thousandths of a request drained per second (NGINX `ctx->rate`: 1r/m is 16) */
  readonly rate: number;
  /** thousandths of a request the bucket may hold */
  readonly burst: number;
  readonly table: SharedAddressTable;
  /** the node probeLocked found (0: none), for the commitLocked that follows it */
  #found = 0;

  /**
   * `perMinute`: the limit counts per minute (limit-rpm), else per second (limit-rps). `buffer`: the
   * zone's shared memory (default: a new one, this zone's alone).
   */
  constructor(limit: number, burst: number, perMinute: boolean, buffer = allocateZoneBuffer()) {
    this.rate = Math.floor((limit * 1000) / (perMinute ? 60 : 1));
    this.burst = Math.max(0, burst) * 1000;
    this.table = new SharedAddressTable(buffer);
  }

  /** The excess an accepted request would leave, or -1 when the request is over the limit. */
  probe(address: string, now: number): number {
    const table = this.table;
    table.select(address);
    table.lock();
    const excess = this.probeLocked(now);
    table.unlock();
    return excess;
  }

  /** Account an accepted request with the excess `probe` gave. */
  commit(address: string, excess: number, now: number): void {
    const table = this.table;
    table.select(address);
    table.lock();
    this.#found = table.find();
    if (this.#found !== 0) table.touch(this.#found);
    this.commitLocked(excess, now);
    table.unlock();
  }

  /** Probe and, when accepted, commit in one hold of the lock: whether the request may pass. */
  take(address: string, now: number): boolean {
    const table = this.table;
    table.select(address);
    table.lock();
    const excess = this.probeLocked(now);
    if (excess >= 0) this.commitLocked(excess, now);
    table.unlock();
    return excess >= 0;
  }

  /**
   * `probe` for the selected address, the lock held; a known address becomes the most recent. The
   * node found is kept for a `commitLocked` in the same hold of the lock.
   */
  probeLocked(now: number): number {
    const table = this.table;
    const node = table.find();
    this.#found = node;
    if (node === 0) return 0;
    table.touch(node);
    // a time read in another thread just before this one's last commit drains nothing
    const elapsed = Math.max(0, now - table.last(node));
    const excess = Math.max(0, table.excess(node) - Math.floor((this.rate * elapsed) / 1000) + 1000);
    return excess > this.burst ? -1 : excess;
  }

  /** `commit` for the selected address, right after `probeLocked` in the same hold of the lock. */
  commitLocked(excess: number, now: number): void {
    const table = this.table;
    let node = this.#found;
    if (node !== 0) {
      // probeLocked made it the most recent already
      table.setBucket(node, excess, now);
      return;
    }
    node = table.insert(0);
    if (node === 0) {
      // full: the least recently seen address makes room
      table.remove(table.oldest(), true);
      table.find();
      node = table.insert(0);
    }
    table.setBucket(node, excess, now);
    table.touch(node);
  }

  /** addresses remembered (tests, debugging) */
  get size(): number {
    return this.table.size;
  }
}

/**
 * One request against a route's rpm and rps zones: both must accept before either is charged (NGINX
 * accounts the limit_req zones of a location together). With both, the two locks are held together,
 * always rpm first, so no other thread charges either in between.
 */
export function takeRequest(
  rpm: RequestZone | null,
  rps: RequestZone | null,
  address: string,
  now: number,
): boolean {
  if (rpm === null) return rps === null || rps.take(address, now);
  if (rps === null) return rpm.take(address, now);
  const minutes = rpm.table;
  const seconds = rps.table;
  minutes.select(address);
  seconds.select(address);
  minutes.lock();
  seconds.lock();
  const rpmExcess = rpm.probeLocked(now);
  const rpsExcess = rpmExcess < 0 ? -1 : rps.probeLocked(now);
  if (rpsExcess >= 0) {
    rpm.commitLocked(rpmExcess, now);
    rps.commitLocked(rpsExcess, now);
  }
  seconds.unlock();
  minutes.unlock();
  return rpsExcess >= 0;
}

export class ConnectionZone {
  readonly limit: number;
  readonly table: SharedAddressTable;

  /** `buffer`: the zone's shared memory (default: a new one, this zone's alone). */
  constructor(limit: number, buffer = allocateZoneBuffer()) {
    this.limit = limit;
    this.table = new SharedAddressTable(buffer);
  }

  /** Take a slot for `address`; false when it already has `limit` requests in flight. */
  acquire(address: string): boolean {
    const table = this.table;
    table.select(address);
    table.lock();
    const node = table.find();
    let taken = false;
    if (node === 0) taken = this.limit > 0 && table.insert(1) !== 0;
    else if (table.value(node) < this.limit) {
      table.setValue(node, table.value(node) + 1);
      taken = true;
    }
    table.unlock();
    return taken;
  }

  release(address: string): void {
    const table = this.table;
    table.select(address);
    table.lock();
    const node = table.find();
    if (node !== 0) {
      const count = table.value(node);
      if (count <= 1) table.remove(node, false);
      else table.setValue(node, count - 1);
    }
    table.unlock();
  }

  /** requests in flight for `address` */
  inFlight(address: string): number {
    const table = this.table;
    table.select(address);
    table.lock();
    const node = table.find();
    const count = node === 0 ? 0 : table.value(node);
    table.unlock();
    return count;
  }
}

export type Zone = RequestZone | ConnectionZone;
