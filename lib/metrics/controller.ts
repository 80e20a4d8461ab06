// Controller-level Prometheus metrics under ingress-nginx's names (docs/observability.md), so
// dashboards and alerts written for ingress-nginx keep working, plus ingress-ts's own. Classic text
// format: counters keep ingress-nginx's bare names (no `_total` added).
//
// A "reload" in ingress-nginx's sense is a full swap here (a change of routes, TLS or settings);
// an endpoints-only swap is what ingress-nginx applies without reloading, so it does not count as one.
// The per-request series live in requests.ts, the series read off the model in model-metrics.ts and
// the nginx_process_* ones in process.ts; all share this registry and its const labels.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { AdmissionReviewed } from '../admission/events.ts';
import type { DataPlaneStats } from '../dataplane/dataplane.ts';
import type { StreamClosed } from '../dataplane/events.ts';
import type { MeasuredRequest } from '../dataplane/request-measure.ts';
import type { Diagnostic, Model } from '../model/index.ts';
import { createAdmissionMetrics } from './admission.ts';
import { createModelMetrics } from './model-metrics.ts';
import { registerConnectionMetrics, registerProcessMetrics } from './process.ts';
import {
  createRequestMetrics,
  DEFAULT_REQUEST_METRICS_OPTIONS,
  type RequestMetricsOptions,
} from './requests.ts';
import type { TrafficSource } from './traffic.ts';

/**
 * How often nodejs_eventloop_lag_* samples the event loop's delay. prom-client's 10 ms is a libuv
 * timer that wakes the proxy's thread 100 times a second, idle or not (~5 ms of CPU a second on
 * the bench VM); 100 ms still sees every stall of 100 ms or more, and ~150 samples between two
 * scrapes 15 s apart.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

const PREFIX = 'nginx_ingress_controller_';

export interface ControllerMetricsOptions {
  /** --controller-class: ingress-nginx's controller_class label */
  controllerClass: string;
  /** POD_NAMESPACE (default "default") and POD_NAME, as ingress-nginx reads them */
  podNamespace: string;
  podName: string;
  version: string;
  /** the data plane's live counters, for the nginx_process_* connection and request series */
  dataPlaneStats?: () => Readonly<DataPlaneStats>;
  /** the per-request metrics' flags (default: ingress-nginx's) */
  requests?: RequestMetricsOptions;
  /** Kubernetes mode with leader election: the Lease name, for leader_election_status */
  electionId?: string | null;
  /** Kubernetes mode: each watched kind's restarts after errors so far */
  informers?: () => ReadonlyArray<{ kind: string; restarts: number }>;
  /** the validating admission webhook runs: its series are exported */
  admission?: boolean;
}

export interface AppliedModel {
  /** the model's routes hash (hex): changes on every full swap, not on endpoints-only ones */
  routesHash: string;
  kind: 'full' | 'endpoints' | 'unchanged';
  buildSeconds: number;
  swapSeconds: number;
  diagnostics: readonly Diagnostic[];
  /** the model now live: per-request series of Ingresses no longer in it are removed */
  model?: Model;
}

export interface ControllerMetrics {
  readonly registry: Registry;
  /** a build and its swap succeeded */
  applied(model: AppliedModel): void;
  /** a build or swap threw: the previous configuration keeps serving */
  failed(): void;
  /** one finished request (the data plane's `requestLogged` or, from threads, `requestMeasured` channel) */
  observe(record: MeasuredRequest): void;
  /** an unexpected exception contained to one request or connection (the `requestFailed` channel) */
  requestFailed(where: string): void;
  /** a TCP stream or UDP session of a TCP/UDP service ended (the `streamClosed` channel) */
  streamClosed(stream: StreamClosed): void;
  /** one admission review answered (the webhook's `admissionReviewed` channel) */
  admissionReviewed(event: AdmissionReviewed): void;
  /** leader election: only the leader exports ssl_expire_time_seconds (standalone is always leader);
   * leader_election_status follows */
  setLeader(leader: boolean): void;
  /** the exposition text and its Content-Type */
  scrape(): Promise<{ contentType: string; body: string }>;
  /** the per-route totals /debug/traffic samples (traffic.ts) */
  readonly traffic: TrafficSource;
}

/** The first 52 bits of a hex hash as a number: exact in a float64, like ingress-nginx's uint64 gauge. */
export function hashValue(hex: string): number {
  const value = Number.parseInt(hex.slice(0, 13), 16);
  return Number.isNaN(value) ? 0 : value;
}

/** ingress-nginx's reload series (config_hash, config_last_reload_*, success, errors) and build_info. */
function createReloadMetrics(registers: Registry[], version: string) {
  const configHash = new Gauge({
    name: `${PREFIX}config_hash`,
    help: 'Running configuration hash actually running',
    registers,
  });
  const lastReloadOk = new Gauge({
    name: `${PREFIX}config_last_reload_successful`,
    help: 'Whether the last configuration reload attempt was successful',
    registers,
  });
  const lastReloadTime = new Gauge({
    name: `${PREFIX}config_last_reload_successful_timestamp_seconds`,
    help: 'Timestamp of the last successful configuration reload.',
    registers,
  });
  const success = new Counter({
    name: `${PREFIX}success`,
    help: 'Cumulative number of Ingress controller reload operations',
    registers,
  });
  const errors = new Counter({
    name: `${PREFIX}errors`,
    help: 'Cumulative number of Ingress controller errors during reload operations',
    registers,
  });
  new Gauge({
    name: `${PREFIX}build_info`,
    help: 'A metric with a constant 1 labeled with information about the build.',
    labelNames: ['release', 'build', 'repository'],
    registers,
  }).set({ release: version, build: 'ingress-ts', repository: 'ingress-ts' }, 1);
  // no configuration yet: not a failure
  lastReloadOk.set(0);
  configHash.set(0);
  return {
    applied(kind: AppliedModel['kind'], routesHash: string): void {
      lastReloadOk.set(1);
      if (kind === 'full') {
        success.inc();
        lastReloadTime.set(Date.now() / 1000);
        configHash.set(hashValue(routesHash));
      }
    },
    failed(): void {
      errors.inc();
      lastReloadOk.set(0);
      configHash.set(0);
    },
  };
}

/** ingress_ts_mirror_requests_total, from the data plane's mirror counters at scrape time. */
function registerMirrorMetrics(registers: Registry[], stats: () => Readonly<DataPlaneStats>): void {
  new Counter({
    name: 'ingress_ts_mirror_requests_total',
    help: 'mirror-target request copies by result: answered (any status), failed (refused, reset, timed out), dropped (over the in-flight cap, or their body fell behind)',
    labelNames: ['result'],
    registers,
    collect() {
      const mirror = stats().mirror;
      this.reset();
      if (mirror === undefined) return;
      this.inc({ result: 'answered' }, mirror.answered);
      this.inc({ result: 'failed' }, mirror.failed);
      this.inc({ result: 'dropped' }, mirror.dropped);
    },
  });
}

/** ingress_ts_otel_spans_total: OpenTelemetry spans exported or dropped, read at scrape time. */
function registerSpanMetrics(registers: Registry[], stats: () => Readonly<DataPlaneStats>): void {
  new Counter({
    name: 'ingress_ts_otel_spans_total',
    help: 'OpenTelemetry request spans by result: exported (delivered to the OTLP collector), dropped (the export queue was full, or the collector could not be reached)',
    labelNames: ['result'],
    registers,
    collect() {
      const spans = stats().spans;
      this.reset();
      if (spans === undefined) return;
      this.inc({ result: 'exported' }, spans.exported);
      this.inc({ result: 'dropped' }, spans.dropped);
    },
  });
}

/** ingress_ts_dataplane_thread_restarts_total: data-plane threads replaced, read at scrape time. */
function registerThreadMetrics(registers: Registry[], stats: () => Readonly<DataPlaneStats>): void {
  new Counter({
    name: 'ingress_ts_dataplane_thread_restarts_total',
    help: 'data-plane worker threads that stopped unexpectedly and were replaced (always 0 with worker-processes 1)',
    registers,
    collect() {
      this.reset();
      this.inc(stats().threadRestarts ?? 0);
    },
  });
}

/** The diagnostics of a build counted by code and severity. */
function diagnosticCounts(diagnostics: readonly Diagnostic[]) {
  const counts = new Map<string, { code: string; severity: string; n: number }>();
  for (const d of diagnostics) {
    const key = `${d.code}\0${d.severity}`;
    const entry = counts.get(key);
    if (entry) entry.n++;
    else counts.set(key, { code: d.code, severity: d.severity, n: 1 });
  }
  return counts.values();
}

/** ingress-ts's own series of each build and swap: durations, swaps by kind, diagnostics by code. */
function createBuildMetrics(registers: Registry[]) {
  const buildSeconds = new Histogram({
    name: 'ingress_ts_model_build_duration_seconds',
    help: 'Time to build the routing model from the objects',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const swapSeconds = new Histogram({
    name: 'ingress_ts_runtime_swap_duration_seconds',
    help: 'Time to compile the model into the data plane and swap it in',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const swaps = new Counter({
    name: 'ingress_ts_swaps_total',
    help: 'Routing table swaps by kind: full (ingress-nginx would reload) or endpoints (applied in place)',
    labelNames: ['kind'],
    registers,
  });
  const diagnostics = new Gauge({
    name: 'ingress_ts_diagnostics',
    help: 'Problems the last build found in the objects, by code and severity',
    labelNames: ['code', 'severity'],
    registers,
  });
  return {
    applied(model: AppliedModel): void {
      buildSeconds.observe(model.buildSeconds);
      if (model.kind !== 'unchanged') {
        swapSeconds.observe(model.swapSeconds);
        swaps.inc({ kind: model.kind });
      }
      diagnostics.reset();
      for (const { code, severity, n } of diagnosticCounts(model.diagnostics)) {
        diagnostics.set({ code, severity }, n);
      }
    },
  };
}

/** leader_election_status{name} (Kubernetes mode with an election only); returns its setter. */
function createLeaderMetrics(registers: Registry[], electionId: string | null): (leader: boolean) => void {
  if (electionId === null) return () => {};
  const status = new Gauge({
    name: `${PREFIX}leader_election_status`,
    help: "Gauge reporting status of the leader election, 0 indicates follower, 1 indicates leader. 'name' is the string used to identify the lease",
    labelNames: ['name'],
    registers,
  });
  status.set({ name: electionId }, 0);
  return (leader) => status.set({ name: electionId }, leader ? 1 : 0);
}

/** ingress_ts_informer_restarts_total{kind}, read from the informers at scrape time. */
function registerInformerMetrics(
  registers: Registry[],
  informers: () => ReadonlyArray<{ kind: string; restarts: number }>,
): void {
  new Counter({
    name: 'ingress_ts_informer_restarts_total',
    help: 'Watches of a kind restarted after an error (a reset stream, a 5xx or 429, an unreachable API server)',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      for (const { kind, restarts } of informers()) this.inc({ kind }, restarts);
    },
  });
}

export function createControllerMetrics(options: ControllerMetricsOptions): ControllerMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({
    controller_namespace: options.podNamespace,
    controller_class: options.controllerClass,
    controller_pod: options.podName,
  });
  // the exposition lists the series in the order they are registered: keep it
  const registers = [registry];
  const reload = createReloadMetrics(registers, options.version);
  const stats = options.dataPlaneStats;
  registerProcessMetrics(registers, () => stats?.().threads ?? 0);
  /** requests (and WebSocket sessions) finished, counted where their records arrive anyway */
  let finished = 0;
  if (stats !== undefined) {
    registerConnectionMetrics(registers, stats, () => finished);
    registerMirrorMetrics(registers, stats);
    registerSpanMetrics(registers, stats);
    registerThreadMetrics(registers, stats);
  }
  // counted whether or not request metrics are on: a contained crash is worth an alert
  const requestErrors = new Counter({
    name: 'ingress_ts_request_errors_total',
    help: 'unexpected exceptions while serving a request or a connection, contained to it (answered 500 or closed) by where they happened',
    labelNames: ['where'],
    registers,
  });
  // TCP and UDP services: ingress-nginx exports nothing for its stream block
  const streams = new Counter({
    name: 'ingress_ts_streams_total',
    help: 'TCP streams and UDP sessions of the TCP/UDP services that ended, by service port and why (done, idle, responses, unreachable, refused, cut)',
    labelNames: ['protocol', 'port', 'reason'],
    registers,
  });
  const streamBytes = new Counter({
    name: 'ingress_ts_stream_bytes_total',
    help: 'Bytes of the TCP streams and UDP sessions that ended, by service port: received from clients (in) and sent to them (out)',
    labelNames: ['protocol', 'port', 'direction'],
    registers,
  });
  const builds = createBuildMetrics(registers);
  const setLeaderStatus = createLeaderMetrics(registers, options.electionId ?? null);
  if (options.informers !== undefined) registerInformerMetrics(registers, options.informers);
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const requests = createRequestMetrics(registry, options.requests ?? DEFAULT_REQUEST_METRICS_OPTIONS);
  // ssl_expire_time_seconds, ssl_certificate_info, orphan_ingress
  const modelMetrics = createModelMetrics(registry, { controllerClass: options.controllerClass });
  const admission = options.admission ? createAdmissionMetrics(registers) : null;

  return {
    registry,
    observe(record) {
      finished++;
      requests.observe(record);
    },
    requestFailed(where) {
      requestErrors.inc({ where });
    },
    streamClosed({ protocol, port, reason, received, sent }) {
      streams.inc({ protocol, port, reason });
      streamBytes.inc({ protocol, port, direction: 'in' }, received);
      streamBytes.inc({ protocol, port, direction: 'out' }, sent);
    },
    applied(model) {
      if (model.model !== undefined && model.kind !== 'unchanged') {
        requests.setModel(model.model);
        modelMetrics.setModel(model.model, model.diagnostics);
      }
      builds.applied(model);
      reload.applied(model.kind, model.routesHash);
    },
    admissionReviewed(event) {
      admission?.reviewed(event);
    },
    setLeader(leader) {
      modelMetrics.setLeader(leader);
      setLeaderStatus(leader);
    },
    failed() {
      reload.failed();
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    traffic: {
      routeTotals: () => requests.routeTotals(),
      counted: () => finished,
      timeBuckets: requests.timeBuckets,
    },
  };
}
