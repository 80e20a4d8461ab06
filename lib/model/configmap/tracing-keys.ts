// ConfigMap keys of OpenTelemetry tracing, with ingress-nginx's names and defaults (its config.go):
// whether requests get a span, whose incoming context they trust, the span's name, and where and how
// spans are exported (OTLP over gRPC, a batch queue, a sampler). `opentelemetry-config` (the path of
// NGINX's module configuration file) has no parser here: unhandled-keys.ts says it does nothing when
// it is set to another path.

import { bool, count, type KeyParser, type KeyTable } from './key-parser.ts';

export const OTEL_SAMPLERS = ['AlwaysOn', 'AlwaysOff', 'TraceIdRatioBased'] as const;
export type OtelSampler = (typeof OTEL_SAMPLERS)[number];

/** ingress-nginx's default `opentelemetry-config`: that value, or none, is no change at all. */
export const DEFAULT_OPENTELEMETRY_CONFIG = '/etc/ingress-controller/telemetry/opentelemetry.toml';

/** The variables an operation name may use: what the request's span knows when it ends. */
export const OPERATION_NAME_VARIABLES: readonly string[] = [
  'request_method',
  'uri',
  'request_uri',
  'host',
  'scheme',
  'server_name',
  'location_path',
  'namespace',
  'ingress_name',
  'service_name',
  'service_port',
];

export interface TracingConfig {
  /** enable-opentelemetry: every route traced unless its annotation turns it off */
  enabled: boolean;
  /** opentelemetry-trust-incoming-span: a valid incoming traceparent becomes the span's parent */
  trustIncomingSpan: boolean;
  /** opentelemetry-operation-name: the span name with $variables; '' = the location path */
  operationName: string;
  /** otlp-collector-host, otlp-collector-port: the OTLP/gRPC receiver; '' = none configured */
  collectorHost: string;
  collectorPort: number;
  /** otel-service-name: the service.name resource attribute */
  serviceName: string;
  sampler: OtelSampler;
  /** otel-sampler-ratio: for TraceIdRatioBased, 0..1 */
  samplerRatio: number;
  /** otel-sampler-parent-based: a sampled (or not) parent decides */
  samplerParentBased: boolean;
  /** otel-max-queuesize, otel-schedule-delay-millis, otel-max-export-batch-size: the batch processor */
  maxQueueSize: number;
  scheduleDelayMillis: number;
  maxExportBatchSize: number;
}

export const DEFAULT_TRACING: TracingConfig = {
  enabled: false,
  trustIncomingSpan: true,
  operationName: '',
  collectorHost: '',
  collectorPort: 4317,
  serviceName: 'nginx',
  sampler: 'AlwaysOn',
  samplerRatio: 0.01,
  samplerParentBased: true,
  maxQueueSize: 2048,
  scheduleDelayMillis: 5000,
  maxExportBatchSize: 512,
};

/**
 * Why an operation name cannot be used (a `$` without a name, an unknown variable), or null. NGINX
 * refuses its configuration on either; here the key keeps its default.
 */
export function operationNameProblem(value: string): string | null {
  for (const m of value.matchAll(/\$(\{?)([A-Za-z0-9_]*)(\}?)/g)) {
    const [, open, name, close] = m;
    if (name === '' || (open === '{') !== (close === '}')) return 'a $ must be followed by a variable name';
    if (!OPERATION_NAME_VARIABLES.includes(name as string))
      return `$${name} is not one of ${OPERATION_NAME_VARIABLES.map((v) => `$${v}`).join(', ')}`;
  }
  return null;
}

const ratio: KeyParser = (value, config) => {
  const n = Number(value);
  if (value === '' || !Number.isFinite(n) || n < 0 || n > 1) return 'expected a number from 0 to 1';
  config.tracing.samplerRatio = n;
  return null;
};

export const TRACING_KEYS: KeyTable = {
  'enable-opentelemetry': bool((config, value) => {
    config.tracing.enabled = value;
  }),
  'opentelemetry-trust-incoming-span': bool((config, value) => {
    config.tracing.trustIncomingSpan = value;
  }),
  'opentelemetry-operation-name': (value, config) => {
    const problem = operationNameProblem(value);
    if (problem !== null) return problem;
    config.tracing.operationName = value;
    return null;
  },
  'otlp-collector-host': (value, config) => {
    // a host name or an address (IPv6 with or without brackets); never a URL
    if (
      !/^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/.test(
        value,
      )
    )
      return 'expected a host name or an IP address';
    config.tracing.collectorHost = value;
    return null;
  },
  'otlp-collector-port': (value, config) => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 65535)
      return 'expected a port (1-65535)';
    config.tracing.collectorPort = Number(value);
    return null;
  },
  'otel-service-name': (value, config) => {
    config.tracing.serviceName = value;
    return null;
  },
  'otel-sampler': (value, config) => {
    const sampler = OTEL_SAMPLERS.find((name) => name === value);
    if (sampler === undefined) return `expected one of ${OTEL_SAMPLERS.join(', ')}`;
    config.tracing.sampler = sampler;
    return null;
  },
  'otel-sampler-ratio': ratio,
  'otel-sampler-parent-based': bool((config, value) => {
    config.tracing.samplerParentBased = value;
  }),
  'otel-max-queuesize': count((config, value) => {
    config.tracing.maxQueueSize = value;
  }, 1),
  'otel-schedule-delay-millis': count((config, value) => {
    config.tracing.scheduleDelayMillis = value;
  }, 1),
  'otel-max-export-batch-size': count((config, value) => {
    config.tracing.maxExportBatchSize = value;
  }, 1),
};
