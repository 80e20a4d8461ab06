// The V8 heap limits a data-plane thread starts with. V8 sizes a heap's young generation from the
// machine's memory: on a machine with 16 GiB or more, up to 192 MiB (three 64 MiB semi-spaces' worth).
// A thread that proxies steadily grows its young generation to that maximum within a minute or two,
// and the native memory of its requests follows: ~125 MiB of growth per thread after load. A
// scavenge mostly costs what it keeps alive, and a request that is over keeps nothing
// (lib/dataplane/live-set.ts): ~0.5 MiB, the requests in flight, survives each one. So a smaller
// young generation scavenges more often for about the same CPU: with 32 MiB, ~16 scavenges per
// 10,000 requests instead of ~8, CPU per request 0.99 and 1.02 of V8's sizing (two runs of 6 and 10
// paired rounds, quiet machine), and ~47 instead of ~125 MiB of growth per thread
// (bench/thread-young-gen.ts). 16 MiB saved ~20 MiB more but measured 0.98, 1.04 and 1.08: each
// scavenge also has a fixed cost, and 28 of them per 10,000 requests add up. (Before live-set.ts,
// when each scavenge kept ~13 MiB of dead requests, every smaller size cost ~4% more CPU and V8's
// sizing was the default.) INGRESS_TS_THREAD_YOUNG_GENERATION_MB sets another size, 0 for V8's own.
// The old generation is left to V8 whatever the young one's size: a cap small enough to save
// memory would stop a thread (an out-of-memory exit) under load a larger heap serves.

import type { ResourceLimits } from 'node:worker_threads';

/** The environment variable that sets it: a size in MiB (V8 rounds a semi-space up to a power of two), 0 for V8's own. */
export const YOUNG_GENERATION_ENV = 'INGRESS_TS_THREAD_YOUNG_GENERATION_MB';
/** The young generation of a data-plane thread when the environment names none, MiB. */
export const DEFAULT_YOUNG_GENERATION_MB = 32;

/**
 * The `resourceLimits` of every data-plane thread, from `env` (process.env): a young generation of
 * DEFAULT_YOUNG_GENERATION_MB unless the environment names another. Node's own
 * `--max-semi-space-size` (NODE_OPTIONS), when given, sizes every isolate and wins over these.
 */
export function threadResourceLimits(env: NodeJS.ProcessEnv = process.env): ResourceLimits {
  const text = env[YOUNG_GENERATION_ENV];
  if (text === undefined || text === '') return { maxYoungGenerationSizeMb: DEFAULT_YOUNG_GENERATION_MB };
  const mb = Number(text);
  if (!Number.isInteger(mb) || mb < 0 || mb > 4096) {
    throw new RangeError(
      `${YOUNG_GENERATION_ENV} expects a whole number of MiB from 0 to 4096, not "${text}"`,
    );
  }
  return mb === 0 ? {} : { maxYoungGenerationSizeMb: mb };
}
