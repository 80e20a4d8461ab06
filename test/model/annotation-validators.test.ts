// Every annotation's value validation against ingress-nginx's (its parser package's validators and
// each annotation parser's handling of their errors). One row per value: the annotation, the value,
// the companions it needs to be read at all, and the outcome ingress-nginx has, which ingress-ts
// matches: kept, ignored (the default is used, a warning), denied (the paths answer 503) or dropped
// (the whole Ingress is skipped). Rows marked `differs` are the deliberate differences documented in
// docs/annotations.md. The last tests: annotation-value-word-blocklist and annotations-risk-level.
import t from 'tap';
import { NOT_APPLICABLE_ANNOTATIONS, SUPPORTED_ANNOTATIONS } from '../../lib/model/annotations/index.ts';
import { annotationRisk } from '../../lib/model/annotations/risk.ts';
import type { BuildResult, ConfigMap, Secret } from '../../lib/model/index.ts';
import { build, ingress, path, pem, rule, service, tlsSecret } from './helpers.ts';

type Outcome = 'kept' | 'ignored' | 'denied' | 'dropped';
type Row = [
  name: string,
  value: string,
  outcome: Outcome,
  companions?: Record<string, string>,
  note?: string,
];

const AUTH = { 'auth-url': 'http://auth.svc/verify' };
const BASIC = { 'auth-type': 'basic', 'auth-secret': 'htpasswd' };
const CLIENT_TLS = { 'auth-tls-secret': 'client-ca' };
const BACKEND_TLS = { 'proxy-ssl-secret': 'backend-tls' };
const CANARY = { canary: 'true' };
const COOKIE = { affinity: 'cookie' };

const ROWS: Row[] = [
  // redirect (ingress-nginx's redirect parser returns every validator error)
  ['permanent-redirect', 'https://new.example/landing?from=old&x=1', 'kept'],
  ['permanent-redirect', 'https://new.example$request_uri', 'dropped'],
  ['permanent-redirect', 'https://new.example/a%20b', 'dropped'],
  ['permanent-redirect', 'https://new.example/#top', 'dropped'],
  ['permanent-redirect', 'https://new.example/zurück', 'dropped'],
  [
    'permanent-redirect',
    'https://new.example$request_uri',
    'kept',
    { 'temporal-redirect': 'https://t.example/' },
  ],
  ['permanent-redirect', 'ftp://files.example/', 'dropped', {}, 'differs: only http(s) URLs'],
  ['permanent-redirect-code', '308', 'kept', { 'permanent-redirect': 'https://new.example/' }],
  ['permanent-redirect-code', '399', 'ignored', { 'permanent-redirect': 'https://new.example/' }],
  ['permanent-redirect-code', '30x', 'dropped', { 'permanent-redirect': 'https://new.example/' }],
  ['permanent-redirect-code', '30x', 'dropped'],
  ['temporal-redirect', 'https://tmp.example/x', 'kept'],
  ['temporal-redirect', 'https://tmp.example/$uri', 'dropped'],
  ['temporal-redirect-code', '307', 'kept', { 'temporal-redirect': 'https://tmp.example/' }],
  ['temporal-redirect-code', 'abc', 'dropped', { 'temporal-redirect': 'https://tmp.example/' }],
  ['temporal-redirect-code', 'abc', 'kept', {}, 'not read without temporal-redirect'],
  ['from-to-www-redirect', 'true', 'kept'],
  ['from-to-www-redirect', 'yes', 'dropped'],
  ['relative-redirects', 'true', 'kept'],
  ['relative-redirects', 'yes', 'dropped'],
  // rewrite parser: every value falls back to its default
  ['rewrite-target', '/$1/x', 'kept'],
  ['rewrite-target', '/x;y', 'ignored'],
  ['use-regex', 'true', 'kept'],
  ['use-regex', 'yes', 'ignored'],
  ['ssl-redirect', 'false', 'kept'],
  ['ssl-redirect', 'no', 'ignored'],
  ['force-ssl-redirect', 'true', 'kept'],
  ['force-ssl-redirect', 'yes', 'ignored'],
  ['preserve-trailing-slash', 'true', 'kept'],
  ['preserve-trailing-slash', 'yes', 'ignored'],
  ['use-port-in-redirects', 'true', 'kept'],
  ['use-port-in-redirects', 'yes', 'ignored'],
  ['app-root', '/app1', 'kept'],
  ['app-root', 'app1', 'ignored'],
  ['app-root', '/app?x=1', 'ignored'],
  ['app-root', 'https://elsewhere.example/', 'ignored'],
  ['x-forwarded-prefix', '/api', 'kept', { 'rewrite-target': '/$1' }],
  ['x-forwarded-prefix', '/api;x', 'dropped', { 'rewrite-target': '/$1' }],
  // external auth: nothing but enable-global-auth is read without auth-url
  ['auth-url', 'http://auth.svc/verify?rd=$escaped_request_uri&h=$host', 'kept'],
  ['auth-url', 'http://auth.svc/verify#x', 'dropped'],
  ['auth-url', 'ftp://auth.svc/', 'denied', {}, 'differs: accepted there'],
  ['auth-method', 'GET', 'kept', AUTH],
  ['auth-method', 'FETCH', 'denied', AUTH],
  ['auth-method', 'FETCH', 'kept'],
  ['auth-signin', 'https://login.example/start?rd=$escaped_request_uri', 'kept', AUTH],
  ['auth-signin', 'https://login.example/start#x', 'ignored', AUTH],
  ['auth-signin', '/login', 'ignored', AUTH, 'differs: used there'],
  ['auth-signin-redirect-param', 'return_to', 'kept', AUTH],
  ['auth-signin-redirect-param', 'a;b', 'ignored', AUTH],
  ['auth-response-headers', 'X-User, X-Email', 'kept', AUTH],
  ['auth-response-headers', 'X-User;X', 'denied', AUTH],
  ['auth-request-redirect', '/back?x=1', 'kept', AUTH],
  ['auth-request-redirect', '/zurück', 'denied', AUTH, 'differs: the auth config is dropped there'],
  ['auth-request-redirect', '/$request_uri', 'denied', AUTH, 'differs: the auth config is dropped there'],
  ['auth-proxy-set-headers', 'auth-headers', 'kept', AUTH],
  ['auth-proxy-set-headers', 'a;b', 'ignored', AUTH],
  ['auth-always-set-cookie', 'true', 'kept', AUTH],
  ['auth-always-set-cookie', 'yes', 'denied', AUTH, 'differs: the auth config is dropped there'],
  ['auth-cache-key', '$http_authorization', 'kept', AUTH],
  ['auth-cache-key', '$http_x;drop', 'ignored', AUTH],
  ['auth-cache-duration', '200 202 401 5m, 403 1h', 'kept', AUTH],
  ['auth-cache-duration', '200 5m;', 'denied', AUTH, 'differs: the auth config is dropped there'],
  ['auth-cache-duration', '200 forever', 'denied', AUTH],
  ['enable-global-auth', 'false', 'kept'],
  ['enable-global-auth', 'nope', 'ignored'],
  ['auth-keepalive', '10', 'kept', AUTH],
  ['auth-keepalive', 'ten', 'ignored', AUTH],
  // basic auth: nothing is read without auth-type
  ['auth-type', 'basic', 'kept', { 'auth-secret': 'htpasswd' }],
  ['auth-type', 'ldap', 'dropped', { 'auth-secret': 'htpasswd' }],
  ['auth-secret', 'htpasswd', 'kept', { 'auth-type': 'basic' }],
  ['auth-secret', 'a b;c', 'denied', { 'auth-type': 'basic' }],
  ['auth-secret-type', 'auth-map', 'kept', BASIC],
  ['auth-secret-type', 'auth-db', 'dropped', BASIC],
  ['auth-realm', 'Team Area', 'kept', BASIC],
  ['auth-realm', 'Team "Area"', 'dropped', BASIC],
  ['auth-realm', 'Team "Area"', 'kept'],
  // client certificates
  ['auth-tls-secret', 'client-ca', 'kept'],
  ['auth-tls-secret', 'client-ca;x', 'dropped'],
  ['auth-tls-verify-client', 'optional', 'kept', CLIENT_TLS],
  ['auth-tls-verify-client', 'maybe', 'ignored', CLIENT_TLS],
  ['auth-tls-verify-depth', '2', 'kept', CLIENT_TLS],
  ['auth-tls-verify-depth', 'deep', 'ignored', CLIENT_TLS],
  ['auth-tls-error-page', 'https://err.example/cert', 'kept', CLIENT_TLS],
  ['auth-tls-error-page', 'https://err.example/a?b', 'dropped', CLIENT_TLS],
  ['auth-tls-pass-certificate-to-upstream', 'true', 'kept', CLIENT_TLS],
  ['auth-tls-pass-certificate-to-upstream', 'yes', 'dropped', CLIENT_TLS],
  ['auth-tls-match-cn', 'CN=client', 'kept', CLIENT_TLS],
  ['auth-tls-match-cn', 'client', 'dropped', CLIENT_TLS],
  // backend TLS
  ['proxy-ssl-secret', 'backend-tls', 'kept'],
  ['proxy-ssl-secret', 'backend;tls', 'dropped'],
  ['proxy-ssl-ciphers', 'ECDHE-RSA-AES128-GCM-SHA256', 'kept', BACKEND_TLS],
  ['proxy-ssl-ciphers', 'ECDHE;RSA', 'ignored', BACKEND_TLS],
  ['proxy-ssl-name', 'backend.internal', 'kept', BACKEND_TLS],
  ['proxy-ssl-name', 'backend;internal', 'ignored', BACKEND_TLS],
  ['proxy-ssl-protocols', 'TLSv1.2 TLSv1.3', 'kept', BACKEND_TLS],
  ['proxy-ssl-protocols', 'SSLv3', 'ignored', BACKEND_TLS],
  ['proxy-ssl-server-name', 'on', 'kept', BACKEND_TLS],
  ['proxy-ssl-server-name', 'yes', 'ignored', BACKEND_TLS],
  ['proxy-ssl-verify', 'off', 'kept', BACKEND_TLS],
  ['proxy-ssl-verify', 'yes', 'ignored', BACKEND_TLS],
  ['proxy-ssl-verify-depth', '2', 'kept', BACKEND_TLS],
  ['proxy-ssl-verify-depth', 'two', 'ignored', BACKEND_TLS],
  // canary parser: every value falls back to its default
  ['canary', 'true', 'kept'],
  ['canary', 'yes', 'ignored'],
  ['canary-weight', '10', 'kept', CANARY],
  ['canary-weight', 'ten', 'ignored', CANARY],
  ['canary-weight-total', '1000', 'kept', CANARY],
  ['canary-weight-total', 'x', 'ignored', CANARY],
  ['canary-by-header', 'X-Canary', 'kept', CANARY],
  ['canary-by-header', 'X;Canary', 'ignored', CANARY],
  ['canary-by-header-value', 'v1', 'kept', { ...CANARY, 'canary-by-header': 'X-Canary' }],
  ['canary-by-header-value', 'v1;x', 'ignored', { ...CANARY, 'canary-by-header': 'X-Canary' }],
  ['canary-by-header-pattern', '^v[0-9]$', 'kept', { ...CANARY, 'canary-by-header': 'X-Canary' }],
  ['canary-by-header-pattern', 'v1;x', 'ignored', { ...CANARY, 'canary-by-header': 'X-Canary' }],
  ['canary-by-cookie', 'canary', 'kept', CANARY],
  ['canary-by-cookie', 'can;ary', 'ignored', CANARY],
  // session affinity: every value falls back to its default
  ['affinity', 'cookie', 'kept'],
  ['affinity', 'ip', 'ignored'],
  ['affinity-mode', 'persistent', 'kept', COOKIE],
  ['affinity-mode', 'sometimes', 'ignored', COOKIE],
  ['affinity-canary-behavior', 'legacy', 'kept', COOKIE],
  ['affinity-canary-behavior', 'never', 'ignored', COOKIE],
  ['session-cookie-name', 'route', 'kept', COOKIE],
  ['session-cookie-name', 'route;x', 'ignored', COOKIE],
  ['session-cookie-path', '/shop', 'kept', COOKIE],
  ['session-cookie-path', '/shop; HttpOnly', 'ignored', COOKIE],
  ['session-cookie-path', '/läden', 'ignored', COOKIE],
  ['session-cookie-domain', 'shop.example', 'kept', COOKIE],
  ['session-cookie-domain', 'shop.example;x', 'ignored', COOKIE],
  ['session-cookie-expires', '3600', 'kept', COOKIE],
  ['session-cookie-expires', '1h', 'ignored', COOKIE],
  ['session-cookie-max-age', '3600', 'kept', COOKIE],
  ['session-cookie-max-age', '1h', 'ignored', COOKIE],
  ['session-cookie-secure', 'true', 'kept', COOKIE],
  ['session-cookie-secure', 'yes', 'ignored', COOKIE],
  ['session-cookie-samesite', 'Lax', 'kept', COOKIE],
  ['session-cookie-samesite', 'sometimes', 'ignored', COOKIE],
  ['session-cookie-conditional-samesite-none', 'true', 'kept', COOKIE],
  ['session-cookie-conditional-samesite-none', 'yes', 'ignored', COOKIE],
  ['session-cookie-change-on-failure', 'true', 'kept', COOKIE],
  ['session-cookie-change-on-failure', 'yes', 'ignored', COOKIE],
  // CORS: every value falls back to its default
  ['enable-cors', 'true', 'kept'],
  ['enable-cors', 'yes', 'ignored'],
  ['cors-allow-origin', 'https://a.example, https://*.b.example:8443', 'kept'],
  ['cors-allow-origin', 'https://a.example/path', 'ignored'],
  ['cors-allow-methods', 'GET, POST', 'kept'],
  ['cors-allow-methods', 'GET;POST', 'ignored'],
  ['cors-allow-headers', 'X-A, X-B', 'kept'],
  ['cors-allow-headers', 'X-A;', 'ignored'],
  ['cors-expose-headers', 'X-A, *', 'kept'],
  ['cors-expose-headers', 'X;A', 'ignored'],
  ['cors-allow-credentials', 'false', 'kept'],
  ['cors-allow-credentials', 'no', 'ignored'],
  ['cors-max-age', '600', 'kept'],
  ['cors-max-age', 'ten', 'ignored'],
  // access lists and rate limits
  ['allowlist-source-range', '10.0.0.0/8, 192.168.1.1', 'kept'],
  ['allowlist-source-range', '10.0.0.0/33', 'dropped', {}, 'differs: the location is denied (503) there'],
  ['whitelist-source-range', '10.0.0.0/8', 'kept'],
  ['whitelist-source-range', 'ten', 'dropped', {}, 'differs: the location is denied (503) there'],
  ['denylist-source-range', '10.0.0.0/8', 'kept'],
  ['denylist-source-range', 'ten', 'dropped', {}, 'differs: the location is denied (503) there'],
  ['limit-rps', '10', 'kept'],
  ['limit-rps', 'ten', 'dropped'],
  ['limit-rpm', '600', 'kept'],
  ['limit-rpm', 'many', 'dropped'],
  ['limit-connections', '5', 'kept'],
  ['limit-connections', 'five', 'dropped'],
  ['limit-allowlist', '10.0.0.0/8', 'kept', { 'limit-rps': '1' }],
  ['limit-allowlist', 'ten', 'dropped', { 'limit-rps': '1' }],
  ['limit-whitelist', '10.0.0.0/8', 'kept', { 'limit-rps': '1' }],
  ['limit-whitelist', 'ten', 'dropped', { 'limit-rps': '1' }],
  ['limit-burst-multiplier', '3', 'kept', { 'limit-rps': '1' }],
  ['limit-burst-multiplier', 'x', 'ignored', { 'limit-rps': '1' }],
  ['limit-rate', '100', 'kept'],
  ['limit-rate', 'fast', 'ignored'],
  ['limit-rate-after', '100', 'kept'],
  ['limit-rate-after', 'soon', 'ignored'],
  // proxy parser: every value falls back to the ConfigMap's
  ['proxy-connect-timeout', '10', 'kept'],
  ['proxy-connect-timeout', '10s', 'ignored'],
  ['proxy-send-timeout', '10', 'kept'],
  ['proxy-send-timeout', 'ten', 'ignored'],
  ['proxy-read-timeout', '10', 'kept'],
  ['proxy-read-timeout', '10m', 'ignored'],
  ['proxy-next-upstream', 'error timeout http_502', 'kept'],
  ['proxy-next-upstream', 'always', 'ignored'],
  ['proxy-next-upstream-tries', '2', 'kept'],
  ['proxy-next-upstream-tries', 'two', 'ignored'],
  ['proxy-next-upstream-timeout', '5', 'kept'],
  ['proxy-next-upstream-timeout', '5s', 'ignored'],
  ['proxy-body-size', '8m', 'kept'],
  ['proxy-body-size', '8 MB', 'ignored'],
  ['proxy-request-buffering', 'off', 'kept'],
  ['proxy-request-buffering', 'no', 'ignored'],
  ['proxy-buffering', 'on', 'kept'],
  ['proxy-buffering', 'yes', 'ignored'],
  ['proxy-http-version', '1.0', 'kept'],
  ['proxy-http-version', '2.0', 'ignored'],
  ['proxy-cookie-domain', 'internal.example example.com', 'kept'],
  ['proxy-cookie-domain', 'example.com', 'ignored'],
  ['proxy-cookie-domain', 'internal.example\nexample.com', 'ignored'],
  ['proxy-cookie-path', '/ /app', 'kept'],
  ['proxy-cookie-path', '/;x /app', 'ignored'],
  ['proxy-redirect-from', 'http://internal/', 'kept'],
  ['proxy-redirect-from', 'http://internal/<x>', 'ignored'],
  ['proxy-redirect-to', 'https://public.example/', 'kept'],
  ['proxy-redirect-to', 'https://public.example/$1', 'ignored'],
  ['proxy-buffer-size', '8k', 'kept'],
  ['proxy-buffer-size', '8 kB', 'ignored'],
  ['proxy-busy-buffers-size', '16k', 'kept'],
  ['proxy-busy-buffers-size', 'lots', 'ignored'],
  ['proxy-max-temp-file-size', '1024m', 'kept'],
  ['proxy-max-temp-file-size', '1 GB', 'ignored'],
  ['proxy-buffers-number', '4', 'kept'],
  ['proxy-buffers-number', 'four', 'ignored'],
  ['client-body-buffer-size', '16k', 'kept'],
  ['client-body-buffer-size', '16 KB', 'dropped'],
  ['http2-push-preload', 'false', 'kept'],
  ['http2-push-preload', 'no way', 'dropped'],
  ['connection-proxy-header', 'keep-alive', 'kept'],
  ['connection-proxy-header', 'Close', 'dropped'],
  ['upstream-vhost', 'internal.example', 'kept'],
  ['upstream-vhost', 'internal.example;x', 'dropped'],
  ['service-upstream', 'true', 'kept'],
  ['service-upstream', 'yes', 'ignored'],
  ['backend-protocol', 'grpc', 'kept'],
  ['backend-protocol', 'SPDY', 'ignored'],
  ['load-balance', ' ewma ', 'kept'],
  ['load-balance', 'random', 'dropped'],
  ['upstream-hash-by', '$request_uri', 'kept'],
  ['upstream-hash-by', '$request_uri;x', 'dropped'],
  ['upstream-hash-by-subset', 'true', 'kept', { 'upstream-hash-by': '$request_uri' }],
  ['upstream-hash-by-subset', 'yes', 'dropped', { 'upstream-hash-by': '$request_uri' }],
  ['upstream-hash-by-subset', 'yes', 'dropped'],
  ['upstream-hash-by-subset-size', '5', 'kept', { 'upstream-hash-by': '$request_uri' }],
  ['upstream-hash-by-subset-size', 'five', 'dropped', { 'upstream-hash-by': '$request_uri' }],
  // errors, headers, mirror, misc
  ['custom-http-errors', '404, 503', 'kept'],
  ['custom-http-errors', '404,abc', 'dropped'],
  ['default-backend', 'errors', 'kept'],
  ['default-backend', 'Errors_x', 'dropped'],
  ['disable-proxy-intercept-errors', 'true', 'kept'],
  ['disable-proxy-intercept-errors', 'yes', 'ignored'],
  ['custom-headers', 'response-headers', 'kept'],
  ['custom-headers', 'a;b', 'ignored'],
  ['mirror-target', 'https://mirror.example/copy', 'kept'],
  ['mirror-target', 'https://mirror.example/copy;x', 'ignored'],
  ['mirror-host', 'mirror.internal', 'kept', { 'mirror-target': 'https://mirror.example/copy' }],
  ['mirror-host', 'mirror;internal', 'ignored', { 'mirror-target': 'https://mirror.example/copy' }],
  ['mirror-request-body', 'off', 'kept', { 'mirror-target': 'https://mirror.example/copy' }],
  ['mirror-request-body', 'no', 'ignored', { 'mirror-target': 'https://mirror.example/copy' }],
  ['satisfy', 'any', 'kept'],
  ['satisfy', 'some', 'ignored'],
  ['enable-access-log', 'false', 'kept'],
  ['enable-access-log', 'no', 'ignored'],
  // opentelemetry parser: a bad boolean is "not set"; a bad operation name is a validation error;
  // trust and the name are read only with enable-opentelemetry: "true"
  ['enable-opentelemetry', 'true', 'kept'],
  ['enable-opentelemetry', 'yes', 'ignored'],
  ['opentelemetry-trust-incoming-span', 'false', 'kept', { 'enable-opentelemetry': 'true' }],
  ['opentelemetry-trust-incoming-span', 'nope', 'ignored', { 'enable-opentelemetry': 'true' }],
  ['opentelemetry-trust-incoming-span', 'nope', 'kept', {}, 'not read without enable-opentelemetry'],
  ['opentelemetry-operation-name', 'checkout_v2-api', 'kept', { 'enable-opentelemetry': 'true' }],
  ['opentelemetry-operation-name', 'HTTP $uri', 'dropped', { 'enable-opentelemetry': 'true' }],
  [
    'opentelemetry-operation-name',
    'HTTP $uri',
    'kept',
    { 'enable-opentelemetry': 'false' },
    'not read when off',
  ],
  ['enable-rewrite-log', 'true', 'kept'],
  ['enable-rewrite-log', 'yes', 'ignored'],
  ['server-alias', 'b.example, c.example', 'kept'],
  ['server-alias', 'b.example;x', 'dropped'],
  ['ssl-passthrough', 'true', 'kept'],
  ['ssl-passthrough', 'yes', 'dropped'],
];

const secret = (name: string, data: Record<string, string>): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'default' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const configMap = (name: string, data: Record<string, string>, namespace = 'default'): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const SECRETS = [
  secret('htpasswd', { auth: 'alice:{PLAIN}x\n' }),
  secret('client-ca', { 'ca.crt': pem('a-example').crt }),
  tlsSecret('backend-tls', pem('a-example')),
];
const CONFIG_MAPS = [configMap('auth-headers', { 'X-Extra': 'yes' }), configMap('response-headers', {})];
/** the paths answer 503 because of what the annotation says */
const DENIALS = new Set(['AUTH_UNAVAILABLE', 'PROXY_SSL_UNAVAILABLE', 'CUSTOM_HEADERS_DENIED']);

function buildWith(annotations: Record<string, string>, extra: { configMaps?: ConfigMap[] } = {}) {
  const backend = annotations.canary === undefined ? 'web:80' : 'canary:80';
  const site = ingress('a', { nginx: annotations, rules: [rule('a.com', path('/', backend))] });
  // a canary needs the route it shadows
  const main = ingress('main', { rules: [rule('a.com', path('/', 'web:80'))] });
  return build({
    ingresses: annotations.canary === undefined ? [site] : [main, site],
    secrets: SECRETS,
    services: [service('errors', [{ port: 80 }])],
    configMaps: [...CONFIG_MAPS, ...(extra.configMaps ?? [])],
  });
}

/** its routes are in the model (as a canary too), or it lost its path to the older main Ingress */
function served(result: BuildResult): boolean {
  return (
    result.model.servers.some((server) =>
      server.routes.some((r) => r.ingress?.name === 'a' || r.canary?.ingress.name === 'a'),
    ) || result.diagnostics.some((d) => d.name === 'a' && d.code === 'PATH_CONFLICT')
  );
}

function outcomeOf(result: BuildResult, name: string): Outcome {
  const own = result.diagnostics.filter((d) => d.kind === 'Ingress' && d.name === 'a');
  const invalid = own.filter((d) => d.code === 'ANNOTATION_INVALID' && d.message.includes(`/${name}=`));
  if (invalid.some((d) => d.severity === 'error')) return 'dropped';
  if (own.some((d) => DENIALS.has(d.code) && d.message.startsWith(`${name} `))) return 'denied';
  if (invalid.length > 0) return 'ignored';
  return 'kept';
}

t.test('each annotation: a value ingress-nginx accepts, one it refuses, with its outcome', async (t) => {
  for (const [name, value, expected, companions = {}, note] of ROWS) {
    const result = buildWith({ ...companions, [name]: value });
    const label = `${name}: ${JSON.stringify(value)}${Object.keys(companions).length > 0 ? ` with ${Object.keys(companions).join(', ')}` : ''}${note === undefined ? '' : ` (${note})`}`;
    t.equal(outcomeOf(result, name), expected, label);
    t.equal(
      served(result),
      expected !== 'dropped',
      `${label}: the Ingress is ${expected === 'dropped' ? 'skipped' : 'served'}`,
    );
    // no other annotation of the row made the Ingress fail
    const others = result.diagnostics.filter(
      (d) => d.name === 'a' && d.code === 'ANNOTATION_INVALID' && !d.message.includes(`/${name}=`),
    );
    t.strictSame(others, [], `${label}: the companions are valid`);
  }
});

t.test(
  'every supported annotation, and every tuning one with a validator, has both kinds of rows',
  async (t) => {
    const names = [
      // the snippets are read under the ConfigMap's snippet policy: their tables are in snippets.test.ts
      ...SUPPORTED_ANNOTATIONS.map((a) => a.name).filter((n) => !n.endsWith('-snippet')),
      ...Object.keys(NOT_APPLICABLE_ANNOTATIONS).filter((n) => !n.startsWith('auth-keepalive-')),
    ];
    for (const name of names) {
      const rows = ROWS.filter((r) => r[0] === name);
      t.ok(
        rows.some((r) => r[2] === 'kept'),
        `${name}: a value that is kept`,
      );
      t.ok(
        rows.some((r) => r[2] !== 'kept'),
        `${name}: a value that is refused`,
      );
    }
  },
);

t.test('the refusals say what was refused and what happened', async (t) => {
  const dropped = buildWith({ 'permanent-redirect': 'https://x.example$request_uri' });
  t.match(dropped.diagnostics, [
    {
      code: 'ANNOTATION_INVALID',
      severity: 'error',
      message:
        /permanent-redirect="https:\/\/x.example\$request_uri" is invalid \(.*, no NGINX variables\); the Ingress is ignored/,
    },
  ]);
  const denied = buildWith({ ...AUTH, 'auth-request-redirect': '/zurück' });
  t.match(denied.diagnostics, [
    {
      code: 'AUTH_UNAVAILABLE',
      severity: 'error',
      message: /^auth-request-redirect "\/zurück" is invalid .*answer 503 \(never unauthenticated\)/,
    },
  ]);
  t.equal(
    denied.model.servers[0]?.routes[0]?.annotations.externalAuth.auth?.denied?.startsWith(
      'auth-request-redirect',
    ),
    true,
  );
  const ignored = buildWith({ 'app-root': 'app1' });
  t.match(ignored.diagnostics, [
    { code: 'ANNOTATION_INVALID', severity: 'warning', message: /the default is used/ },
  ]);
  t.equal(ignored.model.servers[0]?.annotations.appRoot.path, null, 'no app-root');
});

const BLOCKLIST_OPTIONS = { configMap: 'ingress/ingress-ts' };
const buildBlocked = (words: string, annotations: Record<string, Record<string, string>>) =>
  build(
    {
      ingresses: Object.entries(annotations).map(([name, nginx]) =>
        ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'))] }),
      ),
      configMaps: [configMap('ingress-ts', { 'annotation-value-word-blocklist': words }, 'ingress')],
    },
    BLOCKLIST_OPTIONS,
  );

t.test('annotation-value-word-blocklist: an Ingress with a blocked word in a value is skipped', async (t) => {
  const result = buildBlocked('load_module, lua_package ,serviceaccount', {
    a: { 'auth-url': 'http://auth.svc/verify?x=serviceaccount' },
    b: { 'rewrite-target': '/lua_package' },
    c: { 'rewrite-target': '/fine' },
    d: {},
  });
  t.strictSame(
    result.model.servers.map((s) => s.hostname),
    ['c.com', 'd.com'],
    'a and b are skipped, the words trimmed',
  );
  t.strictSame(
    result.diagnostics
      .filter((d) => d.code === 'ANNOTATION_VALUE_BLOCKED')
      .map((d) => [d.name, d.severity])
      .sort(),
    [
      ['a', 'error'],
      ['b', 'error'],
    ],
  );
  const message = result.diagnostics.find((d) => d.name === 'a')?.message ?? '';
  t.match(message, 'nginx.ingress.kubernetes.io/auth-url contains "serviceaccount"');
  t.notMatch(message, 'auth.svc', 'the value itself is not shown');
});

t.test(
  'annotation-value-word-blocklist: only values under the prefix; empty words never match',
  async (t) => {
    const result = build(
      {
        ingresses: [
          ingress('a', {
            annotations: { 'example.com/note': 'load_module here' },
            rules: [rule('a.com', path('/', 'web:80'))],
          }),
          ingress('b', { nginx: { 'rewrite-target': '/x' }, rules: [rule('b.com', path('/', 'web:80'))] }),
        ],
        configMaps: [
          configMap('ingress-ts', { 'annotation-value-word-blocklist': 'load_module,, ,' }, 'ingress'),
        ],
      },
      BLOCKLIST_OPTIONS,
    );
    t.strictSame(
      result.model.servers.map((s) => s.hostname),
      ['a.com', 'b.com'],
    );
    t.equal(result.model.config.annotationValueWordBlocklist.length, 1);
    t.notOk(result.diagnostics.some((d) => d.code === 'ANNOTATION_VALUE_BLOCKED'));
  },
);

t.test('annotation-value-word-blocklist: unset, nothing is blocked', async (t) => {
  const result = build({
    ingresses: [
      ingress('a', {
        nginx: { 'rewrite-target': '/load_module' },
        rules: [rule('a.com', path('/', 'web:80'))],
      }),
    ],
  });
  t.equal(result.model.servers.length, 1);
  t.strictSame(result.model.config.annotationValueWordBlocklist, []);
});

const buildAtRisk = (level: string | undefined, annotations: Record<string, Record<string, string>>) =>
  build(
    {
      ingresses: Object.entries(annotations).map(([name, nginx]) =>
        ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'))] }),
      ),
      configMaps:
        level === undefined ? [] : [configMap('ingress-ts', { 'annotations-risk-level': level }, 'ingress')],
    },
    BLOCKLIST_OPTIONS,
  );
const hosts = (result: BuildResult) => result.model.servers.map((s) => s.hostname);
const risky = (result: BuildResult) =>
  result.diagnostics
    .filter((d) => d.code === 'ANNOTATION_TOO_RISKY')
    .map((d) => d.name)
    .sort();
const RISK_INGRESSES = {
  low: { 'proxy-read-timeout': '10', 'ssl-redirect': 'false' },
  medium: { 'rewrite-target': '/', 'proxy-read-timeout': '10' },
  high: { 'server-alias': 'www.high.com' },
  // an empty value is refused all the same: ingress-nginx rates the name, not the value
  empty: { 'upstream-hash-by': '' },
  // an annotation ingress-ts does not implement still has ingress-nginx's risk
  unknown: { 'modsecurity-transaction-id': '$request_id' },
  alias: { 'whitelist-source-range': '10.0.0.0/8' },
};

t.test('annotations-risk-level: High (the default) refuses nothing but snippets', async (t) => {
  for (const level of [undefined, 'High', 'high', 'Critical']) {
    const result = buildAtRisk(level, RISK_INGRESSES);
    t.strictSame(risky(result), [], `${level}: none refused`);
    t.equal(hosts(result).length, 6, `${level}: all served`);
  }
  const snippet = buildAtRisk('Critical', { s: { 'server-snippet': 'return 200;' } });
  t.strictSame(snippet.model.servers, [], 'a snippet is refused even at Critical');
  t.match(snippet.diagnostics, [{ code: 'SNIPPET_REFUSED' }]);
});

t.test('annotations-risk-level: Medium refuses High annotations, Low refuses Medium too', async (t) => {
  const medium = buildAtRisk('Medium', RISK_INGRESSES);
  t.strictSame(risky(medium), ['empty', 'high', 'unknown']);
  t.strictSame(hosts(medium).sort(), ['alias.com', 'low.com', 'medium.com']);
  const low = buildAtRisk('low', RISK_INGRESSES);
  t.strictSame(risky(low), ['alias', 'empty', 'high', 'medium', 'unknown']);
  t.strictSame(hosts(low), ['low.com']);
  const message = medium.diagnostics.find((d) => d.name === 'high')?.message ?? '';
  t.match(message, 'annotation nginx.ingress.kubernetes.io/server-alias has risk High');
  t.notMatch(message, 'www.high.com', 'the value itself is not shown');
  t.equal(medium.diagnostics.find((d) => d.name === 'high')?.severity, 'error');
});

t.test('annotations-risk-level: a misspelt level is reported and High kept', async (t) => {
  const result = buildAtRisk('Hgih', RISK_INGRESSES);
  t.equal(result.model.config.annotationsRiskLevel, 'High');
  t.match(result.diagnostics, [{ code: 'CONFIG_VALUE_INVALID', message: /annotations-risk-level/ }]);
  t.equal(hosts(result).length, 6);
});

t.test('every annotation ingress-ts parses has the risk ingress-nginx gives it', async (t) => {
  // spot checks against ingress-nginx's parsers; the whole table is in lib/model/annotations/risk.ts
  const expected: Record<string, string> = {
    'auth-url': 'High',
    'auth-signin': 'High',
    'mirror-target': 'High',
    'upstream-hash-by': 'High',
    'proxy-ssl-name': 'High',
    'auth-tls-match-cn': 'High',
    'permanent-redirect': 'Medium',
    'session-cookie-path': 'Medium',
    'auth-secret': 'Medium',
    'whitelist-source-range': 'Medium',
    'limit-whitelist': 'Low',
    'ssl-passthrough': 'Low',
    'configuration-snippet': 'Critical',
  };
  for (const [name, risk] of Object.entries(expected)) t.equal(annotationRisk(name), risk, name);
});

t.test(
  'global-auth-request-redirect: a value that cannot be a header is refused when the ConfigMap is read',
  async (t) => {
    const read = (value: string) =>
      build(
        {
          ingresses: [],
          configMaps: [
            configMap(
              'ingress-ts',
              { 'global-auth-url': 'http://auth.svc/verify', 'global-auth-request-redirect': value },
              'ingress',
            ),
          ],
        },
        BLOCKLIST_OPTIONS,
      );
    t.equal(read('/back?x=$request_uri').model.config.globalAuth.requestRedirect, '/back?x=$request_uri');
    const refused = read('/zurück');
    t.equal(refused.model.config.globalAuth.requestRedirect, '', 'the default: the request URI');
    t.match(refused.diagnostics, [{ code: 'CONFIG_VALUE_INVALID', message: /global-auth-request-redirect/ }]);
  },
);

t.test('a refused URL is shown without its userinfo and query values', async (t) => {
  const cases: Array<Record<string, string>> = [
    { 'permanent-redirect': 'https://user:s3cr3t-a@new.example/x?token=s3cr3t-b' },
    { 'temporal-redirect': 'https://new.example/$uri?key=s3cr3t-b' },
    { 'auth-url': 'http://user:s3cr3t-a@auth.svc/verify?key=s3cr3t-b' },
    { 'auth-url': 'ftp://user:s3cr3t-a@auth.svc/?key=s3cr3t-b' },
    { ...AUTH, 'auth-signin': 'https://user:s3cr3t-a@login.example/?key=s3cr3t-b' },
    { ...AUTH, 'auth-request-redirect': '/back?token=s3cr3t-b&x=ü' },
  ];
  for (const annotations of cases) {
    const result = buildWith(annotations);
    const text = JSON.stringify(result.diagnostics);
    t.ok(result.diagnostics.length > 0, `${Object.keys(annotations).join(', ')}: refused`);
    t.notMatch(text, 's3cr3t', `${Object.keys(annotations).join(', ')}: no credential in ${text}`);
  }
});
