// The flags of ingress-nginx v1.15 (pkg/flags/flags.go, plus the klog flags its main registers) that
// have no counterpart in ingress-ts. A Deployment or chart values carried over from ingress-nginx
// pass them; refusing them would turn a migration into a crash loop, so each one is accepted,
// checked as ingress-nginx's parser would check it, and named with its reason in one warning at
// start. The flags that do have a counterpart are in FLAGS (flags.ts).

import { isIP } from 'node:net';

/** How ingress-nginx's parser (Go's pflag) reads the value. */
export type GoFlagType = 'bool' | 'string' | 'int' | 'uint' | 'float' | 'duration' | 'ip' | 'port';

export interface CompatFlag {
  type: GoFlagType;
  /** why the flag changes nothing in ingress-ts; shown in the start-up warning, --help and docs/flags.md */
  reason: string;
}

const KLOG_OUTPUT =
  "klog's output option: ingress-ts writes JSON log lines to stdout; the level is --log-level (or --v)";
const NGINX_INTERNAL = "a port or address internal to ingress-nginx's NGINX; ingress-ts has no NGINX";
const PROFILER = 'no Go profiler: profile the Node process through its inspector (NODE_OPTIONS=--inspect)';
const NATIVE_HISTOGRAMS = 'native histograms: ingress-ts exports classic buckets only (--time-buckets...)';
const GEOIP = 'no GeoIP: the MaxMind databases are neither downloaded nor used';

/** ingress-nginx flags accepted with no effect, by name (without the dashes). */
export const COMPAT_FLAGS: Readonly<Record<string, CompatFlag>> = {
  // Kubernetes API and the store
  'sync-period': {
    type: 'duration',
    reason: 'the watches keep the store current; there is no periodic resync',
  },
  'sync-rate-limit': {
    type: 'float',
    reason: "bursts of changes are coalesced by the build scheduler's hold-off instead",
  },
  // Ingress status and events
  'update-status-on-shutdown': {
    type: 'bool',
    reason: 'the Ingress status is left as it is when ingress-ts stops (as ingress-nginx with =false)',
  },
  'report-node-internal-ip-address': {
    type: 'bool',
    reason: 'node addresses are never published; use --publish-service or --publish-status-address',
  },
  'status-update-interval': {
    type: 'int',
    reason: 'the status is written when the Ingresses or the published addresses change, not on a timer',
  },
  'disable-sync-events': {
    type: 'bool',
    reason: 'ingress-ts writes no Sync events, only Events about what is wrong with an object',
  },
  // admission webhook
  'disable-full-test': {
    type: 'bool',
    reason:
      'the webhook always builds just the Ingresses that can interact with the one under review, which gives the verdict of a full build',
  },
  // what NGINX needed
  'ssl-passthrough-proxy-port': {
    type: 'port',
    reason: 'connections that are not passed through go to the TLS server in-process, not to a port',
  },
  'default-server-port': {
    type: 'int',
    reason: 'the catch-all server answers on the HTTP and HTTPS ports; there is no separate port',
  },
  'status-port': { type: 'int', reason: NGINX_INTERNAL },
  'stream-port': { type: 'int', reason: NGINX_INTERNAL },
  'internal-logger-address': { type: 'string', reason: NGINX_INTERNAL },
  'dynamic-configuration-retries': {
    type: 'int',
    reason: 'each change is swapped in-process, there is nothing to push to and retry',
  },
  'health-check-timeout': {
    type: 'int',
    reason: '/healthz answers from memory, there is no NGINX to probe',
  },
  'post-shutdown-grace-period': {
    type: 'int',
    reason: 'no NGINX process to wait for: ingress-ts exits once the drain ends',
  },
  'deep-inspect': {
    type: 'bool',
    reason: 'annotation values never reach a configuration file; every value is validated',
  },
  'enable-annotation-validation': { type: 'bool', reason: 'ingress-ts always validates annotation values' },
  'enable-ssl-chain-completion': {
    type: 'bool',
    reason: 'certificates are served as their Secret holds them: put the intermediates in tls.crt',
  },
  'enable-topology-aware-routing': {
    type: 'bool',
    reason:
      "the balancers spread requests over every ready endpoint and ignore the EndpointSlices' zone hints",
  },
  profiling: { type: 'bool', reason: PROFILER },
  'profiler-port': { type: 'int', reason: PROFILER },
  'profiler-address': { type: 'ip', reason: PROFILER },
  // metrics
  'bucket-factor': { type: 'float', reason: NATIVE_HISTOGRAMS },
  'max-buckets': { type: 'uint', reason: NATIVE_HISTOGRAMS },
  'monitor-max-batch-size': {
    type: 'int',
    reason: 'request metrics are recorded in-process, not sent in batches from NGINX',
  },
  // GeoIP
  'maxmind-mirror': { type: 'string', reason: GEOIP },
  'maxmind-license-key': { type: 'string', reason: GEOIP },
  'maxmind-edition-ids': { type: 'string', reason: GEOIP },
  'maxmind-retries-count': { type: 'int', reason: GEOIP },
  'maxmind-retries-timeout': { type: 'duration', reason: GEOIP },
  // klog (k8s.io/klog/v2 v2.140.0, InitFlags); --v has a counterpart, handled in flags.ts
  vmodule: {
    type: 'string',
    reason: "klog's per-file verbosity; ingress-ts has one level, --log-level (or --v)",
  },
  logtostderr: { type: 'bool', reason: KLOG_OUTPUT },
  alsologtostderr: { type: 'bool', reason: KLOG_OUTPUT },
  alsologtostderrthreshold: { type: 'string', reason: KLOG_OUTPUT },
  stderrthreshold: { type: 'string', reason: KLOG_OUTPUT },
  legacy_stderr_threshold_behavior: { type: 'bool', reason: KLOG_OUTPUT },
  log_dir: { type: 'string', reason: KLOG_OUTPUT },
  log_file: { type: 'string', reason: KLOG_OUTPUT },
  log_file_max_size: { type: 'uint', reason: KLOG_OUTPUT },
  one_output: { type: 'bool', reason: KLOG_OUTPUT },
  skip_headers: { type: 'bool', reason: KLOG_OUTPUT },
  skip_log_headers: { type: 'bool', reason: KLOG_OUTPUT },
  add_dir_header: { type: 'bool', reason: KLOG_OUTPUT },
  log_backtrace_at: { type: 'string', reason: KLOG_OUTPUT },
};

/** Go's strconv.ParseBool, which pflag uses for `--flag=value`. */
export function goBool(value: string): boolean | null {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  return null;
}

const GO_DURATION = /^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;

/** Whether ingress-nginx would take `value` for a flag of this type (else it exits 2). */
export function goValueValid(type: GoFlagType, value: string): boolean {
  switch (type) {
    case 'bool':
      return goBool(value) !== null;
    case 'string':
      return true;
    case 'int':
      return /^[-+]?\d+$/.test(value);
    case 'uint':
      return /^\+?\d+$/.test(value);
    case 'float':
      return value.trim() !== '' && Number.isFinite(Number(value));
    case 'duration':
      return GO_DURATION.test(value);
    case 'ip':
      return isIP(value) !== 0;
    case 'port':
      return /^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535;
  }
}
