// One full garbage collection started after the first model is served. Reading a large cluster and
// building its first model leave the heap grown far past what stays alive (10,000 Ingresses: ~560
// MiB RSS at ready, ~390 MiB after a full GC), and V8 does not collect that garbage while the
// process idles (measured: RSS flat for 60 s). Started here, the collection runs as V8's own major
// collections do, incrementally and on its helper threads, without a long pause of the event loop
// (a synchronous one took seconds at 10,000 Ingresses on a busy machine); its memory reducer then
// hands the pages back, ~15 s after ready. A small heap is left alone.

import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** below this heap size (the V8 heap's committed memory) the collection is not worth starting */
export const STARTUP_GC_MIN_HEAP_BYTES = 128 * 2 ** 20;

/** V8's gc extension's options: a major collection, in steps (`async`) or at once. */
interface GcOptions {
  type: 'major';
  execution: 'sync' | 'async';
}

/** V8's gc(): given to a fresh context while --expose-gc is on, never put on this one's global. */
function v8Gc(): (options: GcOptions) => void {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as (options: GcOptions) => void;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as (options: GcOptions) => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/**
 * Starts one major collection when the heap is at least `minHeapBytes` and returns the heap's size
 * then; null (nothing started) when it is smaller.
 */
export function startStartupCollection(minHeapBytes = STARTUP_GC_MIN_HEAP_BYTES): number | null {
  const heapBytes = getHeapStatistics().total_heap_size;
  if (heapBytes < minHeapBytes) return null;
  v8Gc()({ type: 'major', execution: 'async' });
  return heapBytes;
}
