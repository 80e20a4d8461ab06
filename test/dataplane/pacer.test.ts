// The limit-rate pacer on a fake clock: full speed for `after` bytes, then the pace with NGINX's one
// second's worth at once; chunks split to the byte; the producer paused and resumed; the end after
// the queue; a full client stream holds everything until it drains; stop() drops the rest.
import t from 'tap';
import { type PaceLimit, Pacer } from '../../lib/dataplane/upstream/pacer.ts';

function harness(limit: PaceLimit, accept = () => true) {
  let clock = 0;
  const timers: Array<{ at: number; callback: () => void } | null> = [];
  const written: Array<[number, number]> = [];
  let resumes = 0;
  const pacer = new Pacer(limit, {
    write: (bytes) => {
      written.push([clock, bytes.length]);
      return accept();
    },
    resume: () => resumes++,
    now: () => clock,
    setTimer: (callback, ms) => timers.push({ at: clock + ms, callback }) - 1,
    clearTimer: (id) => {
      timers[id as number] = null;
    },
  });
  /** Moves the clock to `ms`, running the timers due on the way. */
  const advance = (ms: number) => {
    for (;;) {
      const due = timers
        .map((timer, id) => ({ timer, id }))
        .filter((e) => e.timer !== null && e.timer.at <= ms)
        .sort((a, b) => (a.timer?.at ?? 0) - (b.timer?.at ?? 0))[0];
      if (due === undefined) break;
      clock = due.timer?.at ?? clock;
      timers[due.id] = null;
      due.timer?.callback();
    }
    clock = ms;
  };
  const total = () => written.reduce((sum, [, n]) => sum + n, 0);
  return { pacer, advance, total, written, resumes: () => resumes, pending: () => timers.some((x) => x) };
}

t.test('full speed for `after` bytes plus a second of pace, then the pace', async (t) => {
  const h = harness({ bytesPerSecond: 1000, after: 500 });
  t.equal(h.pacer.push(Buffer.alloc(1200)), true, '1,200 bytes fit in 500 + one second of 1,000');
  t.equal(h.pacer.push(Buffer.alloc(1000)), false, 'the next 1,000 do not: the producer pauses');
  t.equal(h.total(), 1500, 'written up to the allowance, the chunk split');
  h.advance(400);
  t.equal(h.total(), 1900, 'after 0.4 s: 400 more');
  t.equal(h.resumes(), 0, 'still paced');
  h.advance(700);
  t.equal(h.total(), 2200, 'everything by 0.7 s');
  t.equal(h.resumes(), 1, 'then the producer resumes');
  let ended = false;
  h.pacer.finish(() => {
    ended = true;
  });
  t.ok(ended, 'nothing queued: the end goes out at once');
});

t.test('the end waits for the queue', async (t) => {
  const h = harness({ bytesPerSecond: 100, after: 0 });
  h.pacer.push(Buffer.alloc(300));
  let endedAt = -1;
  h.pacer.finish(() => {
    endedAt = h.total();
  });
  t.equal(endedAt, -1, 'not yet');
  h.advance(2000);
  t.equal(endedAt, 300, 'after the last byte');
  t.equal(h.resumes(), 0, 'finish replaces resume');
});

t.test('a full client stream holds the queue until it drains', async (t) => {
  let open = false;
  const h = harness({ bytesPerSecond: 1000, after: 10_000 }, () => open);
  t.equal(h.pacer.push(Buffer.alloc(100)), false, 'written, but the stream is full: pause');
  h.pacer.push(Buffer.alloc(100));
  t.equal(h.total(), 100, 'nothing more until it drains');
  open = true;
  h.pacer.drained();
  t.equal(h.total(), 200);
  t.equal(h.resumes(), 1);
});

t.test('stop drops the queue and the timer', async (t) => {
  const h = harness({ bytesPerSecond: 10, after: 0 });
  h.pacer.push(Buffer.alloc(100));
  t.ok(h.pending(), 'a timer waits');
  h.pacer.stop();
  t.notOk(h.pending(), 'cleared');
  h.advance(60_000);
  t.equal(h.total(), 10, 'nothing after the stop');
  t.equal(h.pacer.push(Buffer.alloc(5)), true, 'a late chunk is ignored');
  t.equal(h.total(), 10);
});

t.test('a slow pace writes parts of a twentieth of a second or more, not single bytes', async (t) => {
  const h = harness({ bytesPerSecond: 2000, after: 0 });
  h.pacer.push(Buffer.alloc(10_000));
  h.advance(10_000);
  t.equal(h.total(), 10_000);
  t.ok(h.written.length <= 1 + 4 * 20 + 2, `${h.written.length} writes for 4 s of pace`);
  t.ok(
    h.written.slice(1).every(([, n]) => n >= 100),
    'each later write is at least 100 bytes (2,000/s ÷ 20)',
  );
});
