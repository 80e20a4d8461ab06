// What the data plane reports leaves it through node:diagnostics_channel, never through imports of
// logging or metrics code, so the data plane could run in a worker thread.

import { channel } from 'node:diagnostics_channel';

/** A problem while serving, e.g. an upstream error: `{ message, upstream?, peer?, code? }`. */
export const dataplaneError = channel('ingress-ts:dataplane:error');
/** A runtime swap: `{ kind: 'full' | 'endpoints', hash }`. */
export const runtimeSwapped = channel('ingress-ts:dataplane:swap');
/**
 * A request (or WebSocket session) is over: one `RequestRecord` (request-record.ts). Published only
 * while somebody subscribes (metrics, the access log).
 */
export const requestLogged = channel('ingress-ts:dataplane:request');
/**
 * A request refused before routing: Node's parser could not read it, or its head is over a limit or
 * its framing cannot be trusted (client-limits.ts). One `RequestRecord` with no route, once its
 * answer is out. For the access log only: NGINX refuses these before any location, so they reach
 * none of its request metrics either.
 */
export const requestRefused = channel('ingress-ts:dataplane:refused');
/**
 * A request (or WebSocket session) served by a data-plane worker thread is over: one
 * `MeasuredRequest` (request-measure.ts), published on the main thread in place of `requestLogged`,
 * whose full record stayed in the thread that wrote its access log line. For the request metrics.
 */
export const requestMeasured = channel('ingress-ts:dataplane:measured');
/**
 * Access log lines a data-plane worker thread encoded: one `Uint8Array` of whole UTF-8 lines, each
 * ending in a newline, in the order that thread finished its requests. Published on the main thread,
 * which writes each as it is to the one access log.
 */
export const accessLogLines = channel('ingress-ts:dataplane:access-log-lines');
/**
 * An unexpected exception while serving a request or a connection, contained to it (the data plane's
 * error boundary): `{ where, requestId, message, stack }`, published once the client was answered 500
 * or its connection closed. `where` is one of `RequestFailure['where']`.
 */
export const requestFailed = channel('ingress-ts:dataplane:failed');

/** What `requestFailed` carries: plain strings (it could cross a thread boundary). */
export interface RequestFailure {
  /** request: routing, access or the response's start; auth: after an asynchronous access check;
   * close: the bookkeeping of a closed response; upgrade: a WebSocket upgrade; connection: the
   * answer to a client error (a request Node's parser refused) */
  where: 'request' | 'auth' | 'proxy' | 'close' | 'upgrade' | 'connection';
  /** the request's X-Request-ID (received or generated); '' for a connection */
  requestId: string;
  message: string;
  stack: string;
}

/**
 * A TCP stream or UDP session of a TCP/UDP service ended: `StreamClosed`. Published only while somebody
 * subscribes (metrics, tests).
 */
export const streamClosed = channel('ingress-ts:dataplane:stream-closed');

export interface StreamClosed {
  protocol: 'TCP' | 'UDP';
  /** the service port */
  port: number;
  /** idle: proxy-stream-timeout; responses: proxy-stream-responses reached; done: either side closed;
   * unreachable: no endpoint could be reached; refused: a bad PROXY header; cut: removed or stopping */
  reason: 'idle' | 'responses' | 'done' | 'unreachable' | 'refused' | 'cut';
  /** bytes from the client and back to it */
  received: number;
  sent: number;
}
