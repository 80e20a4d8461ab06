// A finished request's record with plausible values, for the metrics and access log tests.
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';

export function record(overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    start: 0,
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
    accessLog: true,
    ...overrides,
  };
}
