// Names under the prefix that ingress-ts does not parse: an ingress-nginx annotation it lacks is "not
// supported yet"; a name ingress-nginx never had is ANNOTATION_UNKNOWN (both controllers ignore it),
// with a hint when one can be told. A refused snippet names what does its directives' job.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { SUPPORTED_ANNOTATIONS } from '../../lib/model/annotations/index.ts';
import {
  INGRESS_NGINX_ANNOTATIONS,
  INGRESS_NGINX_CONFIG_KEYS,
} from '../../lib/model/annotations/ingress-nginx-names.ts';
import { SNIPPET_HINTS, snippetHint } from '../../lib/model/annotations/snippet-hints.ts';
import { SUPPORTED_CONFIG_KEYS } from '../../lib/model/configmap/index.ts';
import { ingress, PREFIX, path, rule, runCases } from './helpers.ts';

const site = (name: string, nginx: Record<string, string>, host = 'a.com') =>
  ingress(name, { nginx, rules: [rule(host, path('/app', 'web:80'))] });

runCases(t, [
  {
    name: 'names: a ConfigMap key written as an annotation is unknown to ingress-nginx, and said so',
    ingresses: [site('a', { 'ssl-protocols': 'TLSv1.3' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
    diagnostics: ['ANNOTATION_UNKNOWN a'],
    messages: [
      `${PREFIX}/ssl-protocols is not an ingress-nginx annotation: ingress-nginx ignores it, and so does ingress-ts; ssl-protocols is a key of the global ConfigMap (--configmap), where ingress-ts applies it to every Ingress`,
    ],
  },
  {
    name: 'names: a removed annotation says what replaced it',
    ingresses: [
      site('a', { 'session-cookie-hash': 'sha1' }),
      site('b', { 'secure-backends': 'true' }, 'b.com'),
    ],
    diagnostics: ['ANNOTATION_UNKNOWN a', 'ANNOTATION_UNKNOWN b'],
    messages: [
      `${PREFIX}/session-cookie-hash is not an ingress-nginx annotation`,
      'ingress-nginx 0.24 removed it',
      'backend-protocol: HTTPS does its job',
    ],
  },
  {
    name: 'names: a typo of an ingress-nginx annotation suggests it',
    ingresses: [site('a', { 'proxy-body-sise': '8m', 'completely-made-up-name': 'x' })],
    diagnostics: ['ANNOTATION_UNKNOWN a', 'ANNOTATION_UNKNOWN a'],
    messages: [
      `did you mean ${PREFIX}/proxy-body-size?`,
      `${PREFIX}/completely-made-up-name is not an ingress-nginx annotation: ingress-nginx ignores it, and so does ingress-ts`,
    ],
    check: (t, { diagnostics }) => {
      const madeUp = diagnostics.find((d) => d.message.includes('completely-made-up-name'));
      t.notMatch(madeUp?.message ?? '', /did you mean|ConfigMap/, 'no hint when none fits');
    },
  },
  {
    name: 'names: an ingress-nginx annotation ingress-ts lacks stays "not supported yet"',
    ingresses: [site('a', { 'fastcgi-index': 'index.php', 'enable-modsecurity': 'true' })],
    diagnostics: ['ANNOTATION_UNSUPPORTED a', 'ANNOTATION_UNSUPPORTED a'],
    messages: [`${PREFIX}/fastcgi-index is not supported by ingress-ts yet`],
  },
  {
    name: 'names: a *-snippet name ingress-nginx does not have is no code: the Ingress is served',
    ingresses: [site('a', { 'location-snippet': 'deny all;' })],
    routes: ['a.com Prefix /app -> default-web-80 (a)'],
    diagnostics: ['ANNOTATION_UNKNOWN a'],
    messages: [`${PREFIX}/location-snippet is not an ingress-nginx annotation`],
  },
  {
    name: 'snippets: a refusal names the annotation that does the job',
    ingresses: [
      site('headers', {
        'configuration-snippet':
          'more_set_headers "X-Frame-Options: DENY";\nmore_set_headers "Cache-Control: no-store";',
      }),
      site(
        'websocket',
        {
          'configuration-snippet':
            'proxy_set_header Upgrade $http_upgrade;\nproxy_set_header Connection "upgrade";',
        },
        'b.com',
      ),
      site('proto', { 'configuration-snippet': 'proxy_set_header X-Forwarded-Proto https;' }, 'c.com'),
      site(
        'auth',
        { 'configuration-snippet': 'auth_request_set $token $upstream_http_x_auth_token;' },
        'd.com',
      ),
      site('opaque', { 'server-snippet': 'location /x { }' }, 'e.com'),
    ],
    routes: [],
    diagnostics: [
      'SNIPPET_REFUSED headers',
      'SNIPPET_REFUSED websocket',
      'SNIPPET_REFUSED proto',
      'SNIPPET_REFUSED auth',
      'SNIPPET_REFUSED opaque',
    ],
    messages: [
      'so the Ingress is ignored; for its more_set_headers X-Frame-Options, Cache-Control: the annotation custom-headers or the ConfigMap key add-headers',
      'for its proxy_set_header Upgrade, Connection: nothing is needed (ingress-ts proxies WebSocket upgrades as they are)',
      'for its proxy_set_header X-Forwarded-Proto: nothing is needed (ingress-ts sets the X-Forwarded-* and X-Real-IP headers itself',
      'for its auth_request_set: the annotation auth-response-headers',
    ],
    check: (t, { diagnostics }) => {
      const opaque = diagnostics.find((d) => d.name === 'opaque');
      t.equal(
        opaque?.message,
        `annotation ${PREFIX}/server-snippet is configuration code; ingress-ts never runs snippets, so the Ingress is ignored`,
        'no hint when no directive is known',
      );
    },
  },
]);

t.test('snippetHint: directives to annotations and ConfigMap keys', async (t) => {
  const cases: Array<[string, string | null]> = [
    [
      'add_header Strict-Transport-Security "max-age=31536000" always;',
      'for its add_header Strict-Transport-Security: the ConfigMap keys hsts, hsts-max-age, hsts-include-subdomains, hsts-preload',
    ],
    [
      'more_set_headers -s "200 301" "Content-Security-Policy: default-src \'self\'";',
      'for its more_set_headers Content-Security-Policy: the annotation custom-headers or the ConfigMap key add-headers',
    ],
    ['expires 1h;', 'for its expires: the annotation custom-headers or the ConfigMap key add-headers'],
    ['proxy_set_header Host example.com;', 'for its proxy_set_header Host: the annotation upstream-vhost'],
    [
      'proxy_set_header X-Tenant acme;',
      'for its proxy_set_header X-Tenant: the ConfigMap key proxy-set-headers',
    ],
    [
      'if ($scheme = http) { return 301 https://$host$request_uri; }',
      'for its return: the annotations permanent-redirect, permanent-redirect-code',
    ],
    ['return 302 /login;', 'for its return: the annotations temporal-redirect, temporal-redirect-code'],
    ['return 200 "ok";', null],
    ['rewrite ^/old/(.*)$ /new/$1 break;', 'for its rewrite: the annotations rewrite-target, use-regex'],
    [
      'client_max_body_size 50m;\nproxy_read_timeout 300;',
      'for its client_max_body_size: the annotation proxy-body-size; proxy_read_timeout: the annotation proxy-read-timeout',
    ],
    [
      'allow 10.0.0.0/8;\ndeny all;',
      'for its allow: the annotation allowlist-source-range; deny: the annotation denylist-source-range',
    ],
    ['more_clear_headers Server;', 'for its more_clear_headers Server: the ConfigMap key hide-headers'],
    [
      '# keep the body small\nclient_max_body_size 1m; gzip on;',
      'for its client_max_body_size: the annotation proxy-body-size; no annotation or ConfigMap key does what gzip does',
    ],
    ['', null],
    ['lua_need_request_body on;', null],
  ];
  for (const [snippet, expected] of cases) t.equal(snippetHint(snippet), expected, snippet);
});

t.test('snippetHint: values never reach the message (they may be credentials)', async (t) => {
  const hint = snippetHint(
    'proxy_set_header Authorization "Bearer s3cr3t-token";\nmore_set_headers "X-Api-Key: hunter2";',
  );
  t.match(hint, /proxy_set_header Authorization/);
  t.notMatch(hint, /s3cr3t|hunter2|Bearer/);
  const bare = snippetHint('more_set_headers "s3cr3t-token";');
  t.notMatch(bare, /s3cr3t/, 'a more_set_headers argument without "Name:" is not taken for a name');
});

t.test('every suggestion names an annotation or ConfigMap key ingress-ts supports', async (t) => {
  const annotations = new Set(SUPPORTED_ANNOTATIONS.map((a) => a.name));
  for (const hint of SNIPPET_HINTS) {
    for (const name of hint.annotations ?? []) t.ok(annotations.has(name), `annotation ${name}`);
    for (const key of hint.configKeys ?? [])
      t.ok(SUPPORTED_CONFIG_KEYS.includes(key), `ConfigMap key ${key}`);
    t.ok(
      hint.nothingNeeded !== undefined || (hint.annotations ?? hint.configKeys) !== undefined,
      `${hint.directives.join(', ')} suggests something`,
    );
  }
});

t.test("ingress-nginx's annotations are exactly the rows of docs/annotations.md", async (t) => {
  const doc = readFileSync(new URL('../../docs/annotations.md', import.meta.url), 'utf8');
  const rows = new Set([...doc.matchAll(/^\| `([a-z0-9-]+)` \| \*\*/gm)].map((m) => m[1] as string));
  t.same([...INGRESS_NGINX_ANNOTATIONS].sort(), [...rows].sort());
  for (const name of SUPPORTED_ANNOTATIONS) t.ok(INGRESS_NGINX_ANNOTATIONS.has(name.name), name.name);
  for (const key of SUPPORTED_CONFIG_KEYS) t.ok(INGRESS_NGINX_CONFIG_KEYS.has(key), `ConfigMap key ${key}`);
});
