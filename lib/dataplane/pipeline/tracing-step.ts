// The request's span on a traced route (tracing/sdk.ts): started once the request is routed to an
// upstream, its W3C context handed to the proxy's request headers and to the request record
// ($opentelemetry_trace_id, $opentelemetry_span_id, $opentelemetry_context_*); ended when the
// response closes.

import type { IncomingMessage } from 'node:http';
import type { RequestRecord } from '../request-record.ts';
import type { CompiledTracing } from '../tracing/route-tracing.ts';
import { loadedSdk } from '../tracing/sdk-loader.ts';
import type { RequestSpan, Tracing } from '../tracing/tracing.ts';
import type { Decision } from './decide.ts';

/** The request's span, or null while the SDK is still loading (the request is then not traced). */
export function traceRequest(
  tracing: Tracing,
  decision: Extract<Decision, { kind: 'proxy' }>,
  route: CompiledTracing,
  req: IncomingMessage,
  https: boolean,
  record: RequestRecord | null,
): RequestSpan | null {
  const sdk = loadedSdk();
  const tracer = tracing.tracer();
  if (sdk === null || tracer === null) return null;
  const context = decision.context;
  const span = sdk.startRequestSpan(tracer, route, req, decision.host, https, context.remoteAddress);
  context.traceHeaders = span.headers;
  if (record !== null) {
    record.traceparent = span.traceparent;
    record.tracestate = span.tracestate;
  }
  return span;
}

/** Ends the span: the status sent (499: the client left before a response head) and the last peer tried. */
export function endTrace(span: RequestSpan, status: number, upstreamAddress: string): void {
  loadedSdk()?.endRequestSpan(span, status, upstreamAddress);
}
