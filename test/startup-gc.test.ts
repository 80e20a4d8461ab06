// The full collection after the first build: only on a large heap, it frees what is garbage, and
// leaves no gc() behind on the global or in contexts made later.
import { getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { STARTUP_GC_MIN_HEAP_BYTES, startStartupCollection } from '../lib/startup-gc.ts';

/** ~60 MiB of objects, garbage once this returns (a frame of its own: no register of the caller holds them). */
function makeGarbage(): number {
  const garbage: object[] = [];
  for (let i = 0; i < 600_000; i++) garbage.push({ i, text: `garbage ${i}`, list: [i, i + 1] });
  return garbage.length;
}

t.test('a small heap is left alone', async (t) => {
  t.ok(getHeapStatistics().total_heap_size < STARTUP_GC_MIN_HEAP_BYTES, 'this test heap is small');
  t.equal(startStartupCollection(), null);
});

t.test('on a heap over the threshold a collection runs, without exposing gc()', async (t) => {
  const hadGc = typeof (globalThis as { gc?: unknown }).gc === 'function';
  t.equal(makeGarbage(), 600_000);
  const usedBefore = getHeapStatistics().used_heap_size;
  t.type(startStartupCollection(0), 'number', 'collected');
  const usedAfter = getHeapStatistics().used_heap_size;
  t.ok(
    usedAfter < usedBefore - 20 * 2 ** 20,
    `the garbage is gone (${Math.round(usedBefore / 2 ** 20)} → ${Math.round(usedAfter / 2 ** 20)} MiB used)`,
  );
  t.equal(typeof (globalThis as { gc?: unknown }).gc === 'function', hadGc, 'the global is as it was');
  t.equal(runInNewContext('typeof gc'), hadGc ? 'function' : 'undefined', 'a later context has no gc either');
});
