// The annotation framework: prefix, snippet refusal, unsupported warnings, invalid values, and the
// parsers this issue ships (use-regex, rewrite-target, server-alias, canary recognition).
import t from 'tap';
import { SUPPORTED_ANNOTATIONS } from '../../lib/model/index.ts';
import { ingress, PREFIX, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>, host = 'a.com', created = 0) =>
  ingress(name, { created, nginx, rules: [rule(host, path('/app', 'web:80'))] });

runCases(t, [
  {
    name: 'annotations: enable-access-log is read per route; an invalid value keeps the log on (warning)',
    ingresses: [
      site('quiet', { 'enable-access-log': 'false' }),
      site('loud', { 'enable-access-log': 'true' }, 'b.com'),
      site('typo', { 'enable-access-log': 'nope' }, 'c.com'),
    ],
    routes: [
      'a.com Prefix /app -> default-web-80 (quiet)',
      'b.com Prefix /app -> default-web-80 (loud)',
      'c.com Prefix /app -> default-web-80 (typo)',
    ],
    diagnostics: ['ANNOTATION_INVALID typo'],
    messages: ['enable-access-log="nope" is invalid', 'the default is used'],
    check: (t, { model }) => {
      const logs = Object.fromEntries(
        model.servers.map((s) => [s.hostname, s.routes.map((r) => r.annotations.accessLog.enabled)]),
      );
      t.strictSame(logs, { 'a.com': [false], 'b.com': [true], 'c.com': [true] });
    },
  },
  {
    name: 'annotations: configuration-snippet drops the Ingress; others are untouched',
    ingresses: [
      site('evil', { 'configuration-snippet': 'more_set_headers "X: y";' }),
      site('good', {}, 'b.com'),
    ],
    routes: ['b.com Prefix /app -> default-web-80 (good)'],
    diagnostics: ['SNIPPET_REFUSED evil'],
    messages: [`${PREFIX}/configuration-snippet is configuration code`],
  },
  {
    name: 'annotations: every *-snippet is refused (server-snippet, auth-snippet, stream-snippet)',
    ingresses: [
      site('s1', { 'server-snippet': 'location /x {}' }),
      site('s2', { 'auth-snippet': 'x' }, 'b.com'),
      site('s3', { 'stream-snippet': 'x' }, 'c.com'),
    ],
    routes: [],
    diagnostics: ['SNIPPET_REFUSED s1', 'SNIPPET_REFUSED s2', 'SNIPPET_REFUSED s3'],
  },
  {
    name: 'annotations: a snippet is refused even when it is empty',
    ingresses: [site('s', { 'configuration-snippet': '' })],
    routes: [],
    diagnostics: ['SNIPPET_REFUSED s'],
  },
  {
    name: 'annotations: an annotation ingress-ts does not know gets one warning and the Ingress is served',
    ingresses: [site('a', { 'fastcgi-index': 'index.php', 'some-typo': 'x' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
    diagnostics: ['ANNOTATION_UNSUPPORTED a', 'ANNOTATION_UNKNOWN a'],
    messages: [
      `${PREFIX}/fastcgi-index is not supported`,
      `${PREFIX}/some-typo is not an ingress-nginx annotation`,
    ],
  },
  {
    name: 'annotations: NGINX tuning annotations are accepted with an info saying why they do nothing',
    ingresses: [site('a', { 'proxy-buffers-number': '8', 'proxy-max-temp-file-size': '0' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
    diagnostics: ['ANNOTATION_NOT_APPLICABLE a', 'ANNOTATION_NOT_APPLICABLE a'],
    messages: [
      `${PREFIX}/proxy-buffers-number has no effect: NGINX buffer tuning`,
      `${PREFIX}/proxy-max-temp-file-size has no effect: NGINX temp-file tuning`,
    ],
  },
  {
    name: 'annotations: annotations outside the prefix are none of our business',
    ingresses: [
      ingress('a', {
        annotations: { 'cert-manager.io/cluster-issuer': 'x', 'example.com/configuration-snippet': 'x' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
    ],
    routes: ['a.com Prefix / -> default-web-80 (a)'],
  },
  {
    name: 'annotations: --annotations-prefix changes where annotations are read',
    ingresses: [
      ingress('custom', {
        annotations: {
          'ingress.example.com/use-regex': 'true',
          [`${PREFIX}/configuration-snippet`]: 'ignored',
        },
        rules: [rule('a.com', path('/x', 'web:80'))],
      }),
      ingress('snippet', {
        annotations: { 'ingress.example.com/server-snippet': 'x' },
        rules: [rule('b.com', path('/', 'web:80'))],
      }),
    ],
    options: { annotationsPrefix: 'ingress.example.com' },
    routes: ['a.com Prefix /x -> default-web-80 (custom)'],
    diagnostics: ['SNIPPET_REFUSED snippet'],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, true),
  },
  {
    name: 'annotations: use-regex turns the whole host into regex mode',
    ingresses: [
      site('regex', { 'use-regex': 'true' }, 'a.com', 1),
      ingress('plain', {
        created: 2,
        rules: [rule('a.com', path('/plain', 'web:80')), rule('b.com', path('/', 'web:80'))],
      }),
    ],
    check: (t, { model }) => {
      t.equal(model.servers.find((s) => s.hostname === 'a.com')?.regex, true, 'a.com in regex mode');
      t.equal(model.servers.find((s) => s.hostname === 'b.com')?.regex, false, 'b.com untouched');
      const routes = model.servers.find((s) => s.hostname === 'a.com')?.routes ?? [];
      t.strictSame(
        routes.map((r) => [r.path, r.annotations.rewrite.useRegex]),
        [
          ['/plain', false],
          ['/app', true],
        ],
      );
    },
  },
  {
    name: 'annotations: use-regex accepts Go boolean spellings',
    ingresses: [
      site('a', { 'use-regex': 'True' }),
      site('b', { 'use-regex': '1' }, 'b.com'),
      site('c', { 'use-regex': 'f' }, 'c.com'),
    ],
    check: (t, { model }) =>
      t.strictSame(
        model.servers.map((s) => s.regex),
        [true, true, false],
      ),
  },
  {
    name: 'annotations: an invalid use-regex falls back to false with a warning',
    ingresses: [site('a', { 'use-regex': 'yes' })],
    diagnostics: ['ANNOTATION_INVALID a'],
    messages: ['the default is used'],
    check: (t, { model, diagnostics }) => {
      t.equal(model.servers[0]?.regex, false);
      t.equal(diagnostics[0]?.severity, 'warning');
    },
  },
  {
    name: 'annotations: rewrite-target is recorded and turns on regex mode',
    ingresses: [
      ingress('rw', {
        nginx: { 'rewrite-target': '/$2' },
        rules: [rule('a.com', path('/api(/|$)(.*)', 'web:80', 'ImplementationSpecific'))],
      }),
    ],
    check: (t, { model }) => {
      t.equal(model.servers[0]?.regex, true);
      t.equal(model.servers[0]?.routes[0]?.annotations.rewrite.target, '/$2');
    },
  },
  {
    name: 'annotations: a rewrite-target equal to the path does not turn on regex mode',
    ingresses: [
      ingress('rw', { nginx: { 'rewrite-target': '/' }, rules: [rule('a.com', path('/', 'web:80'))] }),
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, false),
  },
  {
    name: 'annotations: the host default route inherits rewrite-target, so /app -> /app still means regex mode',
    ingresses: [
      ingress('rw', { nginx: { 'rewrite-target': '/app' }, rules: [rule('a.com', path('/app', 'web:80'))] }),
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, true),
  },
  {
    name: 'annotations: a Prefix / route replaces the inherited default route in the regex decision',
    ingresses: [
      ingress('creator', {
        created: 1,
        nginx: { 'rewrite-target': '/app' },
        rules: [rule('a.com', path('/app', 'web:80'))],
      }),
      ingress('root', { created: 2, rules: [rule('a.com', path('/', 'web:80'))] }),
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, false),
  },
  {
    name: 'annotations: an invalid rewrite-target is ignored with a warning',
    ingresses: [site('rw', { 'rewrite-target': '/x?y=$1' })],
    routes: ['a.com Prefix /app -> default-web-80 (rw)'],
    diagnostics: ['ANNOTATION_INVALID rw'],
    check: (t, { model }) => {
      t.equal(model.servers[0]?.routes[0]?.annotations.rewrite.target, null);
      t.equal(model.servers[0]?.regex, false);
    },
  },
  {
    name: 'annotations: server-alias is recorded lower-cased, deduplicated and sorted',
    ingresses: [site('a', { 'server-alias': 'Www.A.com, alias.org,, www.a.com ' })],
    check: (t, { model }) =>
      t.strictSame(model.servers[0]?.annotations.alias.aliases, ['alias.org', 'www.a.com']),
  },
  {
    name: 'annotations: a server-alias that is a host of its own is dropped',
    ingresses: [site('a', { 'server-alias': 'b.com, c.com' }, 'a.com', 1), site('b', {}, 'b.com', 2)],
    diagnostics: ['ALIAS_CONFLICT a'],
    messages: ['server-alias b.com of host a.com is already a host of its own'],
    check: (t, { model }) => t.strictSame(model.servers[0]?.annotations.alias.aliases, ['c.com']),
  },
  {
    name: 'annotations: the same alias on two hosts goes to the first host',
    ingresses: [
      site('a', { 'server-alias': 'shared.com' }, 'a.com', 1),
      site('b', { 'server-alias': 'shared.com' }, 'b.com', 2),
    ],
    diagnostics: ['ALIAS_CONFLICT b'],
    check: (t, { model }) =>
      t.strictSame(
        model.servers.map((s) => s.annotations.alias.aliases),
        [['shared.com'], []],
      ),
  },
  {
    name: 'annotations: a host-level annotation comes from the oldest Ingress of the host that sets it',
    ingresses: [
      site('first', {}, 'a.com', 1),
      ingress('second', {
        created: 2,
        nginx: { 'server-alias': 'x.com' },
        rules: [rule('a.com', path('/2', 'web:80'))],
      }),
      ingress('third', {
        created: 3,
        nginx: { 'server-alias': 'y.com' },
        rules: [rule('a.com', path('/3', 'web:80'))],
      }),
    ],
    diagnostics: ['SERVER_ANNOTATION_CONFLICT third'],
    messages: ['already takes its alias setting from the older Ingress default/second'],
    check: (t, { model }) => t.strictSame(model.servers[0]?.annotations.alias.aliases, ['x.com']),
  },
  {
    name: 'annotations: an invalid server-alias drops the Ingress (ingress-nginx propagates this error)',
    ingresses: [site('bad', { 'server-alias': 'ok.com, not a host' })],
    routes: [],
    diagnostics: ['ANNOTATION_INVALID bad'],
    messages: ['the Ingress is ignored'],
    check: (t, { diagnostics }) => t.equal(diagnostics[0]?.severity, 'error'),
  },
  {
    name: 'annotations: canary "false" is an ordinary Ingress',
    ingresses: [site('a', { canary: 'false' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
  },
  {
    name: 'annotations: an annotation value that is not a string is read as text',
    ingresses: [
      {
        ...site('a', {}),
        metadata: {
          name: 'a',
          namespace: 'default',
          annotations: { [`${PREFIX}/use-regex`]: true as unknown as string },
        },
      },
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, true),
  },

  {
    name: 'annotations: use-regex accepts every strconv.ParseBool spelling',
    ingresses: ['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False'].map((v, i) =>
      site(`s${i}`, { 'use-regex': v }, `h${String(i).padStart(2, '0')}.com`),
    ),
    check: (t, { model }) =>
      t.strictSame(
        model.servers.map((s) => s.regex),
        [true, true, true, true, true, true, false, false, false, false, false, false],
      ),
  },
  {
    name: 'annotations: rewrite-target refuses spaces and braces',
    ingresses: [site('sp', { 'rewrite-target': '/a b' }), site('br', { 'rewrite-target': '/{1}' }, 'b.com')],
    diagnostics: ['ANNOTATION_INVALID br', 'ANNOTATION_INVALID sp'],
    check: (t, { model }) =>
      t.strictSame(
        model.servers.map((s) => s.regex),
        [false, false],
      ),
  },
  {
    name: 'annotations: an Ingress naming its host in two rules does not conflict with its own server-alias',
    ingresses: [
      ingress('a', {
        nginx: { 'server-alias': 'x.com' },
        rules: [rule('a.com', path('/1', 'web:80')), rule('a.com', path('/2', 'web:80'))],
      }),
    ],
    check: (t, { model }) => t.strictSame(model.servers[0]?.annotations.alias.aliases, ['x.com']),
  },
  {
    name: 'annotations: a server-alias equal to its own host is dropped',
    ingresses: [site('a', { 'server-alias': 'a.com, b.com' })],
    diagnostics: ['ALIAS_CONFLICT a'],
    messages: ['server-alias a.com of host a.com is the host itself'],
    check: (t, { model }) => t.strictSame(model.servers[0]?.annotations.alias.aliases, ['b.com']),
  },
  {
    name: 'annotations: an Exact / route does not replace the inherited default route in the regex decision',
    ingresses: [
      ingress('creator', {
        created: 1,
        nginx: { 'rewrite-target': '/app' },
        rules: [rule('a.com', path('/app', 'web:80'))],
      }),
      ingress('root', { created: 2, rules: [rule('a.com', path('/', 'web:80', 'Exact'))] }),
    ],
    check: (t, { model }) => t.equal(model.servers[0]?.regex, true),
  },
  {
    name: 'annotations: an empty value is unset and never validated',
    ingresses: [site('a', { 'use-regex': '', 'rewrite-target': '' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
    check: (t, { model }) => {
      t.equal(model.servers[0]?.regex, false);
      t.equal(model.servers[0]?.routes[0]?.annotations.rewrite.target, null);
    },
  },
]);

t.test('annotations: every supported annotation is documented', async (t) => {
  t.strictSame(
    SUPPORTED_ANNOTATIONS.map((a) => a.name),
    [
      'affinity',
      'affinity-canary-behavior',
      'affinity-mode',
      'allowlist-source-range',
      'app-root',
      'auth-always-set-cookie',
      'auth-cache-duration',
      'auth-cache-key',
      'auth-method',
      'auth-proxy-set-headers',
      'auth-realm',
      'auth-request-redirect',
      'auth-response-headers',
      'auth-secret',
      'auth-secret-type',
      'auth-signin',
      'auth-signin-redirect-param',
      'auth-tls-error-page',
      'auth-tls-match-cn',
      'auth-tls-pass-certificate-to-upstream',
      'auth-tls-secret',
      'auth-tls-verify-client',
      'auth-tls-verify-depth',
      'auth-type',
      'auth-url',
      'backend-protocol',
      'canary',
      'canary-by-cookie',
      'canary-by-header',
      'canary-by-header-pattern',
      'canary-by-header-value',
      'canary-weight',
      'canary-weight-total',
      'configuration-snippet',
      'connection-proxy-header',
      'cors-allow-credentials',
      'cors-allow-headers',
      'cors-allow-methods',
      'cors-allow-origin',
      'cors-expose-headers',
      'cors-max-age',
      'custom-headers',
      'custom-http-errors',
      'default-backend',
      'denylist-source-range',
      'disable-proxy-intercept-errors',
      'enable-access-log',
      'enable-cors',
      'enable-global-auth',
      'enable-opentelemetry',
      'force-ssl-redirect',
      'from-to-www-redirect',
      'limit-allowlist',
      'limit-burst-multiplier',
      'limit-connections',
      'limit-rate',
      'limit-rate-after',
      'limit-rpm',
      'limit-rps',
      'limit-whitelist',
      'load-balance',
      'mirror-host',
      'mirror-request-body',
      'mirror-target',
      'opentelemetry-operation-name',
      'opentelemetry-trust-incoming-span',
      'permanent-redirect',
      'permanent-redirect-code',
      'preserve-trailing-slash',
      'proxy-body-size',
      'proxy-buffer-size',
      'proxy-buffering',
      'proxy-connect-timeout',
      'proxy-cookie-domain',
      'proxy-cookie-path',
      'proxy-http-version',
      'proxy-next-upstream',
      'proxy-next-upstream-timeout',
      'proxy-next-upstream-tries',
      'proxy-read-timeout',
      'proxy-redirect-from',
      'proxy-redirect-to',
      'proxy-request-buffering',
      'proxy-send-timeout',
      'proxy-ssl-ciphers',
      'proxy-ssl-name',
      'proxy-ssl-protocols',
      'proxy-ssl-secret',
      'proxy-ssl-server-name',
      'proxy-ssl-verify',
      'proxy-ssl-verify-depth',
      'rewrite-target',
      'satisfy',
      'server-alias',
      'server-snippet',
      'service-upstream',
      'session-cookie-change-on-failure',
      'session-cookie-conditional-samesite-none',
      'session-cookie-domain',
      'session-cookie-expires',
      'session-cookie-max-age',
      'session-cookie-name',
      'session-cookie-path',
      'session-cookie-samesite',
      'session-cookie-secure',
      'ssl-passthrough',
      'ssl-redirect',
      'temporal-redirect',
      'temporal-redirect-code',
      'upstream-hash-by',
      'upstream-hash-by-subset',
      'upstream-hash-by-subset-size',
      'upstream-vhost',
      'use-port-in-redirects',
      'use-regex',
      'whitelist-source-range',
      'x-forwarded-prefix',
    ],
  );
  for (const annotation of SUPPORTED_ANNOTATIONS)
    t.ok(annotation.doc.length > 20, `${annotation.name} has a doc`);
});
