// Data-plane counters for end-to-end tests, through the DataPlaneHandle so that they hold with the
// data plane on the main thread and in worker threads alike (INGRESS_TS_TEST_THREADS).
import type { DataPlaneHandle, DataPlaneStats } from '../../lib/dataplane/handle.ts';

/** The counters now; with threads, once every thread's counters so far have arrived. */
export function planeStats(handle: DataPlaneHandle): Promise<DataPlaneStats> {
  return handle.flushed === undefined ? Promise.resolve(handle.statsSnapshot()) : handle.flushed();
}

/** Resolves once `check` holds for the counters, looking again on every turn of the event loop. */
export async function untilStats(
  handle: DataPlaneHandle,
  check: (stats: DataPlaneStats) => boolean,
): Promise<void> {
  while (!check(await planeStats(handle))) await new Promise((resolve) => setImmediate(resolve));
}
