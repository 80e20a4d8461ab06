// What the proxy hands to undici and to Node per request, where the hot path saves calls: the
// servername of a cleartext dispatch, the last chunk of a Content-Length body written with the end,
// and the proxy's own header names known to undici.
import { channel } from 'node:diagnostics_channel';
import { once } from 'node:events';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import t, { type Test } from 'tap';
import { DEFAULT_HTTP_POLICY } from '../../lib/dataplane/http-policy.ts';
import { peerKey } from '../../lib/dataplane/upstream/balancer.ts';
import { servernameOf } from '../../lib/dataplane/upstream/pools.ts';
import { forwardHeaders } from '../../lib/dataplane/upstream/request-headers.ts';
import type { ProxyTarget, RequestContext } from '../../lib/dataplane/upstream/target.ts';
import { PROXY_HEADER_NAMES } from '../../lib/dataplane/upstream/undici-names.ts';
import { UpstreamProxy } from '../../lib/dataplane/upstream/upstream-proxy.ts';

/** A plain request's context: HTTP on port 80 from the loopback, nothing configured. */
const CONTEXT: RequestContext = {
  https: false,
  listenPort: 80,
  remoteAddress: '127.0.0.1',
  requestId: 'r1',
  hsts: null,
  hashKey: '',
  session: null,
};

function target(port: number, extra: Partial<ProxyTarget> = {}): ProxyTarget {
  const peer = { address: '127.0.0.1', port, key: peerKey('127.0.0.1', port) };
  return {
    upstream: 'default-app-80',
    balancer: { kind: 'round_robin', peers: [peer], pick: () => peer, observe() {}, update() {} },
    connectTimeoutMs: 5000,
    sendTimeoutMs: 60000,
    readTimeoutMs: 60000,
    tries: 1,
    retryOn: { error: false, timeout: false, nonIdempotent: false },
    hashKey: null,
    affinity: null,
    ...extra,
  } as ProxyTarget;
}

async function listen(t: Test, server: net.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if (server instanceof http.Server) server.closeAllConnections();
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

/** How the proxy wrote one response: the chunks given to `write`, and whether `end` carried one. */
interface Writes {
  written: number[];
  endChunk: number | null;
}

/** A front server proxying every request to `tgt`, recording each response's write and end calls. */
async function front(
  t: Test,
  tgt: ProxyTarget,
): Promise<{ port: number; writes: Writes[]; proxy: UpstreamProxy }> {
  const proxy = new UpstreamProxy();
  const writes: Writes[] = [];
  const server = http.createServer((req, res) => {
    const seen: Writes = { written: [], endChunk: null };
    writes.push(seen);
    const write = res.write.bind(res) as (chunk: Buffer) => boolean;
    const end = res.end.bind(res) as (chunk?: Buffer) => http.ServerResponse;
    (res as unknown as { write: (chunk: Buffer) => boolean }).write = (chunk) => {
      seen.written.push(chunk.length);
      return write(chunk);
    };
    (res as unknown as { end: (chunk?: Buffer) => http.ServerResponse }).end = (chunk) => {
      if (chunk !== undefined) seen.endChunk = chunk.length;
      return end(chunk);
    };
    proxy.web(req, res, tgt, { ...CONTEXT });
  });
  const port = await listen(t, server);
  t.teardown(() => proxy.close());
  return { port, writes, proxy };
}

interface Reply {
  status: number;
  body: Buffer;
}

/** One request; `onFirstData` runs when the first body bytes arrive. */
function request(
  port: number,
  options: { method?: string; host?: string; body?: string; onFirstData?: () => void } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: '/',
        headers: { host: options.host ?? 'app.example' },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          if (chunks.length === 0) options.onFirstData?.();
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

t.test('a cleartext dispatch names its servername: undici derives none from the Host', async (t) => {
  const upstream = http.createServer((_req, res) => res.end('ok'));
  const tgt = target(await listen(t, upstream));
  const { port } = await front(t, tgt);
  const created: Array<string | null> = [];
  const onCreate = (message: unknown) => {
    created.push((message as { request: { servername: string | null } }).request.servername);
  };
  const requestCreated = channel('undici:request:create');
  requestCreated.subscribe(onCreate);
  t.teardown(() => requestCreated.unsubscribe(onCreate));
  const reply = await request(port, { host: 'app.example' });
  t.equal(reply.status, 200);
  t.equal(reply.body.toString(), 'ok');
  t.same(created, ['cleartext'], 'not app.example, which undici would check against two IP patterns');
});

t.test(
  "a request without a body waits in the proxy's read deadlines, not on undici's timer per request",
  async (t) => {
    let seen: () => void = () => {};
    const upstream = http.createServer((req, res) => {
      req.resume();
      // answered once the test has looked at the deadlines while the request waits
      seen = () => res.end('ok');
      upstream.emit('waiting');
    });
    const { port, proxy } = await front(t, target(await listen(t, upstream), { readTimeoutMs: 60000 }));
    const timeouts: Array<[number | null, number | null]> = [];
    const onCreate = (message: unknown) => {
      const { request } = message as {
        request: { headersTimeout: number | null; bodyTimeout: number | null };
      };
      timeouts.push([request.headersTimeout, request.bodyTimeout]);
    };
    const requestCreated = channel('undici:request:create');
    requestCreated.subscribe(onCreate);
    t.teardown(() => requestCreated.unsubscribe(onCreate));
    for (const method of ['GET', 'POST']) {
      const waiting = once(upstream, 'waiting');
      const reply = request(port, method === 'POST' ? { method, body: 'x' } : { method });
      await waiting;
      t.equal(proxy.readDeadlines.size, method === 'GET' ? 1 : 0, `${method}: waiting in the deadlines`);
      seen();
      t.equal((await reply).status, 200);
      t.equal(proxy.readDeadlines.size, 0, `${method}: out of them once answered`);
    }
    t.same(
      timeouts,
      [
        [0, 0],
        [60000, 60000],
      ],
      "undici's timeouts: none for GET, proxy-read-timeout for a request with a body",
    );
  },
);

t.test('servernameOf: TLS pools keep their SNI rules', async (t) => {
  const tls = {
    id: 'tls1',
    servername: 'backend.internal',
    requestServername: 'backend.internal',
    options: {},
  };
  const withSettings = target(1, { backendTls: tls } as Partial<ProxyTarget>);
  const rows: Array<[string, ReturnType<typeof servernameOf>, ReturnType<typeof servernameOf>]> = [
    ['HTTP', servernameOf('HTTP', target(1)), 'cleartext'],
    ['GRPC (h2c)', servernameOf('GRPC', target(1)), 'cleartext'],
    ['HTTPS without proxy-ssl settings: undici takes the Host', servernameOf('HTTPS', target(1)), undefined],
    ['GRPCS without settings', servernameOf('GRPCS', target(1)), undefined],
    ['HTTPS with settings: their constant', servernameOf('HTTPS', withSettings), 'backend.internal'],
    ['HTTP with settings: cleartext all the same', servernameOf('HTTP', withSettings), 'cleartext'],
  ];
  for (const [name, got, want] of rows) t.equal(got, want, name);
});

/** An upstream answering with a Content-Length body in the parts `parts()` gives. */
function partsUpstream(length: number, parts: (socket: net.Socket, body: Buffer) => void): net.Server {
  const body = Buffer.alloc(length, 0x61);
  return net.createServer((socket) => {
    socket.once('data', () => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\nContent-Type: text/plain\r\n\r\n`);
      parts(socket, body);
    });
  });
}

t.test('a Content-Length body that arrives whole goes out with the end: no write call', async (t) => {
  const upstream = partsUpstream(1024, (socket, body) => socket.write(body));
  const { port, writes } = await front(t, target(await listen(t, upstream)));
  const reply = await request(port);
  t.equal(reply.status, 200);
  t.equal(reply.body.length, 1024);
  t.same(writes, [{ written: [], endChunk: 1024 }]);
});

t.test(
  'a Content-Length body in parts: the parts before the last are written, the last ends it',
  async (t) => {
    let rest: (() => void) | null = null;
    const upstream = partsUpstream(3000, (socket, body) => {
      socket.write(body.subarray(0, 1000));
      // the rest once the client has the first part, so that it reaches the proxy as another chunk
      rest = () => socket.write(body.subarray(1000));
    });
    const { port, writes } = await front(t, target(await listen(t, upstream)));
    const reply = await request(port, { onFirstData: () => rest?.() });
    t.equal(reply.status, 200);
    t.equal(reply.body.length, 3000);
    t.ok(
      reply.body.every((byte) => byte === 0x61),
      'the body intact',
    );
    const [seen] = writes;
    t.ok(
      seen !== undefined && seen.written.length >= 1 && seen.written[0] === 1000,
      'the first part written',
    );
    const total = (seen?.written.reduce((sum, n) => sum + n, 0) ?? 0) + (seen?.endChunk ?? 0);
    t.equal(total, 3000, 'every byte through write or end once');
    t.ok((seen?.endChunk ?? 0) > 0, 'the last chunk went with the end');
  },
);

t.test('a chunked body, and a HEAD answer with a length, end without a chunk', async (t) => {
  const upstream = http.createServer((req, res) => {
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'Content-Length': '1024' });
      res.end();
      return;
    }
    res.write('part one, ');
    res.end('part two');
  });
  const { port, writes } = await front(t, target(await listen(t, upstream)));
  const chunked = await request(port);
  t.equal(chunked.body.toString(), 'part one, part two');
  const head = await request(port, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.body.length, 0);
  t.equal(writes.length, 2);
  t.equal(writes[0]?.endChunk, null, 'chunked: every part written, the end carries none');
  t.ok((writes[0]?.written.length ?? 0) >= 1);
  t.same(writes[1], { written: [], endChunk: null }, 'HEAD: no body at all');
});

t.test(
  "the proxy's own request header names are in undici's table: no lower-casing and token check per request",
  async (t) => {
    await new UpstreamProxy().close();
    const table = createRequire(import.meta.url)('undici/lib/core/constants.js')
      .headerNameLowerCasedRecord as Record<string, string | undefined>;
    for (const name of PROXY_HEADER_NAMES) t.equal(table[name], name, name);
    // every name the proxy writes on a request with all its own headers (a client's Host, X-Forwarded-*,
    // a rewrite's prefix, a client certificate's and a span's headers)
    const req = {
      rawHeaders: ['Host', 'app.example', 'X-Forwarded-For', '198.51.100.1', 'X-Forwarded-Host', 'a.example'],
      url: '/x',
      httpVersionMajor: 1,
    } as unknown as http.IncomingMessage;
    const { headers } = forwardHeaders(req, {
      ...CONTEXT,
      policy: { ...DEFAULT_HTTP_POLICY, originalUriHeader: true },
      forwardedPrefix: '/p',
      clientCertHeaders: ['ssl-client-verify', 'SUCCESS'],
      traceHeaders: ['traceparent', '00-1-2-01', 'tracestate', 'a=b'],
    });
    const unknown = headers.filter((name, i) => i % 2 === 0 && table[name] !== name);
    t.same(unknown, [], 'each name known to undici as itself');
  },
);
