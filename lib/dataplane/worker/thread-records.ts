// What a data-plane thread does with the records of its finished requests: it encodes their access
// log lines here, with the format of the model it serves compiled as in one-thread mode
// (access-log-format.ts) and that model's settings, and keeps only their measures for the metrics,
// packed as numbers (request-measure.ts's MeasurePacker). The lines wait in one buffer and leave
// with the thread's next batch (event-batch.ts) as bytes of whole lines, so the main thread writes
// them without reading them: it never encodes a line, and lines of two threads never mix inside a
// line. The measures leave with the same batch.
//
// The time of a line is when its request ended, as in one-thread mode.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { AccessLogChoice, type LogLineSettings } from '../access-log-choice.ts';
import { requestLogged, requestRefused } from '../events.ts';
import { RecordQueue } from '../record-queue.ts';
import { type MeasureBatch, MeasurePacker } from '../request-measure.ts';
import type { RequestRecord } from '../request-record.ts';

/** The lines leave when about this many bytes wait (about 200 lines), or with the next batch... */
export const LINES_BATCH_BYTES = 128 * 1024;
/** ...in a buffer with room for a long line beyond that (a longer line gets a buffer of its own). */
const LINES_CAPACITY = LINES_BATCH_BYTES + 64 * 1024;
/** The measures leave once this many requests wait, or with the next batch. */
export const MEASURES_BATCH = 256;
const NEWLINE = 0x0a;

export interface ThreadRecords {
  /** The settings of the model this thread now serves (`model.config.accessLog`). */
  configure(settings: LogLineSettings): void;
  /** The lines encoded since the last call, in order, as buffers of whole lines (none: empty). */
  takeLines(): Uint8Array[];
  /** The measures of the requests finished since the last call (null: none, or metrics are off). */
  takeMeasures(): MeasureBatch | null;
  /** Stops reading records (what is encoded stays to be taken). */
  stop(): void;
}

export interface ThreadRecordsOptions {
  /** called when a buffer of lines, or MEASURES_BATCH measures, are full: the batch should leave now */
  full: () => void;
  /** whether the main thread reads request measures (its metrics are on) [true] */
  measures?: boolean;
}

export function createThreadRecords(options: ThreadRecordsOptions): ThreadRecords {
  const measures = options.measures !== false;
  // off until the first model says otherwise: no line before a model is served anyway
  const choice = new AccessLogChoice(true);
  let buffer = Buffer.allocUnsafeSlow(LINES_CAPACITY);
  let used = 0;
  /** full buffers waiting to be taken, in the order of their lines */
  let ready: Uint8Array[] = [];
  const packer = new MeasurePacker();

  /** The buffer's lines join the ready ones; the next lines go to a buffer of `capacity`. */
  const seal = (capacity: number) => {
    if (used > 0) ready.push(buffer.subarray(0, used));
    buffer = Buffer.allocUnsafeSlow(capacity);
    used = 0;
  };

  const writeLine = (record: RequestRecord, time: number) => {
    if (!choice.wants(record)) return;
    const encoder = choice.encoder;
    let end = encoder.encode(buffer, used, record, time);
    if (end >= buffer.length) {
      // it did not fit: the lines before it leave, and it is encoded again in a buffer it fits in
      // (a line longer than a buffer gets a buffer of its own, sealed at once)
      seal(Math.max(end - used + 1, LINES_CAPACITY));
      full();
      end = encoder.encode(buffer, 0, record, time);
    }
    used = end;
    buffer[used++] = NEWLINE;
    if (used >= LINES_BATCH_BYTES) {
      seal(LINES_CAPACITY);
      full();
    }
  };

  // a run of records at a time (record-queue.ts); what waits is handled before a batch is taken,
  // and a buffer that fills then needs no asking: the batch taking it is already leaving
  let taking = false;
  const full = () => {
    if (!taking) options.full();
  };
  const records = new RecordQueue((record, time) => {
    writeLine(record, time);
    // refused before routing: a line, and no measures (no metrics count them, as in NGINX)
    if (record.refused || !measures) return;
    packer.add(record);
    if (packer.count >= MEASURES_BATCH) full();
  });
  const drainForTake = () => {
    taking = true;
    try {
      records.drain();
    } finally {
      taking = false;
    }
  };
  const onRequest = (message: unknown) => records.push(message as RequestRecord);
  const onRefused = (message: unknown) => records.push(message as RequestRecord);
  subscribe(requestLogged.name, onRequest);
  subscribe(requestRefused.name, onRefused);

  return {
    configure(settings) {
      // the records waiting finished under the settings before these
      records.drain();
      choice.configure(settings);
    },
    takeLines() {
      drainForTake();
      // The lines of a batch are copied out into memory of their size, which is moved to the main
      // thread; this buffer stays for the next lines. Moving the whole buffer instead (192 KiB per
      // thread every 50 ms, freed by the main thread's collector) made the main thread collect
      // garbage several times as much (a profile under load: 510 ms against 88 ms in 12 s).
      // Full buffers are moved as they are (they are full).
      if (used > 0) {
        const lines = Buffer.allocUnsafeSlow(used);
        buffer.copy(lines, 0, 0, used);
        ready.push(lines);
        used = 0;
      }
      const taken = ready;
      ready = [];
      return taken;
    },
    takeMeasures() {
      drainForTake();
      return packer.take();
    },
    stop() {
      records.drain();
      unsubscribe(requestLogged.name, onRequest);
      unsubscribe(requestRefused.name, onRefused);
    },
  };
}
