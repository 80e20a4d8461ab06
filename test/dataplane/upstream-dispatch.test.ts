// What the proxy hands to undici and to Node per request, where the hot path saves calls: the
// servername of a cleartext dispatch.
import { channel } from 'node:diagnostics_channel';
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import t, { type Test } from 'tap';
import { peerKey } from '../../lib/dataplane/upstream/balancer.ts';
import { servernameOf } from '../../lib/dataplane/upstream/pools.ts';
import type { ProxyTarget } from '../../lib/dataplane/upstream/target.ts';
import { UpstreamProxy } from '../../lib/dataplane/upstream/upstream-proxy.ts';

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
async function front(t: Test, tgt: ProxyTarget): Promise<{ port: number; writes: Writes[] }> {
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
    proxy.web(req, res, tgt, {
      https: false,
      listenPort: 80,
      remoteAddress: '127.0.0.1',
      requestId: 'r1',
      hsts: null,
      hashKey: '',
      session: null,
    });
  });
  const port = await listen(t, server);
  t.teardown(() => proxy.close());
  return { port, writes };
}

interface Reply {
  status: number;
  body: Buffer;
}

/** One request; `onFirstData` runs when the first body bytes arrive. */
function request(
  port: number,
  options: { method?: string; host?: string; onFirstData?: () => void } = {},
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
    req.end();
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
