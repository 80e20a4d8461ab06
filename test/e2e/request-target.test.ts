// The request line and Host as one judgement for everything that reads them: routing, access checks,
// auth-url, the upstream's headers and the access log. Against a standalone controller listening on
// every interface (a dual-stack socket, as `npm start` does): an IPv4 client is 127.0.0.1 everywhere
// (never ::ffff:127.0.0.1); `#` ends the path, so /admin#x is /admin and gets /admin's allowlist on
// HTTP/1.1 and HTTP/2; a request with two hosts (two Host headers, or :authority and host) is 400 as
// in NGINX; `GET *` is 400 and a CONNECT is 405 (400 for an authority-form target), each answered
// with NGINX's page and logged.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { type ClientHttp2Session, connect as connectHttp2, type OutgoingHttpHeaders } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { parseFlags } from '../../lib/config/flags.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { echoBackend, seenBy, send } from '../support/echo.ts';
import { listen } from '../support/http.ts';
import { JSON_LOG_KEYS } from '../support/json-log-format.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { raw } from '../support/raw-http.ts';
import { withTestThreads } from '../support/threads.ts';

interface H2Reply {
  status: number;
  body: string;
  location?: string;
}

function h2(session: ClientHttp2Session, headers: OutgoingHttpHeaders): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'GET', ...headers });
    let status = 0;
    let location: string | undefined;
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (head) => {
      status = Number(head[':status']);
      location = head.location;
    });
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => resolve({ status, body, location }));
    stream.on('error', reject);
    stream.end();
  });
}

t.test('one judgement of the client, the path and the host', async (t) => {
  const admin = echoBackend('admin');
  const site = echoBackend('site');
  const authSeen: IncomingHttpHeaders[] = [];
  const authUrls: string[] = [];
  const authServer = createServer((req, res) => {
    authSeen.push(req.headers);
    authUrls.push(req.url ?? '');
    res.statusCode = req.url?.startsWith('/deny') ? 401 : 200;
    res.end();
  });
  const adminPort = await listen(admin);
  const sitePort = await listen(site);
  const authPort = await listen(authServer);
  t.teardown(() => {
    admin.close();
    site.close();
    authServer.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-request-target-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(
    join(dir, 'all.yaml'),
    [
      INGRESS_CLASS,
      serviceYaml('admin', [adminPort]),
      serviceYaml('site', [sitePort]),
      // 127.0.0.1 is not in the allowlist: /admin answers it 403
      ingressYaml({
        name: 'admin',
        host: 'a.test',
        path: '/admin',
        service: 'admin',
        annotations: { 'whitelist-source-range': '10.0.0.0/8' },
      }),
      ingressYaml({ name: 'site', host: 'a.test', path: '/', service: 'site' }),
      ingressYaml({ name: 'other', host: 'b.test', path: '/', service: 'admin' }),
      ingressYaml({
        name: 'authed',
        host: 'authed.test',
        path: '/',
        service: 'site',
        annotations: { 'auth-url': `http://127.0.0.1:${authPort}/check?best=$best_http_host` },
      }),
      ingressYaml({
        name: 'signin',
        host: 'signin.test',
        path: '/',
        service: 'site',
        annotations: {
          'auth-url': `http://127.0.0.1:${authPort}/deny`,
          'auth-signin': 'https://login.example/start',
        },
      }),
    ].join(''),
  );
  // the JSON line of the docs: lines are found by field
  await writeFile(
    join(dir, 'zz-config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ingress-ts, namespace: ingress }\ndata: ${JSON.stringify(
      withTestThreads(JSON_LOG_KEYS),
    )}\n`,
  );
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      sink.emit('lines');
      done();
    },
  });
  /** The first access log line with these fields (lines are written in batches). */
  const logLine = async (fields: Record<string, unknown>) => {
    for (;;) {
      const line = lines.find((l) => Object.entries(fields).every(([k, v]) => l[k] === v));
      if (line !== undefined) return line;
      await once(sink, 'lines');
    }
  };
  // no --bind-address: every interface, one dual-stack socket where the platform has IPv6
  const parsed = parseFlags([
    '--manifests',
    dir,
    '--http-port',
    '0',
    '--https-port',
    '0',
    '--healthz-port',
    '0',
    '--configmap',
    'ingress/ingress-ts',
  ]);
  if (parsed.kind !== 'run') throw new Error('expected flags that run');
  const controller = await start(parsed.config, createLogger('silent'), { accessLogStdout: sink });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;
  const session = connectHttp2(`https://127.0.0.1:${controller.https.port}`, { rejectUnauthorized: false });
  t.teardown(() => session.close());

  await t.test('an IPv4 client of a dual-stack listener is its IPv4 address everywhere', async (t) => {
    const reply = await send(port, 'a.test', '/who');
    t.equal(reply.status, 200);
    const seen = seenBy(reply);
    t.equal(seen.headers['x-real-ip'], '127.0.0.1', 'X-Real-IP');
    t.equal(seen.headers['x-forwarded-for'], '127.0.0.1', 'X-Forwarded-For');
    const line = await logLine({ request_uri: '/who' });
    t.equal(line.remote_addr, '127.0.0.1', "the access log's remote_addr");
    const authed = await send(port, 'authed.test', '/ipv4');
    t.equal(authed.status, 200);
    const check = authSeen.at(-1);
    t.equal(check?.['x-real-ip'], '127.0.0.1', "auth-url's X-Real-IP");
    t.equal(check?.['x-forwarded-for'], '127.0.0.1', "auth-url's X-Forwarded-For");
    const overH2 = await h2(session, { ':path': '/who-h2', ':authority': 'a.test' });
    t.equal(JSON.parse(overH2.body).headers['x-real-ip'], '127.0.0.1', 'HTTP/2 too');
  });

  await t.test('# ends the path: /admin#x is /admin, with its allowlist', async (t) => {
    for (const target of ['/admin#', '/admin#x', '/admin#/../public', '/admin/#x']) {
      const reply = await raw(port, `GET ${target} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`);
      t.equal(reply.status, 403, `HTTP/1.1 ${target}: the /admin route's allowlist`);
      const overH2 = await h2(session, { ':path': target, ':authority': 'a.test' });
      t.equal(overH2.status, 403, `HTTP/2 ${target}: the /admin route's allowlist`);
    }
    const line = await logLine({ request_uri: '/admin#x', status: 403 });
    t.equal(line.location_path, '/admin', 'logged with the route it was judged by');
    // elsewhere the target goes upstream as sent, fragment included, as NGINX's $request_uri does
    const reply = await send(port, 'a.test', '/page?a=1#frag');
    t.equal(reply.status, 200);
    const seen = seenBy(reply);
    t.equal(seen.name, 'site');
    t.equal(seen.url, '/page?a=1#frag');
  });

  await t.test('one host per request', async (t) => {
    const asked = authSeen.length;
    const two = await h2(session, { ':path': '/x', ':authority': 'authed.test', host: 'a.test' });
    t.equal(two.status, 400, 'HTTP/2 :authority and a different host: 400');
    t.equal(authSeen.length, asked, 'no authorizer asked with a host the request is not routed by');
    const same = await h2(session, { ':path': '/x', ':authority': 'a.test', host: 'a.test' });
    t.equal(
      same.status,
      400,
      'even an equal one: NGINX takes :authority as the Host header, a second is 400',
    );
    const before = authSeen.length;
    const swapped = await h2(session, { ':path': '/x', ':authority': 'a.test', host: 'authed.test' });
    t.equal(swapped.status, 400);
    t.equal(authSeen.length, before, 'no authorizer asked about a host the request is not routed by');
    for (const [second, why] of [
      ['b.test', 'a different one'],
      ['a.test', 'an equal one'],
    ]) {
      const reply = await raw(
        port,
        `GET / HTTP/1.1\r\nHost: a.test\r\nHost: ${second}\r\nConnection: close\r\n\r\n`,
      );
      t.equal(reply.status, 400, `HTTP/1.1 two Host headers, ${why}: 400`);
      t.match(reply.text, '<center><h1>400 Bad Request</h1></center>', "NGINX's page");
    }
    // one host: routing, auth-url variables and X-Original-URL agree
    const one = await h2(session, { ':path': '/in?q=1', ':authority': 'authed.test' });
    t.equal(one.status, 200);
    t.equal(authSeen.at(-1)?.['x-original-url'], 'https://authed.test/in?q=1');
    t.equal(authUrls.at(-1), '/check?best=authed.test');
    const signin = await h2(session, { ':path': '/in', ':authority': 'signin.test' });
    t.equal(signin.status, 302);
    t.equal(
      signin.location,
      'https://login.example/start?rd=https://signin.test%2Fin',
      "the sign-in redirect's rd= names the host the request was routed by",
    );
  });

  await t.test('the Host as NGINX judges it: refused with 400, else one name for everything', async (t) => {
    let backendRequests = 0;
    const count = () => {
      backendRequests++;
    };
    admin.on('request', count);
    site.on('request', count);
    t.teardown(() => {
      admin.off('request', count);
      site.off('request', count);
    });
    const asked = authSeen.length;
    const refusedHosts = ['a..test', 'a.test/../admin', 'a.test x', 'a.test\tx', '.'];
    for (const host of refusedHosts) {
      const reply = await raw(port, `GET /bad-host HTTP/1.1\r\nHost: ${host}\r\n\r\n`, { end: false });
      t.equal(reply.status, 400, `HTTP/1.1 Host ${JSON.stringify(host)}: 400`);
      t.match(reply.text, '<center><h1>400 Bad Request</h1></center>', "NGINX's page");
      t.ok(reply.closed, 'and the connection closed by the proxy, as NGINX does after a 400');
    }
    const logged = await logLine({ request_uri: '/bad-host', status: 400 });
    t.equal(logged.host, '_', "logged with NGINX's $host of a refused Host: the default server's name");
    const absolute = await raw(port, 'GET http://a..test/bad-authority HTTP/1.1\r\nHost: a.test\r\n\r\n', {
      end: false,
    });
    t.equal(absolute.status, 400, 'an absolute-form authority NGINX refuses: 400');
    t.ok(absolute.closed);
    const underscore = await raw(port, 'GET http://a_b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n', {
      end: false,
    });
    t.equal(underscore.status, 400, "an authority NGINX's request-line parser refuses: 400");
    const badHeader = await raw(port, 'GET http://a.test/ HTTP/1.1\r\nHost: a..test\r\n\r\n', {
      end: false,
    });
    t.equal(badHeader.status, 400, 'an absolute-form request: its Host header is judged too');
    await logLine({ request_uri: 'http://a..test/bad-authority', status: 400 });
    const overH2 = await h2(session, { ':path': '/bad-host-h2', ':authority': 'a..test' });
    t.equal(overH2.status, 400, 'HTTP/2 :authority a..test: 400');
    t.match(overH2.body, '<center><h1>400 Bad Request</h1></center>');
    // (nghttp2 itself resets a stream whose :authority or host holds a byte outside RFC 3986's
    // authority, a slash or a space: NGINX would answer those 400)
    const hostH2 = await h2(session, { ':path': '/bad-host-h2', host: 'a..test' });
    t.equal(hostH2.status, 400, 'HTTP/2 host (no :authority) a..test: 400');
    t.equal(backendRequests, 0, 'no backend saw a refused host');
    t.equal(authSeen.length, asked, 'no authorizer was asked');

    // accepted: lower-cased, the port and one trailing dot dropped, for routing and the log alike
    const upper = await raw(
      port,
      'GET /host-normal HTTP/1.1\r\nHost: A.TEST.:8080\r\nConnection: close\r\n\r\n',
      { end: false },
    );
    t.equal(upper.status, 200, 'A.TEST.:8080 is a.test');
    t.match(upper.text, '"name":"site"');
    const line = await logLine({ request_uri: '/host-normal' });
    t.equal(line.host, 'a.test', '$host in the log is the name it was routed by');
    t.equal(line.proxy_upstream_name, 'e2e-site-80');
    // ingress-nginx's NGINX (1.27) does not read the port part: a port that is not a number passes
    const port80 = await raw(
      port,
      'GET /host-port HTTP/1.1\r\nHost: a.test:http\r\nConnection: close\r\n\r\n',
      { end: false },
    );
    t.equal(port80.status, 200, 'a.test:http is a.test, as in NGINX 1.27 (1.29.4 refuses it)');
    // absolute-form: the target's authority routes, whatever the Host header names
    const precedence = await raw(
      port,
      'GET http://b.test/which HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n',
      { end: false },
    );
    t.equal(precedence.status, 200);
    t.match(precedence.text, '"name":"admin"', "the request line's host wins (b.test routes to admin)");
    const upperH2 = await h2(session, { ':path': '/host-normal-h2', ':authority': 'A.Test:443' });
    t.equal(upperH2.status, 200, 'HTTP/2 :authority A.Test:443 is a.test');
    t.match(upperH2.body, '"name":"site"');
  });

  await t.test('after a 400 the connection is closed, as NGINX closes it', async (t) => {
    for (const target of ['/%zz', '/../x']) {
      const reply = await raw(
        port,
        `GET ${target} HTTP/1.1\r\nHost: a.test\r\n\r\nGET /after-400 HTTP/1.1\r\nHost: a.test\r\n\r\n`,
        { end: false },
      );
      t.equal(reply.status, 400, `${target}: 400`);
      t.match(reply.text, /\r\nConnection: close\r\n/i, 'said on the answer');
      t.notMatch(reply.text, '/after-400', 'the request behind it is not read');
      t.ok(reply.closed, 'and the connection closed');
    }
  });

  await t.test('TLS: the server name (SNI) does not route, the Host does (as in NGINX)', async (t) => {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: controller.https.port,
          path: '/sni-mismatch',
          servername: 'b.test',
          headers: { host: 'a.test' },
          rejectUnauthorized: false,
          agent: false,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.equal(reply.status, 200);
    t.match(reply.body, '"name":"site"', "SNI b.test, Host a.test: a.test's route");
  });

  await t.test('asterisk-form and CONNECT are refused as NGINX refuses them', async (t) => {
    for (const method of ['GET', 'OPTIONS']) {
      const reply = await raw(port, `${method} * HTTP/1.1\r\nHost: a.test\r\n\r\n`);
      t.equal(reply.status, 400, `${method} *: 400`);
      t.match(reply.text, '<center><h1>400 Bad Request</h1></center>', "NGINX's page");
      t.ok(reply.closed, 'and the connection closed');
      await logLine({ request_method: method, request_uri: '*', status: 400 });
    }
    const overH2 = await h2(session, { ':method': 'OPTIONS', ':path': '*', ':authority': 'a.test' });
    t.equal(overH2.status, 400, 'HTTP/2 OPTIONS with :path *: 400');
    const authority = await raw(port, 'CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n', {
      end: false,
    });
    t.equal(authority.status, 400, 'CONNECT host:port: 400 (a target NGINX cannot parse)');
    t.ok(authority.closed, 'and the connection closed by the proxy');
    const origin = await raw(port, 'CONNECT /x HTTP/1.1\r\nHost: a.test\r\n\r\n', { end: false });
    t.equal(origin.status, 405, 'CONNECT with a path: 405');
    t.match(origin.text, '<center><h1>405 Not Allowed</h1></center>', "NGINX's page");
    t.ok(origin.closed);
    const connectH2 = await h2(session, { ':method': 'CONNECT', ':authority': 'a.test:443' });
    t.equal(connectH2.status, 405, 'an HTTP/2 CONNECT: 405');
    t.match(connectH2.body, '<center><h1>405 Not Allowed</h1></center>', "NGINX's page");
    await logLine({ request_method: 'CONNECT', request_uri: 'a.test:443', status: 400 });
    await logLine({ request_method: 'CONNECT', request_uri: '/x', status: 405 });
    const trace = await raw(port, 'TRACE / HTTP/1.1\r\nHost: a.test\r\n\r\n');
    t.equal(trace.status, 405, 'TRACE: 405');
    t.match(trace.text, '<center><h1>405 Not Allowed</h1></center>', "NGINX's page");
    const traceH2 = await h2(session, { ':method': 'TRACE', ':path': '/', ':authority': 'a.test' });
    t.equal(traceH2.status, 405, 'an HTTP/2 TRACE: 405');
    await logLine({ request_method: 'TRACE', request_uri: '/', status: 405 });
  });
});
