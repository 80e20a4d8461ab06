// The V8 heap limits a data-plane thread starts with. V8 sizes a heap's young generation from the
// machine's memory: on a machine with 16 GiB or more, up to 192 MiB (three 64 MiB semi-spaces' worth).
// A thread that proxies steadily grows its young generation to that maximum within minutes, and the
// native memory of its requests follows, so an idle thread of ~30 MiB became ~77 MiB after load.
// A young generation of a few MiB holds a request's short-lived objects just as well: they die long
// before a scavenge, whatever its size, so a smaller one costs a few more scavenges, not more
// promotion (bench/thread-young-gen.ts measures both). The old generation is left to V8: a cap small
// enough to save memory would stop a thread (an out-of-memory exit) under load a larger heap serves.

import type { ResourceLimits } from 'node:worker_threads';

/** What a data-plane thread's young generation may grow to, MiB (V8 rounds a semi-space up to a power of two). */
export const THREAD_YOUNG_GENERATION_MB = 24;

/** The environment variable that overrides it: a size in MiB, or 0 for V8's own sizing. */
export const YOUNG_GENERATION_ENV = 'INGRESS_TS_THREAD_YOUNG_GENERATION_MB';

/**
 * The `resourceLimits` of every data-plane thread, from `env` (process.env). Node's own
 * `--max-semi-space-size` (NODE_OPTIONS), when given, sizes every isolate and wins over these.
 */
export function threadResourceLimits(env: NodeJS.ProcessEnv = process.env): ResourceLimits {
  const text = env[YOUNG_GENERATION_ENV];
  if (text === undefined || text === '') return { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB };
  const mb = Number(text);
  if (!Number.isInteger(mb) || mb < 0 || mb > 4096) {
    throw new RangeError(
      `${YOUNG_GENERATION_ENV} expects a whole number of MiB from 0 to 4096, not "${text}"`,
    );
  }
  return mb === 0 ? {} : { maxYoungGenerationSizeMb: mb };
}
