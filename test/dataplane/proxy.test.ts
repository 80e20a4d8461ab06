// The proxy hop against real sockets: a front http.Server calling proxy.web / proxy.upgrade, echo
// backends that report what they received, a test-local round-robin balancer that records its picks.
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import t, { type Test } from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { dataplaneError } from '../../lib/dataplane/events.ts';
import { errorPage, sendErrorPage } from '../../lib/dataplane/responses/error-pages.ts';
import { type Balancer, type Peer, peerKey } from '../../lib/dataplane/upstream/balancer.ts';
import { generateRequestId } from '../../lib/dataplane/upstream/request-id.ts';
import type { ProxyTarget } from '../../lib/dataplane/upstream/target.ts';
import { UpstreamProxy } from '../../lib/dataplane/upstream/upstream-proxy.ts';

t.setTimeout(120_000); // 100 MB each way through the proxy: tap's 30 s default is tight on a loaded machine

// ---------------------------------------------------------------------------------------------------
// helpers

interface SpyBalancer extends Balancer {
  picks: string[];
  observed: string[];
}

function balancer(ports: number[]): SpyBalancer {
  const peers: Peer[] = ports.map((port) => ({
    address: '127.0.0.1',
    port,
    key: peerKey('127.0.0.1', port),
  }));
  let i = 0;
  const b: SpyBalancer = {
    kind: 'round_robin',
    peers,
    picks: [],
    observed: [],
    pick(tried) {
      if (peers.length === 0) return undefined;
      let peer = peers[i++ % peers.length] as Peer;
      for (let n = 0; n < peers.length && tried?.has(peer.key); n++) peer = peers[i++ % peers.length] as Peer;
      b.picks.push(peer.key);
      return peer;
    },
    observe(peer, seconds) {
      if (!(seconds >= 0)) throw new Error('bad seconds');
      b.observed.push(peer.key);
    },
    update() {},
  };
  return b;
}

function target(ports: number[], extra: Partial<ProxyTarget> = {}): ProxyTarget & { balancer: SpyBalancer } {
  return {
    upstream: 'default-echo-80',
    balancer: balancer(ports),
    connectTimeoutMs: 5000,
    sendTimeoutMs: 60000,
    readTimeoutMs: 60000,
    tries: 3,
    retryOn: { error: true, timeout: true, nonIdempotent: false },
    hashKey: null,
    affinity: null,
    ...extra,
  } as ProxyTarget & { balancer: SpyBalancer };
}

async function listen(server: net.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as net.AddressInfo).port;
}

/** Closes a server and every connection it still has. */
function closeServer(server: http.Server | net.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    if (server instanceof http.Server) server.closeAllConnections();
  });
}

/** A port nothing listens on (a server that listened and was closed). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  const port = await listen(s);
  await closeServer(s);
  return port;
}

interface Echo {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  bodyLength: number;
}

/** Echo backend: answers JSON describing the request, with a Server header and two cookies. */
function echoServer(): http.Server {
  return http.createServer((req, res) => {
    let bodyLength = 0;
    req.on('data', (c: Buffer) => {
      bodyLength += c.length;
    });
    req.on('end', () => {
      const echo: Echo = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        bodyLength,
      };
      res.writeHead(201, [
        'Server',
        'echo/1.0',
        'Set-Cookie',
        'a=1; Path=/',
        'Set-Cookie',
        'b=2; Path=/',
        'X-Backend',
        'echo',
        'Content-Type',
        'application/json',
      ]);
      res.end(JSON.stringify(echo));
    });
  });
}

interface Front {
  port: number;
  proxy: UpstreamProxy;
  server: http.Server;
}

/** The front listener: every request and upgrade goes to `tgt` through an UpstreamProxy. */
async function front(
  t: Tap,
  tgt: ProxyTarget,
  https = false,
  proxy = new UpstreamProxy(),
  hsts: string | null = null,
): Promise<Front> {
  let port = 0;
  const ctx = (req: http.IncomingMessage) => ({
    https,
    listenPort: port,
    remoteAddress: req.socket.remoteAddress ?? '',
    requestId: (req.headers['x-request-id'] as string | undefined) ?? generateRequestId(),
    hsts,
    hashKey: '',
    session: null,
  });
  const server = http.createServer((req, res) => proxy.web(req, res, tgt, ctx(req)));
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) =>
    proxy.upgrade(req, socket, head, tgt, ctx(req)),
  );
  port = await listen(server);
  t.teardown(async () => {
    await closeServer(server);
    await proxy.close();
  });
  return { port, proxy, server };
}

async function backend(t: Tap, server: http.Server | net.Server): Promise<number> {
  const port = await listen(server);
  t.teardown(() => closeServer(server));
  return port;
}

interface Reply {
  status: number;
  statusMessage: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

function request(
  port: number,
  options: { method?: string; path?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            statusMessage: res.statusMessage ?? '',
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body: Buffer.concat(chunks).toString(),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

type Tap = Test;

/** Collects dataplaneError events for the duration of a test. */
function errorEvents(t: Tap): { upstream: string; peer: string; code: string; message: string }[] {
  const events: { upstream: string; peer: string; code: string; message: string }[] = [];
  const onMessage = (m: unknown) => {
    events.push(m as { upstream: string; peer: string; code: string; message: string });
  };
  dataplaneError.subscribe(onMessage);
  t.teardown(() => {
    dataplaneError.unsubscribe(onMessage);
  });
  return events;
}

// ---------------------------------------------------------------------------------------------------
// headers

t.test('upstream request headers are exactly ingress-nginx’s', async (t) => {
  const echoPort = await backend(t, echoServer());
  const f = await front(t, target([echoPort]));
  const reply = await request(f.port, {
    path: '/a/b?x=1',
    headers: {
      host: 'shop.example.com:8080',
      'x-forwarded-for': '203.0.113.7, 10.0.0.1',
      'x-forwarded-host': 'orig.example.com',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '9999',
      'x-real-ip': '6.6.6.6',
      'x-scheme': 'gopher',
      'x-original-forwarded-for': 'spoofed',
      'x-request-id': 'abc123',
      proxy: 'http://evil.example',
      connection: 'keep-alive, X-Secret',
      'x-secret': 'hop',
      'keep-alive': 'timeout=5',
      te: 'trailers',
      'proxy-connection': 'keep-alive',
      'x-custom': 'kept',
    },
  });
  t.equal(reply.status, 201);
  const echo = JSON.parse(reply.body) as Echo;
  const h = echo.headers;
  t.equal(echo.url, '/a/b?x=1');
  t.equal(h.host, 'shop.example.com:8080', 'Host unchanged, port included');
  t.equal(h['x-request-id'], 'abc123');
  t.equal(h['x-real-ip'], '127.0.0.1');
  t.equal(h['x-forwarded-for'], '127.0.0.1', 'X-Forwarded-For replaced, not appended');
  t.equal(h['x-forwarded-host'], 'shop.example.com:8080');
  t.equal(h['x-forwarded-port'], String(f.port));
  t.equal(h['x-forwarded-proto'], 'http');
  t.equal(h['x-forwarded-scheme'], 'http');
  t.equal(h['x-scheme'], 'http');
  t.equal(h['x-original-forwarded-for'], '203.0.113.7, 10.0.0.1');
  t.equal(h['x-original-forwarded-host'], 'orig.example.com');
  t.equal(h['x-custom'], 'kept');
  for (const gone of [
    'proxy',
    'x-secret',
    'keep-alive',
    'te',
    'proxy-connection',
    'upgrade',
    'transfer-encoding',
  ]) {
    t.equal(h[gone], undefined, `${gone} not forwarded`);
  }
  t.not(h.connection, 'keep-alive, X-Secret');
  // every forwarded header appears once
  const names = echo.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  t.same(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
    'no duplicated header',
  );
});

t.test('over HTTPS: port 443 and https scheme; a request id is generated when none came in', async (t) => {
  const echoPort = await backend(t, echoServer());
  const f = await front(t, target([echoPort]), true);
  const reply = await request(f.port, { headers: { host: 'secure.example.com' } });
  const h = (JSON.parse(reply.body) as Echo).headers;
  t.equal(h['x-forwarded-port'], '443');
  t.equal(h['x-forwarded-proto'], 'https');
  t.equal(h['x-forwarded-scheme'], 'https');
  t.equal(h['x-scheme'], 'https');
  t.equal(h['x-original-forwarded-for'], undefined, 'absent when the client sent no X-Forwarded-For');
  t.equal(h['x-original-forwarded-host'], undefined);
  t.match(h['x-request-id'], /^[0-9a-f]{32}$/);
});

t.test('response: Server removed, both Set-Cookie kept, status and other headers passed', async (t) => {
  const echoPort = await backend(t, echoServer());
  const f = await front(t, target([echoPort]));
  const reply = await request(f.port);
  t.equal(reply.status, 201);
  t.equal(reply.headers.server, undefined);
  t.same(reply.headers['set-cookie'], ['a=1; Path=/', 'b=2; Path=/']);
  t.equal(reply.headers['x-backend'], 'echo');
  t.equal(reply.headers['content-type'], 'application/json');
});

t.test('response: hop-by-hop headers and those named by Connection are stripped', async (t) => {
  const raw = net.createServer((socket) => {
    socket.once('data', () => {
      socket.end(
        'HTTP/1.1 200 OK\r\nServer: nginx\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=9\r\n' +
          'Trailer: X-T\r\nX-Kept: 2\r\nContent-Length: 2\r\n\r\nok',
      );
    });
  });
  const port = await backend(t, raw);
  const f = await front(t, target([port]));
  const reply = await request(f.port);
  t.equal(reply.body, 'ok');
  t.equal(reply.headers['x-hop'], undefined);
  t.equal(reply.headers.trailer, undefined);
  t.not(reply.headers['keep-alive'], 'timeout=9');
  t.equal(reply.headers['x-kept'], '2');
  t.equal(reply.headers.server, undefined);
});

t.test('Strict-Transport-Security from the context: on proxied responses and on error pages', async (t) => {
  const hsts = 'max-age=60; includeSubDomains';
  const echoPort = await backend(t, echoServer());
  const ok = await front(t, target([echoPort]), true, new UpstreamProxy(), hsts);
  const reply = await request(ok.port);
  t.equal(reply.status, 201);
  t.equal(reply.headers['strict-transport-security'], hsts);
  t.same(
    reply.rawHeaders.filter((name) => name.toLowerCase() === 'strict-transport-security'),
    ['strict-transport-security'],
    'sent once',
  );
  const bad = await front(t, target([await deadPort()]), true, new UpstreamProxy(), hsts);
  const failed = await request(bad.port);
  t.equal(failed.status, 502);
  t.equal(failed.headers['strict-transport-security'], hsts);
  const plain = await front(t, target([echoPort]));
  t.equal((await request(plain.port)).headers['strict-transport-security'], undefined, 'none without it');
});

t.test("response: what NGINX's proxy hides by default, and HSTS replacing the upstream's", async (t) => {
  const raw = net.createServer((socket) => {
    socket.once('data', () => {
      socket.end(
        'HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nX-Pad: avoid browser bug\r\n' +
          'X-Accel-Redirect: /internal/file\r\nX-Accel-Buffering: no\r\nX-Accel-Expires: 10\r\n' +
          'X-Accel-Limit-Rate: 1024\r\nX-Accel-Charset: utf-8\r\nStrict-Transport-Security: max-age=1\r\n' +
          'X-Kept: 1\r\nContent-Length: 2\r\n\r\nok',
      );
    });
  });
  const port = await backend(t, raw);
  const plain = await front(t, target([port]));
  const reply = await request(plain.port);
  t.equal(reply.body, 'ok');
  t.not(reply.headers.date, 'Thu, 01 Jan 1970 00:00:00 GMT', "the upstream's Date is replaced");
  t.ok(Math.abs(Date.parse(reply.headers.date ?? '') - Date.now()) < 60_000, 'by the current date');
  for (const name of [
    'x-pad',
    'x-accel-redirect',
    'x-accel-buffering',
    'x-accel-expires',
    'x-accel-limit-rate',
    'x-accel-charset',
  ])
    t.equal(reply.headers[name], undefined, name);
  t.equal(reply.headers['x-kept'], '1');
  t.equal(reply.headers['strict-transport-security'], 'max-age=1', "without HSTS on: the upstream's passes");
  const hsts = 'max-age=60';
  const secure = await front(t, target([port]), true, new UpstreamProxy(), hsts);
  const replaced = await request(secure.port);
  t.same(
    replaced.rawHeaders.filter((_, i) => i % 2 === 1 && /^max-age/.test(replaced.rawHeaders[i] ?? '')),
    [hsts],
    "HSTS on: ours replaces the upstream's, sent once",
  );
});

t.test('request bodies reach the upstream: fixed length and chunked', async (t) => {
  const echoPort = await backend(t, echoServer());
  const f = await front(t, target([echoPort]));
  const fixed = await request(f.port, { method: 'PUT', body: 'x'.repeat(100_000) });
  t.equal((JSON.parse(fixed.body) as Echo).bodyLength, 100_000);
  const chunked = await new Promise<Echo>((resolve, reject) => {
    const req = http.request({ port: f.port, host: '127.0.0.1', method: 'POST', agent: false }, (res) => {
      let s = '';
      res.on('data', (c: Buffer) => {
        s += c.toString();
      });
      res.on('end', () => resolve(JSON.parse(s) as Echo));
    });
    req.on('error', reject);
    req.write('hello ');
    req.end('world');
  });
  t.equal(chunked.bodyLength, 11);
});

t.test('keep-alive client connections carry several proxied requests, with and without bodies', async (t) => {
  const echoPort = await backend(t, echoServer());
  const f = await front(t, target([echoPort]));
  let connections = 0;
  f.server.on('connection', () => connections++);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  for (let i = 0; i < 3; i++) {
    for (const method of ['POST', 'GET']) {
      const reply = await new Promise<Reply>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: f.port, method, agent }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              statusMessage: '',
              headers: res.headers,
              rawHeaders: [],
              body,
            }),
          );
        });
        req.on('error', reject);
        req.end(method === 'POST' ? `body ${i}` : undefined);
      });
      t.equal(reply.status, 201);
      t.equal((JSON.parse(reply.body) as Echo).bodyLength, method === 'POST' ? 6 : 0);
    }
  }
  t.equal(connections, 1, 'one client connection for all six requests');
});

t.test(
  'retire(): pools of gone peers close after their requests finish; a returning peer gets a new pool',
  async (t) => {
    let release: (() => void) | undefined;
    const slow = http.createServer((req, res) => {
      if (req.url === '/slow') {
        release = () => res.end('late');
        slow.emit('held');
      } else res.end('ok');
    });
    const port = await backend(t, slow);
    const f = await front(t, target([port]));
    const held = once(slow, 'held');
    const pending = request(f.port, { path: '/slow' });
    await held;
    f.proxy.retire([peerKey('127.0.0.1', port), 'unknown:1']);
    release?.();
    const late = await pending;
    t.equal(late.status, 200);
    t.equal(late.body, 'late', 'the request in flight finished on the retired pool');
    const again = await request(f.port);
    t.equal(again.body, 'ok');
  },
);

// ---------------------------------------------------------------------------------------------------
// error pages, no endpoints, retries

t.test('error pages: NGINX bodies without a banner', async (t) => {
  t.equal(
    errorPage(404).body.toString(),
    '<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n</body>\r\n</html>\r\n',
  );
  const titles: Record<number, string> = {
    400: '400 Bad Request',
    401: '401 Authorization Required',
    403: '403 Forbidden',
    405: '405 Not Allowed',
    413: '413 Request Entity Too Large',
    429: '429 Too Many Requests',
    431: '431 Request Header Fields Too Large',
    500: '500 Internal Server Error',
    502: '502 Bad Gateway',
    503: '503 Service Temporarily Unavailable',
    504: '504 Gateway Time-out',
  };
  for (const [status, title] of Object.entries(titles)) {
    t.match(errorPage(Number(status)).body.toString(), `<head><title>${title}</title></head>`);
  }
  const server = http.createServer((_req, res) => {
    res.setHeader('x-kept', 'yes');
    sendErrorPage(res, 413);
  });
  const port = await backend(t, server);
  const reply = await request(port);
  t.equal(reply.status, 413);
  t.equal(reply.statusMessage, 'Request Entity Too Large');
  t.equal(reply.headers['content-type'], 'text/html');
  t.equal(reply.headers['content-length'], String(Buffer.byteLength(reply.body)));
  t.equal(reply.headers['x-kept'], 'yes');
  t.match(reply.body, '413 Request Entity Too Large');
});

t.test('no endpoints: 503 with the NGINX page', async (t) => {
  const f = await front(t, target([]));
  const reply = await request(f.port);
  t.equal(reply.status, 503);
  t.equal(reply.statusMessage, 'Service Temporarily Unavailable');
  t.equal(
    reply.body,
    '<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n' +
      '<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n',
  );
  t.equal(reply.headers['content-type'], 'text/html');
  t.equal(reply.headers['content-length'], String(reply.body.length));
});

t.test('a dead peer is skipped: the retry reaches the live one', async (t) => {
  const events = errorEvents(t);
  const dead = await deadPort();
  const live = await backend(t, echoServer());
  const tgt = target([dead, live]);
  const f = await front(t, tgt);
  const reply = await request(f.port);
  t.equal(reply.status, 201);
  t.same(tgt.balancer.picks, [peerKey('127.0.0.1', dead), peerKey('127.0.0.1', live)]);
  t.same(tgt.balancer.observed, [peerKey('127.0.0.1', live)], 'observe() after the response head only');
  t.equal(events.length, 1);
  t.match(events[0], { upstream: 'default-echo-80', peer: peerKey('127.0.0.1', dead), code: 'ECONNREFUSED' });
});

t.test('a POST whose connection was refused is retried with its body intact', async (t) => {
  const dead = await deadPort();
  const live = await backend(t, echoServer());
  const tgt = target([dead, live]);
  const f = await front(t, tgt);
  const reply = await request(f.port, { method: 'POST', body: 'payload!' });
  t.equal(reply.status, 201);
  t.equal((JSON.parse(reply.body) as Echo).bodyLength, 8);
  t.equal(tgt.balancer.picks.length, 2);
});

t.test('only dead peers: 502 after `tries` attempts', async (t) => {
  const events = errorEvents(t);
  const ports = [await deadPort(), await deadPort(), await deadPort(), await deadPort()];
  const tgt = target(ports, { tries: 3 });
  const f = await front(t, tgt);
  const reply = await request(f.port);
  t.equal(reply.status, 502);
  t.match(reply.body, '<title>502 Bad Gateway</title>');
  t.equal(tgt.balancer.picks.length, 3);
  t.equal(new Set(tgt.balancer.picks).size, 3, 'tried peers are avoided');
  t.equal(events.length, 3);

  const once = target(ports, { tries: 1 });
  const f1 = await front(t, once);
  t.equal((await request(f1.port)).status, 502);
  t.equal(once.balancer.picks.length, 1);

  const noRetry = target(ports, { retryOn: { error: false, timeout: true, nonIdempotent: false } });
  const f2 = await front(t, noRetry);
  t.equal((await request(f2.port)).status, 502);
  t.equal(noRetry.balancer.picks.length, 1, 'error not in proxy-next-upstream');
});

/** A peer that reads a whole request (head + Content-Length body), then resets the connection. */
async function resettingPeer(t: Tap): Promise<{ port: number; seen: () => number }> {
  let seen = 0;
  const server = net.createServer((socket) => {
    let buf = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /content-length: *(\d+)/i.exec(buf.subarray(0, end).toString());
      if (buf.length >= end + 4 + (m ? Number(m[1]) : 0)) {
        seen++;
        socket.resetAndDestroy();
      }
    });
    socket.on('error', () => {});
  });
  const port = await backend(t, server);
  return { port, seen: () => seen };
}

t.test('a POST to a peer that resets after reading it: 502, not retried', async (t) => {
  const events = errorEvents(t);
  const reset = await resettingPeer(t);
  const live = await backend(t, echoServer());
  const tgt = target([reset.port, live]);
  const f = await front(t, tgt);
  const reply = await request(f.port, { method: 'POST', body: 'charge the card once' });
  t.equal(reply.status, 502);
  t.same(tgt.balancer.picks, [peerKey('127.0.0.1', reset.port)]);
  t.equal(reset.seen(), 1);
  t.equal(events.length, 1);

  // the same failure on a GET is retried on the next peer
  const get = target([reset.port, live]);
  const g = await front(t, get);
  t.equal((await request(g.port)).status, 201);
  t.equal(get.balancer.picks.length, 2);

  // and a POST is retried too when non_idempotent is on (bodiless here: a streamed body is never resent)
  const ni = target([reset.port, live], { retryOn: { error: true, timeout: true, nonIdempotent: true } });
  const n = await front(t, ni);
  t.equal((await request(n.port, { method: 'POST' })).status, 201);
  t.equal(ni.balancer.picks.length, 2);

  // but a POST whose body was streamed upstream is not, even with non_idempotent
  const nb = target([reset.port, live], { retryOn: { error: true, timeout: true, nonIdempotent: true } });
  const b = await front(t, nb);
  t.equal((await request(b.port, { method: 'POST', body: 'streamed' })).status, 502);
  t.equal(nb.balancer.picks.length, 1);
});

t.test('read timeout waiting for the head: 504 after the tries', async (t) => {
  const events = errorEvents(t);
  const held: http.ServerResponse[] = [];
  const silent = http.createServer((_req, res) => {
    held.push(res);
  });
  const a = await backend(t, silent);
  const tgt = target([a], { readTimeoutMs: 200, tries: 2 });
  const f = await front(t, tgt);
  const started = Date.now();
  const reply = await request(f.port);
  t.equal(reply.status, 504);
  t.equal(reply.statusMessage, 'Gateway Time-out');
  t.match(reply.body, '<title>504 Gateway Time-out</title>');
  t.equal(tgt.balancer.picks.length, 2);
  t.ok(Date.now() - started >= 350, 'both tries waited');
  t.match(events, [{ code: 'UND_ERR_HEADERS_TIMEOUT' }, { code: 'UND_ERR_HEADERS_TIMEOUT' }]);

  // timeout not in proxy-next-upstream: one try
  const one = target([a], {
    readTimeoutMs: 200,
    retryOn: { error: true, timeout: false, nonIdempotent: false },
  });
  const g = await front(t, one);
  t.equal((await request(g.port)).status, 504);
  t.equal(one.balancer.picks.length, 1);
});

t.test('send timeout: an upstream that stops reading the body gets 504, not a retry', async (t) => {
  const events = errorEvents(t);
  const sink = http.createServer((req) => {
    req.pause(); // never reads, never answers
  });
  const port = await backend(t, sink);
  const tgt = target([port], { sendTimeoutMs: 200 });
  const f = await front(t, tgt);
  const up = http.request({
    host: '127.0.0.1',
    port: f.port,
    method: 'PUT',
    agent: false,
    headers: { 'content-length': String(100 * 1024 * 1024) },
  });
  up.on('error', () => {});
  const response = once(up, 'response') as Promise<[http.IncomingMessage]>;
  const writing = writeUntilStalled(up, 100 * 1024 * 1024, 300);
  const [res] = await response;
  t.equal(res.statusCode, 504);
  t.equal(tgt.balancer.picks.length, 1, 'a request whose body went out is not resent');
  t.match(events, [{ code: 'PROXY_SEND_TIMEOUT' }]);
  res.resume();
  up.destroy();
  await writing;
});

t.test('read timeout after the response started: the client connection is cut', async (t) => {
  const stalled = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-length': '10' });
    res.write('12345');
  });
  const port = await backend(t, stalled);
  const f = await front(t, target([port], { readTimeoutMs: 200 }));
  const outcome = await new Promise<string>((resolve) => {
    const req = http.get({ port: f.port, host: '127.0.0.1', agent: false }, (res) => {
      t.equal(res.statusCode, 200);
      res.on('data', () => {});
      res.on('end', () => resolve('end'));
      res.on('error', () => resolve('aborted'));
      res.on('aborted', () => resolve('aborted'));
    });
    req.on('error', () => resolve('aborted'));
  });
  t.equal(outcome, 'aborted');
});

// ---------------------------------------------------------------------------------------------------
// client aborts

t.test('a client that goes away aborts the upstream request', async (t) => {
  let upstreamClosed = 0;
  const closed = new Set<() => void>();
  const slow = http.createServer((req, res) => {
    res.on('close', () => {
      upstreamClosed++;
      for (const f of closed) f();
    });
    if (req.url === '/head') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk');
    } // '/wait': never answers
  });
  const port = await backend(t, slow);
  const f = await front(t, target([port]));

  for (const path of ['/head', '/wait']) {
    const upstreamGone = new Promise<void>((resolve) => {
      closed.add(resolve);
    });
    const req = http.get({ port: f.port, host: '127.0.0.1', path, agent: false });
    req.on('error', () => {});
    if (path === '/head') {
      const [res] = (await once(req, 'response')) as [http.IncomingMessage];
      await once(res, 'data');
    } else {
      await new Promise<void>((resolve) => slow.once('request', () => resolve()));
    }
    req.destroy();
    await upstreamGone;
    closed.clear();
  }
  t.equal(upstreamClosed, 2, 'the upstream saw both requests end');
});

// ---------------------------------------------------------------------------------------------------
// big bodies with backpressure

const MB = 1024 * 1024;
const TOTAL = 100 * MB;
const CHUNK = Buffer.alloc(64 * 1024, 'z');

// Socket reads allocate a fresh buffer each time: 600 MB of garbage cross the three hops here, and V8
// collects external memory lazily, so raw RSS mostly measures GC lag (~80 MB even with no proxy at all).
// The sampler forces a collection before each reading so that RSS tracks what is actually retained.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function peakRss(): { peak: () => number; stop: () => void } {
  gc();
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    gc();
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 50);
  return {
    peak: () => Math.max(peak, process.memoryUsage.rss()),
    stop: () => clearInterval(timer),
  };
}

/** Writes until `total` bytes or until a write has waited `stallMs` for 'drain'; returns bytes written. */
async function writeUntilStalled(
  w: NodeJS.WritableStream,
  total: number,
  stallMs: number,
): Promise<{ written: number; stalled: boolean }> {
  let written = 0;
  while (written < total) {
    written += CHUNK.length;
    if (!w.write(CHUNK)) {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), stallMs);
      const drained = await once(w as unknown as NodeJS.EventEmitter, 'drain', { signal: ac.signal }).then(
        () => true,
        () => false,
      );
      clearTimeout(timer);
      if (!drained) return { written, stalled: true };
    }
  }
  return { written, stalled: false };
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

t.test('100 MB upload and download stream with backpressure, RSS stays bounded', async (t) => {
  const uploadWaiting = deferred();
  const uploadGo = deferred();
  const downloadStalled = deferred<{ written: number; stalled: boolean }>();
  const downloadGo = deferred();
  const big = http.createServer(async (req, res) => {
    if (req.method === 'PUT') {
      // the body is not read until the test says so: the proxy must stop reading the client meanwhile
      uploadWaiting.resolve();
      await uploadGo.promise;
      let n = 0;
      req.on('data', (c: Buffer) => {
        n += c.length;
      });
      req.on('end', () => res.end(String(n)));
      return;
    }
    res.writeHead(200, { 'content-length': String(TOTAL) });
    const first = await writeUntilStalled(res, TOTAL, 300);
    downloadStalled.resolve(first);
    await downloadGo.promise;
    const rest = await writeUntilStalled(res, TOTAL - first.written, 10_000);
    if (rest.stalled) res.destroy();
    else res.end();
  });
  const port = await backend(t, big);
  const f = await front(t, target([port]));
  const meter = peakRss();
  const rss0 = process.memoryUsage.rss();
  t.teardown(meter.stop);

  // upload: the client must stall long before 100 MB while the upstream does not read
  const up = http.request({
    host: '127.0.0.1',
    port: f.port,
    method: 'PUT',
    agent: false,
    headers: { 'content-length': String(TOTAL) },
  });
  const upReply = new Promise<string>((resolve, reject) => {
    up.on('response', (res: http.IncomingMessage) => {
      let s = '';
      res.on('data', (c: Buffer) => {
        s += c.toString();
      });
      res.on('end', () => resolve(s));
    });
    up.on('error', reject);
  });
  const first = await writeUntilStalled(up, TOTAL, 300);
  await uploadWaiting.promise;
  t.ok(first.stalled, 'the client is held back while the upstream does not read');
  t.ok(first.written < 40 * MB, `only ${(first.written / MB).toFixed(1)} MB accepted before the stall`);
  uploadGo.resolve();
  const rest = await writeUntilStalled(up, TOTAL - first.written, 10_000);
  t.notOk(rest.stalled);
  up.end();
  t.equal(await upReply, String(TOTAL), 'the upstream received every byte');

  // download: the upstream must stall long before 100 MB while the client does not read
  const down = http.get({ host: '127.0.0.1', port: f.port, agent: false });
  const [res] = (await once(down, 'response')) as [http.IncomingMessage];
  res.pause();
  const firstDown = await downloadStalled.promise;
  t.ok(firstDown.stalled, 'the upstream is held back while the client does not read');
  t.ok(firstDown.written < 40 * MB, `only ${(firstDown.written / MB).toFixed(1)} MB sent before the stall`);
  let received = 0;
  res.on('data', (c: Buffer) => {
    received += c.length;
  });
  downloadGo.resolve();
  res.resume();
  await once(res, 'end');
  t.equal(received, TOTAL, 'the client received every byte');
  meter.stop();
  const growth = meter.peak() - rss0;
  t.comment(`RSS growth during 2 x 100 MB: ${(growth / MB).toFixed(1)} MB`);
  t.ok(growth < 64 * MB, `RSS growth ${(growth / MB).toFixed(1)} MB < 64 MB`);
});

// ---------------------------------------------------------------------------------------------------
// WebSocket

async function wsBackend(
  t: Tap,
): Promise<{ port: number; wss: WebSocketServer; upgrades: http.IncomingHttpHeaders[] }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(426);
    res.end();
  });
  const wss = new WebSocketServer({ server });
  const upgrades: http.IncomingHttpHeaders[] = [];
  wss.on('headers', (headers) => {
    headers.push('Server: ws-backend');
  });
  wss.on('connection', (socket, req) => {
    upgrades.push(req.headers);
    socket.on('message', (data, isBinary) => {
      const text = data.toString();
      if (text === 'close-please') {
        socket.close(4001, 'server says bye');
        return;
      }
      socket.send(isBinary ? data : `echo:${text}`);
    });
    socket.send('hello from upstream');
  });
  const port = await backend(t, server);
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  );
  return { port, wss, upgrades };
}

function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (d) => resolve(d.toString())));
}

t.test('WebSocket: messages both ways through the proxy, closed by the client', async (t) => {
  const be = await wsBackend(t);
  const f = await front(t, target([be.port]));
  const ws = new WebSocket(`ws://127.0.0.1:${f.port}/chat`, {
    headers: { 'x-forwarded-for': '198.51.100.1' },
  });
  const upgradeHeaders = new Promise<http.IncomingHttpHeaders>((resolve) =>
    ws.once('upgrade', (res) => resolve(res.headers)),
  );
  const greeting = nextMessage(ws);
  await once(ws, 'open');
  t.equal((await upgradeHeaders).server, undefined, 'Server removed from the 101');
  t.equal(await greeting, 'hello from upstream');
  for (let i = 0; i < 5; i++) {
    const reply = nextMessage(ws);
    ws.send(`m${i}`);
    t.equal(await reply, `echo:m${i}`);
  }
  const h = be.upgrades[0] as http.IncomingHttpHeaders;
  t.equal(h['x-forwarded-for'], '127.0.0.1');
  t.equal(h['x-original-forwarded-for'], '198.51.100.1');
  t.equal(h.upgrade, 'websocket');
  t.match(h.connection, /upgrade/i);
  const serverSide = [...be.wss.clients][0] as WebSocket;
  const serverClosed = once(serverSide, 'close');
  ws.close(1000, 'client done');
  const [code, reason] = (await serverClosed) as [number, Buffer];
  t.equal(code, 1000);
  t.equal(reason.toString(), 'client done');
  await once(ws, 'close');
});

t.test('WebSocket: closed by the upstream', async (t) => {
  const be = await wsBackend(t);
  const f = await front(t, target([be.port]));
  const ws = new WebSocket(`ws://127.0.0.1:${f.port}/`);
  const greeting = nextMessage(ws);
  await once(ws, 'open');
  await greeting;
  const closed = once(ws, 'close');
  ws.send('close-please');
  const [code, reason] = (await closed) as [number, Buffer];
  t.equal(code, 4001);
  t.equal(reason.toString(), 'server says bye');
});

t.test('WebSocket: a client that drops the TCP connection tears the upstream side down', async (t) => {
  const be = await wsBackend(t);
  const f = await front(t, target([be.port]));
  const ws = new WebSocket(`ws://127.0.0.1:${f.port}/`);
  const greeting = nextMessage(ws);
  await once(ws, 'open');
  await greeting;
  const serverSide = [...be.wss.clients][0] as WebSocket;
  const serverClosed = once(serverSide, 'close');
  ws.terminate(); // no close frame: only the TCP close can tell the upstream
  const [code] = (await serverClosed) as [number];
  t.equal(code, 1006);
});

async function rawUpgrade(port: number): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  let s = '';
  socket.on('data', (c: Buffer) => {
    s += c.toString();
  });
  await once(socket, 'close');
  return s;
}

t.test('WebSocket: a dead peer gives 502, no endpoints 503, a refusal is passed on', async (t) => {
  const dead = await deadPort();
  const tgt = target([dead], { tries: 2 });
  const f = await front(t, tgt);
  const reply = await rawUpgrade(f.port);
  t.match(reply, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
  t.match(reply, '<title>502 Bad Gateway</title>');
  t.equal(tgt.balancer.picks.length, 2);

  const none = await front(t, target([]));
  t.match(await rawUpgrade(none.port), /^HTTP\/1\.1 503 Service Temporarily Unavailable\r\n/);

  // an upstream that answers the upgrade with an ordinary 426: passed on to the client
  const plain = await backend(
    t,
    http.createServer((_req, res) => {
      res.writeHead(426, { server: 'x', 'content-type': 'text/plain' });
      res.end('no upgrade here');
    }),
  );
  const p = await front(t, target([plain]));
  const refused = await rawUpgrade(p.port);
  t.match(refused, /^HTTP\/1\.1 426 /);
  t.match(refused, /no upgrade here$/);
  t.notMatch(refused, /server:/i);
});

t.test('generateRequestId: 32 lower-case hex, unique', async (t) => {
  const ids = new Set<string>();
  for (let i = 0; i < 2000; i++) ids.add(generateRequestId());
  t.equal(ids.size, 2000);
  for (const id of ids) if (!/^[0-9a-f]{32}$/.test(id)) t.fail(id);
});

t.test('invalid_header: an unparsable response head goes to the next peer only when listed', async (t) => {
  const garbage = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end('HELLO THERE\r\n\r\n'));
  });
  const bad = await backend(t, garbage);
  const live = await backend(t, echoServer());
  const events = errorEvents(t);
  const plain = target([bad, live]);
  const f = await front(t, plain);
  t.equal((await request(f.port)).status, 502, 'not in proxy-next-upstream: 502');
  t.match(events, [{ code: /^HPE_/ }]);
  t.equal(plain.balancer.picks.length, 1);

  const listed = target([bad, live], {
    retryOn: { error: true, timeout: true, nonIdempotent: false, invalidHeader: true },
  });
  const g = await front(t, listed);
  t.equal((await request(g.port)).status, 201, 'invalid_header: the next peer answers');
  t.equal(listed.balancer.picks.length, 2);
});

t.test('a buffered request body (proxy-request-buffering) can be resent whole', async (t) => {
  const reset = await resettingPeer(t);
  const live = await backend(t, echoServer());
  const buffered = target([reset.port, live], {
    bufferRequest: true,
    maxBodySize: 1024,
    retryOn: { error: true, timeout: true, nonIdempotent: true },
  });
  const f = await front(t, buffered);
  const reply = await request(f.port, { method: 'POST', body: 'resend me' });
  t.equal(reply.status, 201, 'retried with non_idempotent');
  t.equal((JSON.parse(reply.body) as Echo).bodyLength, 9, 'with the whole body');
  t.equal(reset.seen(), 1);

  const idempotentOnly = target([reset.port, live], { bufferRequest: true, maxBodySize: 1024 });
  const g = await front(t, idempotentOnly);
  t.equal(
    (await request(g.port, { method: 'POST', body: 'once' })).status,
    502,
    'POST without non_idempotent',
  );
  t.equal(idempotentOnly.balancer.picks.length, 1);
  const put = await request(g.port, { method: 'PUT', body: 'twice' });
  t.equal(put.status, 201, 'a buffered PUT is retried');
});

t.test('http_xxx retries stop at proxy-next-upstream-tries and pass the last answer on', async (t) => {
  let seen = 0;
  const busy = () =>
    http.createServer((_req, res) => {
      seen++;
      res.writeHead(429, { 'retry-after': '1' });
      res.end(`busy ${seen}`);
    });
  const a = await backend(t, busy());
  const b = await backend(t, busy());
  const tgt = target([a, b], {
    tries: 2,
    retryOn: { error: true, timeout: true, nonIdempotent: false, statuses: new Set([429]) },
  });
  const f = await front(t, tgt);
  const reply = await request(f.port);
  t.equal(reply.status, 429);
  t.equal(reply.body, 'busy 2', 'the second (last) answer');
  t.equal(seen, 2);
  t.equal(new Set(tgt.balancer.picks).size, 2, 'each try on another peer');
});
