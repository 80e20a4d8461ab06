// Per-request metrics under ingress-nginx's names, labels and buckets (docs/observability.md):
// nginx_ingress_controller_requests and the duration and size histograms, labelled status, method,
// path (the Ingress rule path), namespace, ingress, service, canary and, with --metrics-per-host,
// host.
//
// Recording is the hot path's cost, so it does not go through prom-client's label hashing: each
// request record adds to plain numbers in one series entry, found by one Map lookup on a joined
// key. prom-client only formats them at scrape time (the objects below implement its metric
// interface: name, help, type, get(), reset()).

import type { Registry } from 'prom-client';
import type { MeasuredRequest } from '../dataplane/request-measure.ts';
import type { Model } from '../model/index.ts';
import { routedIngresses } from './model-metrics.ts';

const PREFIX = 'nginx_ingress_controller_';

/** prometheus.DefBuckets */
export const DEFAULT_TIME_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
/** prometheus.LinearBuckets(10, 10, 10) */
export const DEFAULT_LENGTH_BUCKETS: readonly number[] = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
/** prometheus.ExponentialBuckets(10, 10, 7) */
export const DEFAULT_SIZE_BUCKETS: readonly number[] = [10, 100, 1e3, 1e4, 1e5, 1e6, 1e7];

export interface RequestMetricsOptions {
  /** --metrics-per-host (default true): a `host` label, and samples of hosts no Ingress names dropped */
  perHost: boolean;
  /** --metrics-per-undefined-host: keep the samples of hosts no Ingress names */
  perUndefinedHost: boolean;
  /** --report-status-classes: status `2xx`, `4xx`... instead of the code */
  statusClasses: boolean;
  /** --exclude-socket-metrics: names with or without the nginx_ingress_controller_ prefix */
  exclude: readonly string[];
  timeBuckets: readonly number[];
  lengthBuckets: readonly number[];
  sizeBuckets: readonly number[];
}

export const DEFAULT_REQUEST_METRICS_OPTIONS: Readonly<RequestMetricsOptions> = Object.freeze({
  perHost: true,
  perUndefinedHost: false,
  statusClasses: false,
  exclude: [],
  timeBuckets: DEFAULT_TIME_BUCKETS,
  lengthBuckets: DEFAULT_LENGTH_BUCKETS,
  sizeBuckets: DEFAULT_SIZE_BUCKETS,
});

/** The socket metrics' short names, as --exclude-socket-metrics takes them. */
export const SOCKET_METRIC_NAMES = [
  'requests',
  'request_duration_seconds',
  'response_duration_seconds',
  'header_duration_seconds',
  'connect_duration_seconds',
  'request_size',
  'response_size',
  'bytes_sent',
] as const;

interface HistogramSpec {
  name: string;
  help: string;
  buckets: readonly number[];
}

/** One label set: the request count and, per histogram, [bucket counts..., sum, count]. */
interface Series {
  labels: Record<string, string>;
  requests: number;
  histograms: Float64Array[];
  /** the labels but status and method: the route /debug/traffic sums the series of */
  route: string;
  /** a 5xx status */
  error: boolean;
}

/** One route's counts since its first request (its series summed over status and method). */
export interface RouteTotal {
  /** present with --metrics-per-host */
  host?: string;
  namespace: string;
  ingress: string;
  path: string;
  service: string;
  canary: string;
  requests: number;
  /** requests answered 5xx */
  errors: number;
  /**
   * request_duration_seconds: the count of each bucket of `timeBuckets` (not cumulative), then of
   * all requests (+Inf); null when --exclude-socket-metrics leaves the histogram out
   */
  durations: Float64Array | null;
}

/**
 * The series of a request, found without building its key: one Map level per label, keyed by the
 * strings the runtime holds for the route (their hashes are computed once), then the status. A cache
 * in front of the flat map of series, which stays the source of truth.
 */
type SeriesTree = Map<string, SeriesTree | Series>;

function child(node: SeriesTree, key: string): SeriesTree {
  let next = node.get(key) as SeriesTree | undefined;
  if (next === undefined) {
    next = new Map();
    node.set(key, next);
  }
  return next;
}

/** Status labels as strings made once (a status code is at most 599). */
const STATUS_LABELS = Array.from({ length: 600 }, (_, code) => String(code));
const STATUS_CLASS_LABELS = Array.from({ length: 6 }, (_, c) => `${c}xx`);

export interface RequestMetrics {
  /** Adds one finished request (a `requestLogged` record, or the `requestMeasured` part of one). */
  observe(record: MeasuredRequest): void;
  /** A new model is live: which hosts count as defined, and which Ingresses still exist. */
  setModel(model: Model): void;
  /** label sets held now */
  readonly seriesCount: number;
  /** Every route's counts now, keyed by its labels (a new object each call: the caller keeps it). */
  routeTotals(): Map<string, RouteTotal>;
  /** the request_duration_seconds bucket bounds */
  readonly timeBuckets: readonly number[];
}

/** The histograms, in the order observe() adds their values in. */
function histogramSpecs(options: RequestMetricsOptions): HistogramSpec[] {
  const time = options.timeBuckets;
  const length = options.lengthBuckets;
  return [
    {
      name: 'request_duration_seconds',
      help: 'The request processing time in milliseconds',
      buckets: time,
    },
    {
      name: 'response_duration_seconds',
      help: 'The time spent on receiving the response from the upstream server',
      buckets: time,
    },
    {
      name: 'header_duration_seconds',
      help: 'The time spent on receiving first header from the upstream server',
      buckets: time,
    },
    {
      name: 'connect_duration_seconds',
      help: 'The time spent on establishing a connection with the upstream server',
      buckets: time,
    },
    {
      name: 'request_size',
      help: 'The request length (including request line, header, and request body)',
      buckets: length,
    },
    {
      name: 'response_size',
      help: 'The response length (including request line, header, and request body)',
      buckets: length,
    },
    {
      name: 'bytes_sent',
      help: 'DEPRECATED The number of bytes sent to a client',
      buckets: options.sizeBuckets,
    },
  ];
}

/** One observation: its bucket, the sum and the count (negative = not observed, as ingress-nginx skips -1). */
function add(h: Float64Array | undefined, bounds: readonly number[] | null | undefined, value: number): void {
  if (value < 0 || h === undefined || bounds == null) return;
  let b = 0;
  while (b < bounds.length && value > (bounds[b] as number)) b++;
  if (b < bounds.length) h[b] = (h[b] as number) + 1;
  h[bounds.length] = (h[bounds.length] as number) + value;
  h[bounds.length + 1] = (h[bounds.length + 1] as number) + 1;
}

/** Normalizes --exclude-socket-metrics names and says which are unknown. */
export function excludedSocketMetrics(names: readonly string[]): { names: Set<string>; unknown: string[] } {
  const out = new Set<string>();
  const unknown: string[] = [];
  for (const raw of names) {
    const name = raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : raw;
    if ((SOCKET_METRIC_NAMES as readonly string[]).includes(name)) out.add(name);
    else unknown.push(raw);
  }
  return { names: out, unknown };
}

type Sample = { metricName?: string; labels: Record<string, string | number>; value: number };

/** A metric prom-client's Registry can format: its values come from `samples()` at scrape time. */
class RecordedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  readonly #samples: () => Sample[];
  readonly #reset: () => void;

  constructor(
    name: string,
    help: string,
    type: 'counter' | 'histogram',
    samples: () => Sample[],
    reset: () => void,
  ) {
    this.name = name;
    this.help = help;
    this.type = type;
    this.#samples = samples;
    this.#reset = reset;
  }

  get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: this.#samples(),
    };
  }

  reset(): void {
    this.#reset();
  }
}

/** The samples of histogram `index` of every series that observed a value: buckets, sum and count. */
function histogramSamples(
  series: ReadonlyMap<string, Series>,
  index: number,
  name: string,
  bounds: readonly number[],
): Sample[] {
  const out: Sample[] = [];
  for (const s of series.values()) {
    const h = s.histograms[index] as Float64Array;
    const count = h[bounds.length + 1] as number;
    if (count === 0) continue;
    let cumulative = 0;
    for (let b = 0; b < bounds.length; b++) {
      cumulative += h[b] as number;
      out.push({
        metricName: `${name}_bucket`,
        labels: { ...s.labels, le: bounds[b] as number },
        value: cumulative,
      });
    }
    out.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: count });
    out.push({ metricName: `${name}_sum`, labels: s.labels, value: h[bounds.length] as number });
    out.push({ metricName: `${name}_count`, labels: s.labels, value: count });
  }
  return out;
}

/**
 * The requests counter (unless excluded) and each histogram whose `active` entry is true, in
 * `registry`; all of them read `series` at scrape time, and `reset` empties it.
 */
function registerRecordedMetrics(
  registry: Registry,
  series: ReadonlyMap<string, Series>,
  reset: () => void,
  countRequests: boolean,
  specs: readonly HistogramSpec[],
  active: readonly boolean[],
): void {
  const register = (metric: RecordedMetric) =>
    registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);

  if (countRequests) {
    register(
      new RecordedMetric(
        `${PREFIX}requests`,
        'The total number of client requests',
        'counter',
        () => [...series.values()].map((s) => ({ labels: s.labels, value: s.requests })),
        reset,
      ),
    );
  }
  specs.forEach((spec, index) => {
    if (!active[index]) return;
    const name = `${PREFIX}${spec.name}`;
    const bounds = spec.buckets;
    register(
      new RecordedMetric(
        name,
        spec.help,
        'histogram',
        () => histogramSamples(series, index, name, bounds),
        reset,
      ),
    );
  });
}

/** A new, empty series for the labels of `record` (with `host` when per-host metrics are on). */
function newSeries(
  record: MeasuredRequest,
  status: string,
  perHost: boolean,
  specs: readonly HistogramSpec[],
): Series {
  const labels: Record<string, string> = {
    status,
    method: record.method,
    path: record.path,
    namespace: record.namespace,
    ingress: record.ingress,
    service: record.service,
    canary: record.canary,
  };
  if (perHost) labels.host = record.host;
  return {
    labels,
    requests: 0,
    histograms: specs.map((spec) => new Float64Array(spec.buckets.length + 2)),
    route: `${labels.host ?? ''}\u0001${record.namespace}\u0001${record.ingress}\u0001${record.path}\u0001${record.service}\u0001${record.canary}`,
    error: status.charCodeAt(0) === 53 /* 5 */,
  };
}

/** The series summed per route; `durations` from histogram 0 when it is recorded. */
function sumRoutes(
  series: ReadonlyMap<string, Series>,
  bounds: readonly number[] | null,
): Map<string, RouteTotal> {
  const out = new Map<string, RouteTotal>();
  for (const s of series.values()) {
    let total = out.get(s.route);
    if (total === undefined) {
      const { labels } = s;
      total = {
        namespace: labels.namespace ?? '',
        ingress: labels.ingress ?? '',
        path: labels.path ?? '',
        service: labels.service ?? '',
        canary: labels.canary ?? '',
        requests: 0,
        errors: 0,
        durations: bounds === null ? null : new Float64Array(bounds.length + 1),
      };
      if (labels.host !== undefined) total.host = labels.host;
      out.set(s.route, total);
    }
    total.requests += s.requests;
    if (s.error) total.errors += s.requests;
    const durations = total.durations;
    if (durations !== null && bounds !== null) {
      const h = s.histograms[0] as Float64Array;
      for (let b = 0; b < bounds.length; b++) durations[b] = (durations[b] as number) + (h[b] as number);
      durations[bounds.length] = (durations[bounds.length] as number) + (h[bounds.length + 1] as number);
    }
  }
  return out;
}

/** ingress-nginx RemoveMetrics: drops the series of Ingresses the model no longer has; true if any. */
function removeGoneIngresses(series: Map<string, Series>, model: Model): boolean {
  const ingresses = routedIngresses(model);
  let removed = false;
  for (const [key, s] of series) {
    if (s.labels.ingress !== '' && !ingresses.has(`${s.labels.namespace}/${s.labels.ingress}`)) {
      series.delete(key);
      removed = true;
    }
  }
  return removed;
}

/** ingress-nginx's per-request metrics, registered in `registry`. */
export function createRequestMetrics(registry: Registry, options: RequestMetricsOptions): RequestMetrics {
  const excluded = excludedSocketMetrics(options.exclude).names;
  const specs = histogramSpecs(options);
  const active = specs.map((spec) => !excluded.has(spec.name));
  const series = new Map<string, Series>();
  let definedHosts = new Set<string>();
  const filterHosts = options.perHost && !options.perUndefinedHost;
  let tree: SeriesTree = new Map();
  // The series of the request observed last, with its labels: consecutive requests mostly share a
  // route, and their label strings are the route's own (compared by reference first), so this
  // skips the eight lookups of the tree and the defined-hosts check.
  let last: Series | null = null;
  let lastNamespace = '';
  let lastIngress = '';
  let lastService = '';
  let lastPath = '';
  let lastCanary = '';
  let lastHost = '';
  let lastMethod = '';
  let lastStatus = '';
  const reset = () => {
    series.clear();
    tree = new Map();
    last = null;
  };
  registerRecordedMetrics(registry, series, reset, !excluded.has('requests'), specs, active);

  // per histogram: its buckets, or null when --exclude-socket-metrics leaves it out
  const bounds = specs.map((spec, index) => (active[index] ? spec.buckets : null));

  /** The series of a request's labels: from the tree, else the flat map, else a new one. */
  const seriesOf = (record: MeasuredRequest, status: string, host: string): Series => {
    let node = child(tree, record.namespace);
    node = child(node, record.ingress);
    node = child(node, record.service);
    node = child(node, record.path);
    node = child(node, record.canary);
    node = child(node, host);
    node = child(node, record.method);
    let entry = node.get(status) as Series | undefined;
    if (entry === undefined) {
      const key = `${status}\u0001${record.method}\u0001${host}\u0001${record.path}\u0001${record.namespace}\u0001${record.ingress}\u0001${record.service}\u0001${record.canary}`;
      entry = series.get(key);
      if (entry === undefined) {
        entry = newSeries(record, status, options.perHost, specs);
        series.set(key, entry);
      }
      node.set(status, entry);
    }
    return entry;
  };

  return {
    observe(record) {
      const code = record.status;
      const status = options.statusClasses
        ? (STATUS_CLASS_LABELS[Math.trunc(code / 100)] ?? `${Math.trunc(code / 100)}xx`)
        : (STATUS_LABELS[code] ?? String(code));
      const host = options.perHost ? record.host : '';
      let entry: Series;
      if (
        last !== null &&
        status === lastStatus &&
        record.method === lastMethod &&
        record.path === lastPath &&
        host === lastHost &&
        record.service === lastService &&
        record.ingress === lastIngress &&
        record.namespace === lastNamespace &&
        record.canary === lastCanary
      ) {
        entry = last;
      } else {
        // the last series' host passed it under this model (setModel forgets the last series)
        if (filterHosts && !definedHosts.has(record.host)) return;
        entry = seriesOf(record, status, host);
        last = entry;
        lastNamespace = record.namespace;
        lastIngress = record.ingress;
        lastService = record.service;
        lastPath = record.path;
        lastCanary = record.canary;
        lastHost = host;
        lastMethod = record.method;
        lastStatus = status;
      }
      entry.requests++;
      // the histograms' values in histogramSpecs' order, read here rather than through each spec's
      // function: this runs once per request
      const h = entry.histograms;
      add(h[0], bounds[0], record.requestTime);
      add(h[1], bounds[1], record.responseTime);
      add(h[2], bounds[2], record.headerTime);
      add(h[3], bounds[3], record.connectTime);
      add(h[4], bounds[4], record.requestLength);
      add(h[5], bounds[5], record.bytesSent);
      add(h[6], bounds[6], record.bytesSent);
    },
    setModel(model) {
      const hosts = new Set<string>();
      for (const server of model.servers) hosts.add(server.hostname);
      definedHosts = hosts;
      last = null; // its host may be undefined now
      if (series.size === 0) return; // nothing to remove (the first build, at any size)
      // the lookup cache still holds the removed series: start it again
      if (removeGoneIngresses(series, model)) {
        tree = new Map();
        last = null;
      }
    },
    get seriesCount() {
      return series.size;
    },
    routeTotals() {
      return sumRoutes(series, bounds[0] ?? null);
    },
    timeBuckets: options.timeBuckets,
  };
}
