// Authentication in the model: auth-type/auth-secret resolved against the snapshot's Secrets (file and
// map, namespaces, allow-cross-namespace-resources), the 503 denials with AUTH_UNAVAILABLE, invalid
// values that skip the Ingress, auth-url and its companions, auth-proxy-set-headers, the global-auth-*
// keys, and the Secrets recorded as references.
import t from 'tap';
import type { Secret } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases } from './helpers.ts';

const secret = (name: string, data: Record<string, string>, namespace = 'default'): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const configMap = (name: string, namespace: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const site = (name: string, nginx: Record<string, string> = {}) =>
  ingress(name, { nginx, rules: [rule(`${name}.com`, path('/', 'web:80'))] });
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const HTPASSWD = secret('htpasswd', {
  auth: '# team\nalice:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n\nbob:{PLAIN}x\n',
});

runCases(t, [
  {
    name: 'auth: an htpasswd Secret is read into the route; the Secret is a reference',
    ingresses: [site('a', { 'auth-type': 'basic', 'auth-secret': 'htpasswd', 'auth-realm': 'Team' })],
    secrets: [HTPASSWD],
    check: (t, { model, references }) => {
      const route = model.servers[0]?.routes[0];
      t.strictSame(route?.annotations.basicAuth.auth, {
        type: 'basic',
        secret: 'default/htpasswd',
        secretType: 'auth-file',
        realm: 'Team',
        users: [
          ['alice', '{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ='],
          ['bob', '{PLAIN}x'],
        ],
        denied: null,
      });
      t.strictSame(
        model.servers[0]?.defaultRoute.annotations.basicAuth.auth?.users.length,
        2,
        'the host default too',
      );
      t.ok(references.secrets.includes('default/htpasswd'));
    },
  },
  {
    name: 'auth: auth-map takes one key per user',
    ingresses: [site('a', { 'auth-type': 'basic', 'auth-secret': 'm', 'auth-secret-type': 'auth-map' })],
    secrets: [secret('m', { zed: 'hash-z', amy: 'hash-a\n' })],
    check: (t, { model }) =>
      t.strictSame(model.servers[0]?.routes[0]?.annotations.basicAuth.auth?.users, [
        ['amy', 'hash-a'],
        ['zed', 'hash-z'],
      ]),
  },
  {
    name: 'auth: missing Secret, missing key, digest and no auth-secret deny the paths (503)',
    ingresses: [
      site('missing', { 'auth-type': 'basic', 'auth-secret': 'nope' }),
      site('nokey', { 'auth-type': 'basic', 'auth-secret': 'other' }),
      site('digest', { 'auth-type': 'digest', 'auth-secret': 'htpasswd' }),
      site('nosecret', { 'auth-type': 'basic' }),
    ],
    secrets: [HTPASSWD, secret('other', { users: 'x' })],
    diagnostics: [
      'AUTH_UNAVAILABLE digest',
      'AUTH_UNAVAILABLE missing',
      'AUTH_UNAVAILABLE nokey',
      'AUTH_UNAVAILABLE nosecret',
    ],
    messages: [
      'auth-secret default/nope does not exist',
      'has no key "auth"',
      'digest is not supported',
      'answer 503',
    ],
    check: (t, { model }) => {
      for (const server of model.servers) t.not(server.routes[0]?.annotations.basicAuth.auth?.denied, null);
    },
  },
  {
    name: 'auth: another namespace needs allow-cross-namespace-resources',
    ingresses: [site('a', { 'auth-type': 'basic', 'auth-secret': 'vault/htpasswd' })],
    secrets: [secret('htpasswd', { auth: 'u:{PLAIN}p' }, 'vault')],
    diagnostics: ['AUTH_UNAVAILABLE a'],
    messages: ['vault/htpasswd is in another namespace'],
    check: (t, { references }) => t.notOk(references.secrets.includes('vault/htpasswd'), 'never looked up'),
  },
  {
    name: 'auth: allow-cross-namespace-resources "true" lets it through',
    ingresses: [site('a', { 'auth-type': 'basic', 'auth-secret': 'vault/htpasswd' })],
    secrets: [secret('htpasswd', { auth: 'u:{PLAIN}p' }, 'vault')],
    configMaps: [configMap('ingress-ts', 'ingress', { 'allow-cross-namespace-resources': 'true' })],
    options: OPTIONS,
    check: (t, { model }) =>
      t.match(model.servers[0]?.routes[0]?.annotations.basicAuth.auth, {
        secret: 'vault/htpasswd',
        users: [['u', '{PLAIN}p']],
        denied: null,
      }),
  },
  {
    name: 'auth: invalid auth-type, auth-secret-type and auth-realm skip the Ingress',
    ingresses: [
      site('type', { 'auth-type': 'ntlm', 'auth-secret': 'htpasswd' }),
      site('stype', { 'auth-type': 'basic', 'auth-secret': 'htpasswd', 'auth-secret-type': 'file' }),
      site('realm', { 'auth-type': 'basic', 'auth-secret': 'htpasswd', 'auth-realm': 'a"b' }),
      site('ok', {}),
    ],
    secrets: [HTPASSWD],
    routes: ['ok.com Prefix / -> default-web-80 (ok)'],
    diagnostics: ['ANNOTATION_INVALID realm', 'ANNOTATION_INVALID stype', 'ANNOTATION_INVALID type'],
  },
  {
    name: 'external auth: auth-url and its companions; auth-proxy-set-headers resolved',
    ingresses: [
      site('a', {
        'auth-url': 'http://auth.svc/check?u=$escaped_request_uri',
        'auth-method': 'POST',
        'auth-signin': 'https://login.example/',
        'auth-signin-redirect-param': 'back',
        'auth-response-headers': 'X-User, X-Email',
        'auth-request-redirect': '/home',
        'auth-proxy-set-headers': 'auth-headers',
        'auth-always-set-cookie': 'true',
        'auth-cache-key': '$http_authorization',
        'auth-cache-duration': '200 202 10m, any 1h30m30',
        'enable-global-auth': 'false',
      }),
    ],
    configMaps: [configMap('auth-headers', 'default', { 'X-Extra': 'yes' })],
    check: (t, { model, references }) => {
      t.strictSame(model.servers[0]?.routes[0]?.annotations.externalAuth, {
        auth: {
          url: 'http://auth.svc/check?u=$escaped_request_uri',
          method: 'POST',
          signin: 'https://login.example/',
          signinRedirectParam: 'back',
          responseHeaders: ['X-User', 'X-Email'],
          requestRedirect: '/home',
          proxySetHeaders: 'default/auth-headers',
          proxyHeaders: [['X-Extra', 'yes']],
          alwaysSetCookie: true,
          cacheKey: '$http_authorization',
          cacheDuration: [
            { codes: [200, 202], seconds: 600 },
            { codes: ['any'], seconds: 5430 },
          ],
          denied: null,
        },
        enableGlobalAuth: false,
      });
      t.ok(references.configMaps?.includes('default/auth-headers'));
    },
  },
  {
    name: 'external auth: a non-http auth-url or a missing auth-proxy-set-headers denies (503)',
    ingresses: [
      site('ftp', { 'auth-url': 'ftp://auth.svc/' }),
      site('cm', { 'auth-url': 'http://auth.svc/', 'auth-proxy-set-headers': 'nope' }),
      site('cross', { 'auth-url': 'http://auth.svc/', 'auth-proxy-set-headers': 'other/headers' }),
    ],
    diagnostics: ['AUTH_UNAVAILABLE cm', 'AUTH_UNAVAILABLE cross', 'AUTH_UNAVAILABLE ftp'],
    messages: ['is not an http or https URL', 'ConfigMap default/nope does not exist', 'another namespace'],
  },
  {
    name: 'external auth: an invalid auth-method or auth-response-headers denies (503), as ingress-nginx',
    ingresses: [
      site('method', { 'auth-url': 'http://auth.svc/', 'auth-method': 'FETCH' }),
      site('headers', { 'auth-url': 'http://auth.svc/', 'auth-response-headers': 'X-Ok, Bad:Header' }),
    ],
    diagnostics: ['AUTH_UNAVAILABLE headers', 'AUTH_UNAVAILABLE method'],
    messages: ['auth-method "FETCH" is invalid', 'auth-response-headers "X-Ok, Bad:Header" is invalid'],
  },
  {
    name: 'external auth: an invalid auth-signin is ignored (warning); the auth stays',
    ingresses: [site('signin', { 'auth-url': 'http://auth.svc/', 'auth-signin': 'login' })],
    diagnostics: ['ANNOTATION_INVALID signin'],
    messages: ['the default is used'],
    check: (t, { model }) => {
      const auth = model.servers[0]?.routes[0]?.annotations.externalAuth.auth;
      t.equal(auth?.signin, null);
      t.equal(auth?.denied, null);
    },
  },
  {
    name: 'external auth: an invalid auth-cache-duration denies (503) where ingress-nginx would drop the auth',
    ingresses: [site('a', { 'auth-url': 'http://auth.svc/', 'auth-cache-duration': 'forever' })],
    diagnostics: ['AUTH_UNAVAILABLE a'],
    messages: ['auth-cache-duration "forever" is invalid'],
  },
  {
    name: 'global auth: the ConfigMap keys; an invalid URL keeps global auth off',
    ingresses: [],
    configMaps: [
      configMap('ingress-ts', 'ingress', {
        'global-auth-url': 'https://auth.example/verify',
        'global-auth-method': 'GET',
        'global-auth-signin': 'https://login.example/',
        'global-auth-signin-redirect-param': 'next',
        'global-auth-response-headers': 'X-User',
        'global-auth-request-redirect': '/x',
        'global-auth-always-set-cookie': 'true',
        'global-auth-cache-key': '$cookie_session',
        'global-auth-cache-duration': '1m',
        'no-auth-locations': '/health, /.well-known/acme-challenge',
      }),
    ],
    options: OPTIONS,
    check: (t, { model }) =>
      t.strictSame(model.config.globalAuth, {
        url: 'https://auth.example/verify',
        method: 'GET',
        signin: 'https://login.example/',
        signinRedirectParam: 'next',
        responseHeaders: ['X-User'],
        requestRedirect: '/x',
        alwaysSetCookie: true,
        cacheKey: '$cookie_session',
        cacheDuration: [{ codes: [], seconds: 60 }],
        noAuthLocations: ['/health', '/.well-known/acme-challenge'],
      }),
  },
  {
    name: 'global auth: invalid values are reported and ignored',
    ingresses: [],
    configMaps: [
      configMap('ingress-ts', 'ingress', {
        'global-auth-url': 'auth.example/verify',
        'global-auth-method': 'FETCH',
        'global-auth-cache-duration': '200 soon',
        'allow-cross-namespace-resources': 'yes',
      }),
    ],
    options: OPTIONS,
    diagnostics: Array.from({ length: 4 }, () => 'CONFIG_VALUE_INVALID ConfigMap:ingress/ingress-ts'),
    check: (t, { model }) => {
      t.equal(model.config.globalAuth.url, '');
      t.equal(model.config.globalAuth.method, null);
      t.equal(model.config.allowCrossNamespaceResources, false);
    },
  },
]);
