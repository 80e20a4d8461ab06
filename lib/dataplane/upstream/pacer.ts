// limit-rate / limit-rate-after (NGINX's limit_rate, limit_rate_after): a response body goes out at
// full speed for its first `after` bytes, then at `bytesPerSecond`, with one second's worth allowed at
// once as NGINX computes it (rate × (seconds since the first byte + 1)). A chunk the pace does not
// allow yet waits in the queue, split if need be; meanwhile the producer (the upstream) is paused, so
// at most about one chunk per response is held in memory.

export interface PaceLimit {
  bytesPerSecond: number;
  after: number;
}

export interface PacerIo {
  /** writes a part of the body; false when the client's stream is full (call `drained()` later) */
  write(bytes: Buffer): boolean;
  /** the producer may go on (after `push` returned false) */
  resume(): void;
  /** milliseconds, monotonic */
  now(): number;
  setTimer(callback: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
}

/** The least a paused body waits for, so a slow pace writes a few larger parts, not many tiny ones. */
const MIN_WAIT_MS = 50;

export class Pacer {
  readonly #limit: PaceLimit;
  readonly #io: PacerIo;
  readonly #queue: Buffer[] = [];
  #sent = 0;
  #start = -1;
  #timer: unknown = null;
  /** the client's stream is full */
  #blocked = false;
  /** push() returned false: the producer waits for resume() */
  #paused = false;
  #onEmpty: (() => void) | null = null;
  #stopped = false;

  constructor(limit: PaceLimit, io: PacerIo) {
    this.#limit = limit;
    this.#io = io;
  }

  /** Queues a chunk and writes what the pace allows now; false: pause the producer until resume(). */
  push(chunk: Buffer): boolean {
    if (this.#stopped) return true;
    if (this.#start < 0) this.#start = this.#io.now();
    this.#queue.push(chunk);
    this.#pump();
    if (this.#queue.length === 0 && !this.#blocked) return true;
    this.#paused = true;
    return false;
  }

  /** The client's stream drained. */
  drained(): void {
    this.#blocked = false;
    this.#pump();
  }

  /** Calls `done` once everything queued is written (now, if nothing is). */
  finish(done: () => void): void {
    if (this.#queue.length === 0) done();
    else this.#onEmpty = done;
  }

  /** The response is over (the client left): nothing more is written. */
  stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
    this.#onEmpty = null;
    if (this.#timer !== null) {
      this.#io.clearTimer(this.#timer);
      this.#timer = null;
    }
  }

  #pump(): void {
    if (this.#timer !== null || this.#stopped) return;
    const { bytesPerSecond, after } = this.#limit;
    while (this.#queue.length > 0 && !this.#blocked) {
      const elapsed = (this.#io.now() - this.#start) / 1000;
      const allowance = Math.floor(after + bytesPerSecond * (elapsed + 1) - this.#sent);
      const head = this.#queue[0] as Buffer;
      if (allowance <= 0) {
        // wait until a useful part (the rest of this chunk, or a twentieth of a second's worth) is allowed
        const want = Math.min(head.length, Math.max(1, bytesPerSecond / 20));
        const ms = Math.max(MIN_WAIT_MS, ((want - allowance) / bytesPerSecond) * 1000);
        this.#timer = this.#io.setTimer(() => {
          this.#timer = null;
          this.#pump();
        }, Math.ceil(ms));
        return;
      }
      let part = head;
      if (head.length > allowance) {
        part = head.subarray(0, allowance);
        this.#queue[0] = head.subarray(allowance);
      } else {
        this.#queue.shift();
      }
      this.#sent += part.length;
      if (!this.#io.write(part)) this.#blocked = true;
    }
    if (this.#queue.length > 0 || this.#blocked) return;
    const done = this.#onEmpty;
    if (done !== null) {
      this.#onEmpty = null;
      done();
    } else if (this.#paused) {
      this.#paused = false;
      this.#io.resume();
    }
  }
}
