// A data-plane thread's records leave it in batches: one message per 256 records or per tick, never
// one per request, in the order they were published, with the thread's counters and the measures of
// its finished requests; a record that cannot be cloned is replaced by a data-plane error instead of
// losing the batch.
import { MessageChannel } from 'node:worker_threads';
import t from 'tap';
import { dataplaneError, streamClosed } from '../../../lib/dataplane/events.ts';
import type { DataPlaneStats } from '../../../lib/dataplane/handle.ts';
import {
  type MeasuredRequest,
  MeasurePacker,
  unpackMeasures,
} from '../../../lib/dataplane/request-measure.ts';
import { createEventBatch, IDLE_INTERVAL_MS } from '../../../lib/dataplane/worker/event-batch.ts';
import { FORWARDED_CHANNELS, type ThreadMessage } from '../../../lib/dataplane/worker/protocol.ts';
import { measuresOf, record } from '../../support/request-record.ts';

type Batch = Extract<ThreadMessage, { type: 'batch' }>;

function collector() {
  const posted: Batch[] = [];
  let next: ((batch: Batch) => void) | null = null;
  const post = (message: ThreadMessage) => {
    if (message.type !== 'batch') return;
    // what a MessagePort would do with it
    const batch = structuredClone(message);
    posted.push(batch);
    next?.(batch);
  };
  const nextBatch = () => new Promise<Batch>((resolve) => (next = resolve));
  return { posted, post, nextBatch };
}

// the batch's timer does not hold the process open; in a thread its port does, and so does one here
const { port1 } = new MessageChannel();
port1.on('message', () => {});
t.teardown(() => port1.close());

const ERROR = FORWARDED_CHANNELS.indexOf(dataplaneError);
const CLOSED = FORWARDED_CHANNELS.indexOf(streamClosed);

t.test('600 records: two full batches at once, the rest on the next tick', async (t) => {
  const stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
  const { posted, post, nextBatch } = collector();
  const batch = createEventBatch({ post, stats: () => stats, intervalMs: 20 });
  t.teardown(() => batch.stop());
  for (let i = 0; i < 600; i++) {
    stats.requests++;
    dataplaneError.publish({ i });
  }
  t.equal(posted.length, 2, 'a message per 256 records, not per record');
  t.strictSame(
    posted.map((b) => b.events.length),
    [256, 256],
  );
  const last = await nextBatch();
  t.equal(last.events.length, 88, 'the rest on the tick');
  const order = posted.flatMap((b) =>
    b.events.map(([channel, payload]) => [channel, (payload as { i: number }).i]),
  );
  t.strictSame(
    order,
    Array.from({ length: 600 }, (_, i) => [ERROR, i]),
    'every record once, in order, on its channel',
  );
  t.equal(last.stats.requests, 600, 'the counters ride along');
});

t.test('counters alone are posted when they change, and not when they do not', async (t) => {
  const stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
  const { posted, post, nextBatch } = collector();
  const batch = createEventBatch({ post, stats: () => stats, intervalMs: 10 });
  t.teardown(() => batch.stop());
  stats.accepted = 1;
  stats.active = 1;
  const first = await nextBatch();
  t.strictSame(first, {
    type: 'batch',
    events: [],
    stats: { accepted: 1, active: 1, requests: 0 },
    lines: [],
    measures: null,
  });
  batch.flush();
  t.equal(posted.length, 1, 'nothing new: nothing posted');
  stats.active = 0;
  batch.flush();
  t.equal(posted.at(-1)?.stats.active, 0);
});

t.test('a record that cannot be cloned does not lose the batch', async (t) => {
  const { posted } = collector();
  const stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
  const batch = createEventBatch({
    post: (message) => {
      structuredClone(message); // throws as postMessage would
      posted.push(message as Batch);
    },
    stats: () => stats,
    intervalMs: 60_000,
  });
  streamClosed.publish({ i: 1 });
  streamClosed.publish({ i: 2, callback: () => {} });
  batch.stop();
  t.equal(posted.length, 1);
  t.strictSame(posted[0]?.events[0], [CLOSED, { i: 1 }]);
  t.equal(posted[0]?.events[1]?.[0], ERROR, 'a data-plane error instead');
  t.match(posted[0]?.events[1]?.[1], {
    message: /could not forward a ingress-ts:dataplane:stream-closed record/,
  });
});

t.test('the measures of finished requests ride along with the batch, packed as numbers', async (t) => {
  const stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
  const { posted, post } = collector();
  const packer = new MeasurePacker();
  const batch = createEventBatch({
    post,
    stats: () => stats,
    measures: () => packer.take(),
    intervalMs: 60_000,
  });
  const routes = [
    record({ path: '/a', service: 'a', status: 200, requestTime: 0.004 }),
    record({ path: '/a', service: 'a', status: 503, requestTime: 0.5 }),
    record({ path: '/b', service: 'b', status: 200, bytesSent: 77 }),
  ];
  for (const r of routes) packer.add(r);
  batch.flush();
  batch.flush();
  batch.stop();
  t.equal(posted.length, 1, 'one batch: nothing new after it');
  const sent = posted[0]?.measures;
  t.ok(sent !== null && sent !== undefined);
  if (sent == null) return;
  t.equal(sent.labels.length, 2 * 7, 'the labels of each route once');
  t.ok(
    sent.values.every((v) => typeof v === 'number'),
    'numbers per request',
  );
  const read: MeasuredRequest[] = [];
  unpackMeasures(structuredClone(sent), (m) => read.push(m));
  t.strictSame(
    read,
    routes.map(measuresOf),
    'read back on the other side: every request, in order, as it was measured',
  );
});

t.test(
  'a quiet thread ticks once a second; the first tick that posts brings back the fast tick',
  async (t) => {
    let ticks = 0;
    let quietEnough: () => void = () => {};
    const slowed = new Promise<void>((resolve) => {
      quietEnough = resolve;
    });
    const stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
    const { post, nextBatch } = collector();
    const batch = createEventBatch({
      post,
      // read once per tick: the ticks are counted here
      stats: () => {
        if (++ticks === 21) quietEnough();
        return stats;
      },
      intervalMs: 50,
    });
    t.teardown(() => batch.stop());
    t.equal(batch.intervalMs, 50);
    await slowed;
    t.equal(batch.intervalMs, IDLE_INTERVAL_MS, 'a second of empty ticks: one tick a second');
    dataplaneError.publish({ message: 'after the quiet spell' });
    const posted = await nextBatch();
    t.equal(posted.events.length, 1, 'what came is posted by the slow tick');
    t.equal(batch.intervalMs, 50, 'and the tick is fast again');
  },
);
