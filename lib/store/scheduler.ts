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

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { run, onError } = options;
  const holdOffMs = Math.max(0, options.holdOffMs ?? 100);
  const maxDelayMs = Math.max(holdOffMs, options.maxDelayMs ?? 1000);
  const timers = options.timers ?? defaultTimers;

  let stopped = false;
  let running = false;
  /** A run is queued: 'microtask' (leading edge) or 'timer' (hold-off). */
  let queued: 'none' | 'microtask' | 'timer' = 'none';
  let timer: unknown = null;
  /** A trigger arrived that no started run has covered yet. */
  let dirty = false;
  let firstDirtyAt = 0;
  let lastTriggerAt = 0;
  let lastRunEndAt: number | null = null;
  let idleWaiters: Array<() => void> = [];

  const isIdle = (): boolean => !running && queued === 'none' && !dirty;

  function settleIdle(): void {
    if (!isIdle() || idleWaiters.length === 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function reportError(error: unknown): void {
    if (!onError) return;
    try {
      onError(error);
    } catch {
      // An error handler that throws must not break the scheduler.
    }
  }

  /**
   * When the pending run may start: holdOffMs of quiet after the last trigger, but no later than
   * maxDelayMs after the first trigger it covers; and never sooner than holdOffMs after the previous
   * run ended (a run longer than maxDelayMs still leaves the hold-off between runs).
   */
  function deadline(): number {
    const due = Math.min(lastTriggerAt + holdOffMs, firstDirtyAt + maxDelayMs);
    return lastRunEndAt === null ? due : Math.max(lastRunEndAt + holdOffMs, due);
  }

  function armTimer(): void {
    queued = 'timer';
    timer = timers.setTimeout(onTimer, Math.max(0, deadline() - timers.now()));
  }

  function onTimer(): void {
    timer = null;
    if (stopped || queued !== 'timer') return;
    // Triggers since the timer was armed moved the deadline instead of re-arming on every trigger.
    if (timers.now() < deadline()) {
      armTimer();
      return;
    }
    start();
  }

  /** Queue the run for the pending trigger(s); called only when not running. */
  function schedule(): void {
    if (queued !== 'none') return; // a queued timer re-reads the deadline when it fires
    const now = timers.now();
    if (lastRunEndAt === null || now - lastRunEndAt >= holdOffMs) {
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
    lastRunEndAt = timers.now();
    if (dirty && !stopped) {
      // The hold-off after a run always applies: no leading edge right after a run.
      armTimer();
    }
    settleIdle();
  }

  function start(): void {
    queued = 'none';
    if (!dirty) {
      settleIdle();
      return;
    }
    running = true;
    dirty = false;
    let result: void | Promise<void>;
    try {
      result = run();
    } catch (error) {
      reportError(error);
      finish();
      return;
    }
    if (isPromiseLike(result)) {
      result.then(finish, (error: unknown) => {
        reportError(error);
        finish();
      });
    } else {
      finish();
    }
  }

  return {
    trigger(): void {
      if (stopped) return;
      const now = timers.now();
      lastTriggerAt = now;
      if (!dirty) {
        dirty = true;
        firstDirtyAt = now;
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
      settleIdle();
    },

    idle(): Promise<void> {
      if (isIdle()) return Promise.resolve();
      return new Promise((resolve) => {
        idleWaiters.push(resolve);
      });
    },
  };
}
