// The young generation of data-plane threads: 32 MiB unless INGRESS_TS_THREAD_YOUNG_GENERATION_MB sets
// another (0: V8's own sizing), applied by V8 in every thread the pool starts, replacements included.
import { once } from 'node:events';
import t from 'tap';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { DataPlaneThreads } from '../../../lib/dataplane/worker/pool.ts';
import {
  DEFAULT_YOUNG_GENERATION_MB,
  threadResourceLimits,
  YOUNG_GENERATION_ENV,
} from '../../../lib/dataplane/worker/thread-heap.ts';

const SMALL = 24;

t.setTimeout(120_000);

const generatedDefaultCertificate = await generateDefaultCertificate();

t.test('the limits from the environment', async (t) => {
  const rows: Array<[string | undefined, ReturnType<typeof threadResourceLimits>]> = [
    [undefined, { maxYoungGenerationSizeMb: 32 }],
    ['', { maxYoungGenerationSizeMb: 32 }],
    ['0', {}],
    ['24', { maxYoungGenerationSizeMb: 24 }],
    ['48', { maxYoungGenerationSizeMb: 48 }],
    ['4096', { maxYoungGenerationSizeMb: 4096 }],
  ];
  for (const [value, limits] of rows) {
    const env = value === undefined ? {} : { [YOUNG_GENERATION_ENV]: value };
    t.strictSame(threadResourceLimits(env), limits, `${YOUNG_GENERATION_ENV}=${value ?? '(unset)'}`);
  }
  for (const value of ['x', '-1', '1.5', '4097', '16MiB']) {
    t.throws(
      () => threadResourceLimits({ [YOUNG_GENERATION_ENV]: value }),
      { name: 'RangeError', message: new RegExp(YOUNG_GENERATION_ENV) },
      `${value} is refused`,
    );
  }
});

/** A pool of one thread started with `value` in the environment, and its worker's V8 heap limit, MiB. */
async function heapLimitMiB(value: string | undefined): Promise<{ pool: DataPlaneThreads; limit: number }> {
  const saved = process.env[YOUNG_GENERATION_ENV];
  if (value === undefined) delete process.env[YOUNG_GENERATION_ENV];
  else process.env[YOUNG_GENERATION_ENV] = value;
  try {
    const pool = new DataPlaneThreads({
      threads: 1,
      httpPort: 0,
      httpsPort: 0,
      bindAddress: '127.0.0.1',
      generatedDefaultCertificate,
    });
    await pool.flushed(); // the thread runs once it answers
    const worker = pool.workers[0];
    if (worker === undefined) throw new Error('no worker');
    const { heap_size_limit } = await worker.getHeapStatistics();
    return { pool, limit: heap_size_limit / 2 ** 20 };
  } finally {
    if (saved === undefined) delete process.env[YOUNG_GENERATION_ENV];
    else process.env[YOUNG_GENERATION_ENV] = saved;
  }
}

t.test('V8 gives each thread, and its replacement, the young generation set', async (t) => {
  // V8's heap limit is the old generation's plus the young generation's: the same old generation
  // in both, so the difference is what the young generation may take
  const own = await heapLimitMiB('0');
  t.teardown(() => own.pool.close());
  const limited = await heapLimitMiB(String(SMALL));
  t.teardown(() => limited.pool.close());
  t.ok(
    own.limit - limited.limit >= 48,
    `V8's own sizing allows a larger young generation (${own.limit} MiB against ${limited.limit} MiB)`,
  );
  const worker = limited.pool.workers[0];
  t.equal(worker?.resourceLimits?.maxYoungGenerationSizeMb, SMALL);

  const exited = once(worker as NonNullable<typeof worker>, 'exit');
  await worker?.terminate();
  await exited;
  await limited.pool.settled();
  await limited.pool.flushed();
  const replacement = limited.pool.workers[0];
  t.not(replacement, worker, 'a replacement in the slot');
  t.equal(replacement?.resourceLimits?.maxYoungGenerationSizeMb, SMALL);
  const { heap_size_limit } = await (replacement as NonNullable<typeof replacement>).getHeapStatistics();
  t.equal(heap_size_limit / 2 ** 20, limited.limit, 'the same heap limit as the thread it replaces');
});

t.test('by default a thread gets the default young generation', async (t) => {
  const byDefault = await heapLimitMiB(undefined);
  t.teardown(() => byDefault.pool.close());
  t.equal(byDefault.pool.workers[0]?.resourceLimits?.maxYoungGenerationSizeMb, DEFAULT_YOUNG_GENERATION_MB);
  const own = await heapLimitMiB('0');
  t.teardown(() => own.pool.close());
  t.ok(
    own.limit - byDefault.limit >= 48,
    `smaller than V8's own (${byDefault.limit} MiB against ${own.limit} MiB)`,
  );
});
