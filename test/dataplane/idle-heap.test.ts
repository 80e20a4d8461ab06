// A serving thread gives its young generation back once idle (lib/dataplane/idle-heap.ts): when, how
// often, and that the collection it runs does shrink V8's new space.
import { getHeapSpaceStatistics } from 'node:v8';
import t from 'tap';
import {
  collectReducingMemory,
  MAX_HEAP_USED_BYTES,
  MAX_TRIES,
  startIdleHeap,
} from '../../lib/dataplane/idle-heap.ts';

const MiB = 2 ** 20;

/**
 * A reducer on a fast timer whose ticks can be awaited (each tick reads `activity` once); its new
 * space is `grown` until a collection, then 1 MiB unless `collectionShrinks` is false.
 */
function harness(
  activity: () => number,
  options: { grown?: number; used?: number; collectionShrinks?: boolean } = {},
) {
  let collections = 0;
  let newSpace = options.grown ?? 64 * MiB;
  let tickWaiters: Array<() => void> = [];
  // the reducer's timer is unref'd (it never keeps a process alive): this one keeps the test's
  const alive = setInterval(() => {}, 1000);
  const reducer = startIdleHeap({
    intervalMs: 5,
    heap: () => ({ newSpace, used: options.used ?? 30 * MiB }),
    collect: () => {
      collections++;
      if (options.collectionShrinks !== false) newSpace = 1 * MiB;
    },
    activity: () => {
      const waiters = tickWaiters;
      tickWaiters = [];
      for (const wake of waiters) wake();
      return activity();
    },
  });
  return {
    collections: () => collections,
    grow: () => {
      newSpace = options.grown ?? 64 * MiB;
    },
    /** resolves after `n` more ticks */
    async ticks(n: number) {
      for (let i = 0; i < n; i++) await new Promise<void>((resolve) => tickWaiters.push(resolve));
    },
    stop: () => {
      reducer.stop();
      clearInterval(alive);
    },
  };
}

t.test(
  'idle: one collection; none while traffic moves the counters; again after the next traffic',
  async (t) => {
    let counter = 0;
    let busy = true;
    const h = harness(() => (busy ? ++counter : counter));
    t.teardown(h.stop);
    await h.ticks(10);
    t.equal(h.collections(), 0, 'busy: nothing collected');
    busy = false;
    await h.ticks(10);
    t.equal(h.collections(), 1, 'idle: one collection gives the new space back, then nothing more');
    busy = true;
    h.grow();
    await h.ticks(3);
    busy = false;
    await h.ticks(5);
    t.equal(h.collections(), 2, 'traffic grew it again, then idle: one more');
  },
);

t.test('a collection that does not shrink it is tried again, a bounded number of times', async (t) => {
  const h = harness(() => 0, { collectionShrinks: false });
  t.teardown(h.stop);
  await h.ticks(MAX_TRIES + 10);
  t.equal(h.collections(), MAX_TRIES);
});

t.test('left alone: a new space already small, a heap too large for a short pause', async (t) => {
  const small = harness(() => 0, { grown: 1 * MiB });
  t.teardown(small.stop);
  const large = harness(() => 0, { used: MAX_HEAP_USED_BYTES + MiB });
  t.teardown(large.stop);
  await Promise.all([small.ticks(10), large.ticks(10)]);
  t.equal(small.collections(), 0, 'small new space');
  t.equal(large.collections(), 0, 'large heap');
});

t.test("the collection shrinks V8's new space", async (t) => {
  const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  // request-like garbage (short-lived objects, a few kept for a while) until the new space has grown
  const kept: unknown[] = [];
  for (let round = 0; round < 300 || (round < 3000 && newSpace() <= 8 * MiB); round++) {
    for (let i = 0; i < 10_000; i++) {
      const garbage = { id: i, text: `request ${round}/${i}`, parts: [i, round] };
      if (i % 200 === 0) kept.push(garbage);
    }
    if (kept.length > 4000) kept.splice(0, 2000);
  }
  const grown = newSpace();
  t.ok(grown > 8 * MiB, `the new space is large after allocating (${(grown / MiB).toFixed(0)} MiB)`);
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));
  const given = new Promise<number>((resolve) => {
    const reducer = startIdleHeap({
      activity: () => 0,
      intervalMs: 20,
      collect: () => {
        collectReducingMemory();
        reducer.stop();
        resolve(newSpace());
      },
    });
    t.teardown(reducer.stop);
  });
  const after = await given;
  t.ok(after <= 4 * MiB, `given back: ${(grown / MiB).toFixed(0)} -> ${(after / MiB).toFixed(0)} MiB`);
  t.ok(kept.length > 0, 'survivors stayed reachable meanwhile');
});
