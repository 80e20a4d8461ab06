// OpenTelemetry as one data plane (one thread) runs it: the tracer provider of the ConfigMap's
// otlp-* and otel-* keys, made when the first traced request needs it (sdk.ts, loaded by then) and
// replaced (the old one flushed, then shut down) when those keys change. Spans never leave the
// thread that made them, so each data-plane thread has its own provider and exporter.
//
// What the exporter drops (a full queue, a batch the collector did not take) is counted here
// (TracingStats, ingress_ts_otel_spans_total) and the export failures are logged at most once per
// ERROR_LOG_MS, never per span. This module loads no part of the SDK: a thread that traces nothing
// pays nothing for it.

import type { Span, Tracer } from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/sdk-trace';
import { DEFAULT_TRACING, type TracingConfig } from '../../model/configmap/tracing-keys.ts';
import { dataplaneError } from '../events.ts';
import { loadedSdk } from './sdk-loader.ts';

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

/** Where a provider counts what became of its spans. */
export interface SpanCounter {
  readonly stats: TracingStats;
  /** `count` spans lost; `error`: the export failure that lost them (null: the queue was full) */
  dropped(count: number, error: Error | null): void;
}

/** A request's span and the context it sends upstream. */
export interface RequestSpan {
  span: Span;
  /** the headers for the upstream request (name, value pairs): traceparent, and tracestate if any */
  headers: string[];
  /** $opentelemetry_context_traceparent, $opentelemetry_context_tracestate ('' when none) */
  traceparent: string;
  tracestate: string;
}

/** The collector's address as a URL: a bare IPv6 address gets its brackets. */
export function collectorUrl(config: TracingConfig): string {
  const host = config.collectorHost === '' ? 'localhost' : config.collectorHost;
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${bracketed}:${config.collectorPort}`;
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

export class Tracing implements SpanCounter {
  /** live counters: read them, do not keep a copy */
  readonly stats: TracingStats = { exported: 0, dropped: 0 };
  #config: TracingConfig = DEFAULT_TRACING;
  #key = exporterKey(DEFAULT_TRACING);
  #provider: TracerProvider | null = null;
  #tracer: Tracer | null = null;
  /** providers replaced or closed whose last spans are still being sent */
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

  /** The tracer of the settings served now, made on first use; null while the SDK is not loaded. */
  tracer(): Tracer | null {
    if (this.#tracer !== null) return this.#tracer;
    const sdk = loadedSdk();
    if (sdk === null) return null;
    const provider = sdk.createProvider(this.#config, this);
    this.#provider = provider;
    this.#tracer = provider.getTracer('ingress-ts');
    return this.#tracer;
  }

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
    // shutdown sends what is queued first; a collector that does not answer is the exporter's timeout
    const done = provider.shutdown().catch(() => {});
    this.#retiring.add(done);
    void done.then(() => this.#retiring.delete(done));
  }
}
