// verdicts.ts as a table: objects in, the verdict of one Ingress and its findings (code and effect)
// out. One row per diagnostic code that can land on an Ingress; a code added to DIAGNOSTIC_CODES
// without a row here (or a place in NOT_ON_AN_INGRESS) fails the last test.

import t from 'tap';
import {
  admissionFor,
  admissionOf,
  buildModel,
  type ConfigMap,
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  type Effect,
  effectOf,
  type Finding,
  type Ingress,
  ingressVerdicts,
  type ModelOptions,
  type Secret,
  type Verdict,
  verdictOf,
} from '../../lib/model/index.ts';
import {
  externalNameService,
  ingress,
  ingressClass,
  path,
  pem,
  rule,
  service,
  snapshotOf,
  tlsSecret,
  type World,
} from './helpers.ts';

interface Row extends World {
  name: string;
  options?: Partial<ModelOptions>;
  /** findings the source had (standalone mode) */
  source?: Diagnostic[];
  /** the Ingress looked at; default x */
  of?: string;
  verdict: Verdict;
  /** its findings as `CODE effect`, in order */
  findings: string[];
  /** the path or host a finding names (first finding) */
  place?: { host?: string; path?: string };
}

const site = (name: string, nginx: Record<string, string> = {}, host = 'x.com', created = 0) =>
  ingress(name, { nginx, created, rules: [rule(host, path('/', 'web:80'))] });
const twoPaths = (name: string, extra: ReturnType<typeof path>, host = 'x.com', created = 0) =>
  ingress(name, { created, rules: [rule(host, path('/ok', 'web:80'), extra)] });
const configMap = (name: string, data: Record<string, string>, namespace = 'ingress'): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const secret = (name: string, data: Record<string, string>): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'default' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const raw = (name: string, spec: unknown): Ingress =>
  ({
    metadata: { name, namespace: 'default' },
    spec: { ingressClassName: 'ingress-ts', ...(spec as object) },
  }) as Ingress;
const DEFAULTS = {
  controllerClass: 'ingress-ts.dev/controller',
  ingressClass: 'ingress-ts',
  ingressClassByName: false,
  watchIngressWithoutClass: false,
};
const GLOBAL = { configMap: 'ingress/ingress-ts' };
const A = pem('a-example');
const manifestFinding = (code: DiagnosticCode, message: string): Diagnostic => ({
  kind: 'Ingress',
  namespace: 'default',
  name: 'x',
  severity: DIAGNOSTIC_CODES[code][0],
  code,
  message,
  file: 'x.yaml',
  line: 1,
});

const ROWS: Row[] = [
  { name: 'nothing to say', ingresses: [site('x')], verdict: 'served', findings: [] },
  {
    name: 'another class',
    ingresses: [ingress('x', { className: 'nginx', rules: [rule('x.com', path('/', 'web:80'))] })],
    verdict: 'ignored',
    findings: [],
  },
  {
    name: 'INGRESS_INVALID: the name',
    ingresses: [{ ...site('x'), metadata: { name: 'x', namespace: 'Not_A_Label' } }],
    of: 'Not_A_Label/x',
    verdict: 'not-served',
    findings: ['INGRESS_INVALID drops-ingress'],
  },
  {
    name: 'INGRESS_INVALID: a rule',
    ingresses: [raw('x', { rules: ['oops', { host: 'x.com', http: { paths: [rawPath('/')] } }] })],
    verdict: 'partly-served',
    findings: ['INGRESS_INVALID drops-part'],
  },
  {
    name: 'INGRESS_INVALID: a rule whose paths are not a list',
    ingresses: [
      raw('x', {
        rules: [
          { host: 'y.com', http: { paths: 'no' } },
          { host: 'x.com', http: { paths: [rawPath('/')] } },
        ],
      }),
    ],
    verdict: 'partly-served',
    findings: ['INGRESS_INVALID drops-part'],
    place: { host: 'y.com' },
  },
  {
    name: 'INGRESS_INVALID: a tls entry',
    ingresses: [
      raw('x', { tls: [{ hosts: 'x.com' }], rules: [{ host: 'x.com', http: { paths: [rawPath('/')] } }] }),
    ],
    verdict: 'partly-served',
    findings: ['INGRESS_INVALID drops-part'],
  },
  {
    name: 'INGRESS_EMPTY',
    ingresses: [raw('x', {})],
    verdict: 'served',
    findings: ['INGRESS_EMPTY none'],
  },
  {
    name: 'HOST_INVALID',
    ingresses: [
      raw('x', {
        rules: [
          { host: 'bad_host', http: { paths: [rawPath('/')] } },
          { host: 'x.com', http: { paths: [rawPath('/')] } },
        ],
      }),
    ],
    verdict: 'partly-served',
    findings: ['HOST_INVALID drops-part'],
    place: { host: 'bad_host' },
  },
  {
    name: 'PATH_INVALID',
    ingresses: [twoPaths('x', path('relative', 'web:80', 'Exact'))],
    verdict: 'partly-served',
    findings: ['PATH_INVALID drops-part'],
    place: { host: 'x.com', path: 'relative' },
  },
  {
    name: 'PATH_TYPE_INVALID',
    ingresses: [twoPaths('x', path('/r', 'web:80', 'Regex'))],
    verdict: 'partly-served',
    findings: ['PATH_TYPE_INVALID drops-part'],
    place: { host: 'x.com', path: '/r' },
  },
  {
    name: 'BACKEND_INVALID',
    ingresses: [twoPaths('x', path('/big', 'web:70000'))],
    verdict: 'partly-served',
    findings: ['BACKEND_INVALID drops-part'],
    place: { host: 'x.com', path: '/big' },
  },
  {
    name: 'PATH_CONFLICT: one path of two',
    ingresses: [site('old', {}, 'x.com', 0), twoPaths('x', path('/', 'web:80'), 'x.com', 1)],
    verdict: 'partly-served',
    findings: ['PATH_CONFLICT drops-part'],
    place: { host: 'x.com', path: '/' },
  },
  {
    name: 'PATH_CONFLICT: its only path, so nothing of it is left',
    ingresses: [site('old', {}, 'x.com', 0), site('x', {}, 'x.com', 1)],
    verdict: 'not-served',
    findings: ['PATH_CONFLICT drops-part'],
  },
  {
    name: 'DEFAULT_BACKEND_CONFLICT',
    ingresses: [
      ingress('old', { defaultBackend: 'web:80' }),
      ingress('x', { created: 1, defaultBackend: 'web:80' }),
    ],
    verdict: 'not-served',
    findings: ['DEFAULT_BACKEND_CONFLICT drops-part'],
  },
  {
    name: 'CATCH_ALL_DISABLED',
    ingresses: [ingress('x', { defaultBackend: 'web:80' })],
    options: { disableCatchAll: true },
    verdict: 'not-served',
    findings: ['CATCH_ALL_DISABLED drops-ingress'],
  },
  {
    name: 'SERVER_ANNOTATION_CONFLICT',
    ingresses: [
      ingress('old', { nginx: { 'server-alias': 'a.com' }, rules: [rule('x.com', path('/a', 'web:80'))] }),
      ingress('x', {
        created: 1,
        nginx: { 'server-alias': 'b.com' },
        rules: [rule('x.com', path('/b', 'web:80'))],
      }),
    ],
    verdict: 'served-with-differences',
    findings: ['SERVER_ANNOTATION_CONFLICT differs'],
  },
  {
    name: 'ALIAS_CONFLICT',
    ingresses: [site('x', { 'server-alias': 'y.com' }), site('y', {}, 'y.com')],
    verdict: 'partly-served',
    findings: ['ALIAS_CONFLICT drops-part'],
    place: { host: 'x.com' },
  },
  {
    name: 'TLS_CONFLICT',
    ingresses: [
      ingress('old', {
        tls: [{ hosts: ['a.example.com'], secretName: 'a' }],
        rules: [rule('a.example.com', path('/a', 'web:80'))],
      }),
      ingress('x', {
        created: 1,
        tls: [{ hosts: ['a.example.com'], secretName: 'b' }],
        rules: [rule('a.example.com', path('/b', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a', A), tlsSecret('b', A)],
    verdict: 'partly-served',
    findings: ['TLS_CONFLICT drops-part'],
    place: { host: 'a.example.com' },
  },
  {
    name: 'TLS_SECRET_NOT_FOUND',
    ingresses: [
      ingress('x', {
        tls: [{ hosts: ['x.com'], secretName: 'nope' }],
        rules: [rule('x.com', path('/', 'web:80'))],
      }),
    ],
    verdict: 'served-with-differences',
    findings: ['TLS_SECRET_NOT_FOUND differs'],
    place: { host: 'x.com' },
  },
  {
    name: 'TLS_SECRET_INVALID',
    ingresses: [
      ingress('x', {
        tls: [{ hosts: ['x.com'], secretName: 'half' }],
        rules: [rule('x.com', path('/', 'web:80'))],
      }),
    ],
    secrets: [secret('half', { 'tls.crt': A.crt })],
    verdict: 'served-with-differences',
    findings: ['TLS_SECRET_INVALID differs'],
  },
  {
    name: 'TLS_HOST_MISMATCH',
    ingresses: [
      ingress('x', {
        tls: [{ hosts: ['x.com'], secretName: 'a' }],
        rules: [rule('x.com', path('/', 'web:80'))],
      }),
    ],
    secrets: [tlsSecret('a', A)],
    verdict: 'served-with-differences',
    findings: ['TLS_HOST_MISMATCH differs'],
  },
  {
    name: 'TLS_NO_SECRET_FOR_HOST',
    ingresses: [ingress('x', { tls: [{ hosts: ['x.com'] }], rules: [rule('x.com', path('/', 'web:80'))] })],
    verdict: 'served',
    findings: ['TLS_NO_SECRET_FOR_HOST none'],
  },
  {
    name: 'SERVICE_NOT_FOUND',
    ingresses: [site('x')],
    autoBackends: false,
    verdict: 'served-with-differences',
    findings: ['SERVICE_NOT_FOUND differs'],
  },
  {
    name: 'SERVICE_PORT_NOT_FOUND',
    ingresses: [site('x')],
    services: [service('web', [{ port: 81 }])],
    verdict: 'served-with-differences',
    findings: ['SERVICE_PORT_NOT_FOUND differs'],
  },
  {
    name: 'ENDPOINTS_NONE',
    ingresses: [site('x')],
    services: [service('web', [{ port: 80 }])],
    verdict: 'served-with-differences',
    findings: ['ENDPOINTS_NONE differs'],
  },
  {
    name: 'EXTERNAL_NAME_INVALID',
    ingresses: [site('x')],
    services: [externalNameService('web', 'localhost')],
    verdict: 'served-with-differences',
    findings: ['EXTERNAL_NAME_INVALID differs'],
  },
  {
    name: 'EXTERNAL_NAME_DISABLED',
    ingresses: [site('x')],
    services: [externalNameService('web', 'web.example.com')],
    options: { disableSvcExternalName: true },
    verdict: 'served-with-differences',
    findings: ['EXTERNAL_NAME_DISABLED differs'],
  },
  {
    name: 'SERVICE_UPSTREAM_NO_CLUSTER_IP',
    ingresses: [site('x', { 'service-upstream': 'true' })],
    verdict: 'served-with-differences',
    findings: ['SERVICE_UPSTREAM_NO_CLUSTER_IP differs'],
  },
  {
    name: 'ANNOTATION_INVALID: a warning, the default is used',
    ingresses: [site('x', { 'proxy-read-timeout': 'soon' })],
    verdict: 'served-with-differences',
    findings: ['ANNOTATION_INVALID differs'],
  },
  {
    name: 'ANNOTATION_INVALID: an error, the Ingress is dropped',
    ingresses: [site('x', { 'whitelist-source-range': 'not-a-cidr' })],
    verdict: 'not-served',
    findings: ['ANNOTATION_INVALID drops-ingress'],
  },
  {
    name: 'ANNOTATION_UNSUPPORTED',
    ingresses: [site('x', { 'fastcgi-index': 'index.php' })],
    verdict: 'served-with-differences',
    findings: ['ANNOTATION_UNSUPPORTED differs'],
  },
  {
    name: 'ANNOTATION_UNKNOWN',
    ingresses: [site('x', { 'some-typo': 'x' })],
    verdict: 'served',
    findings: ['ANNOTATION_UNKNOWN none'],
  },
  {
    name: 'ANNOTATION_NOT_APPLICABLE',
    ingresses: [site('x', { 'proxy-buffers-number': '8' })],
    verdict: 'served',
    findings: ['ANNOTATION_NOT_APPLICABLE none'],
  },
  {
    name: 'ANNOTATION_VALUE_BLOCKED',
    ingresses: [site('x', { 'rewrite-target': '/lua_package' })],
    configMaps: [configMap('ingress-ts', { 'annotation-value-word-blocklist': 'lua_package' })],
    options: GLOBAL,
    verdict: 'not-served',
    findings: ['ANNOTATION_VALUE_BLOCKED drops-ingress'],
  },
  {
    name: 'ANNOTATION_TOO_RISKY',
    ingresses: [site('x', { 'server-alias': 'www.x.com' })],
    configMaps: [configMap('ingress-ts', { 'annotations-risk-level': 'Medium' })],
    options: GLOBAL,
    verdict: 'not-served',
    findings: ['ANNOTATION_TOO_RISKY drops-ingress'],
  },
  {
    name: 'BACKEND_PROTOCOL_UNSUPPORTED',
    ingresses: [site('x', { 'backend-protocol': 'FCGI' })],
    verdict: 'not-served',
    findings: ['BACKEND_PROTOCOL_UNSUPPORTED denies-paths'],
  },
  {
    name: 'SNIPPET_REFUSED',
    ingresses: [site('x', { 'configuration-snippet': 'more_set_headers "A: b";' })],
    verdict: 'not-served',
    findings: ['SNIPPET_REFUSED drops-ingress'],
  },
  {
    name: 'SNIPPET_READ: a header snippet where ingress-nginx accepts snippets',
    ingresses: [site('x', { 'configuration-snippet': 'more_set_headers "X-Frame-Options: DENY";' })],
    configMaps: [
      configMap('ingress-ts', { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' }),
    ],
    options: GLOBAL,
    verdict: 'served',
    findings: ['SNIPPET_READ none'],
  },
  {
    name: 'CANARY_NOT_ENABLED',
    ingresses: [site('x', { 'canary-weight': '10' })],
    verdict: 'served-with-differences',
    findings: ['CANARY_NOT_ENABLED differs'],
  },
  {
    name: 'CANARY_NO_MAIN',
    ingresses: [site('x', { canary: 'true', 'canary-weight': '10' })],
    verdict: 'not-served',
    findings: ['CANARY_NO_MAIN drops-part'],
    place: { host: 'x.com', path: '/' },
  },
  {
    name: 'CANARY_CONFLICT',
    ingresses: [
      site('main'),
      ingress('old', { created: 1, nginx: { canary: 'true' }, rules: [rule('x.com', path('/', 'old:80'))] }),
      ingress('x', { created: 2, nginx: { canary: 'true' }, rules: [rule('x.com', path('/', 'new:80'))] }),
    ],
    verdict: 'not-served',
    findings: ['CANARY_CONFLICT drops-part'],
    place: { host: 'x.com', path: '/' },
  },
  {
    name: 'CANARY_PATTERN_INVALID',
    ingresses: [
      site('main'),
      ingress('x', {
        created: 1,
        nginx: { canary: 'true', 'canary-by-header': 'X-Canary', 'canary-by-header-pattern': '(' },
        rules: [rule('x.com', path('/', 'new:80'))],
      }),
    ],
    verdict: 'served-with-differences',
    findings: ['CANARY_PATTERN_INVALID differs'],
  },
  {
    name: 'AUTH_UNAVAILABLE',
    ingresses: [site('x', { 'auth-type': 'basic', 'auth-secret': 'nope' })],
    verdict: 'not-served',
    findings: ['AUTH_UNAVAILABLE denies-paths'],
  },
  {
    name: 'PATH_REGEX_INVALID',
    ingresses: [
      ingress('x', {
        nginx: { 'use-regex': 'true' },
        rules: [
          rule(
            'x.com',
            path('/ok', 'web:80', 'ImplementationSpecific'),
            path('/(?=x)', 'web:80', 'ImplementationSpecific'),
          ),
        ],
      }),
    ],
    verdict: 'partly-served',
    findings: ['PATH_REGEX_INVALID drops-part'],
    place: { host: 'x.com', path: '/(?=x)' },
  },
  {
    name: 'AUTH_TLS_SECRET_NOT_FOUND: its only host',
    ingresses: [site('x', { 'auth-tls-secret': 'default/nope' })],
    verdict: 'not-served',
    findings: ['AUTH_TLS_SECRET_NOT_FOUND denies-paths'],
    place: { host: 'x.com' },
  },
  {
    name: 'AUTH_TLS_SECRET_NOT_FOUND: one of its hosts (the other takes its settings from an older Ingress)',
    ingresses: [
      site('old', { 'auth-tls-secret': 'default/other' }, 'y.com'),
      ingress('x', {
        created: 1,
        nginx: { 'auth-tls-secret': 'default/nope' },
        rules: [rule('x.com', path('/', 'web:80')), rule('y.com', path('/x', 'web:80'))],
      }),
    ],
    verdict: 'partly-served',
    findings: ['SERVER_ANNOTATION_CONFLICT differs', 'AUTH_TLS_SECRET_NOT_FOUND denies-paths'],
  },
  {
    name: 'AUTH_TLS_SECRET_INVALID',
    ingresses: [site('x', { 'auth-tls-secret': 'default/empty' })],
    secrets: [secret('empty', { other: 'x' })],
    verdict: 'not-served',
    findings: ['AUTH_TLS_SECRET_INVALID denies-paths'],
  },
  {
    name: 'AUTH_TLS_CROSS_NAMESPACE',
    ingresses: [site('x', { 'auth-tls-secret': 'other/ca' })],
    verdict: 'not-served',
    findings: ['AUTH_TLS_CROSS_NAMESPACE denies-paths'],
  },
  {
    name: 'PROXY_SSL_UNAVAILABLE',
    ingresses: [site('x', { 'proxy-ssl-secret': 'nope' })],
    verdict: 'not-served',
    findings: ['PROXY_SSL_UNAVAILABLE denies-paths'],
  },
  {
    name: 'PROXY_SSL_NOT_VERIFIED',
    ingresses: [site('x', { 'proxy-ssl-secret': 'pair', 'proxy-ssl-verify': 'on' })],
    secrets: [secret('pair', { 'tls.crt': A.crt, 'tls.key': A.key })],
    verdict: 'served-with-differences',
    findings: ['PROXY_SSL_NOT_VERIFIED differs'],
  },
  {
    name: 'CUSTOM_HEADERS_DENIED',
    ingresses: [site('x', { 'custom-headers': 'default/nope' })],
    verdict: 'not-served',
    findings: ['CUSTOM_HEADERS_DENIED denies-paths'],
  },
  {
    name: 'SSL_PASSTHROUGH_DISABLED',
    ingresses: [site('x', { 'ssl-passthrough': 'true' })],
    verdict: 'served-with-differences',
    findings: ['SSL_PASSTHROUGH_DISABLED differs'],
  },
  {
    name: 'AFFINITY_CONFLICT',
    ingresses: [
      site('x', { affinity: 'cookie', 'session-cookie-name': 'old' }),
      site('new', { affinity: 'cookie', 'session-cookie-name': 'new' }, 'y.com', 10),
    ],
    verdict: 'served-with-differences',
    findings: ['AFFINITY_CONFLICT differs'],
  },
  {
    name: 'WWW_REDIRECT_SKIPPED',
    ingresses: [site('x', { 'from-to-www-redirect': 'true' }, '*.x.com')],
    verdict: 'served',
    findings: ['WWW_REDIRECT_SKIPPED none'],
  },
  {
    name: 'MANIFEST_API_VERSION_IGNORED: an Ingress the source did not read',
    ingresses: [],
    source: [
      manifestFinding('MANIFEST_API_VERSION_IGNORED', 'Ingress default/x has apiVersion extensions/v1beta1'),
    ],
    verdict: 'not-served',
    findings: ['MANIFEST_API_VERSION_IGNORED drops-ingress'],
  },
  {
    name: 'MANIFEST_DUPLICATE: a second definition, the first is served',
    ingresses: [site('x')],
    source: [manifestFinding('MANIFEST_DUPLICATE', 'Ingress default/x is defined twice')],
    verdict: 'served-with-differences',
    findings: ['MANIFEST_DUPLICATE differs'],
  },
];

/** Codes reported on other objects: the global and TCP/UDP ConfigMaps, the flags' objects, files. */
const NOT_ON_AN_INGRESS: readonly DiagnosticCode[] = [
  'DEFAULT_BACKEND_SERVICE_UNUSABLE',
  'DEFAULT_CERTIFICATE_UNUSABLE',
  'CONFIGMAP_NOT_FOUND',
  'CONFIG_KEY_UNSUPPORTED',
  'CONFIG_KEY_UNKNOWN',
  'CONFIG_KEY_IGNORED',
  'CONFIG_KEY_NOT_APPLICABLE',
  'CONFIG_VALUE_INVALID',
  'STREAM_ENTRY_INVALID',
  'STREAM_PORT_CONFLICT',
  'STREAM_SERVICE_UNUSABLE',
  'MANIFEST_INVALID',
  'MANIFEST_UNREADABLE',
  // on Gateway API objects
  'GATEWAY_INVALID',
  'HTTPROUTE_INVALID',
  'HTTPROUTE_BACKEND_INVALID',
  'HTTPROUTE_PATH_TAKEN',
];

function rawPath(path: string) {
  return { path, pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } };
}

const refOf = (row: Row) => {
  const of = row.of ?? 'x';
  const slash = of.indexOf('/');
  return slash === -1
    ? { namespace: 'default', name: of }
    : { namespace: of.slice(0, slash), name: of.slice(slash + 1) };
};

for (const row of ROWS) {
  t.test(`verdicts: ${row.name}`, async (t) => {
    const snapshot = snapshotOf({ classes: [ingressClass('ingress-ts')], ...row });
    const options = { ...row.options };
    const result = buildModel(snapshot, options);
    const verdicts = ingressVerdicts({
      ingresses: snapshot.ingresses,
      ingressClasses: snapshot.ingressClasses,
      result,
      options: { ...DEFAULTS, ...options },
      sourceDiagnostics: row.source,
    });
    const ref = refOf(row);
    const mine = verdicts.find((v) => v.namespace === ref.namespace && v.name === ref.name);
    if (!t.ok(mine, 'listed')) return;
    t.equal(mine?.verdict, row.verdict, 'verdict');
    t.strictSame(
      mine?.findings.map((f) => `${f.code} ${f.effect}`),
      row.findings,
      'findings',
    );
    if (row.place !== undefined) t.match(mine?.findings[0], row.place, 'where');
    for (const finding of mine?.findings ?? []) {
      t.ok(finding.message.length > 0, 'a message');
      t.equal(finding.severity, DIAGNOSTIC_CODES[finding.code][0] === 'info' ? 'info' : finding.severity);
    }
  });
}

t.test('verdicts: every code has an effect, and a row here or a reason to have none', async (t) => {
  const covered = new Set<string>();
  for (const row of ROWS) for (const finding of row.findings) covered.add(finding.split(' ')[0] as string);
  for (const code of Object.keys(DIAGNOSTIC_CODES) as DiagnosticCode[]) {
    const effect = effectOf({ code, severity: DIAGNOSTIC_CODES[code][0] });
    t.ok(
      ['drops-ingress', 'denies-paths', 'drops-part', 'differs', 'none'].includes(effect),
      `${code}: ${effect}`,
    );
    t.ok(
      covered.has(code) !== NOT_ON_AN_INGRESS.includes(code),
      `${code}: a row of the table, or listed as never on an Ingress (not both)`,
    );
  }
});

t.test('verdicts: the worst effect decides', async (t) => {
  const f = (effect: Effect, host?: string): Finding => ({
    code: 'ANNOTATION_UNKNOWN',
    severity: 'warning',
    message: 'm',
    effect,
    ...(host === undefined ? {} : { host }),
  });
  const cases: Array<[Finding[], readonly string[] | undefined, Verdict]> = [
    [[], undefined, 'served'],
    [[f('none')], undefined, 'served'],
    [[f('differs'), f('none')], undefined, 'served-with-differences'],
    [[f('differs'), f('drops-part')], undefined, 'partly-served'],
    [[f('drops-part'), f('differs')], undefined, 'partly-served'],
    [[f('drops-part'), f('denies-paths')], undefined, 'not-served'],
    [[f('differs'), f('drops-ingress')], undefined, 'not-served'],
    [[f('denies-paths', 'a.com')], undefined, 'partly-served'],
    [[f('denies-paths', 'a.com')], ['a.com', 'b.com'], 'partly-served'],
    [[f('denies-paths', 'a.com'), f('denies-paths', 'b.com')], ['a.com', 'b.com'], 'not-served'],
  ];
  for (const [findings, hosts, verdict] of cases) {
    t.equal(
      verdictOf(findings, hosts),
      verdict,
      findings.map((x) => x.effect + (x.host ?? '')).join(',') || 'none',
    );
  }
});

t.test('verdicts: admission denies a drop of anything, warns for differences and warnings', async (t) => {
  const snapshot = snapshotOf({
    ingresses: [
      site('ok', { 'some-typo': 'x', 'proxy-buffers-number': '8' }),
      site('half', { 'fastcgi-index': 'index.php' }, 'h.com'),
      twoPaths('part', path('/b', 'web:70000'), 'p.com'),
      site('gone', { 'configuration-snippet': 'x' }, 'g.com'),
    ],
  });
  const { diagnostics } = buildModel(snapshot);
  const ok = admissionFor(diagnostics, { namespace: 'default', name: 'ok' });
  t.equal(ok.allowed, true);
  t.strictSame(
    ok.warnings.map((w) => w.code),
    ['ANNOTATION_UNKNOWN'],
    'a warning with no effect is still worth saying; an info is not',
  );
  const half = admissionFor(diagnostics, { namespace: 'default', name: 'half' });
  t.match(half, { allowed: true, denials: [], warnings: [{ code: 'ANNOTATION_UNSUPPORTED' }] });
  t.match(admissionFor(diagnostics, { namespace: 'default', name: 'part' }), {
    allowed: false,
    denials: [{ code: 'BACKEND_INVALID', path: '/b' }],
  });
  t.match(admissionFor(diagnostics, { namespace: 'default', name: 'gone' }), {
    allowed: false,
    denials: [{ code: 'SNIPPET_REFUSED' }],
  });
  t.strictSame(admissionOf([]), { allowed: true, denials: [], warnings: [] });
  // what depends on objects applied later, or what ingress-nginx admits too, is a warning
  const finding = (code: DiagnosticCode, effect: Finding['effect']): Finding => ({
    code,
    severity: 'error',
    message: code,
    effect,
  });
  t.match(
    admissionOf([finding('AUTH_UNAVAILABLE', 'denies-paths'), finding('CANARY_NO_MAIN', 'drops-part')]),
    {
      allowed: true,
      denials: [],
      warnings: [{ code: 'AUTH_UNAVAILABLE' }, { code: 'CANARY_NO_MAIN' }],
    },
  );
  t.match(admissionOf([finding('BACKEND_PROTOCOL_UNSUPPORTED', 'denies-paths')]), {
    allowed: false,
    denials: [{ code: 'BACKEND_PROTOCOL_UNSUPPORTED' }],
  });
});

t.test(
  'verdicts: findings and verdicts survive structuredClone (they cross to a worker or the wire)',
  async (t) => {
    const snapshot = snapshotOf({ ingresses: [twoPaths('x', path('/b', 'web:70000'))] });
    const verdicts = ingressVerdicts({
      ingresses: snapshot.ingresses,
      ingressClasses: snapshot.ingressClasses,
      result: buildModel(snapshot),
      options: DEFAULTS,
    });
    t.strictSame(structuredClone(verdicts), verdicts);
    t.strictSame(JSON.parse(JSON.stringify(verdicts)), verdicts);
  },
);

t.test('verdicts: docs/diagnostics.md names every code under its effect', async (t) => {
  const { readFileSync } = await import('node:fs');
  const doc = readFileSync(new URL('../../docs/diagnostics.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Effects and verdicts'), doc.indexOf('## Runtime error codes'));
  // a code whose effect depends on the instance (ANNOTATION_INVALID's severity) is under each
  const listed = new Map<string, Set<string>>();
  for (const item of section.split(/\n- /).slice(1)) {
    const effect = /^\*\*([a-z-]+)\*\*/.exec(item)?.[1] ?? '';
    for (const [, code] of item.matchAll(/`([A-Z_]+)`/g)) {
      listed.set(code as string, (listed.get(code as string) ?? new Set()).add(effect));
    }
  }
  for (const code of Object.keys(DIAGNOSTIC_CODES) as DiagnosticCode[]) {
    const effect = effectOf({ code, severity: DIAGNOSTIC_CODES[code][0] });
    t.ok(listed.get(code)?.has(effect), `${code}: ${effect}`);
  }
});
