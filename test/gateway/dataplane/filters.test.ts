// HTTPRoute filters in the data plane, over real sockets: RequestHeaderModifier as the conformance
// test HTTPRouteRequestHeaderModifier checks it, ResponseHeaderModifier, RequestRedirect Locations
// (scheme, hostname, listener port 80/443/8080, path modifiers, query kept, status codes), and
// URLRewrite (hostname as the upstream Host, path modifiers). Headers the proxy owns are never
// edited.
import { once } from 'node:events';
import t from 'tap';
import type { GatewayRouteMatch, HeaderEdits } from '../../../lib/model/index.ts';
import { type Reply, seenBy, send } from '../../support/echo.ts';
import { gatewayPlane, HOST, sendHttps } from './plane.ts';

type Redirect = NonNullable<GatewayRouteMatch['redirect']>;

const edits = (over: Partial<HeaderEdits>): HeaderEdits => ({ set: [], add: [], remove: [], ...over });
const pair = (name: string, value: string) => ({ name, value });

t.test('RequestHeaderModifier: set, add (joined with a comma), remove; names in any case', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('rhm', '/set', 'Prefix', 'v1', {
      requestHeaders: edits({ set: [pair('x-header-set', 'set-overwrites-values')] }),
    }),
    kit.route('rhm', '/add', 'Prefix', 'v1', {
      requestHeaders: edits({ add: [pair('x-header-add', 'add-appends-values')] }),
    }),
    kit.route('rhm', '/remove', 'Prefix', 'v1', { requestHeaders: edits({ remove: ['x-header-remove'] }) }),
    kit.route('rhm', '/multiple', 'Prefix', 'v1', {
      requestHeaders: edits({
        set: [pair('x-header-set-1', 'header-set-1'), pair('x-header-set-2', 'header-set-2')],
        add: [
          pair('x-header-add-1', 'header-add-1'),
          pair('x-header-add-2', 'header-add-2'),
          pair('x-header-add-3', 'header-add-3'),
        ],
        remove: ['x-header-remove-1', 'x-header-remove-2'],
      }),
    }),
    kit.route('rhm', '/owned', 'Prefix', 'v1', {
      requestHeaders: edits({
        set: [pair('host', 'evil.example'), pair('content-length', '5'), pair('x-request-id', 'mine')],
        add: [pair('transfer-encoding', 'chunked')],
        remove: ['x-forwarded-for'],
      }),
    }),
  ]);
  const seen = async (path: string, headers: Record<string, string> = {}) =>
    seenBy(await send(http, HOST, path, { headers })).headers;

  let h = await seen('/set', { 'Some-Other-Header': 'val' });
  t.equal(h['x-header-set'], 'set-overwrites-values');
  t.equal(h['some-other-header'], 'val');
  h = await seen('/set', { 'X-Header-Set': 'some-other-value' });
  t.equal(h['x-header-set'], 'set-overwrites-values');
  h = await seen('/add');
  t.equal(h['x-header-add'], 'add-appends-values');
  h = await seen('/add', { 'X-Header-Add': 'some-other-value' });
  t.equal(h['x-header-add'], 'some-other-value,add-appends-values');
  h = await seen('/remove', { 'X-Header-Remove': 'val' });
  t.notOk('x-header-remove' in h);
  h = await seen('/multiple', {
    'X-Header-Set-2': 'set-val-2',
    'X-Header-Add-2': 'add-val-2',
    'X-Header-Remove-2': 'remove-val-2',
    'Another-Header': 'another-header-val',
  });
  t.equal(h['x-header-set-1'], 'header-set-1');
  t.equal(h['x-header-set-2'], 'header-set-2');
  t.equal(h['x-header-add-1'], 'header-add-1');
  t.equal(h['x-header-add-2'], 'add-val-2,header-add-2');
  t.equal(h['x-header-add-3'], 'header-add-3');
  t.notOk('x-header-remove-1' in h);
  t.notOk('x-header-remove-2' in h);
  t.equal(h['another-header'], 'another-header-val');
  // lower-case request names are the same headers
  h = await seen('/set', { 'x-header-set': 'original' });
  t.equal(h['x-header-set'], 'set-overwrites-values');
  h = await seen('/add', { 'x-header-add': 'original-val-add' });
  t.equal(h['x-header-add'], 'original-val-add,add-appends-values');

  h = await seen('/owned', { 'X-Request-ID': 'client-id' });
  t.equal(h.host, HOST, 'Host changes only through URLRewrite');
  t.notOk('content-length' in h);
  t.notOk('transfer-encoding' in h);
  t.equal(h['x-request-id'], 'client-id');
  t.equal(h['x-forwarded-for'], '127.0.0.1');
});

t.test('ResponseHeaderModifier: set replaces, add adds a line, remove drops', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('resp', '/', 'Prefix', 'v1', {
      responseHeaders: edits({
        set: [pair('x-frame-options', 'DENY'), pair('x-set', 'one')],
        add: [pair('x-added', 'two'), pair('access-control-allow-origin', 'https://added.example')],
        remove: ['content-type'],
      }),
    }),
    kit.route('resp', '/framing', 'Prefix', 'v1', {
      responseHeaders: edits({ set: [pair('content-length', '1'), pair('transfer-encoding', 'chunked')] }),
    }),
  ]);
  const reply = await send(http, HOST, '/');
  t.equal(reply.status, 200);
  t.equal(reply.headers['x-frame-options'], 'DENY');
  t.equal(reply.headers['x-set'], 'one');
  t.equal(reply.headers['x-added'], 'two');
  t.equal(
    reply.headers['access-control-allow-origin'],
    'https://from-upstream.example, https://added.example',
  );
  t.notOk('content-type' in reply.headers);
  const framed = await send(http, HOST, '/framing');
  t.equal(framed.status, 200);
  t.equal(seenBy(framed).name, 'v1', 'framing headers are left alone: the body arrives whole');
});

t.test('RequestRedirect: Location by scheme, hostname, listener port and path', async (t) => {
  const redirect = (over: Partial<Redirect> = {}): Redirect => ({
    scheme: null,
    hostname: null,
    port: null,
    path: null,
    statusCode: 302,
    ...over,
  });
  const { http, https } = await gatewayPlane(t, (kit) => [
    kit.route('r', '/hostname-redirect', 'Prefix', 'v1', {
      redirect: redirect({ hostname: 'example.org' }),
    }),
    kit.route('r', '/host-and-status', 'Prefix', 'v1', {
      redirect: redirect({ hostname: 'example.org', statusCode: 301 }),
    }),
    kit.route('r', '/listener-8080', 'Prefix', 'v1', {
      listenerPorts: { http: 8080, https: 8443 },
      redirect: redirect(),
    }),
    kit.route('r', '/to-https', 'Prefix', 'v1', { redirect: redirect({ scheme: 'https', statusCode: 308 }) }),
    kit.route('r', '/to-http-port', 'Prefix', 'v1', {
      redirect: redirect({ scheme: 'http', port: 8080, hostname: 'example.org' }),
    }),
    kit.route('r', '/full', 'Prefix', 'v1', {
      redirect: redirect({ path: { type: 'ReplaceFullPath', value: '/new/full' } }),
    }),
    kit.route('r', '/prefix', 'Prefix', 'v1', {
      redirect: redirect({ path: { type: 'ReplacePrefixMatch', value: '/replaced' } }),
    }),
  ]);
  const location = async (reply: Promise<Reply>) => {
    const r = await reply;
    return `${r.status} ${r.headers.location}`;
  };
  t.equal(await location(send(http, HOST, '/hostname-redirect')), '302 http://example.org/hostname-redirect');
  t.equal(await location(send(http, HOST, '/host-and-status')), '301 http://example.org/host-and-status');
  t.equal(
    await location(send(http, `${HOST}:1234`, '/listener-8080/a?x=1')),
    `302 http://${HOST}:8080/listener-8080/a?x=1`,
  );
  t.equal(await location(sendHttps(https, '/listener-8080')), `302 https://${HOST}:8443/listener-8080`);
  t.equal(
    await location(sendHttps(https, '/hostname-redirect')),
    '302 https://example.org/hostname-redirect',
  );
  t.equal(await location(send(http, HOST, '/to-https/x')), `308 https://${HOST}/to-https/x`);
  t.equal(await location(send(http, HOST, '/to-http-port')), '302 http://example.org:8080/to-http-port');
  t.equal(await location(send(http, HOST, '/full/deep?q=1')), `302 http://${HOST}/new/full?q=1`);
  t.equal(await location(send(http, HOST, '/prefix/one/two')), `302 http://${HOST}/replaced/one/two`);
  t.equal(await location(send(http, HOST, '/prefix')), `302 http://${HOST}/replaced`);
});

t.test('RequestRedirect: a modified path is escaped again, as the spec table cuts it', async (t) => {
  const prefix = (to: string) => ({
    redirect: {
      scheme: null,
      hostname: null,
      port: null,
      path: { type: 'ReplacePrefixMatch' as const, value: to },
      statusCode: 302,
    },
  });
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('r', '/foo', 'Prefix', 'v1', prefix('/xyz')),
    kit.route('r', '/bar/', 'Prefix', 'v1', prefix('/xyz/')),
    kit.route('r', '/empty', 'Prefix', 'v1', prefix('')),
    kit.route('r', '/old', 'Prefix', 'v1', prefix('/new')),
    kit.route('r', '/caf%C3%A9', 'Prefix', 'v1', prefix('/th%C3%A9%3F')),
  ]);
  const cases: Array<[request: string, location: string]> = [
    // the spec's ReplacePrefixMatch table (HTTPPathModifier)
    ['/foo/bar', '/xyz/bar'],
    ['/foo', '/xyz'],
    ['/foo/', '/xyz/'],
    ['/bar/baz', '/xyz/baz'],
    ['/empty/x', '/x'],
    ['/empty', '/'],
    // escapes the client sent stay escaped: `?` and `#` would end the path, the rest is not a URL
    ['/old/a%3Fb%23c?q=1', '/new/a%3Fb%23c?q=1'],
    ['/old/a%20b', '/new/a%20b'],
    ['/old/x%0D%0Ay', '/new/x%0D%0Ay'],
    ['/old/%E2%82%AC', '/new/%E2%82%AC'],
    ['/old/100%25', '/new/100%25'],
    // the route's values are written escaped: matched and replaced decoded, escaped once
    ['/caf%C3%A9/menu', '/th%C3%A9%3F/menu'],
  ];
  for (const [request, location] of cases) {
    const reply = await send(http, HOST, request);
    t.equal(`${reply.status} ${reply.headers.location}`, `302 http://${HOST}${location}`, request);
  }
});

t.test('URLRewrite: the hostname becomes the upstream Host, the path is replaced', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('rw', '/host', 'Prefix', 'v1', { rewrite: { hostname: 'rewritten.example', path: null } }),
    kit.route('rw', '/prefix', 'Prefix', 'v1', {
      rewrite: { hostname: null, path: { type: 'ReplacePrefixMatch', value: '/' } },
    }),
    kit.route('rw', '/other', 'Prefix', 'v2', {
      rewrite: { hostname: null, path: { type: 'ReplacePrefixMatch', value: '/xyz/' } },
    }),
    kit.route('rw', '/full', 'Prefix', 'v1', {
      rewrite: { hostname: 'full.example', path: { type: 'ReplaceFullPath', value: '/one' } },
    }),
    kit.route('rw', '/escaped', 'Prefix', 'v1', {
      rewrite: { hostname: null, path: { type: 'ReplacePrefixMatch', value: '/a%20b' } },
    }),
  ]);
  const seen = async (path: string) => seenBy(await send(http, HOST, path));
  let s = await seen('/host/a?x=1');
  t.equal(s.headers.host, 'rewritten.example');
  t.equal(s.url, '/host/a?x=1');
  t.equal(s.headers['x-forwarded-host'], HOST);
  s = await seen('/prefix/one');
  t.equal(s.url, '/one');
  t.equal(s.headers.host, HOST);
  t.equal((await seen('/prefix')).url, '/');
  t.equal((await seen('/prefix/')).url, '/');
  t.equal((await seen('/other/bar?k=v')).url, '/xyz/bar?k=v');
  s = await seen('/full/deep/er');
  t.equal(s.url, '/one');
  t.equal(s.headers.host, 'full.example');
  // a value written escaped is not escaped twice; the client's escapes stay
  t.equal((await seen('/escaped/c%3Fd')).url, '/a%20b/c%3Fd');
});

t.test(
  'RequestMirror: a copy of each request goes to the mirror backend, the client gets the main one',
  async (t) => {
    const { http, arrivals } = await gatewayPlane(t, (kit) => [
      kit.route('mirror', '/m', 'Prefix', 'v1', {
        mirrors: [{ upstream: kit.upstream('v2'), percent: 100 }],
      }),
    ]);
    const copy = once(arrivals, 'v2');
    const reply = await send(http, HOST, '/m/a?x=1');
    t.equal(seenBy(reply).name, 'v1');
    t.strictSame((await copy).slice(0, 2), ['/m/a?x=1', HOST]);
  },
);

t.test('RequestMirror: the copy gets the rule request header edits and URL rewrite', async (t) => {
  const { http, arrivals } = await gatewayPlane(t, (kit) => [
    // the conformance test HTTPRouteRequestMirror's second rule
    kit.route('mirror', '/mirror-and-modify-headers', 'Prefix', 'v1', {
      mirrors: [{ upstream: kit.upstream('v2'), percent: 100 }],
      requestHeaders: edits({
        set: [pair('x-header-set', 'set-overwrites-values')],
        add: [pair('x-header-add', 'header-val-1'), pair('x-header-add-append', 'header-val-2')],
        remove: ['x-header-remove'],
      }),
    }),
    kit.route('mirror', '/rewritten', 'Prefix', 'v1', {
      mirrors: [{ upstream: kit.upstream('v2'), percent: 100 }],
      rewrite: { hostname: 'mirror.example', path: { type: 'ReplacePrefixMatch', value: '/new' } },
    }),
  ]);
  const client = {
    'X-Header-Remove': 'remove-val',
    'X-Header-Add-Append': 'append-val-1',
    'X-Header-Set': 'client-value',
  };
  let copy = once(arrivals, 'v2');
  const reply = await send(http, HOST, '/mirror-and-modify-headers?x=1', { headers: client });
  const proxied = seenBy(reply).headers;
  const [url, host, headers] = (await copy) as [string, string, Record<string, string>];
  t.strictSame([url, host], ['/mirror-and-modify-headers?x=1', HOST]);
  for (const name of ['x-header-set', 'x-header-add', 'x-header-add-append', 'x-header-remove']) {
    t.equal(headers[name], proxied[name], `${name} as the backend got it`);
  }
  t.equal(headers['x-header-add-append'], 'append-val-1,header-val-2');
  t.equal(headers['x-header-set'], 'set-overwrites-values');
  t.notOk('x-header-remove' in headers);

  copy = once(arrivals, 'v2');
  const rewritten = seenBy(await send(http, HOST, '/rewritten/a%3Fb?q=1'));
  t.strictSame((await copy).slice(0, 2), [rewritten.url, 'mirror.example']);
  t.equal(rewritten.url, '/new/a%3Fb?q=1');
});
