// One full garbage collection after the first model is built, before the listeners open. Reading a
// large cluster and building its first model leave the heap grown far past what stays alive (10,000
// Ingresses: ~560 MiB RSS at ready, ~390 MiB after a full GC), and V8 does not collect that garbage
// while the process idles (measured: RSS flat for 60 s). The collection runs synchronously, here,
// because no request can wait on it yet: V8's "async" major collection is not incremental in the
// sense that matters, it runs the whole collection later in one task of the event loop (a 487 ms
// pause on a 155 MiB heap, 1.5-2 s in a thread at 10,000 Ingresses), which with `worker-processes: 1`
// would land on the serving thread just after ready. A small heap is left alone.

import { getHeapStatistics } from 'node:v8';
import { v8Gc } from './dataplane/v8-gc.ts';

/** below this heap size (the V8 heap's committed memory) the collection is not worth starting */
export const STARTUP_GC_MIN_HEAP_BYTES = 128 * 2 ** 20;

/**
 * Runs one major collection when the heap is at least `minHeapBytes` and returns the heap's size
 * before it; null (nothing collected) when it is smaller. Call it before the listeners open.
 */
export function startStartupCollection(minHeapBytes = STARTUP_GC_MIN_HEAP_BYTES): number | null {
  const heapBytes = getHeapStatistics().total_heap_size;
  if (heapBytes < minHeapBytes) return null;
  v8Gc()({ type: 'major', execution: 'sync' });
  return heapBytes;
}
