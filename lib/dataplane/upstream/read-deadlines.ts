// proxy-read-timeout (NGINX's proxy_read_timeout: how long the upstream may send nothing, before its
// response head and between two reads of its body) for requests without a body, kept without a
// timer per request.
//
// undici's headersTimeout and bodyTimeout make a timer per request, one of its "fast timers": an
// object that stays in undici's list until the list's next tick (~0.5 s) even when the request
// ended long before. On a busy thread every one of them outlives two young-generation collections
// and is promoted: ~60 bytes per request, which filled the old generation by ~2 MB/s under load and
// made V8 run a full collection every few seconds (bench/README.md, "undici's timers and the old
// generation"). Here the exchanges that wait for their upstream are members of one LiveSet per data
// plane, looked at every READ_TICK_MS by one timer that runs only while the set has members: per
// request, an add, a delete and a flag set per chunk, and no clock read. A timeout fires within two
// ticks after it is reached; undici's fire within its list's tick or two (0.5-1 s).
//
// Left to undici: requests with a body, whose read timer undici restarts while the body is sent
// (NGINX starts proxy_read_timeout once the body is out, proxy_send_timeout covers the sending).

import { type LinkSlot, LiveSet } from '../live-set.ts';

/** How often the waiting exchanges are looked at: a timeout fires at most two of these late. */
export const READ_TICK_MS = 250;

/** An exchange waiting for its upstream. */
export interface ReadWaiter {
  /** proxy-read-timeout, ms */
  readonly readTimeoutMs: number;
  /** the upstream sent something (its head or body bytes) since the last tick */
  readProgress: boolean;
  /** ticks in a row without progress */
  readIdleTicks: number;
  /** the waiter's link in the deadlines' set (live-set.ts): a field of its own, undefined at first */
  readLink: unknown;
  /** reading is held on purpose (a slow client, limit-rate): the upstream is not waited for */
  readHeld(): boolean;
  /** The wait is over: the try ends as timed out. Never throws. */
  readTimedOut(): void;
}

const WAITING: LinkSlot<ReadWaiter> = {
  name: 'waiting for the upstream',
  get: (waiter) => waiter.readLink,
  set: (waiter, link) => {
    waiter.readLink = link;
  },
};

/** Whether a request's read timeout is kept here (true) or by undici (false): one without a body. */
export function readTimeoutSwept(readTimeoutMs: number, hasBody: boolean): boolean {
  return !hasBody && readTimeoutMs > 0;
}

export class ReadDeadlines {
  readonly #waiting = new LiveSet<ReadWaiter>(WAITING);
  #timer: NodeJS.Timeout | null = null;
  readonly #tickMs: number;

  /** `tickMs`: READ_TICK_MS unless a test wants its own */
  constructor(tickMs = READ_TICK_MS) {
    this.#tickMs = tickMs;
  }

  /** exchanges waiting now */
  get size(): number {
    return this.#waiting.size;
  }

  /** the timer runs (until the first tick that finds nobody waiting) */
  get ticking(): boolean {
    return this.#timer !== null;
  }

  /** A try of `waiter` went out (again): its wait starts now. */
  start(waiter: ReadWaiter): void {
    // the start counts as progress: the wait is measured from the tick after it, as after a read
    waiter.readProgress = true;
    waiter.readIdleTicks = 0;
    this.#waiting.add(waiter);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#tick(), this.#tickMs);
      this.#timer.unref();
    }
  }

  /** The try is over (answered, failed or stopped). */
  stop(waiter: ReadWaiter): void {
    this.#waiting.delete(waiter);
  }

  /** Stops the timer now (the proxy closed: nothing waits now). */
  close(): void {
    this.#waiting.clear();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * A waiter is idle for a tick when the tick finds no progress since the one before. Its last
   * progress came between the two ticks before its first idle one, so after n idle ticks it has
   * waited at least n ticks (and less than n + 1): it times out once n ticks reach its timeout. The
   * timer stops at the first tick that finds nobody waiting.
   */
  #tick(): void {
    const waiting = this.#waiting.values();
    if (waiting.length === 0) {
      if (this.#timer !== null) clearInterval(this.#timer);
      this.#timer = null;
      return;
    }
    const tickMs = this.#tickMs;
    for (const waiter of waiting) {
      if (waiter.readProgress || waiter.readHeld()) {
        waiter.readProgress = false;
        waiter.readIdleTicks = 0;
        continue;
      }
      waiter.readIdleTicks++;
      if (waiter.readIdleTicks * tickMs >= waiter.readTimeoutMs) {
        this.#waiting.delete(waiter);
        waiter.readTimedOut();
      }
    }
  }
}
