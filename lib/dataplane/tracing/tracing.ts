// The OpenTelemetry SDK as one data plane (one thread) runs it: a tracer provider with a batch span
// processor and the OTLP/gRPC exporter, made from the ConfigMap's otlp-* and otel-* keys when the
// first traced request needs it, and replaced (the old one flushed, then shut down) when those keys
// change. Spans never leave the thread that made them, so each data-plane thread has its own.
//
// Exporting never holds a request: spans queue in the batch processor; when the queue is full (a
// collector down or slow) a span is dropped, and a batch the exporter could not deliver is dropped
// too. Both are counted (TracingStats, ingress_ts_otel_spans_total) and the export failures are
// logged at most once per ERROR_LOG_MS, never per span.

import { TraceFlags } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
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
import { DEFAULT_TRACING, type TracingConfig } from '../../model/configmap/tracing-keys.ts';
import { dataplaneError } from '../events.ts';

/** How long a closing data plane waits for its last spans to be exported. */
const CLOSE_MS = 2000;

/** How often an export failure may be logged. */
const ERROR_LOG_MS = 30_000;

/** Spans by outcome since the data plane started (plain integers, summed across threads). */
export interface TracingStats {
  /** delivered to the collector */
  exported: number;
  /** dropped: the queue was full, or the batch could not be delivered */
  dropped: number;
}

/** The settings that make a new provider when they change (the rest is read per request). */
function exporterKey(config: TracingConfig): string {
  const { collectorHost, collectorPort, serviceName, sampler, samplerRatio, samplerParentBased } = config;
  const { maxQueueSize, scheduleDelayMillis, maxExportBatchSize } = config;
  return JSON.stringify([
    collectorHost,
    collectorPort,
    serviceName,
    sampler,
    samplerRatio,
    samplerParentBased,
    maxQueueSize,
    scheduleDelayMillis,
    maxExportBatchSize,
  ]);
}

function samplerOf(config: TracingConfig): Sampler {
  const root =
    config.sampler === 'AlwaysOff'
      ? new AlwaysOffSampler()
      : config.sampler === 'TraceIdRatioBased'
        ? new TraceIdRatioBasedSampler(config.samplerRatio)
        : new AlwaysOnSampler();
  return config.samplerParentBased ? new ParentBasedSampler({ root }) : root;
}

/** The collector's address as a URL: a bare IPv6 address gets its brackets. */
function collectorUrl(config: TracingConfig): string {
  const host = config.collectorHost === '' ? 'localhost' : config.collectorHost;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${bracketed}:${config.collectorPort}`;
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
  readonly #tracing: Tracing;
  #queued = 0;

  constructor(tracing: Tracing, exporter: SpanExporter, config: TracingConfig) {
    this.#tracing = tracing;
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
      this.#tracing.dropped(1, null);
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
      if (result.code === ExportResultCode.SUCCESS) this.#tracing.stats.exported += count;
      else this.#tracing.dropped(count, result.error ?? new Error('export failed'));
      done(result);
    });
  }
}

export class Tracing {
  /** live counters: read them, do not keep a copy */
  readonly stats: TracingStats = { exported: 0, dropped: 0 };
  #config: TracingConfig = DEFAULT_TRACING;
  #key = exporterKey(DEFAULT_TRACING);
  #provider: TracerProvider | null = null;
  #tracer: ReturnType<TracerProvider['getTracer']> | null = null;
  /** providers replaced or closed whose last spans are still being flushed */
  readonly #retiring = new Set<Promise<void>>();
  #lastErrorLog = Number.NEGATIVE_INFINITY;
  #unlogged = 0;

  /** The ConfigMap's tracing keys of the runtime served now: a new exporter only when they changed. */
  configure(config: TracingConfig): void {
    this.#config = config;
    const key = exporterKey(config);
    if (key === this.#key) return;
    this.#key = key;
    this.#retire();
  }

  /** The tracer of the settings served now, made on first use (no provider while nothing is traced). */
  tracer(): ReturnType<TracerProvider['getTracer']> {
    if (this.#tracer !== null) return this.#tracer;
    const config = this.#config;
    const exporter = new OTLPTraceExporter({ url: collectorUrl(config) });
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
      sampler: samplerOf(config),
      spanProcessors: [new CountedQueue(this, exporter, config)],
    });
    this.#provider = provider;
    this.#tracer = provider.getTracer('ingress-ts');
    return this.#tracer;
  }

  /** Spans lost; an export failure is logged, at most once per ERROR_LOG_MS. */
  dropped(count: number, error: Error | null): void {
    this.stats.dropped += count;
    this.#unlogged += count;
    if (error === null) return;
    const now = performance.now();
    if (now - this.#lastErrorLog < ERROR_LOG_MS) return;
    this.#lastErrorLog = now;
    const lost = this.#unlogged;
    this.#unlogged = 0;
    dataplaneError.publish({
      message: `OpenTelemetry: spans not delivered to ${collectorUrl(this.#config)} (${error.message}); ${lost} dropped since the last report`,
    });
  }

  /**
   * Flushes and shuts down the provider (the data plane is closing): the last spans get up to
   * CLOSE_MS to reach the collector, so a collector that is down never holds the stop.
   */
  async close(): Promise<void> {
    this.#retire();
    if (this.#retiring.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_MS);
      timer.unref();
    });
    await Promise.race([Promise.all(this.#retiring), late]);
    clearTimeout(timer);
  }

  #retire(): void {
    const provider = this.#provider;
    this.#provider = null;
    this.#tracer = null;
    if (provider === null) return;
    // shutdown flushes what is queued first; a collector that does not answer is the exporter's timeout
    const done = provider.shutdown().catch(() => {});
    this.#retiring.add(done);
    void done.then(() => this.#retiring.delete(done));
  }
}
