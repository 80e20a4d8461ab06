// Command-line flags → a frozen Config. Flag names follow ingress-nginx where the concept exists.
// Parsing never exits: bad input throws ConfigError with a message fit for the user.

import { parseArgs } from 'node:util';
import type { RequestMetricsOptions } from '../metrics/requests.ts';
import { DEFAULT_MODEL_OPTIONS, type ModelOptions } from '../model/index.ts';
import { BUCKET_FLAGS } from './bucket-flags.ts';
import { ConfigError } from './config-error.ts';
import { apiserverHost, buckets, duration, excludedMetrics, objectRef, port } from './flag-values.ts';
import { GATEWAY_FLAGS, gatewayModelFlags } from './gateway-flags.ts';
import { COMPAT_FLAGS } from './ingress-nginx-flags.ts';
import { type IgnoredFlag, readPflagArgs } from './pflag-args.ts';
import {
  WEBHOOK_CERTIFICATE_FLAGS,
  type WebhookCertificateFlags,
  webhookCertificateFlags,
} from './webhook-certificate-flags.ts';
import { WEBHOOK_FLAGS, type WebhookConfig, webhookFlags } from './webhook-flags.ts';

export { ConfigError } from './config-error.ts';
export type { IgnoredFlag } from './pflag-args.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  httpPort: number;
  httpsPort: number;
  healthzPort: number;
  /** '' listens on every interface */
  bindAddress: string;
  /** address of the healthz listener; '' → bindAddress (ingress-nginx --healthz-host) */
  healthzHost: string;
  /** the readiness path on the healthz port (ingress-nginx --health-check-path) */
  healthCheckPath: string;
  /** standalone mode: a folder of manifests; null → the Kubernetes API */
  manifests: string | null;
  /** how to reach the Kubernetes API when manifests is null */
  kube: KubeFlags;
  /** seconds to keep serving after SIGTERM before stopping (ingress-nginx --shutdown-grace-period) */
  shutdownGracePeriod: number;
  /** serve /metrics on the healthz port */
  enableMetrics: boolean;
  /** serve the debug pages (/debug/model, /debug/traffic, /debug/routing) on the healthz port */
  enableDebugPages: boolean;
  /** the per-request metrics' labels, buckets and exclusions */
  requestMetrics: RequestMetricsOptions;
  logLevel: LogLevel;
  model: ModelOptions;
  webhook: WebhookConfig | null;
  /** --enable-gateway-api: watch (or read) the Gateway API kinds when installed */
  gatewayApi: boolean;
}

export interface KubeFlags {
  /** --kubeconfig FILE; null → in-cluster, else $KUBECONFIG or ~/.kube/config */
  kubeconfig: string | null;
  /** --apiserver-host: the API server's URL, overriding the kubeconfig's; alone, no credentials */
  apiserverHost: string | null;
  /** --certificate-authority: a CA file for --apiserver-host, or null */
  certificateAuthority: string | null;
  /** --watch-namespace: one namespace, or null for all */
  watchNamespace: string | null;
  /** --watch-namespace-selector: a label selector on Namespaces, or null */
  namespaceSelector: string | null;
  /** --disable-leader-election inverted */
  leaderElection: boolean;
  /** --election-id: the Lease name */
  electionId: string;
  /** --election-ttl in milliseconds */
  electionTtlMs: number;
  /** --update-status */
  updateStatus: boolean;
  /** --publish-service namespace/name, or null */
  publishService: string | null;
  /** --publish-status-address entries, or null */
  publishStatusAddress: string[] | null;
  /** the admission webhook's certificate from a Secret (--validating-webhook-secret), or null */
  webhookCertificate: WebhookCertificateFlags | null;
}

interface FlagSpec {
  type: 'string' | 'boolean';
  default: string | boolean;
  help: string;
}

/** Every flag with its default and meaning; --help prints this table. */
export const FLAGS = {
  'http-port': { type: 'string', default: '80', help: 'port of the HTTP listener' },
  'https-port': { type: 'string', default: '443', help: 'port of the HTTPS listener' },
  'healthz-port': {
    type: 'string',
    default: '10254',
    help: 'port of /healthz, /livez, /metrics and the debug pages',
  },
  'enable-debug-pages': {
    type: 'boolean',
    default: true,
    help: 'serve /debug/model, /debug/traffic and /debug/routing on the healthz port (--enable-debug-pages=false: 404)',
  },
  'enable-metrics': {
    type: 'boolean',
    default: true,
    help: 'serve Prometheus metrics at /metrics on the healthz port (--enable-metrics=false turns them off)',
  },
  'metrics-per-host': {
    type: 'boolean',
    default: true,
    help: 'label request metrics with the host, and drop the samples of hosts no Ingress names',
  },
  'metrics-per-undefined-host': {
    type: 'boolean',
    default: false,
    help: 'with --metrics-per-host, keep the samples of hosts no Ingress names',
  },
  'report-status-classes': {
    type: 'boolean',
    default: false,
    help: 'label request metrics with the status class (2xx, 4xx...) instead of the code',
  },
  'exclude-socket-metrics': {
    type: 'string',
    default: '',
    help: 'comma-separated request metrics not to record or export, e.g. bytes_sent,connect_duration_seconds',
  },
  ...BUCKET_FLAGS,
  'bind-address': { type: 'string', default: '', help: 'address to listen on; empty means every interface' },
  'healthz-host': {
    type: 'string',
    default: '',
    help: 'address of the healthz listener; default: --bind-address',
  },
  'health-check-path': {
    type: 'string',
    default: '/healthz',
    help: 'path of the readiness check on the healthz port (the liveness check stays /livez)',
  },
  manifests: {
    type: 'string',
    default: '',
    help: 'standalone mode: serve the Kubernetes manifests (YAML/JSON) in this folder, watched for changes',
  },
  kubeconfig: {
    type: 'string',
    default: '',
    help: "kubeconfig file to reach the API server; default: the Pod's service account in a cluster, else $KUBECONFIG or ~/.kube/config",
  },
  'apiserver-host': {
    type: 'string',
    default: '',
    help: "URL of the API server (e.g. http://127.0.0.1:8001 of a kubectl proxy): overrides the kubeconfig's server; without --kubeconfig, no credentials are sent",
  },
  'certificate-authority': {
    type: 'string',
    default: '',
    help: 'CA file to verify the --apiserver-host server with (ignored without --apiserver-host)',
  },
  'watch-namespace': {
    type: 'string',
    default: '',
    help: 'watch Ingresses, Services, EndpointSlices and Secrets in this namespace only; default: all',
  },
  'watch-namespace-selector': {
    type: 'string',
    default: '',
    help: 'serve only the namespaces whose labels match this selector, e.g. team=web,env!=dev',
  },
  'election-id': {
    type: 'string',
    default: 'ingress-ts-leader',
    help: 'name of the Lease (in POD_NAMESPACE) the replicas elect the leader with; only the leader writes status',
  },
  'election-ttl': {
    type: 'string',
    default: '30s',
    help: 'how long a leader keeps the Lease without renewing it; a successor takes over after this',
  },
  'disable-leader-election': {
    type: 'boolean',
    default: false,
    help: 'act as the leader without electing one (a single replica)',
  },
  'update-status': {
    type: 'boolean',
    default: true,
    help: 'write the published address into the status of the Ingresses served (leader only)',
  },
  'publish-service': {
    type: 'string',
    default: '',
    help: 'namespace/name of the Service whose address goes into Ingress status (its load balancer, else IPs)',
  },
  'publish-status-address': {
    type: 'string',
    default: '',
    help: 'comma-separated addresses (IPs or host names) to write into Ingress status; overrides --publish-service',
  },
  ...WEBHOOK_CERTIFICATE_FLAGS,
  'ingress-class': {
    type: 'string',
    default: DEFAULT_MODEL_OPTIONS.ingressClass,
    help: 'value of the legacy kubernetes.io/ingress.class annotation to serve',
  },
  'controller-class': {
    type: 'string',
    default: DEFAULT_MODEL_OPTIONS.controllerClass,
    help: 'IngressClass spec.controller value to serve',
  },
  'ingress-class-by-name': {
    type: 'boolean',
    default: false,
    help: 'also serve the IngressClass named --ingress-class, whatever its controller',
  },
  'watch-ingress-without-class': {
    type: 'boolean',
    default: false,
    help: 'also serve Ingresses that name no class',
  },
  'default-backend-service': {
    type: 'string',
    default: '',
    help: 'namespace/name of the Service answering unmatched requests (first port); else a built-in 404',
  },
  'default-ssl-certificate': {
    type: 'string',
    default: '',
    help: 'namespace/name of the TLS Secret for unknown hosts; else a generated self-signed certificate',
  },
  'enable-ssl-passthrough': {
    type: 'boolean',
    default: false,
    help: 'let the ssl-passthrough annotation relay TLS connections by their SNI to the backend, untouched (peeks at every ClientHello on the HTTPS port)',
  },
  'annotations-prefix': {
    type: 'string',
    default: DEFAULT_MODEL_OPTIONS.annotationsPrefix,
    help: 'prefix of the annotations to read',
  },
  'disable-catch-all': {
    type: 'boolean',
    default: false,
    help: 'ignore every Ingress that has a spec.defaultBackend',
  },
  'disable-svc-external-name': {
    type: 'boolean',
    default: false,
    help: 'refuse ExternalName Services as backends',
  },
  configmap: { type: 'string', default: '', help: 'namespace/name of the global ConfigMap' },
  'tcp-services-configmap': {
    type: 'string',
    default: '',
    help: 'namespace/name of a ConfigMap of TCP services: "<port>": "<namespace>/<service>:<port>[:PROXY][:PROXY]" opens <port> and relays it to the Service',
  },
  'udp-services-configmap': {
    type: 'string',
    default: '',
    help: 'namespace/name of a ConfigMap of UDP services: "<port>": "<namespace>/<service>:<port>" opens <port> (UDP) and relays its datagrams to the Service',
  },
  'shutdown-grace-period': {
    type: 'string',
    default: '0',
    help: 'seconds to keep serving after SIGTERM/SIGINT before stopping',
  },
  'log-level': {
    type: 'string',
    default: 'info',
    help: `one of ${LOG_LEVELS.join(', ')}; without it, ingress-nginx's --v=N sets it (N<3 info, 3-4 debug, 5+ trace)`,
  },
  ...WEBHOOK_FLAGS,
  ...GATEWAY_FLAGS,
  help: { type: 'boolean', default: false, help: 'print this help and exit' },
  version: { type: 'boolean', default: false, help: 'print the version and exit' },
} as const satisfies Record<string, FlagSpec>;

type Values = { [K in keyof typeof FLAGS]: (typeof FLAGS)[K]['default'] extends boolean ? boolean : string };

export function helpText(version: string): string {
  const lines = [
    `ingress-ts ${version}: a Kubernetes Ingress controller and reverse proxy in one Node.js process.`,
    '',
    'Usage: ingress-ts [--kubeconfig FILE] [flags]     watch the Kubernetes API (in a Pod: its service account)',
    '       ingress-ts --manifests DIR [flags]         standalone: serve a folder of manifests, no cluster',
    '       ingress-ts check [flags]                   what ingress-ts would do with each Ingress, serving nothing',
    '                                                  (run it before migrating; ingress-ts check --help)',
    '',
    'Flags (default in brackets):',
  ];
  for (const [name, spec] of Object.entries(FLAGS)) {
    const shown =
      spec.type === 'boolean'
        ? `--${name}`
        : `--${name} ${name === 'manifests' ? 'DIR' : name === 'kubeconfig' ? 'FILE' : 'VALUE'}`;
    const fallback = spec.type === 'boolean' || spec.default === '' ? '' : ` [${spec.default}]`;
    // two spaces at least between a flag and its meaning, however long its name (--help is read by tools)
    lines.push(`  ${shown.length < 40 ? shown.padEnd(40) : `${shown} `} ${spec.help}${fallback}`);
  }
  lines.push(
    `  ${'--v N, -v N'.padEnd(40)} ingress-nginx's (klog's) verbosity: sets --log-level when that is not given`,
    '',
    'Accepted from ingress-nginx with no effect (a warning at start names each, with the reason; docs/flags.md):',
    ...wrap(
      Object.keys(COMPAT_FLAGS).map((name) => `--${name}`),
      100,
      '  ',
    ),
    '',
  );
  return lines.join('\n');
}

/** Words joined by ", " into lines of at most `width` characters. */
function wrap(words: readonly string[], width: number, indent: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    const next = line === '' ? word : `${line}, ${word}`;
    if (indent.length + next.length > width && line !== '') {
      lines.push(`${indent}${line},`);
      line = word;
    } else {
      line = next;
    }
  }
  if (line !== '') lines.push(`${indent}${line}`);
  return lines;
}

/** klog's verbosity as a log level: ingress-nginx logs changes in detail from 3 and debugs NGINX at 5. */
function levelForVerbosity(verbosity: number): LogLevel {
  if (verbosity >= 5) return 'trace';
  if (verbosity >= 3) return 'debug';
  return 'info';
}

export type ParsedArgs =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'run'; config: Config; ignored: readonly IgnoredFlag[] };

/** Parse argv (without node and the script). Port 0 is accepted (tests: pick a free port). */
/** Node's parseArgs over the flag table; its message without the hint about positionals. */
function readValues(args: string[]): { values: Values; logLevelGiven: boolean } {
  try {
    const options = Object.fromEntries(
      Object.entries(FLAGS).map(([name, spec]) => [name, { type: spec.type, default: spec.default }]),
    );
    const parsed = parseArgs({
      args,
      options,
      strict: true,
      allowPositionals: false,
      allowNegative: true,
      tokens: true,
    });
    return {
      values: parsed.values as Values,
      logLevelGiven: parsed.tokens.some((token) => token.kind === 'option' && token.name === 'log-level'),
    };
  } catch (error) {
    throw new ConfigError((error as Error).message.replace(/\. To specify a positional.*$/s, ''));
  }
}

const orNull = (value: string): string | null => (value === '' ? null : value);

/** The Kubernetes-mode flags, refused with --manifests where they would mean nothing. */
function kubeFlags(values: Values, manifests: string | null, ignored: IgnoredFlag[]): KubeFlags {
  const addresses = values['publish-status-address']
    .split(',')
    .map((address) => address.trim())
    .filter((address) => address !== '');
  const kube: KubeFlags = {
    kubeconfig: orNull(values.kubeconfig),
    apiserverHost: apiserverHost(values['apiserver-host'], values['certificate-authority'] !== ''),
    certificateAuthority: values['apiserver-host'] === '' ? null : orNull(values['certificate-authority']),
    watchNamespace: orNull(values['watch-namespace']),
    namespaceSelector: orNull(values['watch-namespace-selector']),
    leaderElection: !values['disable-leader-election'],
    electionId: values['election-id'],
    electionTtlMs: duration('election-ttl', values['election-ttl']),
    updateStatus: values['update-status'],
    publishService: objectRef('publish-service', values['publish-service']),
    publishStatusAddress: addresses.length > 0 ? addresses : null,
    webhookCertificate: webhookCertificateFlags(values, manifests),
  };
  if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(kube.electionId)) {
    throw new ConfigError(`--election-id must be a Kubernetes object name, got "${kube.electionId}"`);
  }
  if (manifests !== null) {
    for (const name of [
      'kubeconfig',
      'apiserver-host',
      'certificate-authority',
      'watch-namespace',
      'watch-namespace-selector',
      'publish-service',
      'publish-status-address',
    ] as const) {
      if (values[name] !== '')
        throw new ConfigError(`--${name} has no meaning with --manifests (standalone mode)`);
    }
  }
  if (values['certificate-authority'] !== '' && kube.apiserverHost === null) {
    // as ingress-nginx, which reads the CA only for --apiserver-host
    ignored.push({ flag: '--certificate-authority', reason: 'only used with --apiserver-host' });
  }
  if (kube.watchNamespace !== null && kube.namespaceSelector !== null) {
    throw new ConfigError('--watch-namespace and --watch-namespace-selector cannot be combined');
  }
  return kube;
}

function modelFlags(values: Values, reservedPorts: readonly number[]): Config['model'] {
  return {
    controllerClass: values['controller-class'],
    ingressClass: values['ingress-class'],
    ingressClassByName: values['ingress-class-by-name'],
    watchIngressWithoutClass: values['watch-ingress-without-class'],
    defaultBackendService: objectRef('default-backend-service', values['default-backend-service']),
    defaultSSLCertificate: objectRef('default-ssl-certificate', values['default-ssl-certificate']),
    annotationsPrefix: values['annotations-prefix'],
    disableCatchAll: values['disable-catch-all'],
    disableSvcExternalName: values['disable-svc-external-name'],
    configMap: objectRef('configmap', values.configmap),
    enableSslPassthrough: values['enable-ssl-passthrough'],
    tcpServicesConfigMap: objectRef('tcp-services-configmap', values['tcp-services-configmap']),
    udpServicesConfigMap: objectRef('udp-services-configmap', values['udp-services-configmap']),
    reservedPorts,
  };
}

export function parseFlags(argv: readonly string[]): ParsedArgs {
  const { args, ignored, verbosity } = readPflagArgs(argv, (name) =>
    Object.hasOwn(FLAGS, name) ? (FLAGS as Record<string, FlagSpec>)[name]?.type : undefined,
  );
  const { values, logLevelGiven } = readValues(args);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const logLevel = !logLevelGiven && verbosity !== null ? levelForVerbosity(verbosity) : values['log-level'];
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const grace = Number(values['shutdown-grace-period']);
  if (!/^\d+(\.\d+)?$/.test(values['shutdown-grace-period']) || !Number.isFinite(grace)) {
    throw new ConfigError(
      `--shutdown-grace-period must be a number of seconds, got "${values['shutdown-grace-period']}"`,
    );
  }
  const manifests = values.manifests === '' ? null : values.manifests;
  const kube = kubeFlags(values, manifests, ignored);
  if (!values['health-check-path'].startsWith('/')) {
    throw new ConfigError(`--health-check-path must start with /, got "${values['health-check-path']}"`);
  }
  const ports = {
    httpPort: port('http-port', values['http-port'], true),
    httpsPort: port('https-port', values['https-port'], true),
    healthzPort: port('healthz-port', values['healthz-port'], true),
  };
  const config: Config = {
    ...ports,
    bindAddress: values['bind-address'],
    healthzHost: values['healthz-host'],
    healthCheckPath: values['health-check-path'],
    manifests,
    kube,
    shutdownGracePeriod: grace,
    enableMetrics: values['enable-metrics'],
    enableDebugPages: values['enable-debug-pages'],
    requestMetrics: {
      perHost: values['metrics-per-host'],
      perUndefinedHost: values['metrics-per-undefined-host'],
      statusClasses: values['report-status-classes'],
      exclude: excludedMetrics(values['exclude-socket-metrics']),
      timeBuckets: buckets('time-buckets', values['time-buckets']),
      lengthBuckets: buckets('length-buckets', values['length-buckets']),
      sizeBuckets: buckets('size-buckets', values['size-buckets']),
    },
    logLevel: logLevel as LogLevel,
    webhook: webhookFlags(values, ignored),
    gatewayApi: values['enable-gateway-api'],
    // the controller's own ports: a TCP or UDP service entry cannot take one (0: a port the system picks)
    model: {
      ...modelFlags(
        values,
        Object.values(ports).filter((p) => p !== 0),
      ),
      ...gatewayModelFlags(values, ports),
    },
  };
  return {
    kind: 'run',
    config: Object.freeze({ ...config, kube: Object.freeze(kube), model: Object.freeze(config.model) }),
    ignored,
  };
}
