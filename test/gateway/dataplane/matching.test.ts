// HTTPRoute matching in the data plane, over real sockets: routes of one path tried in the model's
// order with their method, header and query conditions; when none holds, shorter prefixes, then the
// host's default route (404); the HTTP-only and HTTPS-only routes on each port; in regex mode the
// Ingress regex routes before the HTTPRoute routes. The cases of the conformance tests
// HTTPRouteMatching and HTTPRouteHeaderMatching are reproduced with the model order the build gives.
import { request } from 'node:http';
import { connect } from 'node:http2';
import t from 'tap';
import { type Reply, send } from '../../support/echo.ts';
import { answeredBy, gatewayPlane, HOST, sendHttps } from './plane.ts';

const header = (name: string, value: string) => ({ name, value });

t.test('HTTPRouteMatching: conditions first, then the path alone; element-wise prefixes', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('matching', '/v2', 'Prefix', 'v2', { rule: 1 }),
    // one header each: the route's rule order decides
    kit.route('matching', '/', 'Prefix', 'v1', { rule: 0, headers: [header('version', 'one')] }),
    kit.route('matching', '/', 'Prefix', 'v2', { rule: 1, headers: [header('version', 'two')] }),
    kit.route('matching', '/', 'Prefix', 'v1', { rule: 0 }),
  ]);
  const cases: Array<[string, Record<string, string>, string]> = [
    ['/', {}, 'v1'],
    ['/example', {}, 'v1'],
    ['/', { Version: 'one' }, 'v1'],
    ['/v2', {}, 'v2'],
    ['/v2/example', {}, 'v2'],
    ['/', { Version: 'two' }, 'v2'],
    ['/v2/', {}, 'v2'],
    ['/v2example', {}, 'v1'],
    ['/foo/v2/example', {}, 'v1'],
  ];
  for (const [path, headers, backend] of cases) {
    t.equal(
      answeredBy(await send(http, HOST, path, { headers })),
      backend,
      `${path} ${JSON.stringify(headers)}`,
    );
  }
});

t.test('HTTPRouteHeaderMatching: most headers first, names in any case, 404 when none holds', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => {
    const on = (backend: string, rule: number, ...headers: Array<[string, string]>) =>
      kit.route('header-matching', '/', 'Prefix', backend, {
        rule,
        headers: headers.map(([name, value]) => header(name, value)),
      });
    return [
      on('v1', 2, ['version', 'two'], ['color', 'orange']),
      on('v1', 0, ['version', 'one']),
      on('v2', 1, ['version', 'two']),
      on('v1', 3, ['color', 'blue']),
      on('v1', 3, ['color', 'green']),
      on('v2', 4, ['color', 'red']),
      on('v2', 4, ['color', 'yellow']),
    ];
  });
  const cases: Array<[Record<string, string>, string]> = [
    [{ Version: 'one' }, 'v1'],
    [{ Version: 'two' }, 'v2'],
    [{ Version: 'two', Color: 'orange' }, 'v1'],
    [{ Version: 'two', Color: 'blue' }, 'v2'],
    [{ Color: 'orange' }, '404'],
    [{ 'Some-Other-Header': 'one' }, '404'],
    [{ Color: 'blue' }, 'v1'],
    [{ color: 'green' }, 'v1'],
    [{ COLOR: 'red' }, 'v2'],
    [{ Color: 'yellow' }, 'v2'],
    [{ Color: 'purple' }, '404'],
  ];
  for (const [headers, backend] of cases) {
    t.equal(answeredBy(await send(http, HOST, '/', { headers })), backend, JSON.stringify(headers));
  }
});

/** A request whose header `name` is sent as one line per value. */
function sendLines(port: number, path: string, name: string, values: string[]): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { port, host: '127.0.0.1', path, headers: { host: HOST, [name]: values }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

t.test('a repeated request header is matched as its lines joined with a comma', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('repeated', '/', 'Prefix', 'v2', { headers: [header('x-multi', 'a,b')] }),
    kit.route('repeated', '/', 'Prefix', 'v1'),
  ]);
  t.equal(answeredBy(await sendLines(http, '/', 'X-Multi', ['a', 'b'])), 'v2');
  t.equal(answeredBy(await sendLines(http, '/', 'x-multi', ['a,b'])), 'v2');
  t.equal(answeredBy(await sendLines(http, '/', 'X-Multi', ['a'])), 'v1');
  t.equal(answeredBy(await sendLines(http, '/', 'X-Multi', ['b', 'a'])), 'v1');
});

t.test('method and query conditions; a failed condition falls through to shorter prefixes', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('cond', '/m', 'Exact', 'v2', { method: 'POST' }),
    kit.route('cond', '/m', 'Exact', 'v3'),
    kit.route('cond', '/q', 'Prefix', 'v2', { queryParams: [header('animal', 'whale')] }),
    kit.route('cond', '/deep/er', 'Prefix', 'v3', { headers: [header('x-deep', '1')] }),
    kit.route('cond', '/deep', 'Prefix', 'v2', { method: 'PUT' }),
    kit.route('cond', '/', 'Prefix', 'v1'),
  ]);
  const cases: Array<[string, string, Record<string, string>, string]> = [
    ['GET', '/m', {}, 'v3'],
    ['POST', '/m', {}, 'v2'],
    ['GET', '/q?animal=whale', {}, 'v2'],
    ['GET', '/q/x?color=red&animal=whale', {}, 'v2'],
    // Go's client would send these so; the first value of a repeated name counts
    ['GET', '/q?animal=wh%61le', {}, 'v2'],
    ['GET', '/q?animal=dolphin&animal=whale', {}, 'v1'],
    ['GET', '/q?Animal=whale', {}, 'v1'],
    ['GET', '/q', {}, 'v1'],
    ['GET', '/deep/er/x', { 'X-Deep': '1' }, 'v3'],
    // the header fails on /deep/er: /deep is tried, then /
    ['PUT', '/deep/er/x', {}, 'v2'],
    ['GET', '/deep/er/x', {}, 'v1'],
  ];
  for (const [method, path, headers, backend] of cases) {
    t.equal(answeredBy(await send(http, HOST, path, { method, headers })), backend, `${method} ${path}`);
  }
});

t.test(
  'a route attached to HTTP listeners only is not served on the HTTPS port, and vice versa',
  async (t) => {
    const { http, https } = await gatewayPlane(t, (kit) => [
      kit.route('ports', '/p', 'Prefix', 'v2', { protocols: 'http' }),
      kit.route('ports', '/p', 'Prefix', 'v3', { protocols: 'https' }),
      kit.route('ports', '/only-http', 'Prefix', 'v2', { protocols: 'http' }),
      kit.route('ports', '/', 'Prefix', 'v1'),
    ]);
    t.equal(answeredBy(await send(http, HOST, '/p')), 'v2');
    t.equal(answeredBy(await sendHttps(https, '/p')), 'v3');
    t.equal(answeredBy(await send(http, HOST, '/only-http')), 'v2');
    t.equal(answeredBy(await sendHttps(https, '/only-http')), 'v1');
  },
);

t.test('regex mode: the Ingress regex routes are tried first, then the HTTPRoute routes', async (t) => {
  const { http } = await gatewayPlane(
    t,
    (kit) => [
      kit.route('late', '/ingress-v2', 'Exact', 'v3'),
      kit.route('late', '/ingress-v1', 'Prefix', 'v3', { headers: [header('x-gw', 'yes')] }),
      kit.route('late', '/gw', 'Prefix', 'v3', { headers: [header('x-gw', 'yes')] }),
      kit.route('late', '/gw', 'Prefix', 'v1'),
    ],
    { regex: true },
  );
  // a regex route of the host matches: no HTTPRoute route takes the request, conditions or not
  t.equal(answeredBy(await send(http, HOST, '/ingress-v2')), 'v2');
  t.equal(answeredBy(await send(http, HOST, '/ingress-v2/more')), 'v2');
  t.equal(answeredBy(await send(http, HOST, '/ingress-v1/a', { headers: { 'X-GW': 'yes' } })), 'v1');
  t.equal(answeredBy(await send(http, HOST, '/ingress-v1/a')), 'v1');
  // none matches: the HTTPRoute candidates in order, then the default route
  t.equal(answeredBy(await send(http, HOST, '/gw/a', { headers: { 'X-GW': 'yes' } })), 'v3');
  t.equal(answeredBy(await send(http, HOST, '/gw/a')), 'v1');
  t.equal(answeredBy(await send(http, HOST, '/nothing')), '404');
});

t.test('HTTP/2: conditions read the stream headers; redirects name the :authority host', async (t) => {
  const { https } = await gatewayPlane(t, (kit) => [
    kit.route('h2', '/', 'Prefix', 'v2', { headers: [header('version', 'two')], protocols: 'https' }),
    kit.route('h2', '/by-host', 'Prefix', 'v3', { headers: [header('Host', HOST)] }),
    kit.route('h2', '/moved', 'Prefix', 'v1', {
      redirect: { scheme: null, hostname: null, port: null, path: null, statusCode: 301 },
    }),
    kit.route('h2', '/', 'Prefix', 'v1'),
  ]);
  const session = connect(`https://127.0.0.1:${https}`, { servername: HOST, rejectUnauthorized: false });
  t.teardown(() => session.close());
  const ask = (path: string, headers: Record<string, string> = {}) =>
    new Promise<string>((resolve, reject) => {
      const req = session.request({ ':path': path, ':authority': HOST, ...headers });
      let body = '';
      let head: Record<string, unknown> = {};
      req.on('response', (h) => {
        head = h;
      });
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        body += chunk;
      });
      req.on('end', () => {
        const status = Number(head[':status']);
        resolve(status === 200 ? (JSON.parse(body) as { name: string }).name : `${status} ${head.location}`);
      });
      req.on('error', reject);
      req.end();
    });
  t.equal(await ask('/', { version: 'two' }), 'v2');
  t.equal(await ask('/', { version: 'one' }), 'v1');
  t.equal(await ask('/moved/x?y=1'), `301 https://${HOST}/moved/x?y=1`);
  // a `host` match reads `:authority`, as it reads the Host line over HTTP/1.1
  t.equal(await ask('/by-host'), 'v3');
  t.equal(answeredBy(await sendHttps(https, '/by-host')), 'v3');
});

t.test('path values are written escaped and matched against the decoded request path', async (t) => {
  const { http } = await gatewayPlane(t, (kit) => [
    kit.route('esc', '/caf%C3%A9', 'Prefix', 'v2'),
    kit.route('esc', '/a%20b', 'Exact', 'v3'),
    kit.route('esc', '/pct%25', 'Exact', 'v1'),
  ]);
  const cases: Array<[path: string, backend: string]> = [
    ['/caf%C3%A9', 'v2'],
    ['/caf%c3%a9/menu', 'v2'],
    ['/caf%C3%A9x', '404'],
    ['/a%20b', 'v3'],
    ['/a%20b/', '404'],
    ['/pct%25', 'v1'],
    ['/pct', '404'],
  ];
  for (const [path, backend] of cases) t.equal(answeredBy(await send(http, HOST, path)), backend, path);
});
