// Flags: defaults, validation and help.
import t from 'tap';
import { ConfigError, FLAGS, helpText, parseFlags } from '../lib/config/flags.ts';

t.test('defaults follow ingress-nginx where the flag exists', async (t) => {
  const parsed = parseFlags(['--manifests', 'dir']);
  if (parsed.kind !== 'run') throw new Error('expected run');
  const { config } = parsed;
  t.equal(config.httpPort, 80);
  t.equal(config.httpsPort, 443);
  t.equal(config.healthzPort, 10254);
  t.equal(config.shutdownGracePeriod, 0);
  t.equal(config.model.annotationsPrefix, 'nginx.ingress.kubernetes.io');
  t.equal(config.model.controllerClass, 'ingress-ts.dev/controller');
  t.equal(config.model.ingressClass, 'ingress-ts');
  t.equal(config.model.defaultBackendService, null);
  t.equal(config.enableMetrics, true);
  t.equal(config.model.enableSslPassthrough, false, '--enable-ssl-passthrough is off by default');
  t.strictSame(config.requestMetrics, {
    perHost: true,
    perUndefinedHost: false,
    statusClasses: false,
    exclude: [],
    timeBuckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    lengthBuckets: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    sizeBuckets: [10, 100, 1000, 10000, 100000, 1000000, 10000000],
  });
  t.ok(Object.isFrozen(config) && Object.isFrozen(config.model));
});

t.test('without --manifests, the Kubernetes API: --kubeconfig and the namespace scope', async (t) => {
  const kube = (...args: string[]) => {
    const parsed = parseFlags(args);
    if (parsed.kind !== 'run') throw new Error('expected run');
    return parsed.config;
  };
  t.match(kube().kube, { kubeconfig: null, watchNamespace: null, namespaceSelector: null });
  t.equal(kube().manifests, null);
  t.match(kube('--kubeconfig', '/k/config', '--watch-namespace=web').kube, {
    kubeconfig: '/k/config',
    watchNamespace: 'web',
    namespaceSelector: null,
  });
  t.equal(
    kube('--watch-namespace-selector', 'team=web,env!=dev').kube.namespaceSelector,
    'team=web,env!=dev',
  );
  t.ok(Object.isFrozen(kube().kube));
  t.match(kube().kube, {
    leaderElection: true,
    electionId: 'ingress-ts-leader',
    electionTtlMs: 30_000,
    updateStatus: true,
    publishService: null,
    publishStatusAddress: null,
  });
  const status = kube(
    '--election-ttl=1m30s',
    '--disable-leader-election',
    '--update-status=false',
    '--publish-service',
    'ingress/ingress-ts',
    '--publish-status-address',
    '192.0.2.1, lb.example.com',
  ).kube;
  t.match(status, {
    leaderElection: false,
    electionTtlMs: 90_000,
    updateStatus: false,
    publishService: 'ingress/ingress-ts',
    publishStatusAddress: ['192.0.2.1', 'lb.example.com'],
  });
  t.equal(kube('--election-ttl', '500ms').kube.electionTtlMs, 500);
});

t.test('flags are read, with --flag value and --flag=value', async (t) => {
  const parsed = parseFlags([
    '--manifests=dir',
    '--http-port',
    '8080',
    '--controller-class=k8s.io/ingress-nginx',
    '--ingress-class',
    'nginx',
    '--watch-ingress-without-class',
    '--default-backend-service',
    'ns/backend',
    '--shutdown-grace-period',
    '2.5',
    '--log-level',
    'debug',
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  t.equal(parsed.config.httpPort, 8080);
  t.equal(parsed.config.model.controllerClass, 'k8s.io/ingress-nginx');
  t.equal(parsed.config.model.ingressClass, 'nginx');
  t.equal(parsed.config.model.watchIngressWithoutClass, true);
  t.equal(parsed.config.model.defaultBackendService, 'ns/backend');
  t.equal(parsed.config.shutdownGracePeriod, 2.5);
  t.equal(parsed.config.logLevel, 'debug');
});

t.test('booleans as ingress-nginx writes them: --flag=true, --flag=false, and --no-flag', async (t) => {
  const run = (...args: string[]) => {
    const parsed = parseFlags(['--manifests', 'dir', ...args]);
    if (parsed.kind !== 'run') throw new Error('expected run');
    return parsed.config;
  };
  t.equal(run('--enable-metrics=false').enableMetrics, false);
  t.equal(run('--no-enable-metrics').enableMetrics, false);
  t.equal(run('--enable-metrics=true').enableMetrics, true);
  t.equal(run('--watch-ingress-without-class=true').model.watchIngressWithoutClass, true);
  t.equal(run('--watch-ingress-without-class=false').model.watchIngressWithoutClass, false);
  t.throws(() => parseFlags(['--manifests', 'dir', '--enable-metrics=maybe']), {
    code: 'ERR_INGRESS_TS_CONFIG',
    message: "Option '--enable-metrics' does not take an argument",
  });
  t.equal(run('--controller-class=true').model.controllerClass, 'true', 'string flags keep the text');
  t.equal(run('--enable-ssl-passthrough').model.enableSslPassthrough, true);
  t.equal(run('--enable-ssl-passthrough=true').model.enableSslPassthrough, true);
  t.equal(run('--enable-ssl-passthrough=false').model.enableSslPassthrough, false);
  // ingress-nginx's internal port of the TLS proxy: accepted, no effect
  t.strictSame(
    run('--ssl-passthrough-proxy-port', '4420'),
    run(),
    '--ssl-passthrough-proxy-port changes nothing',
  );
});

t.test('request metrics flags, as ingress-nginx writes them', async (t) => {
  const parsed = parseFlags([
    '--manifests',
    'dir',
    '--metrics-per-host=false',
    '--metrics-per-undefined-host',
    '--report-status-classes=true',
    '--exclude-socket-metrics=bytes_sent,nginx_ingress_controller_request_size',
    '--time-buckets=0.1,1,10',
    '--length-buckets',
    '100, 1000',
    '--size-buckets=1e3,1e6',
  ]);
  if (parsed.kind !== 'run') throw new Error('expected run');
  t.strictSame(parsed.config.requestMetrics, {
    perHost: false,
    perUndefinedHost: true,
    statusClasses: true,
    exclude: ['bytes_sent', 'nginx_ingress_controller_request_size'],
    timeBuckets: [0.1, 1, 10],
    lengthBuckets: [100, 1000],
    sizeBuckets: [1000, 1000000],
  });
});

t.test('bad input is refused with a clear message', async (t) => {
  const bad: Array<[string[], RegExp]> = [
    [['--manifests', 'd', '--nope'], /Unknown option '--nope'/],
    [['--manifests', 'd', '--http-port', 'http'], /--http-port must be a port number/],
    [['--manifests', 'd', '--https-port', '70000'], /--https-port must be a port number/],
    [['--manifests', 'd', '--default-ssl-certificate', 'no-slash'], /must be namespace\/name/],
    [['--manifests', 'd', '--log-level', 'loud'], /--log-level must be one of/],
    [['--manifests', 'd', '--shutdown-grace-period', '-1'], /argument is ambiguous/],
    [['--manifests', 'd', '--shutdown-grace-period=-1'], /must be a number of seconds/],
    [['--manifests', 'd', '--kubeconfig', 'k'], /--kubeconfig has no meaning with --manifests/],
    [['--manifests', 'd', '--watch-namespace', 'web'], /--watch-namespace has no meaning with --manifests/],
    [['--watch-namespace', 'a', '--watch-namespace-selector', 'b=c'], /cannot be combined/],
    [['--election-ttl', '30'], /--election-ttl must be a duration such as 30s/],
    [['--election-ttl', '0s'], /--election-ttl must be longer than 0/],
    [['--election-id', 'Not_A_Name'], /--election-id must be a Kubernetes object name/],
    [['--publish-service', 'noslash'], /--publish-service must be namespace\/name/],
    [['--manifests', 'd', '--publish-status-address', '1.2.3.4'], /has no meaning with --manifests/],
    [['--manifests', 'd', 'extra'], /Unexpected argument 'extra'/],
    [['--manifests', 'd', '--time-buckets', '1,0.5'], /--time-buckets must be increasing numbers/],
    [['--manifests', 'd', '--length-buckets=10,,20'], /--length-buckets must be increasing numbers/],
    [['--manifests', 'd', '--size-buckets=ten'], /--size-buckets must be increasing numbers/],
    [
      ['--manifests', 'd', '--ssl-passthrough-proxy-port', '0'],
      /--ssl-passthrough-proxy-port must be a port/,
    ],
  ];
  for (const [argv, message] of bad)
    t.throws(() => parseFlags(argv), { name: 'Error', message }, argv.join(' '));
  t.throws(() => parseFlags(['--bogus']), { code: 'ERR_INGRESS_TS_CONFIG' });
  t.ok(new ConfigError('x') instanceof Error);
});

t.test('--help lists every flag with its default', async (t) => {
  const text = helpText('1.2.3');
  for (const [name, spec] of Object.entries(FLAGS)) {
    t.match(text, `--${name}`, name);
    if (spec.type === 'string' && spec.default !== '') t.match(text, `[${spec.default}]`, `${name} default`);
  }
  t.equal(parseFlags(['--help']).kind, 'help');
  t.equal(parseFlags(['--version']).kind, 'version');
});

t.test("the admission webhook's certificate from a Secret: ingress-ts's own flags", async (t) => {
  const kube = (...args: string[]) => {
    const parsed = parseFlags(args);
    if (parsed.kind !== 'run') throw new Error('expected run');
    return parsed.config.kube.webhookCertificate;
  };
  t.equal(kube(), null, 'off by default');
  t.same(kube('--validating-webhook-secret=ingress/edge-admission'), {
    secret: { namespace: 'ingress', name: 'edge-admission' },
    service: null,
    configuration: null,
  });
  t.same(
    kube(
      '--validating-webhook-secret=ingress/edge-admission',
      '--validating-webhook-service=ingress/edge-ingress-ts-controller-admission',
      '--validating-webhook-configuration=edge-admission',
    ),
    {
      secret: { namespace: 'ingress', name: 'edge-admission' },
      service: { namespace: 'ingress', name: 'edge-ingress-ts-controller-admission' },
      configuration: 'edge-admission',
    },
  );
  const bad: Array<[string[], RegExp]> = [
    [['--validating-webhook-secret=noslash'], /--validating-webhook-secret must be namespace\/name/],
    [['--validating-webhook-service=a/b'], /--validating-webhook-service needs --validating-webhook-secret/],
    [['--validating-webhook-configuration=x'], /needs --validating-webhook-secret/],
    [
      ['--validating-webhook-secret=a/b', '--validating-webhook-configuration=Bad_Name'],
      /must be an object name/,
    ],
    [['--manifests', 'd', '--validating-webhook-secret=a/b'], /has no meaning with --manifests/],
  ];
  for (const [argv, message] of bad) t.throws(() => parseFlags(argv), { message }, argv.join(' '));
});
