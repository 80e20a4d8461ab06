// decide(): what a request gets from a compiled runtime and its head alone, without sockets. Each
// row is a request head in and the decision out: redirects of each kind in ingress-nginx's phase
// order, denials (allow/deny lists, block-cidrs), answers of the proxy itself (default backend,
// routes without endpoints, the error backend, body size), and proxied requests with their route,
// upstream and canary.
import { IncomingMessage } from 'node:http';
import t from 'tap';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { type Arrival, type Decision, decide } from '../../lib/dataplane/pipeline/decide.ts';
import { compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import type { BalancerEnv } from '../../lib/dataplane/upstream/balancer.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import type { ConfigMap } from '../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice, type World } from '../model/helpers.ts';

const env: BalancerEnv = { random: () => 0, now: () => 0 };
const deps = {
  generatedDefaultCertificate: await generateDefaultCertificate(),
  balancerEnv: env,
  ewmaStore: createEwmaStore(),
};

const configMap = (data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});

const world: World = {
  ingresses: [
    ingress('site', { rules: [rule('a.com', path('/', 'web:80'), path('/api', 'api:80'))] }),
    ingress('www', {
      nginx: { 'from-to-www-redirect': 'true' },
      rules: [rule('b.com', path('/', 'web:80'))],
    }),
    ingress('moved', {
      nginx: { 'permanent-redirect': 'https://new.example/landing' },
      rules: [rule('old.com', path('/', 'web:80'))],
    }),
    ingress('resting', {
      nginx: { 'temporal-redirect': 'https://elsewhere.example/' },
      rules: [rule('temp.com', path('/', 'web:80'))],
    }),
    ingress('app', { nginx: { 'app-root': '/app1' }, rules: [rule('app.com', path('/', 'web:80'))] }),
    ingress('forced', {
      nginx: { 'force-ssl-redirect': 'true' },
      rules: [rule('secure.com', path('/', 'web:80'))],
    }),
    ingress('moved-forced', {
      nginx: { 'permanent-redirect': 'https://new.example/', 'force-ssl-redirect': 'true' },
      rules: [rule('moved.com', path('/', 'web:80'))],
    }),
    ingress('denied', {
      nginx: { 'custom-headers': 'default/missing', 'force-ssl-redirect': 'true' },
      rules: [rule('denied.com', path('/', 'web:80'))],
    }),
    ingress('rewrite-url', {
      nginx: { 'rewrite-target': 'https://target.example/new' },
      rules: [rule('rwurl.com', path('/', 'web:80'))],
    }),
    ingress('limited', {
      nginx: { 'limit-connections': '1' },
      rules: [rule('limited.com', path('/', 'web:80'))],
    }),
    ingress('rewrite', {
      nginx: { 'rewrite-target': '/$2', 'use-regex': 'true' },
      rules: [rule('rw.com', path('/shop(/|$)(.*)', 'web:80', 'ImplementationSpecific'))],
    }),
    ingress('allow', {
      nginx: { 'whitelist-source-range': '10.1.0.0/16' },
      rules: [rule('allow.com', path('/', 'web:80'))],
    }),
    ingress('deny', {
      nginx: { 'denylist-source-range': '10.9.0.0/16' },
      rules: [rule('deny.com', path('/', 'web:80'))],
    }),
    ingress('cors', { nginx: { 'enable-cors': 'true' }, rules: [rule('cors.com', path('/', 'web:80'))] }),
    ingress('cors-strict', {
      nginx: { 'enable-cors': 'true', 'cors-allow-origin': 'https://ok.example' },
      rules: [rule('strict.com', path('/', 'web:80'))],
    }),
    ingress('small', { nginx: { 'proxy-body-size': '1k' }, rules: [rule('small.com', path('/', 'web:80'))] }),
    ingress('empty', { rules: [rule('empty.com', path('/', 'nobody:80'))] }),
    ingress('fallback', {
      nginx: { 'default-backend': 'errors', 'custom-http-errors': '503' },
      rules: [rule('fallback.com', path('/', 'nobody:80'))],
    }),
    ingress('main', { rules: [rule('c.com', path('/', 'web:80'))] }),
    ingress('canary', {
      created: 10,
      nginx: { canary: 'true', 'canary-by-header': 'x-canary', 'canary-weight': '50' },
      rules: [rule('c.com', path('/', 'web-canary:80'))],
    }),
  ],
  services: [service('nobody', [{ port: 80 }]), service('errors', [{ port: 80 }])],
  slices: [slice('errors', [{ addresses: ['10.0.9.1'] }], [{ port: 80 }])],
};
const runtime = compileRuntime(build(world).model, null, deps);
const blocking = compileRuntime(
  build(
    { ...world, configMaps: [configMap({ 'block-cidrs': '198.51.100.0/24' })] },
    { configMap: 'ingress/ingress-ts' },
  ).model,
  null,
  deps,
);
// `~^$` would match an empty value, but NGINX's map tries no regex on one: no header is no match
const headerBlocking = compileRuntime(
  build(
    {
      ...world,
      configMaps: [
        configMap({ 'block-user-agents': '~*bot, ~^$', 'block-referers': 'HTTP://Spam.Example/' }),
      ],
    },
    { configMap: 'ingress/ingress-ts' },
  ).model,
  null,
  deps,
);
// configuration-snippets read as data (where ingress-nginx accepts them): a `return` ends the rewrite
// phase before the redirect annotations, ssl-redirect and the access phase
const snippets = compileRuntime(
  build(
    {
      ...world,
      ingresses: [
        ...world.ingresses,
        ingress('snip-redirect', {
          nginx: {
            'configuration-snippet': 'return 307 $scheme://$host/new$request_uri;',
            'permanent-redirect': 'https://new.example/',
            'force-ssl-redirect': 'true',
          },
          rules: [rule('snip.com', path('/', 'web:80'))],
        }),
        ingress('snip-text', {
          nginx: {
            'configuration-snippet': 'return 200 "up";',
            'force-ssl-redirect': 'true',
            'whitelist-source-range': '10.0.0.0/8',
          },
          rules: [rule('text.com', path('/', 'web:80'))],
        }),
      ],
      configMaps: [configMap({ 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' })],
    },
    { configMap: 'ingress/ingress-ts' },
  ).model,
  null,
  deps,
);

interface Head {
  url: string;
  host?: string;
  method?: string;
  /** more headers, in order */
  headers?: Array<[string, string]>;
  /** the socket's peer address (default 10.1.2.3) */
  peer?: string;
}

/** A request head as Node parses one, on a stand-in socket that only has a peer address. */
function headOf(spec: Head): IncomingMessage {
  const socket = { remoteAddress: spec.peer ?? '10.1.2.3' };
  const req = new IncomingMessage(socket as unknown as IncomingMessage['socket']);
  req.method = spec.method ?? 'GET';
  req.url = spec.url;
  const raw: string[] = [];
  if (spec.host !== undefined) raw.push('Host', spec.host);
  for (const [name, value] of spec.headers ?? []) raw.push(name, value);
  req.rawHeaders = raw;
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[(raw[i] as string).toLowerCase()] ??= raw[i + 1] as string;
  req.headers = headers;
  return req;
}

/** The parts of a decision a row checks: what answers, with what, and where the request was placed. */
function summary(decision: Decision): Record<string, unknown> {
  const route = decision.match?.value.route;
  const placed = {
    kind: decision.kind,
    host: decision.host,
    ingress: route == null ? null : route.ingress,
  };
  switch (decision.kind) {
    case 'error':
    case 'clientAuth':
      return { ...placed, status: decision.status };
    case 'redirect':
      return { ...placed, code: decision.code, location: decision.location };
    case 'preflight':
      return placed;
    case 'fixed':
      return { ...placed, status: decision.status, body: decision.body };
    case 'customError':
      return { ...placed, code: decision.code, upstream: decision.errors.target.upstream };
    case 'proxy':
      return {
        ...placed,
        upstream: decision.target.upstream,
        canary: decision.canary,
        path: decision.context.path ?? null,
        requestId: decision.requestId,
      };
  }
}

const http = (draw = 0.99): Arrival => ({ https: false, port: 80, random: () => draw });
const https = (draw = 0.99): Arrival => ({ https: true, port: 443, random: () => draw });

interface Row {
  name: string;
  head: Head;
  arrival?: Arrival;
  runtime?: Runtime | null;
  want: Record<string, unknown>;
}

const rows: Row[] = [
  // not ready, bad targets
  {
    name: 'no runtime yet: 503, not routed',
    head: { url: '/', host: 'a.com' },
    runtime: null,
    want: { kind: 'error', host: '', ingress: null, status: 503 },
  },
  {
    name: 'a target that is no path: 400',
    head: { url: 'a.com/x', host: 'a.com' },
    want: { kind: 'error', host: '', ingress: null, status: 400 },
  },
  {
    name: 'a target above the root: 400',
    head: { url: '/../etc/passwd', host: 'a.com' },
    want: { kind: 'error', host: '', ingress: null, status: 400 },
  },
  {
    name: 'a bad percent escape: 400',
    head: { url: '/%zz', host: 'a.com' },
    want: { kind: 'error', host: '', ingress: null, status: 400 },
  },
  // proxied, Host normalised
  {
    name: 'a route: proxied to its upstream, the incoming X-Request-ID kept',
    head: { url: '/x', host: 'a.com', headers: [['X-Request-ID', 'req-1']] },
    want: {
      kind: 'proxy',
      host: 'a.com',
      ingress: 'site',
      upstream: 'default-web-80',
      canary: '',
      requestId: 'req-1',
    },
  },
  {
    name: 'the longest prefix wins',
    head: { url: '/api/v1', host: 'a.com', headers: [['X-Request-ID', 'req-2']] },
    want: { kind: 'proxy', host: 'a.com', upstream: 'default-api-80', requestId: 'req-2' },
  },
  {
    name: 'Host with a port, upper case and a trailing dot is the same host',
    head: { url: '/', host: 'A.COM.:8080' },
    want: { kind: 'proxy', host: 'a.com', ingress: 'site', upstream: 'default-web-80' },
  },
  {
    name: 'HTTP/2 :authority stands for the Host',
    head: { url: '/', headers: [[':authority', 'a.com']] },
    want: { kind: 'proxy', host: 'a.com', upstream: 'default-web-80' },
  },
  {
    name: 'rewrite-target: the upstream gets the rewritten path',
    head: { url: '/shop/cart?x=1', host: 'rw.com' },
    want: { kind: 'proxy', host: 'rw.com', ingress: 'rewrite', path: '/cart?x=1' },
  },
  // the proxy answers
  {
    name: 'an unknown host: the built-in default backend, 404',
    head: { url: '/', host: 'nowhere.com' },
    want: { kind: 'error', host: 'nowhere.com', ingress: null, status: 404 },
  },
  {
    name: 'no Host at all: the default backend',
    head: { url: '/' },
    want: { kind: 'error', host: '', status: 404 },
  },
  {
    name: 'a route without endpoints: 503',
    head: { url: '/', host: 'empty.com' },
    want: { kind: 'error', host: 'empty.com', ingress: 'empty', status: 503 },
  },
  {
    name: 'a route without endpoints whose error backend takes 503: the error backend answers',
    head: { url: '/', host: 'fallback.com' },
    want: {
      kind: 'customError',
      host: 'fallback.com',
      ingress: 'fallback',
      code: 503,
      upstream: 'custom-default-backend-default-errors',
    },
  },
  {
    name: 'proxy-body-size: a declared length over the limit, 413',
    head: { url: '/', method: 'POST', host: 'small.com', headers: [['Content-Length', '5000']] },
    want: { kind: 'error', host: 'small.com', ingress: 'small', status: 413 },
  },
  {
    name: 'proxy-body-size: a length within the limit goes through',
    head: { url: '/', method: 'POST', host: 'small.com', headers: [['Content-Length', '1000']] },
    want: { kind: 'proxy', host: 'small.com', ingress: 'small' },
  },
  {
    name: 'a CORS preflight from an allowed Origin: answered here',
    head: {
      url: '/',
      method: 'OPTIONS',
      host: 'cors.com',
      headers: [
        ['Origin', 'https://any.example'],
        ['Access-Control-Request-Method', 'PUT'],
      ],
    },
    want: { kind: 'preflight', host: 'cors.com', ingress: 'cors' },
  },
  {
    name: 'any OPTIONS where CORS allows every Origin: answered here',
    head: { url: '/', method: 'OPTIONS', host: 'cors.com' },
    want: { kind: 'preflight', host: 'cors.com' },
  },
  {
    name: 'an OPTIONS from an Origin CORS does not allow is proxied',
    head: { url: '/', method: 'OPTIONS', host: 'strict.com', headers: [['Origin', 'https://other.example']] },
    want: { kind: 'proxy', host: 'strict.com', ingress: 'cors-strict' },
  },
  {
    name: 'an OPTIONS from the allowed Origin: answered here',
    head: { url: '/', method: 'OPTIONS', host: 'strict.com', headers: [['Origin', 'https://ok.example']] },
    want: { kind: 'preflight', host: 'strict.com', ingress: 'cors-strict' },
  },
  // redirects
  {
    name: 'from-to-www-redirect: the www name redirects to the bare one, with the port',
    head: { url: '/p/', host: 'www.b.com' },
    want: { kind: 'redirect', host: 'www.b.com', ingress: null, code: 308, location: 'http://b.com:80/p' },
  },
  {
    name: 'from-to-www-redirect on HTTPS: port 443',
    head: { url: '/p?q=1', host: 'www.b.com' },
    arrival: https(),
    want: { kind: 'redirect', code: 308, location: 'https://b.com:443/p?q=1' },
  },
  {
    name: 'permanent-redirect: 301 to the URL as written',
    head: { url: '/anything', host: 'old.com' },
    want: {
      kind: 'redirect',
      host: 'old.com',
      ingress: 'moved',
      code: 301,
      location: 'https://new.example/landing',
    },
  },
  {
    name: "a snippet's return URL: its variables per request, before permanent-redirect and ssl-redirect",
    head: { url: '/p?q=1', host: 'snip.com' },
    runtime: snippets,
    want: { kind: 'redirect', ingress: 'snip-redirect', code: 307, location: 'http://snip.com/new/p?q=1' },
  },
  {
    name: "a snippet's return text: before ssl-redirect and the allow list",
    head: { url: '/x', host: 'text.com' },
    runtime: snippets,
    want: { kind: 'fixed', ingress: 'snip-text', status: 200, body: 'up' },
  },
  {
    name: 'temporal-redirect: 302',
    head: { url: '/', host: 'temp.com' },
    want: { kind: 'redirect', ingress: 'resting', code: 302, location: 'https://elsewhere.example/' },
  },
  {
    name: 'app-root: / redirects to the app on the request scheme and Host',
    head: { url: '/', host: 'app.com' },
    want: { kind: 'redirect', host: 'app.com', ingress: 'app', code: 302, location: 'http://app.com/app1' },
  },
  {
    name: 'app-root: another path is proxied',
    head: { url: '/app1', host: 'app.com' },
    want: { kind: 'proxy', host: 'app.com', ingress: 'app' },
  },
  {
    name: 'force-ssl-redirect: plain HTTP to https, one trailing slash dropped',
    head: { url: '/x/', host: 'secure.com:8080' },
    want: {
      kind: 'redirect',
      host: 'secure.com',
      ingress: 'forced',
      code: 308,
      location: 'https://secure.com/x',
    },
  },
  {
    name: 'force-ssl-redirect: HTTPS is proxied',
    head: { url: '/x/', host: 'secure.com' },
    arrival: https(),
    want: { kind: 'proxy', host: 'secure.com', ingress: 'forced' },
  },
  {
    name: 'force-ssl-redirect: X-Forwarded-Proto is not trusted without use-forwarded-headers',
    head: { url: '/', host: 'secure.com', headers: [['X-Forwarded-Proto', 'https']] },
    want: { kind: 'redirect', code: 308, location: 'https://secure.com' },
  },
  {
    name: "a route's own redirect comes before ssl-redirect",
    head: { url: '/', host: 'moved.com' },
    want: { kind: 'redirect', ingress: 'moved-forced', code: 301, location: 'https://new.example/' },
  },
  {
    name: 'a denied location answers 503 before ssl-redirect',
    head: { url: '/', host: 'denied.com' },
    want: { kind: 'error', host: 'denied.com', ingress: 'denied', status: 503 },
  },
  {
    name: 'rewrite-target to a URL: 302 there',
    head: { url: '/', host: 'rwurl.com' },
    want: { kind: 'redirect', ingress: 'rewrite-url', code: 302, location: 'https://target.example/new' },
  },
  // access
  {
    name: 'allowlist: a listed client is proxied',
    head: { url: '/', host: 'allow.com', peer: '10.1.9.9' },
    want: { kind: 'proxy', host: 'allow.com', ingress: 'allow' },
  },
  {
    name: 'allowlist: another client, 403',
    head: { url: '/', host: 'allow.com', peer: '192.0.2.7' },
    want: { kind: 'error', host: 'allow.com', ingress: 'allow', status: 403 },
  },
  {
    name: 'allowlist: an IPv4-mapped IPv6 peer is its IPv4 address',
    head: { url: '/', host: 'allow.com', peer: '::ffff:10.1.0.1' },
    want: { kind: 'proxy', host: 'allow.com' },
  },
  {
    name: 'denylist: a listed client, 403',
    head: { url: '/', host: 'deny.com', peer: '10.9.1.1' },
    want: { kind: 'error', host: 'deny.com', ingress: 'deny', status: 403 },
  },
  {
    name: 'denylist: another client is proxied',
    head: { url: '/', host: 'deny.com', peer: '10.1.1.1' },
    want: { kind: 'proxy', host: 'deny.com' },
  },
  {
    name: 'block-cidrs: a blocked client, 403 before any host',
    head: { url: '/', host: 'a.com', peer: '198.51.100.20' },
    runtime: blocking,
    want: { kind: 'error', host: '', ingress: null, status: 403 },
  },
  {
    name: 'block-cidrs: a client without an address, 403',
    head: { url: '/', host: 'a.com', peer: '' },
    runtime: blocking,
    want: { kind: 'error', host: '', status: 403 },
  },
  {
    name: 'block-cidrs: another client is proxied',
    head: { url: '/', host: 'a.com', peer: '10.1.1.1' },
    runtime: blocking,
    want: { kind: 'proxy', host: 'a.com', upstream: 'default-web-80' },
  },
  {
    name: 'block-cidrs: a bad target is refused first (400)',
    head: { url: '/%zz', host: 'a.com', peer: '198.51.100.20' },
    runtime: blocking,
    want: { kind: 'error', status: 400 },
  },
  {
    name: 'block-user-agents: a match answers 403 on its host, before any route',
    head: { url: '/api', host: 'a.com', headers: [['User-Agent', 'Googlebot/2.1']] },
    runtime: headerBlocking,
    want: { kind: 'error', host: 'a.com', ingress: null, status: 403 },
  },
  {
    name: "block-user-agents: before the server's www redirect",
    head: { url: '/', host: 'www.b.com', headers: [['User-Agent', 'SomeBOT']] },
    runtime: headerBlocking,
    want: { kind: 'error', host: 'www.b.com', status: 403 },
  },
  {
    name: 'block-user-agents: before app-root',
    head: { url: '/', host: 'app.com', headers: [['User-Agent', 'bot']] },
    runtime: headerBlocking,
    want: { kind: 'error', host: 'app.com', status: 403 },
  },
  {
    name: 'block-user-agents: on the catch-all too',
    head: { url: '/', host: 'unknown.example', headers: [['User-Agent', 'bot']] },
    runtime: headerBlocking,
    want: { kind: 'error', host: 'unknown.example', status: 403 },
  },
  {
    name: 'block-user-agents: another agent is proxied',
    head: { url: '/', host: 'a.com', headers: [['User-Agent', 'Mozilla/5.0']] },
    runtime: headerBlocking,
    want: { kind: 'proxy', host: 'a.com', upstream: 'default-web-80' },
  },
  {
    name: 'block-user-agents: no User-Agent is no match, even for a regex matching ""',
    head: { url: '/', host: 'a.com' },
    runtime: headerBlocking,
    want: { kind: 'proxy', host: 'a.com', upstream: 'default-web-80' },
  },
  {
    name: 'block-referers: an exact entry, compared without case',
    head: { url: '/', host: 'a.com', headers: [['Referer', 'http://spam.example/']] },
    runtime: headerBlocking,
    want: { kind: 'error', host: 'a.com', status: 403 },
  },
  {
    name: 'block-referers: exact is the whole value',
    head: { url: '/', host: 'a.com', headers: [['Referer', 'http://spam.example/page']] },
    runtime: headerBlocking,
    want: { kind: 'proxy', host: 'a.com' },
  },
  {
    name: 'block lists: a bad target is refused first (400)',
    head: { url: '/%zz', host: 'a.com', headers: [['User-Agent', 'bot']] },
    runtime: headerBlocking,
    want: { kind: 'error', status: 400 },
  },
  // canary
  {
    name: 'canary by header: always',
    head: { url: '/', host: 'c.com', headers: [['X-Canary', 'always']] },
    want: {
      kind: 'proxy',
      ingress: 'main',
      upstream: 'default-web-canary-80',
      canary: 'default-web-canary-80',
    },
  },
  {
    name: 'canary by header: never, whatever the weight draw',
    head: { url: '/', host: 'c.com', headers: [['X-Canary', 'never']] },
    arrival: http(0),
    want: { kind: 'proxy', upstream: 'default-web-80', canary: '' },
  },
  {
    name: 'canary by weight: a draw within the weight',
    head: { url: '/', host: 'c.com' },
    arrival: http(0.3),
    want: { kind: 'proxy', upstream: 'default-web-canary-80', canary: 'default-web-canary-80' },
  },
  {
    name: 'canary by weight: a draw over the weight',
    head: { url: '/', host: 'c.com' },
    arrival: http(0.7),
    want: { kind: 'proxy', upstream: 'default-web-80', canary: '' },
  },
];

t.test('decide: a request head in, the decision out', async (t) => {
  for (const row of rows) {
    const decision = decide(
      row.runtime === undefined ? runtime : row.runtime,
      row.arrival ?? http(),
      headOf(row.head),
    );
    t.match(summary(decision), row.want, row.name);
  }
});

t.test(
  'the access zones are state of the runtime: limit-connections holds a slot per proxied request',
  async (t) => {
    const head = { url: '/', host: 'limited.com', peer: '10.1.4.4' };
    const first = decide(runtime, http(), headOf(head));
    t.match(summary(first), { kind: 'proxy', ingress: 'limited' }, 'the first request takes the slot');
    const second = decide(runtime, http(), headOf(head));
    t.match(summary(second), { kind: 'error', status: 503 }, 'a second one while it is held: 503');
    t.match(
      summary(decide(runtime, http(), headOf({ ...head, peer: '10.1.4.5' }))),
      { kind: 'proxy' },
      'another client',
    );
    if (first.kind !== 'proxy' || typeof first.release !== 'function')
      throw new Error('no slot to give back');
    first.release();
    t.match(
      summary(decide(runtime, http(), headOf(head))),
      { kind: 'proxy' },
      'after release: admitted again',
    );
  },
);

t.test('proxied requests get one decision shape and one context shape, whatever the route', async (t) => {
  const heads = [
    { url: '/', host: 'a.com' },
    { url: '/shop/cart?x=1', host: 'rw.com' },
    { url: '/', host: 'allow.com', peer: '10.1.2.3' },
    { url: '/', host: 'limited.com', peer: '10.1.4.9' },
  ];
  const shapes = new Set<string>();
  const contexts = new Set<string>();
  for (const head of heads) {
    const decision = decide(runtime, http(), headOf(head));
    if (decision.kind !== 'proxy') throw new Error(`${head.host}: not proxied`);
    decision.release?.();
    // an object literal with the same keys in the same order has the same hidden class
    shapes.add(Object.keys(decision).join(','));
    contexts.add(Object.keys(decision.context).join(','));
  }
  t.equal(shapes.size, 1, [...shapes].join(' | '));
  t.equal(contexts.size, 1, [...contexts].join(' | '));
});
