// The flags of ingress-nginx v1.15: every one of them is accepted, read as ingress-nginx's pflag reads
// it; those with a counterpart act, the others are reported as ignored with their reason; a flag
// ingress-nginx does not have is still refused.
import { readFileSync } from 'node:fs';
import t from 'tap';
import {
  type Config,
  ConfigError,
  FLAGS,
  helpText,
  type IgnoredFlag,
  parseFlags,
} from '../lib/config/flags.ts';
import { COMPAT_FLAGS } from '../lib/config/ingress-nginx-flags.ts';

/**
 * Every flag ingress-nginx v1.15.1 parses: pkg/flags/flags.go (72) and what klog v2.140.0's InitFlags
 * adds to Go's flag.CommandLine (15), with its Go type and a value it takes.
 */
const INGRESS_NGINX_FLAGS: ReadonlyArray<[name: string, type: string, sample: string]> = [
  ['apiserver-host', 'string', 'https://10.0.0.1:6443'],
  ['certificate-authority', 'string', '/etc/ca.crt'],
  ['kubeconfig', 'string', '/etc/kubeconfig'],
  ['default-backend-service', 'string', 'ingress-nginx/default-backend'],
  ['ingress-class', 'string', 'nginx'],
  ['controller-class', 'string', 'k8s.io/ingress-nginx'],
  ['watch-ingress-without-class', 'bool', ''],
  ['ingress-class-by-name', 'bool', ''],
  ['configmap', 'string', 'ingress-nginx/ingress-nginx-controller'],
  ['publish-service', 'string', 'ingress-nginx/ingress-nginx-controller'],
  ['tcp-services-configmap', 'string', 'ingress-nginx/tcp-services'],
  ['udp-services-configmap', 'string', 'ingress-nginx/udp-services'],
  ['sync-period', 'duration', '10m'],
  ['watch-namespace', 'string', 'web'],
  ['watch-namespace-selector', 'string', 'team=web'],
  ['profiling', 'bool', ''],
  ['default-ssl-certificate', 'string', 'ingress-nginx/wildcard'],
  ['health-check-path', 'string', '/ready'],
  ['health-check-timeout', 'int', '10'],
  ['update-status', 'bool', ''],
  ['election-id', 'string', 'ingress-nginx-leader'],
  ['election-ttl', 'duration', '30s'],
  ['update-status-on-shutdown', 'bool', ''],
  ['report-node-internal-ip-address', 'bool', ''],
  ['version', 'bool', ''],
  ['enable-ssl-passthrough', 'bool', ''],
  ['disable-leader-election', 'bool', ''],
  ['disable-svc-external-name', 'bool', ''],
  ['annotations-prefix', 'string', 'nginx.ingress.kubernetes.io'],
  ['enable-annotation-validation', 'bool', ''],
  ['enable-ssl-chain-completion', 'bool', ''],
  ['sync-rate-limit', 'float32', '0.3'],
  ['publish-status-address', 'string', '192.0.2.10'],
  ['enable-metrics', 'bool', ''],
  ['metrics-per-host', 'bool', ''],
  ['metrics-per-undefined-host', 'bool', ''],
  ['report-status-classes', 'bool', ''],
  ['time-buckets', 'float64Slice', '0.1,1,10'],
  ['length-buckets', 'float64Slice', '10,100'],
  ['size-buckets', 'float64Slice', '10,1000'],
  ['bucket-factor', 'float64', '1.1'],
  ['max-buckets', 'uint32', '100'],
  ['exclude-socket-metrics', 'stringSlice', 'bytes_sent'],
  ['monitor-max-batch-size', 'int', '10000'],
  ['http-port', 'int', '8080'],
  ['https-port', 'int', '8443'],
  ['ssl-passthrough-proxy-port', 'int', '442'],
  ['default-server-port', 'int', '8181'],
  ['healthz-port', 'int', '10254'],
  ['healthz-host', 'string', '127.0.0.1'],
  ['disable-catch-all', 'bool', ''],
  ['validating-webhook', 'string', ':8443'],
  ['validating-webhook-certificate', 'string', '/usr/local/certificates/cert'],
  ['validating-webhook-key', 'string', '/usr/local/certificates/key'],
  ['disable-full-test', 'bool', ''],
  ['status-port', 'int', '10246'],
  ['stream-port', 'int', '10247'],
  ['internal-logger-address', 'string', '127.0.0.1:11514'],
  ['profiler-port', 'int', '10245'],
  ['profiler-address', 'ip', '127.0.0.1'],
  ['status-update-interval', 'int', '60'],
  ['shutdown-grace-period', 'int', '5'],
  ['post-shutdown-grace-period', 'int', '10'],
  ['deep-inspect', 'bool', ''],
  ['dynamic-configuration-retries', 'int', '15'],
  ['disable-sync-events', 'bool', ''],
  ['enable-topology-aware-routing', 'bool', ''],
  ['maxmind-mirror', 'string', 'http://geoip.local/databases'],
  ['maxmind-license-key', 'string', 'license-key-value'],
  ['maxmind-edition-ids', 'string', 'GeoLite2-City,GeoLite2-ASN'],
  ['maxmind-retries-count', 'int', '1'],
  ['maxmind-retries-timeout', 'duration', '0s'],
  // klog
  ['v', 'Level', '2'],
  ['vmodule', 'moduleSpec', 'controller=4'],
  ['logtostderr', 'bool', ''],
  ['alsologtostderr', 'bool', ''],
  ['alsologtostderrthreshold', 'severity', 'ERROR'],
  ['stderrthreshold', 'severity', 'WARNING'],
  ['legacy_stderr_threshold_behavior', 'bool', ''],
  ['log_dir', 'string', '/var/log/ingress'],
  ['log_file', 'string', '/var/log/ingress/controller.log'],
  ['log_file_max_size', 'uint64', '1800'],
  ['one_output', 'bool', ''],
  ['skip_headers', 'bool', ''],
  ['skip_log_headers', 'bool', ''],
  ['add_dir_header', 'bool', ''],
  ['log_backtrace_at', 'traceLocation', 'main.go:10'],
];

/** The args of the controller container in ingress-nginx v1.15.1's deploy/static/provider/<p>/deploy.yaml,
 * with $(POD_NAMESPACE) expanded as the kubelet does. cloud, aws, aws/nlb-with-tls-termination, do,
 * exoscale, oracle and scw have the same list. */
const STATIC_MANIFESTS: Record<string, string[]> = {
  cloud: [
    '/nginx-ingress-controller',
    '--publish-service=ingress-nginx/ingress-nginx-controller',
    '--election-id=ingress-nginx-leader',
    '--controller-class=k8s.io/ingress-nginx',
    '--ingress-class=nginx',
    '--configmap=ingress-nginx/ingress-nginx-controller',
    '--validating-webhook=:8443',
    '--validating-webhook-certificate=/usr/local/certificates/cert',
    '--validating-webhook-key=/usr/local/certificates/key',
  ],
  baremetal: [
    '/nginx-ingress-controller',
    '--election-id=ingress-nginx-leader',
    '--controller-class=k8s.io/ingress-nginx',
    '--ingress-class=nginx',
    '--configmap=ingress-nginx/ingress-nginx-controller',
    '--validating-webhook=:8443',
    '--validating-webhook-certificate=/usr/local/certificates/cert',
    '--validating-webhook-key=/usr/local/certificates/key',
  ],
  kind: [
    '/nginx-ingress-controller',
    '--election-id=ingress-nginx-leader',
    '--controller-class=k8s.io/ingress-nginx',
    '--ingress-class=nginx',
    '--configmap=ingress-nginx/ingress-nginx-controller',
    '--validating-webhook=:8443',
    '--validating-webhook-certificate=/usr/local/certificates/cert',
    '--validating-webhook-key=/usr/local/certificates/key',
    '--watch-ingress-without-class=true',
    '--publish-status-address=localhost',
  ],
};

const WEBHOOK_ARGS = [
  '--validating-webhook=:8443',
  '--validating-webhook-certificate=/usr/local/certificates/cert',
  '--validating-webhook-key=/usr/local/certificates/key',
];

/**
 * The args of ingress-nginx's chart 4.15.1 (templates/_params.tpl, derived by hand: no Helm here),
 * release ingress-nginx in namespace ingress-nginx, $(POD_NAMESPACE) expanded, for the values named.
 * extraArgs are rendered in key order, `--key` for an empty value, else `--key=value`.
 */
const CHART: Record<string, { args: string[]; ignored: string[] }> = {
  defaults: {
    args: [
      '/nginx-ingress-controller',
      '--publish-service=ingress-nginx/ingress-nginx-controller',
      '--election-id=ingress-nginx-leader',
      '--controller-class=k8s.io/ingress-nginx',
      '--ingress-class=nginx',
      '--configmap=ingress-nginx/ingress-nginx-controller',
      ...WEBHOOK_ARGS,
    ],
    ignored: ['/nginx-ingress-controller'],
  },
  // controller.metrics.enabled, tcp and udp set, controller.scope.enabled,
  // controller.admissionWebhooks.enabled=false
  'metrics, tcp/udp, scope, no webhook': {
    args: [
      '/nginx-ingress-controller',
      '--publish-service=ingress-nginx/ingress-nginx-controller',
      '--election-id=ingress-nginx-leader',
      '--controller-class=k8s.io/ingress-nginx',
      '--ingress-class=nginx',
      '--configmap=ingress-nginx/ingress-nginx-controller',
      '--tcp-services-configmap=ingress-nginx/ingress-nginx-tcp',
      '--udp-services-configmap=ingress-nginx/ingress-nginx-udp',
      '--watch-namespace=ingress-nginx',
      '--enable-metrics=true',
    ],
    ignored: ['/nginx-ingress-controller'],
  },
  // enableAnnotationValidations=false, defaultBackend.enabled, hostNetwork with reportNodeInternalIp,
  // maxmindLicenseKey, healthCheckHost, healthCheckPath, ingressClassByName, watchIngressWithoutClass,
  // enableTopologyAwareRouting, disableLeaderElection, electionTTL, and the extraArgs people carry
  everything: {
    args: [
      '/nginx-ingress-controller',
      '--enable-annotation-validation=false',
      '--default-backend-service=ingress-nginx/ingress-nginx-defaultbackend',
      '--publish-service=ingress-nginx/ingress-nginx-controller',
      '--election-id=ingress-nginx-leader',
      '--controller-class=k8s.io/ingress-nginx',
      '--ingress-class=nginx',
      '--configmap=ingress-nginx/ingress-nginx-controller',
      '--report-node-internal-ip-address=true',
      ...WEBHOOK_ARGS,
      '--maxmind-license-key=0123456789abcdef',
      '--healthz-host=0.0.0.0',
      '--health-check-path=/ready',
      '--ingress-class-by-name=true',
      '--watch-ingress-without-class=true',
      '--enable-metrics=true',
      '--enable-topology-aware-routing=true',
      '--disable-leader-election=true',
      '--election-ttl=60s',
      '--default-ssl-certificate=ingress-nginx/wildcard',
      '--enable-ssl-chain-completion=false',
      '--enable-ssl-passthrough',
      '--sync-period=10m',
      '--update-status-on-shutdown=false',
      '--v=2',
    ],
    ignored: [
      '/nginx-ingress-controller',
      '--enable-annotation-validation',
      '--report-node-internal-ip-address',
      '--maxmind-license-key',
      '--enable-topology-aware-routing',
      '--enable-ssl-chain-completion',
      '--sync-period',
      '--update-status-on-shutdown',
    ],
  },
};

function run(args: string[]): { config: Config; ignored: readonly IgnoredFlag[] } {
  const parsed = parseFlags(args);
  if (parsed.kind !== 'run') throw new Error(`expected run, got ${parsed.kind}`);
  return parsed;
}

const flagsOf = (ignored: readonly IgnoredFlag[]) => ignored.map(({ flag }) => flag);

t.test('every flag of ingress-nginx has a counterpart or a reason to have none', async (t) => {
  t.equal(INGRESS_NGINX_FLAGS.length, 87);
  const counterparts = INGRESS_NGINX_FLAGS.filter(([name]) => Object.hasOwn(FLAGS, name) || name === 'v');
  const compat = INGRESS_NGINX_FLAGS.filter(([name]) => Object.hasOwn(COMPAT_FLAGS, name));
  t.equal(counterparts.length + compat.length, INGRESS_NGINX_FLAGS.length, 'each is in one table');
  t.equal(Object.keys(COMPAT_FLAGS).length, compat.length, 'COMPAT_FLAGS holds only ingress-nginx flags');
  for (const [name, spec] of Object.entries(COMPAT_FLAGS)) {
    t.notOk(Object.hasOwn(FLAGS, name), `--${name} is in one table`);
    t.ok(spec.reason.length > 20, `--${name} says why it has no effect`);
  }
});

const ONLY_WITH_ANOTHER = [
  'certificate-authority',
  'validating-webhook-certificate',
  'validating-webhook-key',
];

t.test('each flag is accepted as ingress-nginx takes it: --flag=value, --flag value, --flag', async (t) => {
  for (const [name, type, sample] of INGRESS_NGINX_FLAGS) {
    if (name === 'version') continue;
    const forms =
      type === 'bool'
        ? [[`--${name}`], [`--${name}=false`]]
        : [[`--${name}=${sample}`], [`--${name}`, sample]];
    for (const form of forms) {
      const { ignored } = run(form);
      // the CA is only read with --apiserver-host, as in ingress-nginx; the webhook's files only
      // with --validating-webhook
      const expected =
        Object.hasOwn(COMPAT_FLAGS, name) || ONLY_WITH_ANOTHER.includes(name) ? [`--${name}`] : [];
      t.strictSame(flagsOf(ignored), expected, form.join(' '));
    }
  }
  t.equal(parseFlags(['--version']).kind, 'version');
});

t.test("ingress-nginx's static manifests start ingress-ts", async (t) => {
  for (const [provider, args] of Object.entries(STATIC_MANIFESTS)) {
    const { config, ignored } = run(args);
    t.strictSame(flagsOf(ignored), ['/nginx-ingress-controller'], provider);
    t.strictSame(
      config.webhook,
      {
        host: '',
        port: 8443,
        files: { cert: '/usr/local/certificates/cert', key: '/usr/local/certificates/key' },
      },
      provider,
    );
    t.equal(config.model.controllerClass, 'k8s.io/ingress-nginx', provider);
    t.equal(config.model.ingressClass, 'nginx', provider);
    t.equal(config.model.configMap, 'ingress-nginx/ingress-nginx-controller', provider);
    t.equal(config.kube.electionId, 'ingress-nginx-leader', provider);
  }
  t.equal(
    run(STATIC_MANIFESTS.cloud as string[]).config.kube.publishService,
    'ingress-nginx/ingress-nginx-controller',
  );
  const kind = run(STATIC_MANIFESTS.kind as string[]).config;
  t.equal(kind.model.watchIngressWithoutClass, true);
  t.strictSame(kind.kube.publishStatusAddress, ['localhost']);
});

t.test("ingress-nginx's chart, rendered with common values, starts ingress-ts", async (t) => {
  for (const [values, { args, ignored: expected }] of Object.entries(CHART)) {
    const { ignored } = run(args);
    t.strictSame(flagsOf(ignored), expected, values);
    for (const { flag, reason } of ignored) t.ok(reason.length > 20, `${values}: ${flag} has a reason`);
  }
  const { config } = run(CHART.everything?.args as string[]);
  t.match(config, {
    enableMetrics: true,
    healthzHost: '0.0.0.0',
    healthCheckPath: '/ready',
    logLevel: 'info',
    kube: {
      leaderElection: false,
      electionTtlMs: 60_000,
      publishService: 'ingress-nginx/ingress-nginx-controller',
    },
    model: {
      defaultBackendService: 'ingress-nginx/ingress-nginx-defaultbackend',
      defaultSSLCertificate: 'ingress-nginx/wildcard',
      ingressClassByName: true,
      watchIngressWithoutClass: true,
      enableSslPassthrough: true,
    },
  });
  t.equal(
    run(CHART['metrics, tcp/udp, scope, no webhook']?.args as string[]).config.kube.watchNamespace,
    'ingress-nginx',
  );
});

t.test('a flag ingress-nginx does not have is still refused', async (t) => {
  const refused: Array<[string[], RegExp]> = [
    [['--no-such-flag'], /Unknown option '--no-such-flag'/],
    [['/nginx-ingress-controller', '--no-such-flag'], /Unknown option '--no-such-flag'/],
    // klog's names keep their underscores; pflag does not translate them
    [['--log-dir=/tmp'], /Unknown option '--log-dir'/],
    // pflag reads a single dash as shorthands, and only -v is one
    [['-logtostderr'], /Unknown option '-l'/],
    // a bool flag does not take the next argument: it is a stray word, as in ingress-nginx
    [['--profiling', 'false'], /Unexpected argument 'false'/],
    [['--no-profiling'], /Unknown option '--no-profiling'/],
    // the binary is only skipped where ingress-nginx's args put it
    [['--v=2', '/nginx-ingress-controller'], /Unexpected argument '\/nginx-ingress-controller'/],
  ];
  for (const [argv, message] of refused)
    t.throws(() => parseFlags(argv), { code: 'ERR_INGRESS_TS_CONFIG', message }, argv.join(' '));
});

t.test('values ingress-nginx would refuse are refused', async (t) => {
  const bad: Array<[string[], RegExp]> = [
    [['--sync-period=10'], /--sync-period must be a duration such as 30s, got "10"/],
    [['--sync-period', 'soon'], /--sync-period must be a duration/],
    [['--status-port=http'], /--status-port must be an integer/],
    [['--max-buckets=-1'], /--max-buckets must be a non-negative integer/],
    [['--sync-rate-limit=fast'], /--sync-rate-limit must be a number/],
    [['--profiler-address=localhost'], /--profiler-address must be an IP address/],
    [['--profiling=yes'], /--profiling must be true or false, got "yes"/],
    [['--ssl-passthrough-proxy-port=0'], /--ssl-passthrough-proxy-port must be a port number/],
    [['--internal-logger-address'], /Option '--internal-logger-address' needs a value/],
    [['--v=high'], /--v must be an integer/],
    [['-v'], /Option '--v' needs a value/],
    [['--health-check-path=ready'], /--health-check-path must start with \//],
  ];
  for (const [argv, message] of bad)
    t.throws(() => parseFlags(argv), { code: 'ERR_INGRESS_TS_CONFIG', message }, argv.join(' '));
  t.ok(new ConfigError('x') instanceof Error);
});

t.test('Go spellings: booleans as strconv.ParseBool reads them, durations with zero', async (t) => {
  for (const yes of ['1', 't', 'T', 'true', 'TRUE', 'True']) {
    t.equal(run([`--enable-metrics=${yes}`]).config.enableMetrics, true, yes);
    t.equal(run([`--watch-ingress-without-class=${yes}`]).config.model.watchIngressWithoutClass, true, yes);
    t.strictSame(flagsOf(run([`--profiling=${yes}`]).ignored), ['--profiling'], yes);
  }
  for (const no of ['0', 'f', 'F', 'false', 'FALSE', 'False']) {
    t.equal(run([`--enable-metrics=${no}`]).config.enableMetrics, false, no);
    t.strictSame(flagsOf(run([`--profiling=${no}`]).ignored), ['--profiling'], no);
  }
  for (const duration of ['0', '0s', '1h30m', '1.5s', '300ms', '-1m']) {
    t.strictSame(flagsOf(run([`--sync-period=${duration}`]).ignored), ['--sync-period'], duration);
  }
  // the argument after one of ingress-ts's string flags is its value, never an ignored flag (and one
  // that starts with a dash is refused as ambiguous, as ingress-ts always did)
  t.equal(run(['--ingress-class', 'profiling']).config.model.ingressClass, 'profiling');
  t.throws(() => parseFlags(['--ingress-class', '--profiling']), { message: /argument is ambiguous/ });
  // and an ignored string flag takes the next argument as pflag does
  t.strictSame(flagsOf(run(['--internal-logger-address', '--v=9']).ignored), ['--internal-logger-address']);
  t.equal(run(['--internal-logger-address', '--v=9']).config.logLevel, 'info', '--v=9 was the value');
  t.strictSame(
    flagsOf(run(['--profiling', '--profiling=false', '--sync-period=1m']).ignored),
    ['--profiling', '--sync-period'],
    'each named once',
  );
});

t.test('--v sets the log level when --log-level is not given', async (t) => {
  const levels: Array<[string[], string]> = [
    [[], 'info'],
    [['--v=0'], 'info'],
    [['--v=2'], 'info'],
    [['--v', '3'], 'debug'],
    [['-v', '4'], 'debug'],
    [['-v=5'], 'trace'],
    [['-v10'], 'trace'],
    [['--v=5', '--log-level=warn'], 'warn'],
    [['--log-level', 'error', '-v', '5'], 'error'],
    [['--log-level=info', '--v=5'], 'info'],
  ];
  for (const [argv, level] of levels) {
    const { config, ignored } = run(argv);
    t.equal(config.logLevel, level, argv.join(' ') || 'no flags');
    t.strictSame(ignored, [], '--v has a counterpart');
  }
});

t.test('--apiserver-host and --certificate-authority', async (t) => {
  t.match(run([]).config.kube, { apiserverHost: null, certificateAuthority: null });
  const hosts: Array<[string[], string, string | null]> = [
    [['--apiserver-host=https://10.0.0.1:6443'], 'https://10.0.0.1:6443', null],
    [['--apiserver-host', 'http://127.0.0.1:8001/'], 'http://127.0.0.1:8001', null],
    // client-go's default scheme: https with a CA, else http
    [['--apiserver-host=10.0.0.1:6443'], 'http://10.0.0.1:6443', null],
    [
      ['--apiserver-host=10.0.0.1:6443', '--certificate-authority=/ca.pem'],
      'https://10.0.0.1:6443',
      '/ca.pem',
    ],
  ];
  for (const [argv, host, ca] of hosts) {
    const { config, ignored } = run(argv);
    t.match(config.kube, { apiserverHost: host, certificateAuthority: ca }, argv.join(' '));
    t.strictSame(ignored, []);
  }
  const alone = run(['--certificate-authority=/ca.pem']);
  t.equal(alone.config.kube.certificateAuthority, null);
  t.match(alone.ignored, [{ flag: '--certificate-authority', reason: /only used with --apiserver-host/ }]);
  const refused: Array<[string[], RegExp]> = [
    [['--apiserver-host=ftp://h'], /--apiserver-host must be an http:\/\/ or https:\/\/ URL/],
    [['--apiserver-host=https://admin:hunter2@h'], /--apiserver-host must not carry credentials/],
    [['--apiserver-host=http://[::1'], /--apiserver-host must be a URL/],
    [['--manifests=d', '--apiserver-host=https://h'], /--apiserver-host has no meaning with --manifests/],
  ];
  for (const [argv, message] of refused) {
    const error = t.throws(
      () => parseFlags(argv),
      { code: 'ERR_INGRESS_TS_CONFIG', message },
      argv.join(' '),
    );
    t.notMatch(String((error as Error | undefined)?.message), 'hunter2', 'a password is never echoed');
  }
});

t.test('--healthz-host and --health-check-path', async (t) => {
  t.match(run([]).config, { healthzHost: '', healthCheckPath: '/healthz' });
  t.match(run(['--healthz-host', '127.0.0.1', '--health-check-path', '/ready']).config, {
    healthzHost: '127.0.0.1',
    healthCheckPath: '/ready',
  });
});

t.test('--help names the flags accepted with no effect', async (t) => {
  const text = helpText('1.2.3');
  for (const name of Object.keys(COMPAT_FLAGS)) t.match(text, `--${name}`, name);
  t.match(text, '--v N');
  t.match(text, '--healthz-host');
  t.match(text, '--health-check-path');
});

t.test('docs/flags.md names every ingress-nginx flag, and each ignored one with its reason', async (t) => {
  const doc = readFileSync(new URL('../docs/flags.md', import.meta.url), 'utf8');
  for (const [name] of INGRESS_NGINX_FLAGS) t.match(doc, `\`--${name}\``, name);
  for (const [name, { reason }] of Object.entries(COMPAT_FLAGS)) {
    const row = doc.split('\n').find((line) => line.includes(`\`--${name}\``) && line.includes(reason));
    t.ok(row, `--${name}: its reason is in its row`);
  }
});
