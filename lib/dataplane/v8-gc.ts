// V8's gc() without --expose-gc on the command line and without a global `gc`: both the main thread
// (lib/startup-gc.ts) and a serving thread (idle-heap.ts) start collections of their own.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's gc extension's options: a major collection, now (`sync`) or in a later task (`async`). */
export interface GcOptions {
  type: 'major';
  execution: 'sync' | 'async';
  /** last-resort: collect as much as possible and give freed pages back to the system */
  flavor?: 'regular' | 'last-resort';
}

/** V8's gc(): given to a fresh context while --expose-gc is on, never put on this one's global. */
export function v8Gc(): (options: GcOptions) => void {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as (options: GcOptions) => void;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as (options: GcOptions) => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
