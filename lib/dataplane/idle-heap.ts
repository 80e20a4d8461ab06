// Gives a serving thread's young generation back to the system once the thread has been idle.
//
// Under load V8 grows a thread's new space to its maximum (64-128 MiB per thread on a machine with
// 16 GiB or more). It shrinks it only at the end of a collection, and hands the freed pages back to
// the system only in a collection that reduces memory (its memory reducer's, started some seconds
// after one of its own mark-compacts); other collections keep them pooled, resident. An idle thread
// allocates nothing, so nothing collects: after a load, 2 threads kept ~110-128 MiB of new space
// each for minutes (bench/thread-rss.ts), unless the memory reducer happened to run.
//
// So every `intervalMs` (a minute) a timer compares the thread's request and connection counters
// with its last look. When nothing moved for a whole interval, the new space is larger than its
// smallest size and the heap in use is small enough for the pause to stay short, one
// memory-reducing collection runs (V8's last-resort major collection: the new space shrinks and its
// pages are released). It is a full collection on the thread: measured ~10-60 ms of thread CPU on a
// heap of 25-50 MiB, so a heap over MAX_HEAP_USED_BYTES (a large model: ~110 MiB per thread at
// 10,000 Ingresses, where it would pause the thread for hundreds of ms) is left to V8. Reducing
// memory also makes V8 drop compiled code, so the first requests after it run slower while the
// new space regrows and the code is compiled again (V8's own memory reducer does the same when it
// runs): with a 10 s interval, bursts of 8 s every 16 s cost 1.33 times the CPU per request, which
// is why the interval is a minute, longer than the gaps of bursty traffic. Once per idle period (the
// next after traffic moved the counters again), tried twice at most. Under load the timer reads two
// counters per interval and does nothing else: the hot path pays nothing.

import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { v8Gc } from './v8-gc.ts';

export const IDLE_HEAP_INTERVAL_MS = 60_000;
/** a new space at or below this is left alone (V8's smallest is 1 MiB with 16 GiB or more) */
const MIN_NEW_SPACE_BYTES = 4 * 2 ** 20;
/** over this much heap in use the collection's pause is not worth it */
export const MAX_HEAP_USED_BYTES = 64 * 2 ** 20;
/** collections per idle period while the new space stays large */
export const MAX_TRIES = 2;

export interface IdleHeapOptions {
  /** a number that moves with traffic: requests plus accepted connections */
  activity: () => number;
  intervalMs?: number;
  /** the collection (tests count the calls) */
  collect?: () => void;
  /** the new space's committed size and the heap in use, bytes */
  heap?: () => { newSpace: number; used: number };
}

export interface IdleHeap {
  stop(): void;
}

function heapNow(): { newSpace: number; used: number } {
  let newSpace = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === 'new_space') newSpace = space.space_size;
  }
  return { newSpace, used: getHeapStatistics().used_heap_size };
}

let reducingGc: (() => void) | null = null;

/** One memory-reducing major collection, now. */
export function collectReducingMemory(): void {
  if (reducingGc === null) {
    const gc = v8Gc();
    reducingGc = () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  }
  reducingGc();
}

export function startIdleHeap(options: IdleHeapOptions): IdleHeap {
  const collect = options.collect ?? collectReducingMemory;
  const heap = options.heap ?? heapNow;
  let last = options.activity();
  let tries = 0;
  const timer = setInterval(() => {
    const now = options.activity();
    if (now !== last) {
      last = now;
      tries = 0;
      return;
    }
    if (tries >= MAX_TRIES) return;
    const { newSpace, used } = heap();
    if (newSpace <= MIN_NEW_SPACE_BYTES || used > MAX_HEAP_USED_BYTES) {
      tries = MAX_TRIES; // small already, given back, or too large to collect: done until the next idle period
      return;
    }
    tries++;
    collect();
  }, options.intervalMs ?? IDLE_HEAP_INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
