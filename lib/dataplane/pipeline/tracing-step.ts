// The request's span on a traced route (tracing/span.ts): started once the request is routed to an
// upstream, its W3C context handed to the proxy's request headers and to the request record
// ($opentelemetry_trace_id, $opentelemetry_span_id, $opentelemetry_context_*).

import type { IncomingMessage } from 'node:http';
import type { RequestRecord } from '../request-record.ts';
import type { CompiledTracing } from '../tracing/route-tracing.ts';
import { type RequestSpan, startRequestSpan } from '../tracing/span.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { Decision } from './decide.ts';

export function traceRequest(
  tracing: Tracing,
  decision: Extract<Decision, { kind: 'proxy' }>,
  route: CompiledTracing,
  req: IncomingMessage,
  https: boolean,
  record: RequestRecord | null,
): RequestSpan {
  const context = decision.context;
  const span = startRequestSpan(tracing, route, req, decision.host, https, context.remoteAddress);
  context.traceHeaders = span.headers;
  if (record !== null) {
    record.traceparent = span.traceparent;
    record.tracestate = span.tracestate;
  }
  return span;
}
