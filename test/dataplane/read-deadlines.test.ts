// proxy-read-timeout for requests without a body, kept by one timer per data plane
// (lib/dataplane/upstream/read-deadlines.ts): who times out and when, with a short tick. Every wait
// here ends on an event: a waiter's timeout, or the timeout of a longer-lived witness.
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
  /** when readTimedOut ran (performance.now()), or null */
  firedAt: number | null;
  fired: Promise<void>;
  held: boolean;
}

function probe(readTimeoutMs: number): Probe {
  let resolve = () => {};
  const fired = new Promise<void>((r) => {
    resolve = r;
  });
  const p: Probe = {
    readTimeoutMs,
    readProgress: false,
    readIdleTicks: 0,
    held: false,
    firedAt: null,
    fired,
    readHeld: () => p.held,
    readTimedOut() {
      p.firedAt = performance.now();
      resolve();
    },
  };
  return p;
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

t.test('an upstream that sends nothing times out, not before its timeout, within two ticks', async (t) => {
  const deadlines = new ReadDeadlines(TICK);
  t.teardown(() => deadlines.close());
  const idle = probe(100);
  const started = performance.now();
  deadlines.start(idle);
  await idle.fired;
  const waited = (idle.firedAt ?? 0) - started;
  t.ok(waited >= 100, `not before the timeout (${waited.toFixed(0)} ms)`);
  t.ok(
    waited < 100 + 2 * TICK + 40,
    `within two ticks of it, with room for a slow timer (${waited.toFixed(0)} ms)`,
  );
  t.equal(deadlines.size, 0, 'it leaves the set when it times out');
});

t.test('progress, a held read and a finished try never time out', async (t) => {
  const deadlines = new ReadDeadlines(TICK);
  t.teardown(() => deadlines.close());
  const reading = probe(60);
  const held = probe(60);
  held.held = true;
  const finished = probe(60);
  // the witness: idle, with a timeout far beyond the others'
  const witness = probe(300);
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
  // once bytes stop, the wait counts from the last of them
  clearInterval(feed);
  const stopped = performance.now();
  await reading.fired;
  t.ok((reading.firedAt ?? 0) - stopped >= 60 - TICK / 2, 'timed out after its last bytes');
});

t.test('a new try starts its wait again; the timer stops when nobody waits', async (t) => {
  const deadlines = new ReadDeadlines(TICK);
  t.teardown(() => deadlines.close());
  const retried = probe(80);
  const witness = probe(60);
  deadlines.start(retried);
  deadlines.start(witness);
  await witness.fired;
  // the second try goes out just before the first would have timed out
  const restarted = performance.now();
  deadlines.start(retried);
  t.equal(deadlines.size, 1, 'the same exchange is in the set once');
  await retried.fired;
  t.ok((retried.firedAt ?? 0) - restarted >= 80, 'the wait counts from the new try');
  t.equal(deadlines.size, 0);
  const again = probe(40);
  deadlines.start(again);
  t.ok(deadlines.ticking, 'a timer runs while somebody waits');
  await again.fired;
  t.ok(deadlines.ticking, 'the timer outlives the last wait by a tick');
  // a witness on a timer of its own, started now, fires after two ticks' time: by then the first
  // timer has ticked once more, found nobody and stopped
  const clock = new ReadDeadlines(TICK);
  t.teardown(() => clock.close());
  const witness2 = probe(2 * TICK);
  clock.start(witness2);
  await witness2.fired;
  t.notOk(deadlines.ticking, 'stopped once nobody waited');
});
