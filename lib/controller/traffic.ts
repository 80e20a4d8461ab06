// What the data plane reports about traffic, on node:diagnostics_channel, turned into log lines,
// metrics and the access log. Requests are recorded only while somebody reads the records: the
// subscriptions follow the ConfigMap's access-log settings and whether metrics are on.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type AccessLog, type AccessLogSettings, FLUSH_DELAY_ENV, flushDelayOf } from '../access-log.ts';
import {
  accessLogLines,
  dataplaneError,
  type RequestFailure,
  requestFailed,
  requestLogged,
  requestMeasured,
  requestRefused,
  type StreamClosed,
  streamClosed,
} from '../dataplane/events.ts';
import { RecordQueue } from '../dataplane/record-queue.ts';
import type { MeasuredRequest } from '../dataplane/request-measure.ts';
import type { RequestRecord } from '../dataplane/request-record.ts';
import type { Logger } from '../log.ts';
import type { ControllerMetrics } from '../metrics/controller.ts';
import { redactText } from '../model/index.ts';

/** The most a finished request waits for its run (record-queue.ts) to be handled, ms. */
export const RECORD_DELAY_MS = 10;

/**
 * RECORD_DELAY_MS, or the access log's batch delay of a measurement (access-log.ts FLUSH_DELAY_ENV):
 * under valgrind a request finishes every ~40 ms, and runs of one record would each pay a timer.
 */
function recordDelayOf(env: NodeJS.ProcessEnv = process.env): number {
  return env[FLUSH_DELAY_ENV] === undefined ? RECORD_DELAY_MS : flushDelayOf(env);
}

/** The string fields of a data-plane event, URL-looking words redacted. */
function redactFields(message: unknown): object {
  if (typeof message !== 'object' || message === null) return { message: redactText(String(message)) };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message)) {
    out[key] = typeof value === 'string' ? redactText(value) : value;
  }
  return out;
}

/**
 * Data-plane errors as warnings. They quote URLs (a mirror target, an auth URL as requested): never
 * their credentials. Returns the unsubscription.
 */
export function logDataPlaneErrors(log: Logger): () => void {
  const onDataplaneError = (message: unknown) => log.warn(redactFields(message), 'data plane');
  subscribe(dataplaneError.name, onDataplaneError);
  return () => unsubscribe(dataplaneError.name, onDataplaneError);
}

export interface Traffic {
  /**
   * Resolves once what was counted is in the metrics and the access log: the data-plane threads'
   * batches since their last, and the records waiting here for their run (before a scrape reads them).
   */
  collected(): Promise<void>;
  /** A model was applied: its access-log settings decide what is recorded from now on. */
  configure(settings: AccessLogSettings): void;
  /** Unsubscribes everything and closes the access log. */
  close(): Promise<void>;
}

export interface TrafficOptions {
  /** the data-plane handle's `flushed` (threads: their batches, now) */
  threadsFlushed?: () => Promise<unknown> | undefined;
  /** the most a finished request's record waits for its run [RECORD_DELAY_MS] */
  recordDelayMs?: number;
}

/** The data plane's error boundary (an error line with the request id, and the counter), records, refusals. */
export function observeTraffic(
  log: Logger,
  metrics: ControllerMetrics | null,
  accessLog: AccessLog,
  options: TrafficOptions = {},
): Traffic {
  const threadsFlushed = options.threadsFlushed ?? (() => undefined);
  const delayMs = options.recordDelayMs ?? recordDelayOf();
  const onRequestFailed = (message: unknown) => {
    const failure = message as RequestFailure;
    metrics?.requestFailed(failure.where);
    log.error(
      {
        where: failure.where,
        req_id: failure.requestId,
        // an exception's text may quote a URL it was handed (a mirror target, an auth URL)
        err: { message: redactText(failure.message), stack: redactText(failure.stack) },
      },
      'data plane: unexpected exception while serving (contained: answered 500 or closed)',
    );
  };
  subscribe(requestFailed.name, onRequestFailed);
  const onStreamClosed = (message: unknown) => metrics?.streamClosed(message as StreamClosed);
  if (metrics !== null) subscribe(streamClosed.name, onStreamClosed);

  // one subscriber for every finished request: metrics, then the access log line, a run of records
  // at a time (record-queue.ts), within the delay of the first
  let accessLogOn = false;
  let timer: NodeJS.Timeout | null = null;
  const records = new RecordQueue(
    (record, time) => {
      if (!record.refused) metrics?.observe(record);
      if (accessLogOn || record.refused) accessLog.write(record, time);
    },
    () => {
      timer ??= setTimeout(flush, delayMs);
    },
  );
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    records.drain();
  };
  const onRequest = (message: unknown) => records.push(message as RequestRecord);
  /** requests refused before routing (`refused` set): an access log line, no metrics (as NGINX) */
  const onRefused = (message: unknown) => records.push(message as RequestRecord);
  // with data-plane threads, requests arrive as measures (metrics) and lines (the access log): the
  // threads encode the lines, with the settings of the model they serve
  const onMeasured = (message: unknown) => metrics?.observe(message as MeasuredRequest);
  const onLines = (message: unknown) => accessLog.writeLines(message as Uint8Array);
  if (metrics !== null) subscribe(requestMeasured.name, onMeasured);
  subscribe(accessLogLines.name, onLines);
  let subscribed = false;
  let refusalsSubscribed = false;
  /** Records are built only while somebody reads them. */
  const subscribeRequests = (wanted: boolean, refusals: boolean) => {
    if (wanted !== subscribed) {
      subscribed = wanted;
      if (wanted) subscribe(requestLogged.name, onRequest);
      else unsubscribe(requestLogged.name, onRequest);
    }
    if (refusals !== refusalsSubscribed) {
      refusalsSubscribed = refusals;
      if (refusals) subscribe(requestRefused.name, onRefused);
      else unsubscribe(requestRefused.name, onRefused);
    }
  };

  return {
    async collected() {
      await threadsFlushed();
      flush();
    },
    configure(settings) {
      // the records waiting finished under the settings before these
      flush();
      accessLog.configure(settings);
      accessLogOn = !settings.disabled;
      subscribeRequests(metrics !== null || accessLogOn, accessLogOn);
    },
    async close() {
      subscribeRequests(false, false);
      flush();
      if (metrics !== null) unsubscribe(requestMeasured.name, onMeasured);
      unsubscribe(accessLogLines.name, onLines);
      await accessLog.close();
      unsubscribe(requestFailed.name, onRequestFailed);
      if (metrics !== null) unsubscribe(streamClosed.name, onStreamClosed);
    },
  };
}
