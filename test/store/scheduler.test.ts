// The hold-off scheduler, on a fake clock: leading edge, coalescing, maximum delay, no overlap, errors.
import t from 'tap';
import { createScheduler, type SchedulerOptions } from '../../lib/store/scheduler.ts';

/** A manual clock: timers fire only when advance() passes their time. */
function fakeClock() {
  let now = 0;
  let seq = 0;
  const pending = new Map<number, { at: number; callback: () => void }>();
  /** Lets microtasks and promise chains settle (one macrotask turn; not a sleep). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    timers: {
      setTimeout(callback: () => void, ms: number): unknown {
        seq += 1;
        pending.set(seq, { at: now + ms, callback });
        return seq;
      },
      clearTimeout(handle: unknown): void {
        pending.delete(handle as number);
      },
      now: () => now,
    },
    get now() {
      return now;
    },
    pendingTimers: () => pending.size,
    settle,
    /** Moves the clock to now + ms, firing due timers in time order. */
    async advance(ms: number): Promise<void> {
      const end = now + ms;
      for (;;) {
        await settle();
        let next: [number, { at: number; callback: () => void }] | null = null;
        for (const entry of pending)
          if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
        if (!next) break;
        pending.delete(next[0]);
        now = Math.max(now, next[1].at);
        next[1].callback();
      }
      now = end;
      await settle();
    },
  };
}

function setup(extra: Partial<SchedulerOptions> = {}) {
  const clock = fakeClock();
  const runs: number[] = [];
  const scheduler = createScheduler({
    run: () => {
      runs.push(clock.now);
    },
    timers: clock.timers,
    ...extra,
  });
  return { clock, runs, scheduler };
}

t.test('leading edge: a lone trigger runs at once, a synchronous batch shares that run', async (t) => {
  const { clock, runs, scheduler } = setup();
  scheduler.trigger();
  scheduler.trigger();
  scheduler.trigger();
  await clock.settle();
  t.same(runs, [0], 'one run, without waiting for any timer');
  t.equal(clock.pendingTimers(), 0, 'nothing left scheduled');
  await scheduler.idle();

  await clock.advance(100);
  scheduler.trigger();
  await clock.settle();
  t.same(runs, [0, 100], 'a trigger holdOffMs after the last run is a leading edge again');
});

t.test('coalescing: triggers within the hold-off become one run at its end', async (t) => {
  const { clock, runs, scheduler } = setup();
  scheduler.trigger();
  await clock.settle();
  t.same(runs, [0]);

  await clock.advance(10);
  scheduler.trigger();
  await clock.advance(10);
  scheduler.trigger();
  scheduler.trigger();
  await clock.advance(10);
  scheduler.trigger(); // t = 30: the last trigger
  await clock.advance(99);
  t.same(runs, [0], 'still holding off 99 ms after the last trigger');
  await clock.advance(1);
  t.same(runs, [0, 130], 'one run when the hold-off has passed without a trigger');
  await clock.advance(2000);
  t.same(runs, [0, 130], 'and no other run');
});

t.test('coalescing: a trigger just after a run waits for the hold-off measured from that run', async (t) => {
  const { clock, runs, scheduler } = setup({ holdOffMs: 50 });
  scheduler.trigger();
  await clock.settle();
  await clock.advance(20);
  scheduler.trigger();
  await clock.advance(29);
  t.same(runs, [0]);
  await clock.advance(41);
  t.same(runs, [0, 70], 'at 20 + 50 ms');
});

t.test('max delay: a continuous stream of triggers still runs at least every maxDelayMs', async (t) => {
  const { clock, runs, scheduler } = setup({ holdOffMs: 100, maxDelayMs: 1000 });
  const triggers: number[] = [];
  for (let i = 0; i < 60; i++) {
    triggers.push(clock.now);
    scheduler.trigger(); // every 50 ms: never 100 ms of quiet
    await clock.advance(50);
  }
  // t = 3000; the stream stopped after its trigger at 2950.
  await clock.advance(1000);
  // 0: leading edge; 1050: the trigger at 50 + 1000; 2050: the trigger at 1050 (just after that run) + 1000;
  // 3050: 100 ms of quiet after the last trigger.
  t.same(runs, [0, 1050, 2050, 3050]);
  for (const at of triggers) {
    const served = runs.find((run) => run >= at);
    t.ok(served !== undefined && served - at <= 1000, `the trigger at ${at} ran within the maximum delay`);
  }
});

t.test('no overlap: an async run in progress holds triggers back; its end schedules one run', async (t) => {
  const clock = fakeClock();
  let active = 0;
  let maxActive = 0;
  const finishers: Array<() => void> = [];
  const starts: number[] = [];
  const scheduler = createScheduler({
    timers: clock.timers,
    run: () => {
      starts.push(clock.now);
      active += 1;
      maxActive = Math.max(maxActive, active);
      return new Promise<void>((resolve) => {
        finishers.push(() => {
          active -= 1;
          resolve();
        });
      });
    },
  });
  scheduler.trigger();
  await clock.settle();
  t.same(starts, [0], 'first run started');

  let idle = false;
  void scheduler.idle().then(() => {
    idle = true;
  });
  for (let i = 0; i < 10; i++) {
    scheduler.trigger();
    await clock.advance(300);
  }
  t.same(starts, [0], 'no second run while the first is in progress, even past the maximum delay');
  t.equal(idle, false, 'not idle while running');

  finishers.shift()!(); // the first run ends at t = 3000
  await clock.advance(99);
  t.same(starts, [0], 'the hold-off applies after the run');
  await clock.advance(1);
  t.same(starts, [0, 3100], 'one run for all the triggers that arrived meanwhile');
  t.equal(idle, false, 'still running');

  finishers.shift()!();
  await clock.settle();
  t.equal(idle, true, 'idle once the pending run is done');
  t.equal(maxActive, 1, 'runs never overlapped');
  t.equal(clock.pendingTimers(), 0);
});

t.test('errors: a throwing or rejecting run goes to onError and the scheduler keeps working', async (t) => {
  const clock = fakeClock();
  const errors: unknown[] = [];
  let calls = 0;
  const scheduler = createScheduler({
    timers: clock.timers,
    onError: (error) => errors.push(error),
    run: () => {
      calls += 1;
      if (calls === 1) throw new Error('sync boom');
      if (calls === 2) return Promise.reject(new Error('async boom'));
      return undefined;
    },
  });
  scheduler.trigger();
  await clock.settle();
  await clock.advance(100);
  scheduler.trigger();
  await clock.settle();
  await clock.advance(100);
  scheduler.trigger();
  await clock.settle();
  t.equal(calls, 3, 'every trigger ran');
  t.same(
    errors.map((error) => (error as Error).message),
    ['sync boom', 'async boom'],
  );
  await scheduler.idle();
});

t.test('errors: no onError, or one that throws, is survived', async (t) => {
  const { clock } = setup();
  let calls = 0;
  const scheduler = createScheduler({
    timers: clock.timers,
    onError: () => {
      throw new Error('handler broke');
    },
    run: () => {
      calls += 1;
      throw new Error('boom');
    },
  });
  scheduler.trigger();
  await clock.settle();
  scheduler.trigger();
  await clock.advance(100);
  t.equal(calls, 2);
  const silent = createScheduler({
    timers: clock.timers,
    run: () => {
      calls += 1;
      throw new Error('boom');
    },
  });
  silent.trigger();
  await clock.settle();
  t.equal(calls, 3);
  await silent.idle();
});

t.test('stop: no run after stop; idle resolves', async (t) => {
  const { clock, runs, scheduler } = setup();
  scheduler.trigger();
  await clock.settle();
  scheduler.trigger(); // pending in the hold-off
  t.equal(clock.pendingTimers(), 1);
  scheduler.stop();
  t.equal(clock.pendingTimers(), 0, 'the hold-off timer is cleared');
  await scheduler.idle();
  scheduler.trigger();
  await clock.advance(5000);
  t.same(runs, [0]);
});

t.test('stop: a queued leading-edge run does not happen', async (t) => {
  const { clock, runs, scheduler } = setup();
  scheduler.trigger();
  scheduler.stop();
  await clock.settle();
  t.same(runs, []);
});

t.test('idle: resolves at once when idle, after the pending run otherwise', async (t) => {
  const { clock, runs, scheduler } = setup();
  await scheduler.idle();
  scheduler.trigger();
  await clock.settle();
  scheduler.trigger();
  let idle = false;
  void scheduler.idle().then(() => {
    idle = true;
  });
  await clock.advance(50);
  t.equal(idle, false, 'a run is pending in the hold-off');
  await clock.advance(50);
  t.equal(idle, true);
  t.same(runs, [0, 100]);
});

t.test('default timers: a trigger runs without any fake clock', async (t) => {
  let runs = 0;
  const scheduler = createScheduler({
    holdOffMs: 5,
    run: async () => {
      runs += 1;
    },
  });
  scheduler.trigger();
  await scheduler.idle();
  t.equal(runs, 1);
  scheduler.trigger();
  await scheduler.idle(); // the real hold-off passes inside idle()
  t.equal(runs, 2);
  scheduler.stop();
});
