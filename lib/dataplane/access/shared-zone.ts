// The memory of one rate-limit zone in a SharedArrayBuffer, so that every data-plane thread counts
// in the same table, as NGINX's workers share a limit_req / limit_conn zone. A zone buffer filled with
// zeroes is an empty zone: whoever allocates one needs no initialisation step and no thread can see a
// half-initialised table.
//
// Layout (Int32 words, then Float64s):
//   header   lock word, waiter count, lock sequence, addresses held, LRU head and tail, free list,
//            nodes ever used, locks taken over
//   index    2 × ZONE_MAX_ADDRESSES slots of open addressing with linear probing (load ≤ 1/2, so a
//            lookup reads about two slots); a slot holds a node number, 0 for empty. A removal
//            shifts the following entries back instead of leaving tombstones, so the probe length
//            never degrades however many addresses come and go.
//   nodes    ZONE_MAX_ADDRESSES × [hash high, hash low, value, previous, next]: `value` is the number
//            of requests in flight (connection zones); previous/next link the LRU list (request
//            zones) or the free list. Nodes never move: the index and the list refer to them by
//            number (1-based).
//   buckets  ZONE_MAX_ADDRESSES × Float64 [excess, last] (request zones): thousandths of a request
//            above the rate (a Float64: rate × burst can pass 2³¹) and ms of the last accepted one
//
// The key: a 64-bit hash of the address string (two 32-bit FNV-1a/Murmur-style lanes over the
// characters) stands for the address, compared on both halves. Two addresses with the same 64-bit hash
// would share one state; for a full zone (16,384 addresses) the chance that any two do is about
// 16384² / 2⁶⁵ ≈ 7 × 10⁻¹², which we accept rather than store 45-character IPv6 strings (or parse
// them to 16 bytes) on every request. Distinct hashes that meet in one index slot are the ordinary
// case of open addressing and are handled by probing.
//
// Locking: one lock per zone (an Atomics.compareExchange on the lock word), taken for the few
// hundred nanoseconds of a lookup and an update, as NGINX takes its zone's slab mutex per request.
// Per-slot locks would let two threads update different addresses at once, but the LRU list (NGINX
// evicts the least recently seen address when its zone is full) is one structure per zone, and on the
// measured costs (bench/results/zones-*.md) an uncontended lock costs some tens of ns and two threads
// on one zone pay 0-150 ns more per check than on two zones, about 0.1 % of a request. A thread
// that finds the lock taken spins briefly, then sleeps in Atomics.wait in 1 ms steps (the holder
// wakes it on release). A holder never leaves the section early (no await, no allocation that could
// throw in it), so a lock that does not move for LOCK_STALE_MS belongs to a thread that was
// terminated inside the section: the waiter takes it over and empties the zone (the half-made update
// cannot be trusted) and says so on the data plane's error channel. NGINX's master likewise frees
// the mutex of a worker that died holding it.
//
// Clock: request zones compare times written by different threads. `performance.now()` counts from
// the thread's time origin, which nothing promises to be the same in a worker (Node 24.21 happens to
// share the process's), and Date.now() follows wall-clock steps. zoneNow() is process.hrtime's monotonic clock (one
// CLOCK_MONOTONIC for the whole process) in ms, read as performance.now() plus an offset measured once
// per thread (performance.now() is itself the monotonic clock minus the thread's origin), so a read
// costs what performance.now() costs, and every thread agrees to within some microseconds.

import { threadId } from 'node:worker_threads';
import { dataplaneError } from '../events.ts';

/** Addresses one zone remembers (NGINX's 5 MB zones hold some tens of thousands). */
export const ZONE_MAX_ADDRESSES = 16_384;

const SLOTS = ZONE_MAX_ADDRESSES * 2;
const SLOT_MASK = SLOTS - 1;

// header words
const LOCK = 0;
const WAITERS = 1;
/** bumped by every lock taken: a waiter that sees it still for LOCK_STALE_MS finds the holder gone */
const SEQUENCE = 2;
const COUNT = 3;
const HEAD = 4;
const TAIL = 5;
const FREE = 6;
const USED = 7;
const TAKEN_OVER = 8;
const HEADER_WORDS = 16;

const INDEX = HEADER_WORDS;
const NODES = INDEX + SLOTS;
const NODE_WORDS = 5;
const HASH_HI = 0;
const HASH_LO = 1;
const VALUE = 2;
const PREV = 3;
const NEXT = 4;
const NODE_END = NODES + ZONE_MAX_ADDRESSES * NODE_WORDS;
/** Float64 index of node 1's bucket (8-byte aligned) */
const BUCKETS = Math.ceil(NODE_END / 2);

/** Bytes of one zone's SharedArrayBuffer (704 KiB; pages the zone never touches cost no memory). */
export const ZONE_BYTES = (BUCKETS + ZONE_MAX_ADDRESSES * 2) * 8;

const SPINS = 64;
/** no live holder keeps the lock this long: the section is a few hundred nanoseconds */
const LOCK_STALE_MS = 250;

const HRTIME_OFFSET_MS = hrtimeOffset();

/** hrtime − performance.now(), from the tightest of a few bracketed reads (the first is slow). */
function hrtimeOffset(): number {
  let offset = 0;
  let spread = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 8; i++) {
    const before = performance.now();
    const hrtime = Number(process.hrtime.bigint()) / 1e6;
    const after = performance.now();
    if (after - before < spread) {
      spread = after - before;
      offset = hrtime - (before + after) / 2;
    }
  }
  return offset;
}

/** Milliseconds on the process-wide monotonic clock, the same in every thread (see the header). */
export function zoneNow(): number {
  return performance.now() + HRTIME_OFFSET_MS;
}

/**
 * A new, empty zone buffer. Declared growable (to its own size, so it never grows): V8 then reserves
 * its pages from the OS instead of calloc, so a zone costs no memory until its addresses touch it,
 * none of it counts as external memory for the GC, and a freed zone is unmapped. A plain
 * SharedArrayBuffer comes from malloc: once glibc recycles freed zones from its heap, each new one
 * is zeroed in full (measured: 5,000 zones allocated after 5,000 freed took 680 MiB of RSS; growable,
 * nothing).
 */
export function allocateZoneBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(ZONE_BYTES, { maxByteLength: ZONE_BYTES });
}

/**
 * One zone's table, seen from one thread. The methods after `lock` run with the lock held, on the
 * address `select` hashed last (they are synchronous: nothing else in this thread runs in between).
 */
export class SharedAddressTable {
  readonly buffer: SharedArrayBuffer;
  readonly #words: Int32Array;
  readonly #buckets: Float64Array;
  /** this thread's mark in the lock word (never 0) */
  readonly #token = threadId + 1;
  #hi = 0;
  #lo = 0;
  /** the index slot where `find` stopped: the address's, or the empty slot a new one takes */
  #slot = 0;

  constructor(buffer: SharedArrayBuffer) {
    if (buffer.byteLength !== ZONE_BYTES) throw new RangeError(`a zone buffer has ${ZONE_BYTES} bytes`);
    this.buffer = buffer;
    // fixed-length views: views that track a growable buffer's length are several times slower
    this.#words = new Int32Array(buffer, 0, ZONE_BYTES / 4);
    this.#buckets = new Float64Array(buffer, 0, ZONE_BYTES / 8);
  }

  /** addresses held */
  get size(): number {
    return Atomics.load(this.#words, COUNT);
  }

  /** times a lock left by a terminated thread was taken over (the zone was emptied) */
  get takenOver(): number {
    return Atomics.load(this.#words, TAKEN_OVER);
  }

  /** The address the next calls are about (hashed before the lock is taken). */
  select(address: string): void {
    let hi = 0x811c9dc5 ^ address.length;
    let lo = 0x9e3779b9;
    for (let i = 0; i < address.length; i++) {
      const c = address.charCodeAt(i);
      hi = Math.imul(hi ^ c, 0x01000193);
      lo = Math.imul(lo ^ c, 0x5bd1e995);
      lo ^= lo >>> 13;
    }
    hi ^= hi >>> 16;
    hi = Math.imul(hi, 0x85ebca6b);
    hi ^= hi >>> 13;
    lo ^= lo >>> 15;
    lo = Math.imul(lo, 0xc2b2ae35);
    lo ^= lo >>> 16;
    this.#hi = hi | 0;
    this.#lo = lo | 0;
  }

  lock(): void {
    const words = this.#words;
    if (Atomics.compareExchange(words, LOCK, 0, this.#token) === 0) {
      words[SEQUENCE] = words[SEQUENCE]! + 1;
      return;
    }
    this.#lockContended();
  }

  #lockContended(): void {
    const words = this.#words;
    for (let i = 0; i < SPINS; i++) {
      if (Atomics.compareExchange(words, LOCK, 0, this.#token) === 0) {
        words[SEQUENCE] = words[SEQUENCE]! + 1;
        return;
      }
    }
    let sequence = Atomics.load(words, SEQUENCE);
    let since = zoneNow();
    for (;;) {
      const holder = Atomics.compareExchange(words, LOCK, 0, this.#token);
      if (holder === 0) break;
      Atomics.add(words, WAITERS, 1);
      Atomics.wait(words, LOCK, holder, 1);
      Atomics.sub(words, WAITERS, 1);
      const now = zoneNow();
      const seen = Atomics.load(words, SEQUENCE);
      if (seen !== sequence) {
        sequence = seen;
        since = now;
      } else if (
        now - since > LOCK_STALE_MS &&
        Atomics.compareExchange(words, LOCK, holder, this.#token) === holder
      ) {
        this.#empty();
        Atomics.add(words, TAKEN_OVER, 1);
        dataplaneError.publish({
          message: `a rate-limit zone's lock was left by a thread that ended holding it: taken over after ${LOCK_STALE_MS} ms, the zone's addresses forgotten`,
        });
        break;
      }
    }
    words[SEQUENCE] = words[SEQUENCE]! + 1;
  }

  unlock(): void {
    const words = this.#words;
    Atomics.store(words, LOCK, 0);
    if (Atomics.load(words, WAITERS) > 0) Atomics.notify(words, LOCK, 1);
  }

  /** Forget every address (the lock is held). */
  #empty(): void {
    const words = this.#words;
    for (let i = COUNT; i <= USED; i++) words[i] = 0;
    words.fill(0, INDEX, INDEX + SLOTS);
  }

  /** The node of the selected address, or 0. */
  find(): number {
    const words = this.#words;
    const hi = this.#hi;
    const lo = this.#lo;
    let slot = hi & SLOT_MASK;
    for (let probes = 0; probes < SLOTS; probes++) {
      const node = words[INDEX + slot]!;
      if (node === 0) break;
      const at = NODES + (node - 1) * NODE_WORDS;
      if (words[at + HASH_HI]! === hi && words[at + HASH_LO]! === lo) {
        this.#slot = slot;
        return node;
      }
      slot = (slot + 1) & SLOT_MASK;
    }
    this.#slot = slot;
    return 0;
  }

  /**
   * Add the selected address with `value`, right after a `find` that returned 0 (a `remove` in
   * between can move the slot it found); 0 when the zone is full.
   */
  insert(value: number): number {
    const words = this.#words;
    let node = words[FREE]!;
    if (node !== 0) words[FREE] = words[NODES + (node - 1) * NODE_WORDS + NEXT]!;
    else if (words[USED]! < ZONE_MAX_ADDRESSES) {
      node = words[USED]! + 1;
      words[USED] = node;
    } else return 0;
    const at = NODES + (node - 1) * NODE_WORDS;
    words[at + HASH_HI] = this.#hi;
    words[at + HASH_LO] = this.#lo;
    words[at + VALUE] = value;
    words[at + PREV] = 0;
    words[at + NEXT] = 0;
    words[INDEX + this.#slot] = node;
    words[COUNT] = words[COUNT]! + 1;
    return node;
  }

  /** Remove `node` from the index (and the LRU list when `listed`) and free it. */
  remove(node: number, listed: boolean): void {
    const words = this.#words;
    const at = NODES + (node - 1) * NODE_WORDS;
    if (listed) this.#unlink(node);
    let slot = words[at + HASH_HI]! & SLOT_MASK;
    while (words[INDEX + slot]! !== node) slot = (slot + 1) & SLOT_MASK;
    // backward-shift deletion: an entry after the hole moves into it unless its home slot lies
    // cyclically between the hole and itself
    let next = slot;
    for (;;) {
      next = (next + 1) & SLOT_MASK;
      const moving = words[INDEX + next]!;
      if (moving === 0) break;
      const home = words[NODES + (moving - 1) * NODE_WORDS + HASH_HI]! & SLOT_MASK;
      const stays = slot <= next ? slot < home && home <= next : slot < home || home <= next;
      if (stays) continue;
      words[INDEX + slot] = moving;
      slot = next;
    }
    words[INDEX + slot] = 0;
    words[at + NEXT] = words[FREE]!;
    words[FREE] = node;
    words[COUNT] = words[COUNT]! - 1;
  }

  value(node: number): number {
    return this.#words[NODES + (node - 1) * NODE_WORDS + VALUE]!;
  }

  setValue(node: number, value: number): void {
    this.#words[NODES + (node - 1) * NODE_WORDS + VALUE] = value;
  }

  /** thousandths of a request above the rate (request zones) */
  excess(node: number): number {
    return this.#buckets[BUCKETS + (node - 1) * 2]!;
  }

  /** ms (zoneNow) of the last accepted request (request zones) */
  last(node: number): number {
    return this.#buckets[BUCKETS + (node - 1) * 2 + 1]!;
  }

  setBucket(node: number, excess: number, last: number): void {
    const at = BUCKETS + (node - 1) * 2;
    this.#buckets[at] = excess;
    this.#buckets[at + 1] = last;
  }

  /** The least recently used node (the LRU list's tail), or 0. */
  oldest(): number {
    return this.#words[TAIL]!;
  }

  /** Make `node` the most recently used (it may be in the list already, or new). */
  touch(node: number): void {
    const words = this.#words;
    if (words[HEAD]! === node) return;
    const at = NODES + (node - 1) * NODE_WORDS;
    if (words[at + PREV]! !== 0) this.#unlink(node);
    const head = words[HEAD]!;
    words[at + PREV] = 0;
    words[at + NEXT] = head;
    if (head !== 0) words[NODES + (head - 1) * NODE_WORDS + PREV] = node;
    else words[TAIL] = node;
    words[HEAD] = node;
  }

  #unlink(node: number): void {
    const words = this.#words;
    const at = NODES + (node - 1) * NODE_WORDS;
    const prev = words[at + PREV]!;
    const next = words[at + NEXT]!;
    if (prev !== 0) words[NODES + (prev - 1) * NODE_WORDS + NEXT] = next;
    else words[HEAD] = next;
    if (next !== 0) words[NODES + (next - 1) * NODE_WORDS + PREV] = prev;
    else words[TAIL] = prev;
    words[at + PREV] = 0;
    words[at + NEXT] = 0;
  }
}
