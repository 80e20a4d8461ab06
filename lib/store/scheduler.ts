// The hold-off scheduler every source shares: it turns a stream of "something changed" triggers into
// model builds.
//
// - Leading edge: a trigger while idle, when no run ended within holdOffMs, runs in a microtask (so
//   the triggers a source fires in one synchronous batch still share that run).
// - Hold-off: triggers arriving while a run is queued, running, or within holdOffMs after one are
//   coalesced into ONE run, which starts once holdOffMs passed without a trigger...
// - ...but no later than maxDelayMs after the first trigger it covers, so a continuous stream of
//   changes is still built at least that often; and never sooner than holdOffMs after the previous
//   run ended, so even builds slower than maxDelayMs leave the event loop a breather between them.
// - Runs never overlap: a trigger during an (async) run is served after that run settles.
// - An error thrown (or a rejection) from run goes to onError and never stops the scheduler.

export interface SchedulerTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Milliseconds from any fixed origin; only differences are used. */
  now(): number;
}

export interface SchedulerOptions {
  run: () => void | Promise<void>;
  /** Quiet period that coalesces triggers after a run. Default 100. */
  holdOffMs?: number;
  /** Longest a trigger waits for its run while triggers keep coming. Default 1000. */
  maxDelayMs?: number;
  timers?: SchedulerTimers;
  onError?: (error: unknown) => void;
}

export interface Scheduler {
  trigger(): void;
  /** No run starts after this; a run in progress finishes. */
  stop(): void;
  /** Resolves when no run is queued, waiting for its hold-off, or running. */
  idle(): Promise<void>;
}

const defaultTimers: SchedulerTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  now: () => performance.now(),
};

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Calls `run`, sends what it throws or rejects to `onError`, and calls `done` once it has settled. */
function runGuarded(
  run: () => void | Promise<void>,
  onError: ((error: unknown) => void) | undefined,
  done: () => void,
): void {
  const report = (error: unknown): void => {
    if (!onError) return;
    try {
      onError(error);
    } catch {
      // An error handler that throws must not break the scheduler.
    }
  };
  let result: void | Promise<void>;
  try {
    result = run();
  } catch (error) {
    report(error);
    done();
    return;
  }
  if (!isPromiseLike(result)) {
    done();
    return;
  }
  result.then(done, (error: unknown) => {
    report(error);
    done();
  });
}

/** The promises idle() hands out, resolved together once the scheduler is idle. */
function createIdleWaiters(isIdle: () => boolean) {
  let waiters: Array<() => void> = [];
  return {
    settle(): void {
      if (!isIdle() || waiters.length === 0) return;
      const resolved = waiters;
      waiters = [];
      for (const resolve of resolved) resolve();
    },
    wait(): Promise<void> {
      if (isIdle()) return Promise.resolve();
      return new Promise((resolve) => {
        waiters.push(resolve);
      });
    },
  };
}

/** What decides when a pending run may start. */
interface Timing {
  holdOffMs: number;
  maxDelayMs: number;
  firstDirtyAt: number;
  lastTriggerAt: number;
  lastRunEndAt: number | null;
}

/**
 * When the pending run may start: holdOffMs of quiet after the last trigger, but no later than
 * maxDelayMs after the first trigger it covers; and never sooner than holdOffMs after the previous
 * run ended (a run longer than maxDelayMs still leaves the hold-off between runs).
 */
function deadline(timing: Timing): number {
  const due = Math.min(timing.lastTriggerAt + timing.holdOffMs, timing.firstDirtyAt + timing.maxDelayMs);
  return timing.lastRunEndAt === null ? due : Math.max(timing.lastRunEndAt + timing.holdOffMs, due);
}

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { run, onError } = options;
  const holdOffMs = Math.max(0, options.holdOffMs ?? 100);
  const timing: Timing = {
    holdOffMs,
    maxDelayMs: Math.max(holdOffMs, options.maxDelayMs ?? 1000),
    firstDirtyAt: 0,
    lastTriggerAt: 0,
    lastRunEndAt: null,
  };
  const timers = options.timers ?? defaultTimers;

  let stopped = false;
  let running = false;
  /** A run is queued: 'microtask' (leading edge) or 'timer' (hold-off). */
  let queued: 'none' | 'microtask' | 'timer' = 'none';
  let timer: unknown = null;
  /** A trigger arrived that no started run has covered yet. */
  let dirty = false;
  const idle = createIdleWaiters(() => !running && queued === 'none' && !dirty);

  function armTimer(): void {
    queued = 'timer';
    timer = timers.setTimeout(onTimer, Math.max(0, deadline(timing) - timers.now()));
  }

  function onTimer(): void {
    timer = null;
    if (stopped || queued !== 'timer') return;
    // Triggers since the timer was armed moved the deadline instead of re-arming on every trigger.
    if (timers.now() < deadline(timing)) {
      armTimer();
      return;
    }
    start();
  }

  /** Queue the run for the pending trigger(s); called only when not running. */
  function schedule(): void {
    if (queued !== 'none') return; // a queued timer re-reads the deadline when it fires
    const { lastRunEndAt } = timing;
    if (lastRunEndAt === null || timers.now() - lastRunEndAt >= holdOffMs) {
      queued = 'microtask';
      queueMicrotask(() => {
        if (stopped || queued !== 'microtask') return;
        start();
      });
      return;
    }
    armTimer();
  }

  function finish(): void {
    running = false;
    timing.lastRunEndAt = timers.now();
    // The hold-off after a run always applies: no leading edge right after a run.
    if (dirty && !stopped) armTimer();
    idle.settle();
  }

  function start(): void {
    queued = 'none';
    if (!dirty) {
      idle.settle();
      return;
    }
    running = true;
    dirty = false;
    runGuarded(run, onError, finish);
  }

  return {
    trigger(): void {
      if (stopped) return;
      const now = timers.now();
      timing.lastTriggerAt = now;
      if (!dirty) {
        dirty = true;
        timing.firstDirtyAt = now;
      }
      if (running) return; // finish() schedules it
      schedule();
    },

    stop(): void {
      if (stopped) return;
      stopped = true;
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
      queued = 'none';
      dirty = false;
      idle.settle();
    },

    idle: () => idle.wait(),
  };
}
