// Finished requests' records handed on a run at a time: once RECORD_BATCH wait or when drained, in
// order, each once, with the wall-clock time of its request's end.
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { RECORD_BATCH, RecordQueue } from '../../lib/dataplane/record-queue.ts';
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';
import { record } from '../support/request-record.ts';

interface Handled {
  uri: string;
  time: number;
}

function setUp() {
  const handled: Handled[] = [];
  let waiting = 0;
  const queue = new RecordQueue(
    (r, time) => handled.push({ uri: r.uri, time }),
    () => waiting++,
  );
  return { queue, handled, waiting: () => waiting };
}

t.test('a run is handled once RECORD_BATCH records wait, in order, each once', async (t) => {
  const { queue, handled } = setUp();
  for (let i = 0; i < RECORD_BATCH - 1; i++) queue.push(record({ uri: `/${i}` }));
  t.equal(handled.length, 0, 'fewer wait: none handled yet');
  t.equal(queue.size, RECORD_BATCH - 1);
  queue.push(record({ uri: '/last' }));
  t.equal(handled.length, RECORD_BATCH, 'the whole run');
  t.equal(queue.size, 0);
  t.strictSame(
    handled.map((h) => h.uri),
    [...Array.from({ length: RECORD_BATCH - 1 }, (_, i) => `/${i}`), '/last'],
  );
  queue.drain();
  t.equal(handled.length, RECORD_BATCH, 'nothing handled twice');
});

t.test('drain hands on what waits; `waiting` marks the first record of a run', async (t) => {
  const { queue, handled, waiting } = setUp();
  queue.drain();
  t.equal(handled.length, 0, 'an empty drain does nothing');
  queue.push(record({ uri: '/a' }));
  queue.push(record({ uri: '/b' }));
  t.equal(waiting(), 1, 'once for the run');
  queue.drain();
  t.strictSame(
    handled.map((h) => h.uri),
    ['/a', '/b'],
  );
  queue.push(record({ uri: '/c' }));
  t.equal(waiting(), 2, 'again for the next run');
  for (let i = 1; i < RECORD_BATCH; i++) queue.push(record());
  t.equal(waiting(), 2, 'not for a run the size handed on');
  queue.push(record());
  t.equal(waiting(), 3);
});

t.test("each record's time is the wall clock of its end, not of the drain", async (t) => {
  const { queue, handled } = setUp();
  const now = performance.now();
  // ended 2.5 s ago after 4 ms, ended 1 s ago after 1.5 s, ending now
  const ended = [
    record({ uri: '/old', start: now - 2504, requestTime: 0.004 }),
    record({ uri: '/slow', start: now - 2500, requestTime: 1.5 }),
    record({ uri: '/now', start: now - 4, requestTime: 0.004 }),
  ];
  const before = Date.now();
  for (const r of ended) queue.push(r);
  queue.drain();
  const after = Date.now();
  const ago = [2500, 1000, 0];
  handled.forEach((h, i) => {
    const want = ago[i] as number;
    // the two clocks are read a few µs apart, and the time is in whole ms
    t.ok(
      h.time >= before - want - 2 && h.time <= after - want + 1,
      `${h.uri}: ${want} ms before the drain (${after - h.time} ms)`,
    );
    t.ok(Number.isInteger(h.time), `${h.uri}: whole ms, as Date.now()`);
  });
});

t.test("a handler's exception does not keep the run's others from being handled", async (t) => {
  const seen: string[] = [];
  const queue = new RecordQueue((r: RequestRecord) => {
    seen.push(r.uri);
    if (r.uri.startsWith('/bad')) throw new Error(`failed on ${r.uri}`);
  });
  for (const uri of ['/a', '/bad-1', '/b', '/bad-2', '/c']) queue.push(record({ uri }));
  t.throws(() => queue.drain(), { message: 'failed on /bad-1' }, 'the first exception');
  t.strictSame(seen, ['/a', '/bad-1', '/b', '/bad-2', '/c'], 'all handled');
  t.equal(queue.size, 0, 'none left to be handled again');
  queue.drain();
  t.equal(seen.length, 5);
});

t.test('a handler that drains meets only what came after the run', async (t) => {
  const seen: string[] = [];
  const queue: RecordQueue = new RecordQueue((r) => {
    seen.push(r.uri);
    if (r.uri === '/b') queue.drain();
  });
  for (const uri of ['/a', '/b', '/c']) queue.push(record({ uri }));
  queue.drain();
  t.strictSame(seen, ['/a', '/b', '/c'], 'each once, in order');
  t.equal(queue.size, 0);
});
