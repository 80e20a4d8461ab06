// A data-plane thread's side of the forwarded channels: the messages published in this thread
// (errors, failures, closed streams) are collected and posted to the main thread as one array, at
// most every `intervalMs` or once `maxRecords` are waiting, whichever comes first, together with the
// thread's counters, the access log lines encoded since the last batch (thread-records.ts; their
// buffers are transferred, not copied) and the measures of the requests finished since, packed as
// numbers (request-measure.ts). Never a message per request. The counters are posted
// on the same tick whenever they changed, so the main thread's sums follow connections that carry
// no request.
//
// A thread with nothing to send does not wake 20 times a second: after a second of ticks that
// posted nothing, the timer slows to one tick a second, and returns to `intervalMs` with the first
// tick that posts. What comes after a quiet spell then waits up to a second (a full buffer of lines
// or of measures still leaves at once), and a scrape of /metrics asks every thread for its batch
// first, so the metrics stay exact.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { dataplaneError } from '../events.ts';
import { copyStats, type DataPlaneStats } from '../handle.ts';
import type { MeasureBatch } from '../request-measure.ts';
import { FORWARDED_CHANNELS, type ThreadMessage } from './protocol.ts';

export interface EventBatchOptions {
  /** posts a message, moving the ArrayBuffers of `transfer` to the receiver */
  post: (message: ThreadMessage, transfer?: ArrayBuffer[]) => void;
  /** the access log lines encoded since the last call (whole lines), to leave with the batch */
  lines?: () => Uint8Array[];
  /** the measures of the requests finished since the last call, to leave with the batch */
  measures?: () => MeasureBatch | null;
  /** the thread's live counters */
  stats: () => Readonly<DataPlaneStats>;
  intervalMs?: number;
  maxRecords?: number;
}

export interface EventBatch {
  /** Posts what is waiting (and the counters) now; false when nothing was new. */
  flush(): boolean;
  /** the timer's interval now: `intervalMs`, or IDLE_INTERVAL_MS after a quiet second */
  readonly intervalMs: number;
  /** Flushes and stops collecting. */
  stop(): void;
}

const ERROR_CHANNEL = FORWARDED_CHANNELS.indexOf(dataplaneError);
/** The tick of a thread that had nothing to send for QUIET_MS. */
export const IDLE_INTERVAL_MS = 1000;
/** How long ticks must post nothing before the timer slows down. */
const QUIET_MS = 1000;

const sameStats = (a: Readonly<DataPlaneStats>, b: Readonly<DataPlaneStats>) =>
  a.accepted === b.accepted &&
  a.active === b.active &&
  a.requests === b.requests &&
  a.mirror?.answered === b.mirror?.answered &&
  a.mirror?.failed === b.mirror?.failed &&
  a.mirror?.dropped === b.mirror?.dropped &&
  a.spans?.exported === b.spans?.exported &&
  a.spans?.dropped === b.spans?.dropped;

export function createEventBatch(options: EventBatchOptions): EventBatch {
  const { post, stats } = options;
  const maxRecords = options.maxRecords ?? 256;
  let events: Array<[number, unknown]> = [];
  let posted = copyStats(stats());

  const takeLines = options.lines ?? (() => []);
  const takeMeasures = options.measures ?? (() => null);
  const flush = () => {
    const now = copyStats(stats());
    const lines = takeLines();
    const measures = takeMeasures();
    if (events.length === 0 && lines.length === 0 && measures === null && sameStats(now, posted))
      return false;
    const batch = events;
    events = [];
    posted = now;
    const transfer = lines.map((chunk) => chunk.buffer as ArrayBuffer);
    try {
      post({ type: 'batch', events: batch, stats: now, lines, measures }, transfer);
    } catch {
      // a payload that cannot be cloned: send the others, and say which channel carried it
      const sendable = batch.filter(cloneable).concat(unclonable(batch));
      post({ type: 'batch', events: sendable, stats: now, lines, measures }, transfer);
    }
    return true;
  };
  const handlers = FORWARDED_CHANNELS.map((channel, index) => {
    const handler = (message: unknown) => {
      events.push([index, message]);
      if (events.length >= maxRecords) flush();
    };
    subscribe(channel.name, handler);
    return handler;
  });
  const fastMs = options.intervalMs ?? 50;
  const quietTicks = Math.max(1, Math.ceil(QUIET_MS / fastMs));
  let intervalMs = fastMs;
  let quiet = 0;
  let timer: NodeJS.Timeout;
  const every = (ms: number) => {
    clearInterval(timer);
    intervalMs = ms;
    timer = setInterval(tick, ms);
    timer.unref();
  };
  const tick = () => {
    if (flush()) {
      quiet = 0;
      if (intervalMs !== fastMs) every(fastMs);
    } else if (intervalMs === fastMs && ++quiet >= quietTicks) {
      every(Math.max(fastMs, IDLE_INTERVAL_MS));
    }
  };
  every(fastMs);
  return {
    flush,
    get intervalMs() {
      return intervalMs;
    },
    stop() {
      clearInterval(timer);
      FORWARDED_CHANNELS.forEach((channel, index) => {
        const handler = handlers[index];
        if (handler !== undefined) unsubscribe(channel.name, handler);
      });
      flush();
    },
  };
}

function cloneable([, message]: [number, unknown]): boolean {
  try {
    structuredClone(message);
    return true;
  } catch {
    return false;
  }
}

/** One data-plane error per payload that could not cross, instead of the payload. */
function unclonable(batch: Array<[number, unknown]>): Array<[number, unknown]> {
  return batch
    .filter((event) => !cloneable(event))
    .map(([index]) => [
      ERROR_CHANNEL,
      {
        message: `a data-plane thread could not forward a ${String(FORWARDED_CHANNELS[index]?.name)} record`,
      },
    ]);
}
