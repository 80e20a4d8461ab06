// proxy-read-timeout for requests without a body, kept by one timer per data plane
// (lib/dataplane/upstream/read-deadlines.ts): who times out and when, with a short tick. Every wait
// here ends on an event: a waiter's timeout, or the timeout of a witness; what is asserted is the
// order in which they time out and the ticks they waited, never a duration.
import t from 'tap';
import {
  ReadDeadlines,
  type ReadWaiter,
  readTimeoutSwept,
} from '../../lib/dataplane/upstream/read-deadlines.ts';

const TICK = 20;

// the deadlines' timer does not keep a process alive (a data plane's sockets do): this file's does
const alive = setInterval(() => {}, 60_000);
t.teardown(() => clearInterval(alive));

interface Probe extends ReadWaiter {
  /** its idle ticks when readTimedOut ran, or null */
  firedAt: number | null;
  fired: Promise<void>;
  held: boolean;
}

/** the probes' names, in the order they timed out */
let order: string[] = [];

function probe(name: string, readTimeoutMs: number): Probe {
  let resolve = () => {};
  const fired = new Promise<void>((r) => {
    resolve = r;
  });
  const p: Probe = {
    readTimeoutMs,
    readProgress: false,
    readIdleTicks: 0,
    readLink: undefined,
    held: false,
    firedAt: null,
    fired,
    readHeld: () => p.held,
    readTimedOut() {
      p.firedAt = p.readIdleTicks;
      order.push(name);
      resolve();
    },
  };
  return p;
}

/** Deadlines ticking every TICK for one test, closed after it; no timeout in `order` yet. */
function deadlinesFor(t: { teardown(fn: () => void): void }): ReadDeadlines {
  order = [];
  const deadlines = new ReadDeadlines(TICK);
  t.teardown(() => deadlines.close());
  return deadlines;
}

t.test('which requests the deadlines keep: those without a body, with a timeout', async (t) => {
  const cases: Array<[number, boolean, boolean]> = [
    [60000, false, true],
    [200, false, true],
    [60000, true, false],
    [0, false, false],
  ];
  for (const [ms, hasBody, swept] of cases)
    t.equal(readTimeoutSwept(ms, hasBody), swept, `${ms} ms, ${hasBody ? 'a body' : 'no body'}`);
});

t.test('an upstream that sends nothing times out once its idle ticks reach its timeout', async (t) => {
  const deadlines = deadlinesFor(t);
  const idle = probe('idle', 100);
  const shorter = probe('a tick shorter', 100 - TICK);
  deadlines.start(idle);
  deadlines.start(shorter);
  await idle.fired;
  t.equal(idle.firedAt, 100 / TICK, 'at its fifth idle tick: 5 × 20 ms reach 100 ms');
  t.same(order, ['a tick shorter', 'idle'], 'not before a timeout one tick shorter');
  t.equal(deadlines.size, 0, 'both leave the set when they time out');
});

t.test('progress, a held read and a finished try never time out', async (t) => {
  const deadlines = deadlinesFor(t);
  const reading = probe('reading', 60);
  const held = probe('held', 60);
  held.held = true;
  const finished = probe('finished', 60);
  // the witness: idle, with a timeout far beyond the others'
  const witness = probe('witness', 300);
  for (const p of [reading, held, finished, witness]) deadlines.start(p);
  deadlines.stop(finished);
  // bytes keep coming for `reading`, more often than a tick
  const feed = setInterval(() => {
    reading.readProgress = true;
  }, TICK / 2);
  t.teardown(() => clearInterval(feed));
  await witness.fired;
  t.equal(reading.firedAt, null, 'a response whose bytes keep coming');
  t.equal(held.firedAt, null, 'a response held back by its client or its pace');
  t.equal(finished.firedAt, null, 'a try that ended');
  // once bytes stop, the wait counts from the last of them: after a waiter started now with a
  // shorter timeout, never before it
  clearInterval(feed);
  const later = probe('started as the bytes stopped', 60 - TICK);
  deadlines.start(later);
  await reading.fired;
  t.same(order, ['witness', 'started as the bytes stopped', 'reading'], 'timed out after its last bytes');
});

t.test('a new try starts its wait again; the timer stops when nobody waits', async (t) => {
  const deadlines = deadlinesFor(t);
  const retried = probe('retried', 80);
  const witness = probe('witness', 60);
  deadlines.start(retried);
  deadlines.start(witness);
  await witness.fired;
  // the second try goes out a tick before the first would have timed out: it now waits after a
  // waiter started at the same moment with a shorter timeout
  deadlines.start(retried);
  const fresh = probe('started with the second try', 80 - TICK);
  deadlines.start(fresh);
  t.equal(deadlines.size, 2, 'the same exchange is in the set once');
  await retried.fired;
  t.same(order, ['witness', 'started with the second try', 'retried'], 'the wait counts from the new try');
  t.equal(deadlines.size, 0);
  const again = probe('again', 40);
  deadlines.start(again);
  t.ok(deadlines.ticking, 'a timer runs while somebody waits');
  await again.fired;
  t.ok(deadlines.ticking, 'the timer outlives the last wait by a tick');
  // a witness on a timer of its own, started now, fires after two ticks' time: by then the first
  // timer has ticked once more, found nobody and stopped
  const clock = new ReadDeadlines(TICK);
  t.teardown(() => clock.close());
  const witness2 = probe('clock', 2 * TICK);
  clock.start(witness2);
  await witness2.fired;
  t.notOk(deadlines.ticking, 'stopped once nobody waited');
});
