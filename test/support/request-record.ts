// A finished request's record with plausible values, for the metrics and access log tests.
import type { MeasuredRequest } from '../../lib/dataplane/request-measure.ts';
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';

/** The record of a request that has just ended, after 4 ms. */
export function record(overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    start: performance.now() - 4,
    remoteAddress: '127.0.0.1',
    method: 'GET',
    uri: '/app/x',
    protocol: 'HTTP/1.1',
    host: 'a.test',
    path: '/app',
    https: false,
    userAgent: '',
    referer: '',
    requestId: 'id',
    requestLength: 50,
    status: 200,
    bytesSent: 120,
    requestTime: 0.004,
    namespace: 'ns',
    ingress: 'site',
    service: 'web',
    servicePort: '80',
    upstream: 'ns-web-80',
    canary: '',
    upstreamAddr: '10.0.0.1:8080',
    upstreamStatus: 200,
    connectTime: 0.001,
    headerTime: 0.003,
    responseTime: 0.0035,
    upstreamResponseLength: 100,
    previousAddrs: '',
    previousStatuses: '',
    previousTimes: '',
    previousConnectTimes: '',
    previousHeaderTimes: '',
    previousLengths: '',
    accessLog: true,
    headers: [],
    peer: '127.0.0.1',
    headBytes: 20,
    refused: false,
    connection: 1,
    connectionRequests: 1,
    serverPort: 0,
    sslProtocol: '',
    sslCipher: '',
    ...overrides,
  };
}

/** The 16 fields of `r` the request metrics read (MeasuredRequest), spelled out field by field. */
export function measuresOf(r: RequestRecord): MeasuredRequest {
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
