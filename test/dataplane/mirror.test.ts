// MirrorClient's bounds with real sockets: copies over the in-flight cap are dropped, a copy without
// a complete answer in time is abandoned, a streamed body the mirror does not read is passed on whole
// while its copy is dropped past the backlog limit, failures are reported once per interval; and the
// compiled target with its variables.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { dataplaneError } from '../../lib/dataplane/events.ts';
import { compileMirror, MirrorClient, mirrorRequestOf } from '../../lib/dataplane/upstream/mirror.ts';
import { listen } from '../support/http.ts';

/** A server that takes requests and never answers nor reads them. */
async function silent(t: Test): Promise<{ server: Server; port: number }> {
  const server = createServer();
  const port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return { server, port };
}

/** A real incoming request (method, url, headers) to use as the original of a copy. */
async function incoming(t: Test, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  const server = createServer();
  const port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const got = once(server, 'request') as Promise<[IncomingMessage]>;
  const req = request({ port, host: '127.0.0.1', path: '/orig?a=1', method: 'GET', headers });
  req.on('error', () => {});
  req.end();
  const [message] = await got;
  return message;
}

/** The next mirror report on dataplaneError. */
function nextReport(): Promise<{ message: string; code?: string }> {
  return new Promise((resolve) => {
    const on = (message: unknown) => {
      const m = message as { message: string; code?: string };
      if (!m.message.startsWith('mirror:')) return;
      unsubscribe(dataplaneError.name, on);
      resolve(m);
    };
    subscribe(dataplaneError.name, on);
  });
}

t.test('compiled target: variables from the request, Host from mirror-host', async (t) => {
  const compiled = compileMirror({
    target: 'http://m.svc:81/x/$scheme/$host$request_uri',
    host: '$host.copy',
    requestBody: false,
  });
  if (compiled === null) throw new Error('expected a mirror');
  const req = { url: '/p?q=1', headers: {}, rawHeaders: [], socket: {} } as unknown as IncomingMessage;
  t.strictSame(mirrorRequestOf(compiled, { req, uri: '/p', host: 'a.test', https: true }), {
    url: 'http://m.svc:81/x/https/a.test/p?q=1',
    host: 'a.test.copy',
    requestBody: false,
  });
  t.equal(compileMirror({ target: null, host: null, requestBody: true }), null, 'no target: no mirror');
});

t.test('over the in-flight cap: dropped, counted and reported', async (t) => {
  const mirror = await silent(t);
  const client = new MirrorClient({ maxInFlight: 1 });
  t.teardown(() => client.close());
  const req = await incoming(t);
  const arrived = once(mirror.server, 'request');
  const report = nextReport();
  const copy = { url: `http://127.0.0.1:${mirror.port}/one`, host: 'm', requestBody: true };
  client.send(req, copy, null);
  client.send(req, { ...copy, url: `http://127.0.0.1:${mirror.port}/two` }, null);
  t.equal(client.inFlight, 1);
  t.strictSame(client.stats, { answered: 0, failed: 0, dropped: 1 });
  t.match((await report).code, 'MIRROR_OVERLOADED');
  const [first] = (await arrived) as [IncomingMessage];
  t.equal(first.url, '/one', 'the first copy went out');
});

t.test('no complete answer within the timeout: abandoned and counted as failed', async (t) => {
  const mirror = await silent(t);
  const client = new MirrorClient({ timeoutMs: 100 });
  t.teardown(() => client.close());
  const req = await incoming(t);
  const report = nextReport();
  client.send(req, { url: `http://127.0.0.1:${mirror.port}/slow`, host: 'm', requestBody: true }, null);
  t.equal((await report).code, 'MIRROR_TIMEOUT');
  t.strictSame(client.stats, { answered: 0, failed: 1, dropped: 0 });
  t.equal(client.inFlight, 0, 'the slot is free again');
});

t.test('reports are rate-limited, with the counts since the last one', async (t) => {
  const client = new MirrorClient({ reportIntervalMs: 60_000 });
  t.teardown(() => client.close());
  const req = await incoming(t);
  const messages: string[] = [];
  const on = (message: unknown) => {
    const m = (message as { message: string }).message;
    if (m.startsWith('mirror:')) messages.push(m);
  };
  subscribe(dataplaneError.name, on);
  t.teardown(() => unsubscribe(dataplaneError.name, on));
  for (let i = 0; i < 5; i++) client.send(req, { url: 'gopher://x', host: 'x', requestBody: true }, null);
  t.equal(client.stats.failed, 5);
  t.equal(messages.length, 1, 'one line for five failures');
  t.match(messages[0], /1 request copies failed/);
});

t.test('the copy carries the headers without hop-by-hop ones, Host replaced', async (t) => {
  const seen = createServer((req, res) => {
    res.end();
    seen.emit('copy', req);
  });
  const port = await listen(seen);
  t.teardown(() => {
    seen.closeAllConnections();
    seen.close();
  });
  const client = new MirrorClient();
  t.teardown(() => client.close());
  const req = await incoming(t, { 'x-a': '1', connection: 'keep-alive, x-b', 'x-b': '2', te: 'trailers' });
  const got = once(seen, 'copy') as Promise<[IncomingMessage]>;
  client.send(req, { url: `http://127.0.0.1:${port}/h`, host: 'copy.example', requestBody: true }, null);
  const [copy] = await got;
  t.equal(copy.headers.host, 'copy.example');
  t.equal(copy.headers['x-a'], '1');
  t.equal(copy.headers['x-b'], undefined, 'named by Connection');
  t.equal(copy.headers.te, undefined);
  t.equal(copy.method, 'GET');
  t.equal(copy.url, '/h');
});

t.test(
  'a streamed body the mirror never reads: passed on whole, the copy dropped past the backlog',
  async (t) => {
    const mirror = await silent(t);
    const client = new MirrorClient({ maxPendingBytes: 64 * 1024 });
    t.teardown(() => client.close());
    const req = await incoming(t);
    const total = 16 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 120);
    let sent = 0;
    const body = new Readable({
      read() {
        if (sent >= total) {
          this.push(null);
          return;
        }
        sent += chunk.length;
        this.push(chunk);
      },
    });
    const teed = client.tee(
      req,
      { url: `http://127.0.0.1:${mirror.port}/big`, host: 'm', requestBody: true },
      body,
    );
    let received = 0;
    for await (const part of teed) received += (part as Buffer).length;
    t.equal(received, total, 'the upstream side got every byte');
    t.equal(client.stats.dropped, 1, 'the copy fell behind and was dropped');
    t.equal(client.inFlight, 0);
  },
);

t.test('a streamed body reaches a mirror that reads it', async (t) => {
  const seen = createServer(async (req, res) => {
    let length = 0;
    for await (const part of req) length += (part as Buffer).length;
    res.end();
    seen.emit('copy', length);
  });
  const port = await listen(seen);
  t.teardown(() => {
    seen.closeAllConnections();
    seen.close();
  });
  const client = new MirrorClient();
  t.teardown(() => client.close());
  const req = await incoming(t);
  const got = once(seen, 'copy') as Promise<[number]>;
  const teed = client.tee(
    req,
    { url: `http://127.0.0.1:${port}/s`, host: 'm', requestBody: true },
    Readable.from([Buffer.alloc(1000, 97), Buffer.alloc(2000, 98)]),
  );
  let received = 0;
  for await (const part of teed) received += (part as Buffer).length;
  t.equal(received, 3000);
  const [length] = await got;
  t.equal(length, 3000, 'the mirror got the whole body');
});
