// What the request metrics read of a finished request: its labels and the values of its histograms,
// and the upstream's status and body length (two numbers: a check of the metrics compares them).
// A data-plane worker thread encodes the access log line of each request itself and sends the main
// thread only this part of the record (request-record.ts), so the strings that only the line quotes
// (URI, user agent, referer, request id, client and upstream addresses) do not cross the thread
// boundary a second time.

import type { RequestRecord } from './request-record.ts';

export type MeasuredRequest = Pick<
  RequestRecord,
  | 'host'
  | 'status'
  | 'method'
  | 'path'
  | 'namespace'
  | 'ingress'
  | 'service'
  | 'canary'
  | 'requestTime'
  | 'responseTime'
  | 'headerTime'
  | 'connectTime'
  | 'requestLength'
  | 'bytesSent'
  | 'upstreamStatus'
  | 'upstreamResponseLength'
>;

/**
 * The measures of a thread's finished requests on their way to the main thread: the labels of each
 * distinct route once (LABELS strings each), and VALUES numbers per request, the first of them the
 * index of its labels. As objects, each request cost ~0.6 µs to serialise in its thread and ~0.8 µs
 * to read back on the main thread (its 16 property names included); as numbers and a few strings,
 * ~0.1 and ~0.2 µs (bench/measure-transfer.ts).
 */
export interface MeasureBatch {
  labels: string[];
  values: number[];
}

/** host, method, path, namespace, ingress, service, canary */
const LABELS = 7;
/** labels' index, status, requestTime, responseTime, headerTime, connectTime, requestLength,
 * bytesSent, upstreamStatus, upstreamResponseLength */
const VALUES = 10;

/** Collects the measures of finished requests until they are taken. */
export class MeasurePacker {
  #labels: string[] = [];
  #values: number[] = [];
  /** where the labels of the last request start in #labels (-1: none yet) */
  #last = -1;

  /** requests waiting */
  get count(): number {
    return this.#values.length / VALUES;
  }

  add(r: RequestRecord): void {
    const labels = this.#labels;
    let at = this.#last;
    // requests of one route come in runs: the labels of the last one usually serve
    if (
      at === -1 ||
      labels[at] !== r.host ||
      labels[at + 1] !== r.method ||
      labels[at + 2] !== r.path ||
      labels[at + 3] !== r.namespace ||
      labels[at + 4] !== r.ingress ||
      labels[at + 5] !== r.service ||
      labels[at + 6] !== r.canary
    ) {
      at = labels.length;
      labels.push(r.host, r.method, r.path, r.namespace, r.ingress, r.service, r.canary);
      this.#last = at;
    }
    this.#values.push(
      at / LABELS,
      r.status,
      r.requestTime,
      r.responseTime,
      r.headerTime,
      r.connectTime,
      r.requestLength,
      r.bytesSent,
      r.upstreamStatus,
      r.upstreamResponseLength,
    );
  }

  /** What waits, and an empty packer after it (null: nothing waits). */
  take(): MeasureBatch | null {
    if (this.#values.length === 0) return null;
    const batch = { labels: this.#labels, values: this.#values };
    this.#labels = [];
    this.#values = [];
    this.#last = -1;
    return batch;
  }
}

/** Each request of `batch` as a MeasuredRequest (a new object each), in the order they were added. */
export function unpackMeasures(batch: MeasureBatch, each: (measured: MeasuredRequest) => void): void {
  const { labels, values } = batch;
  for (let i = 0; i + VALUES <= values.length; i += VALUES) {
    const at = (values[i] as number) * LABELS;
    each({
      host: labels[at] as string,
      method: labels[at + 1] as string,
      path: labels[at + 2] as string,
      namespace: labels[at + 3] as string,
      ingress: labels[at + 4] as string,
      service: labels[at + 5] as string,
      canary: labels[at + 6] as string,
      status: values[i + 1] as number,
      requestTime: values[i + 2] as number,
      responseTime: values[i + 3] as number,
      headerTime: values[i + 4] as number,
      connectTime: values[i + 5] as number,
      requestLength: values[i + 6] as number,
      bytesSent: values[i + 7] as number,
      upstreamStatus: values[i + 8] as number,
      upstreamResponseLength: values[i + 9] as number,
    });
  }
}
