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

/** The measures of `r`, as a new plain object (what crosses to the main thread). */
export function measureOf(r: RequestRecord): MeasuredRequest {
  return {
    host: r.host,
    status: r.status,
    method: r.method,
    path: r.path,
    namespace: r.namespace,
    ingress: r.ingress,
    service: r.service,
    canary: r.canary,
    requestTime: r.requestTime,
    responseTime: r.responseTime,
    headerTime: r.headerTime,
    connectTime: r.connectTime,
    requestLength: r.requestLength,
    bytesSent: r.bytesSent,
    upstreamStatus: r.upstreamStatus,
    upstreamResponseLength: r.upstreamResponseLength,
  };
}
