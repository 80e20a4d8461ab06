// Finished requests' records, handled a run at a time instead of one by one as they finish. Their
// readers, the metrics and the access log's encoder (controller/traffic.ts in one-thread mode,
// worker/thread-records.ts in a data-plane thread), then run over up to RECORD_BATCH records in a
// row while their code and tables are in the CPU's caches, where one record at a time ran them
// between two requests' proxying, which had pushed them out (bench/README.md, "per-core: records a
// run at a time").
//
// A run is handled once RECORD_BATCH records wait, or when the owner asks: before a scrape, with a
// thread's batch, before new settings apply, at close, on the owner's timer. A record is plain data
// (request-record.ts): holding a few costs no more than their bytes, and nothing writes to it once
// it is published (its exchange is done, or gone, when its response closes).
//
// A line's time stays the end of its request: the wall clock is read once per run, and each record's
// end on the monotonic clock (its start plus its request time) is placed on it.

import { performance } from 'node:perf_hooks';
import type { RequestRecord } from './request-record.ts';

/** A run is handled once this many records wait. */
export const RECORD_BATCH = 64;

/**
 * Handles one record (a request refused before routing has `refused` set: an access log line, no
 * metrics, as in NGINX); `time` the wall clock at its end, in ms since the epoch.
 */
export type RecordHandler = (record: RequestRecord, time: number) => void;

export class RecordQueue {
  #records: RequestRecord[] = [];
  readonly #handle: RecordHandler;
  readonly #waiting: (() => void) | undefined;

  /** `waiting`: called when a record arrives with none waiting before it (the owner's timer starts) */
  constructor(handle: RecordHandler, waiting?: () => void) {
    this.#handle = handle;
    this.#waiting = waiting;
  }

  get size(): number {
    return this.#records.length;
  }

  push(record: RequestRecord): void {
    const records = this.#records;
    records.push(record);
    if (records.length >= RECORD_BATCH) this.drain();
    else if (records.length === 1) this.#waiting?.();
  }

  /**
   * Handles the records waiting, in the order they arrived. A handler's exception does not keep the
   * others from being handled: the first is thrown once all were. A handler may drain (a thread's
   * full buffer of lines sends its batch, which takes what waits): the run is taken out first, so
   * that drain finds only what came after it.
   */
  drain(): void {
    const records = this.#records;
    const n = records.length;
    if (n === 0) return;
    this.#records = [];
    const wall = Date.now();
    const now = performance.now();
    let failed = false;
    let failure: unknown;
    for (let i = 0; i < n; i++) {
      const record = records[i] as RequestRecord;
      const end = record.start + record.requestTime * 1000;
      try {
        this.#handle(record, Math.floor(wall - (now - end)));
      } catch (error) {
        if (!failed) failure = error;
        failed = true;
      }
    }
    if (failed) throw failure;
  }
}
