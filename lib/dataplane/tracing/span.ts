// The SERVER span of one proxied request on a traced route: started when the request is routed,
// ended when its response closes (sent, or the client left), with the attributes NGINX's
// OpenTelemetry module (otel_ngx_module, which ingress-nginx loads) puts on its span, plus the
// route's. The W3C context it sends upstream replaces any the client sent; the client's becomes the
// parent only when the route trusts incoming spans.

import type { IncomingMessage } from 'node:http';
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { type CompiledTracing, spanName } from './route-tracing.ts';
import type { Tracing } from './tracing.ts';

const propagator = new W3CTraceContextPropagator();

/** Reads the context headers from Node's raw header list (no headers object made). */
const RAW_GETTER: TextMapGetter<readonly string[]> = {
  keys(raw) {
    const keys: string[] = [];
    for (let i = 0; i < raw.length; i += 2) keys.push((raw[i] as string).toLowerCase());
    return keys;
  },
  get(raw, key) {
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      if (name.length === key.length && name.toLowerCase() === key) return raw[i + 1];
    }
    return undefined;
  },
};

/** The headers sent upstream, in order: traceparent then tracestate. */
interface Outgoing {
  traceparent?: string;
  tracestate?: string;
}

const SETTER: TextMapSetter<Outgoing> = {
  set(carrier, key, value) {
    if (key === 'traceparent') carrier.traceparent = value;
    else if (key === 'tracestate') carrier.tracestate = value;
  },
};

export interface RequestSpan {
  span: Span;
  /** the headers for the upstream request (name, value pairs): traceparent, and tracestate if any */
  headers: string[];
  /** $opentelemetry_context_traceparent, $opentelemetry_context_tracestate ('' when none) */
  traceparent: string;
  tracestate: string;
}

const FLAVOR: Record<string, string> = { '1.1': '1.1', '2.0': '2.0', '1.0': '1.0' };

/** Starts the span of `req` on a traced route. `clientAddress`: $remote_addr (the real IP when enabled). */
export function startRequestSpan(
  tracing: Tracing,
  route: CompiledTracing,
  req: IncomingMessage,
  host: string,
  https: boolean,
  clientAddress: string,
): RequestSpan {
  const parent: Context = route.trust
    ? propagator.extract(ROOT_CONTEXT, req.rawHeaders, RAW_GETTER)
    : ROOT_CONTEXT;
  const span = tracing
    .tracer()
    .startSpan(
      spanName(route, { req, host, https }),
      { kind: SpanKind.SERVER, attributes: route.attributes },
      parent,
    );
  if (span.isRecording()) {
    const socket = req.socket;
    span.setAttribute('http.method', req.method ?? '');
    span.setAttribute('http.flavor', FLAVOR[req.httpVersion] ?? req.httpVersion);
    span.setAttribute('http.target', req.url ?? '/');
    span.setAttribute('http.scheme', https ? 'https' : 'http');
    if (host !== '') span.setAttribute('http.host', host);
    const agent = req.headers['user-agent'];
    if (agent !== undefined) span.setAttribute('http.user_agent', agent);
    if (socket?.localPort !== undefined) span.setAttribute('net.host.port', socket.localPort);
    span.setAttribute('net.peer.ip', clientAddress);
    if (socket?.remotePort !== undefined) span.setAttribute('net.peer.port', socket.remotePort);
  }
  const out: Outgoing = {};
  propagator.inject(trace.setSpan(parent, span), out, SETTER);
  const traceparent = out.traceparent ?? '';
  const tracestate = out.tracestate ?? '';
  const headers = traceparent === '' ? [] : ['traceparent', traceparent];
  if (tracestate !== '') headers.push('tracestate', tracestate);
  return { span, headers, traceparent, tracestate };
}

/** Ends the span: the status sent (499: the client left first) and the last upstream tried. */
export function endRequestSpan(request: RequestSpan, status: number, upstreamAddress: string): void {
  const span = request.span;
  if (span.isRecording()) {
    span.setAttribute('http.status_code', status);
    if (upstreamAddress !== '') span.setAttribute('upstream.address', upstreamAddress);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
