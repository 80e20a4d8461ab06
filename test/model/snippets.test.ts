// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings hold NGINX's ${var} syntax, not templates
// Snippets in the model: where ingress-nginx accepts them (allow-snippet-annotations "true" and
// annotations-risk-level Critical) a configuration-snippet or server-snippet of header and return
// directives becomes rules on the routes (SNIPPET_READ); anything else (another directive, a block,
// a variable in a header value, text NGINX would read otherwise) refuses the whole snippet and drops
// the Ingress as before (SNIPPET_REFUSED naming the directive, never a value); without both keys
// nothing changes. The oldest Ingress's server-snippet wins a host.
import t, { type Test } from 'tap';
import type { BuildResult } from '../../lib/model/index.ts';
import { ingress, path, rule, runCases } from './helpers.ts';

const global = (data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});
const ALLOWED = global({ 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' });
const OPTIONS = { configMap: 'ingress/ingress-ts' };
const site = (nginx: Record<string, string>, name = 'site', created = 0, paths = ['/', '/x']) =>
  ingress(name, {
    nginx,
    created,
    rules: [rule('a.com', ...paths.map((p) => path(p, 'web:80')))],
  });
const rulesOf = (result: BuildResult, index = 0) =>
  result.model.servers[0]?.routes[index]?.annotations.snippet.rules;
const snippet = (text: string) => site({ 'configuration-snippet': text });

/** Each accepted directive: the snippet → its rules on every route of the Ingress. */
const ACCEPTED: Array<[string, string, Record<string, unknown>]> = [
  [
    'more_set_headers: several "Name: value" (spaces after the colon trimmed), an empty value clears',
    `more_set_headers "X-Frame-Options: DENY" 'X-Team:   edge "one"' "X-Empty:";`,
    {
      responseOps: [
        ['X-Frame-Options', 'DENY'],
        ['X-Team', 'edge "one"'],
        ['X-Empty', null],
      ],
    },
  ],
  [
    'more_clear_headers: names and a trailing * (lower-case)',
    'more_clear_headers Server "X-Powered-By" X-Debug-*;',
    {
      responseOps: [
        ['server', null],
        ['x-powered-by', null],
        ['x-debug-*', null],
      ],
    },
  ],
  [
    'add_header: with and without always',
    'add_header Cache-Control "no-store";\nadd_header X-Always yes always;',
    {
      addHeaders: [
        { name: 'Cache-Control', value: 'no-store', always: false },
        { name: 'X-Always', value: 'yes', always: true },
      ],
    },
  ],
  ['proxy_hide_header', 'proxy_hide_header X-Powered-By;', { hideHeaders: ['x-powered-by'] }],
  [
    'proxy_set_header: a value sets, an empty one removes',
    'proxy_set_header X-Team edge;\nproxy_set_header X-Drop "";',
    {
      requestOps: [
        ['X-Team', 'edge'],
        ['X-Drop', null],
      ],
    },
  ],
  [
    'proxy_set_header lines ingress-ts already sends: no effect',
    'proxy_set_header Upgrade $http_upgrade;\nproxy_set_header Connection $connection_upgrade;\nproxy_set_header X-Real-IP $remote_addr;',
    {
      requestOps: [],
      noEffect: ['proxy_set_header Upgrade', 'proxy_set_header Connection', 'proxy_set_header X-Real-IP'],
    },
  ],
  [
    'more_set_input_headers and more_clear_input_headers',
    "more_set_input_headers 'X-In: 1';\nmore_clear_input_headers X-Out;",
    {
      requestOps: [
        ['X-In', '1'],
        ['x-out', null],
      ],
    },
  ],
  [
    'return: a redirect with variables',
    'return 308 $scheme://b.com${request_uri};',
    { return: { code: 308, location: '$scheme://b.com${request_uri}', text: null } },
  ],
  [
    'return URL: a 302',
    'return https://b.com/;',
    { return: { code: 302, location: 'https://b.com/', text: null } },
  ],
  [
    'return: a text; only the first return counts',
    'return 200 "ok";\nreturn 404;',
    { return: { code: 200, location: null, text: 'ok' } },
  ],
  ['return: a code alone', 'return 403;', { return: { code: 403, location: null, text: null } }],
  [
    'comments and blank lines',
    '# why\n\n  more_clear_headers Server; # trailing\n',
    { responseOps: [['server', null]] },
  ],
];

/** Refused snippets: [why, text, the directive named (or a reason)]. Every one holds a "secret". */
const REFUSED: Array<[string, string, string]> = [
  ['another directive', 'more_set_headers "X-A: 1";\nproxy_pass http://s3cr3t-token;', 'proxy_pass:'],
  ['if', 'if ($http_x_s3cr3t_token) { return 403; }', 'if:'],
  ['set', 'set $s3cr3t_token 1;', 'set:'],
  ['location', 'location /s3cr3t-token { return 200; }', 'location:'],
  ['Lua', 'access_by_lua_block { ngx.say("s3cr3t-token") }', 'access_by_lua_block:'],
  ['Lua (file)', 'content_by_lua_file /s3cr3t-token.lua;', 'content_by_lua_file:'],
  ['include', 'include /etc/s3cr3t-token.conf;', 'include:'],
  ['load_module', 'load_module /s3cr3t-token.so;', 'load_module:'],
  ['rewrite', 'rewrite ^ /s3cr3t-token break;', 'rewrite:'],
  ['a variable in a header value', 'more_set_headers "X-Token: $cookie_s3cr3t_token";', 'more_set_headers:'],
  ['a variable in add_header', 'add_header X-Token "Bearer $s3cr3t_token";', 'add_header:'],
  [
    'a variable in a request header',
    'proxy_set_header Authorization "Bearer $s3cr3t_token";',
    'proxy_set_header:',
  ],
  ['a variable in a return text', 'return 200 "s3cr3t-token $host";', 'return:'],
  ['an unknown variable in a return URL', 'return 301 https://b.com/$arg_s3cr3t_token;', 'return:'],
  ['a relative return URL', 'return 301 /s3cr3t-token;', 'return:'],
  ['return 444', 'return 444;', 'return:'],
  ['a redirect without its URL', 'return 301;', 'return:'],
  ['a code out of range', 'return 100 s3cr3t-token;', 'return:'],
  [
    'an escaped newline in a value',
    'more_set_headers "X-A: s3cr3t-token\\r\\nX-Injected: 1";',
    'more_set_headers:',
  ],
  ['a newline in a value', 'add_header X-A "s3cr3t-token\nX-Injected: 1";', 'add_header:'],
  ['a header name with a space', 'more_set_headers "X A: s3cr3t-token";', 'more_set_headers:'],
  [
    'a framing response header',
    'more_set_headers "Content-Length: 1";',
    'more_set_headers: it sets Content-Length, which frames the response',
  ],
  [
    'a hop-by-hop response header',
    'add_header Keep-Alive "timeout=5" always;',
    'add_header: it sets Keep-Alive',
  ],
  ['an upgrade response header', 'more_set_headers "Upgrade: x";', 'more_set_headers: it sets Upgrade'],
  ['no colon', 'more_set_headers "s3cr3t-token";', 'more_set_headers:'],
  ['headers-more -s', 'more_set_headers -s 404 "X-A: s3cr3t-token";', 'more_set_headers: its option -s'],
  [
    'headers-more -t',
    'more_set_headers -t text/html "X-A: s3cr3t-token";',
    'more_set_headers: its option -t',
  ],
  [
    'headers-more -r',
    "more_set_input_headers -r 'X-A: s3cr3t-token';",
    'more_set_input_headers: its option -r',
  ],
  ['add_header with a fourth word', 'add_header X-A s3cr3t-token never;', 'add_header:'],
  [
    'Host upstream',
    'proxy_set_header Host s3cr3t-token.example;',
    'proxy_set_header: ingress-ts sets Host itself',
  ],
  [
    'X-Forwarded-For by hand',
    'more_set_input_headers "X-Forwarded-For: s3cr3t-token";',
    'ingress-ts sets X-Forwarded-For itself',
  ],
  ['a wildcard on input headers', 'more_clear_input_headers X-*;', 'more_clear_input_headers:'],
  ['a statement left open', 'more_set_headers "X-A: s3cr3t-token"', 'without its ";"'],
  ['a quote left open', 'more_set_headers "X-A: s3cr3t-token;', 'never closed'],
  ['a } closing the location', 'more_set_headers "X-A: 1"; } server { listen 81; #', 'closes no block'],
  ['a glued quote', 'more_set_headers "X-A: 1"s3cr3t-token;', 'right after a quoted string'],
  ['too many statements', 'more_clear_headers X-A;\n'.repeat(65), 'more than 64 statements'],
  ['a value as the directive', '"s3cr3t-token" x;', 'starts with no directive name'],
];

runCases(t, [
  ...ACCEPTED.map(([name, text, rules]) => ({
    name: `accepted: ${name}`,
    ingresses: [snippet(text)],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_READ site'],
    check: (t: Test, result: BuildResult) => {
      t.match(rulesOf(result, 0), rules);
      t.equal(rulesOf(result, 1), rulesOf(result, 0), 'every route of the Ingress');
    },
  })),
  ...REFUSED.map(([name, text, named]) => ({
    name: `refused: ${name}`,
    ingresses: [snippet(text)],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_REFUSED site'],
    messages: [named, 'the whole snippet is refused'],
    check: (t: Test, result: BuildResult) => {
      t.equal(result.model.servers.length, 0, 'the Ingress is dropped');
      for (const d of result.diagnostics) t.notMatch(d.message, /s3cr3t/i, 'no value is shown');
    },
  })),
  {
    name: 'gate: allow-snippet-annotations alone (risk level High, the default) refuses as before',
    ingresses: [snippet('more_set_headers "X-A: 1";')],
    configMaps: [global({ 'allow-snippet-annotations': 'true' })],
    options: OPTIONS,
    diagnostics: ['SNIPPET_REFUSED site'],
    messages: ['only read with annotations-risk-level Critical, not High'],
  },
  {
    name: 'gate: risk level Critical alone refuses as before',
    ingresses: [snippet('more_set_headers "X-A: 1";')],
    configMaps: [global({ 'annotations-risk-level': 'Critical' })],
    options: OPTIONS,
    diagnostics: ['SNIPPET_REFUSED site'],
    messages: ['ingress-ts never runs snippets'],
  },
  {
    name: 'gate: no ConfigMap refuses as before',
    ingresses: [snippet('more_set_headers "X-A: 1";')],
    diagnostics: ['SNIPPET_REFUSED site'],
  },
  {
    name: 'gate: auth-snippet, stream-snippet and modsecurity-snippet are never read',
    ingresses: [site({ 'auth-snippet': 'proxy_set_header X-A 1;' })],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_REFUSED site'],
    messages: ['ingress-ts never runs snippets'],
  },
  {
    name: 'an empty snippet is none',
    ingresses: [snippet('  \n')],
    configMaps: [ALLOWED],
    options: OPTIONS,
    check: (t, result) => t.equal(rulesOf(result), null),
  },
  {
    name: 'server-snippet: on the host; a return there is refused',
    ingresses: [
      site({ 'server-snippet': 'add_header X-S 1 always;' }),
      site({ 'server-snippet': 'return 404;' }, 'other', 1, ['/o']),
    ],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_READ site', 'SNIPPET_REFUSED other'],
    messages: ['return: a return in a server-snippet is not supported'],
    check: (t, result) => {
      t.match(result.model.servers[0]?.annotations.snippet.rules, {
        addHeaders: [{ name: 'X-S', value: '1', always: true }],
      });
      t.equal(rulesOf(result), null, 'not a location rule');
    },
  },
  {
    name: "server-snippet: the oldest Ingress's wins the host, the others are told",
    ingresses: [
      site({ 'server-snippet': 'more_set_headers "X-New: 1";' }, 'newer', 2, ['/n']),
      site({ 'server-snippet': 'more_set_headers "X-Old: 1";' }, 'older', 1, ['/o']),
    ],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_READ newer', 'SNIPPET_READ older', 'SERVER_ANNOTATION_CONFLICT newer'],
    messages: ['already takes its snippet setting from the older Ingress default/older'],
    check: (t, result) =>
      t.match(result.model.servers[0]?.annotations.snippet.rules, { responseOps: [['X-Old', '1']] }),
  },
  {
    name: 'server-snippet: proxy_set_header there has no effect (every ingress-nginx location sets its own)',
    ingresses: [site({ 'server-snippet': 'proxy_set_header X-A 1;' })],
    configMaps: [ALLOWED],
    options: OPTIONS,
    diagnostics: ['SNIPPET_READ site'],
    messages: ['proxy_set_header X-A has no effect'],
    check: (t, result) => t.match(result.model.servers[0]?.annotations.snippet.rules, { requestOps: [] }),
  },
]);
