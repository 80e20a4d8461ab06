// The V8 heap limits a data-plane thread starts with. V8 sizes a heap's young generation from the
// machine's memory: on a machine with 16 GiB or more, up to 192 MiB (three 64 MiB semi-spaces' worth).
// A thread that proxies steadily grows its young generation to that maximum within a minute or two,
// and the native memory of its requests follows: a thread of ~30 MiB idle became ~77 MiB after load.
// A smaller young generation holds that growth back (24 MiB: ~55 instead of ~140-160 MiB of growth
// per thread, bench/thread-young-gen.ts) but scavenges 2.5 times as often and promotes more, and on
// the busy 2-core machine it was measured on it cost ~4% more CPU per request (geometric mean of 23
// paired rounds; the rounds themselves spread ±15%), more than the ~3% the default may cost. So V8
// keeps its own sizing unless the environment says otherwise; an operator who prefers the memory sets
// INGRESS_TS_THREAD_YOUNG_GENERATION_MB. The old generation is left to V8 in any case: a cap small
// enough to save memory would stop a thread (an out-of-memory exit) under load a larger heap serves.

import type { ResourceLimits } from 'node:worker_threads';

/** The environment variable that sets it: a size in MiB (V8 rounds a semi-space up to a power of two), 0 for V8's own. */
export const YOUNG_GENERATION_ENV = 'INGRESS_TS_THREAD_YOUNG_GENERATION_MB';

/**
 * The `resourceLimits` of every data-plane thread, from `env` (process.env): none by default. Node's
 * own `--max-semi-space-size` (NODE_OPTIONS), when given, sizes every isolate and wins over these.
 */
export function threadResourceLimits(env: NodeJS.ProcessEnv = process.env): ResourceLimits {
  const text = env[YOUNG_GENERATION_ENV];
  if (text === undefined || text === '') return {};
  const mb = Number(text);
  if (!Number.isInteger(mb) || mb < 0 || mb > 4096) {
    throw new RangeError(
      `${YOUNG_GENERATION_ENV} expects a whole number of MiB from 0 to 4096, not "${text}"`,
    );
  }
  return mb === 0 ? {} : { maxYoungGenerationSizeMb: mb };
}
