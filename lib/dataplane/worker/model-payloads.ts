// The pool's side of what a thread is sent for one change: the delta over the model the threads
// serve when the thread serves it, else the whole model. Each is serialised at most once per change,
// and only when some thread needs it; a delta is made only when a thread can take it.

import { serialize } from 'node:v8';
import type { Model } from '../../model/index.ts';
import { diffModel } from './model-delta.ts';
import type { ModelPayload } from './protocol.ts';

/** What one apply cost, for benchmarks and tests: payload sizes, each phase, each thread's share. */
export interface ApplyRecord {
  hash: string;
  /** bytes of the serialised whole model and delta, null when not made */
  fullBytes: number | null;
  deltaBytes: number | null;
  /** bytes copied to the threads in all */
  posted: number;
  /** from the call to every thread prepared (the main thread's diff and serialising included) */
  prepareMs: number;
  /** the commit round trip: from every thread prepared to every thread serving */
  commitMs: number;
  threads: Array<{
    payload: ModelPayload['kind'];
    decodeMs: number;
    compileMs: number;
    /** the thread's CPU time in its prepare */
    cpuMs: number;
    commitMs: number;
  }>;
}

export class ModelPayloads {
  readonly #base: Model | null;
  readonly #next: Model;
  readonly #deltas: boolean;
  #full: ModelPayload | null = null;
  /** undefined: not tried yet; null: no delta can be made */
  #delta: ModelPayload | null | undefined;
  posted = 0;

  /**
   * `base`: the model the threads serve (null before the first); `deltas` false: always the whole
   * model (the protocol before deltas, kept for benchmarks).
   */
  constructor(base: Model | null, next: Model, deltas = true) {
    this.#base = base;
    this.#next = next;
    this.#deltas = deltas;
  }

  /** The payload for a thread that serves the model of hash `serving` (null: none, or unknown). */
  for(serving: string | null): ModelPayload {
    const payload = (serving !== null && serving === this.#base?.hash && this.#deltaPayload()) || this.full();
    this.posted += payload.bytes.byteLength;
    return payload;
  }

  full(): ModelPayload {
    this.#full ??= { kind: 'full', bytes: serialize(this.#next) };
    return this.#full;
  }

  /** The whole model's bytes when some thread was sent them (a replacement can start from them). */
  get fullBytes(): Uint8Array | null {
    return this.#full?.bytes ?? null;
  }

  get deltaBytes(): number | null {
    return this.#delta?.bytes.byteLength ?? null;
  }

  #deltaPayload(): ModelPayload | null {
    if (this.#delta === undefined) {
      const delta = this.#deltas && this.#base !== null ? diffModel(this.#base, this.#next) : null;
      this.#delta = delta === null ? null : { kind: 'delta', bytes: serialize(delta) };
    }
    return this.#delta;
  }
}
