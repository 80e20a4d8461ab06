// Everything of ingress-ts that runs the OpenTelemetry SDK, in one module loaded only once some route
// is traced (sdk-loader.ts): the SDK and its gRPC exporter cost about half a second of CPU and 6 MB of
// heap to load, which a data-plane thread that traces nothing never pays.
//
// The provider: a batch span processor and the OTLP/gRPC exporter, made from the ConfigMap's keys.
// Exporting never holds a request: spans queue in the batch processor; when the queue is full (a
// collector down or slow) a span is dropped, and a batch the exporter could not deliver is dropped
// too, both counted (SpanCounter).
//
// The span: the SERVER span of one proxied request on a traced route, started when the request is
// routed, ended when its response closes (sent, or the client left), with the attributes NGINX's
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
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { TracingConfig } from '../../model/configmap/tracing-keys.ts';
import { type CompiledTracing, spanName } from './route-tracing.ts';
import { collectorUrl, type RequestSpan, type SpanCounter } from './tracing.ts';

function samplerOf(config: TracingConfig): Sampler {
  const root =
    config.sampler === 'AlwaysOff'
      ? new AlwaysOffSampler()
      : config.sampler === 'TraceIdRatioBased'
        ? new TraceIdRatioBasedSampler(config.samplerRatio)
        : new AlwaysOnSampler();
  return config.samplerParentBased ? new ParentBasedSampler({ root }) : root;
}

/**
 * The batch processor's queue, counted from outside: a span is queued at onEnd and leaves the queue
 * when its batch is handed to the exporter, which is the processor's own rule for "full", so a span
 * the processor would drop is counted and not handed over.
 */
class CountedQueue implements SpanProcessor, SpanExporter {
  readonly #batch: BatchSpanProcessor;
  readonly #exporter: SpanExporter;
  readonly #max: number;
  readonly #counter: SpanCounter;
  #queued = 0;

  constructor(counter: SpanCounter, exporter: SpanExporter, config: TracingConfig) {
    this.#counter = counter;
    this.#exporter = exporter;
    this.#max = config.maxQueueSize;
    this.#batch = new BatchSpanProcessor({
      exporter: this,
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: Math.min(config.maxExportBatchSize, config.maxQueueSize),
      scheduledDelayMillis: config.scheduleDelayMillis,
    });
  }

  // the batch processor does nothing when a span starts
  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.#queued >= this.#max) {
      this.#counter.dropped(1, null);
      return;
    }
    this.#queued++;
    this.#batch.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.#batch.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.#batch.shutdown();
  }

  // SpanExporter: the batch processor hands its batches here
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.#queued -= spans.length;
    const count = spans.length;
    this.#exporter.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) this.#counter.stats.exported += count;
      else this.#counter.dropped(count, result.error ?? new Error('export failed'));
      done(result);
    });
  }
}

/** A tracer provider for these settings, counting its spans on `counter`. */
export function createProvider(config: TracingConfig, counter: SpanCounter): TracerProvider {
  const exporter = new OTLPTraceExporter({ url: collectorUrl(config) });
  return new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
    sampler: samplerOf(config),
    spanProcessors: [new CountedQueue(counter, exporter, config)],
  });
}

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

const FLAVOR: Record<string, string> = { '1.1': '1.1', '2.0': '2.0', '1.0': '1.0' };

/** Starts the span of `req` on a traced route. `clientAddress`: $remote_addr (the real IP when enabled). */
export function startRequestSpan(
  tracer: Tracer,
  route: CompiledTracing,
  req: IncomingMessage,
  host: string,
  https: boolean,
  clientAddress: string,
): RequestSpan {
  const parent: Context = route.trust
    ? propagator.extract(ROOT_CONTEXT, req.rawHeaders, RAW_GETTER)
    : ROOT_CONTEXT;
  const span = tracer.startSpan(
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
  const span = request.span as Span;
  if (span.isRecording()) {
    span.setAttribute('http.status_code', status);
    if (upstreamAddress !== '') span.setAttribute('upstream.address', upstreamAddress);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
