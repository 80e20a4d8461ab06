// The /debug/model route over a real socket with a source the test drives: one description per
// version however many ask (at once or one after the other), 304 for the ETag of the version
// served, a live description made again once its 5 seconds pass, a new version described at once
// after a cheap describe and only 10 times its cost later after an expensive one, 503 before the first model, 500 when
// describing fails; and which Accept-Encoding values take gzip. The /debug/traffic route: one
// answer per sample tick however many ask, 304 for the tick's ETag.
import { createServer, get } from 'node:http';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import {
  acceptsGzip,
  createDebugModelRoute,
  createDebugTrafficRoute,
  LIVE_DESCRIPTION_MS,
} from '../lib/debug-routes.ts';
import { listen, send } from './support/http.ts';

t.test('acceptsGzip', async (t) => {
  const table: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['', false],
    ['gzip', true],
    ['GZIP', true],
    ['br, gzip;q=0.5', true],
    ['gzip;q=0', false],
    ['gzip; q=0.0', false],
    ['*', true],
    ['identity', false],
    ['deflate, br', false],
    ['x-gzip', false],
  ];
  for (const [header, expected] of table) t.equal(acceptsGzip(header), expected, String(header));
});

t.test('one description per version, 304 for its ETag', async (t) => {
  let version: string | null = null;
  let description: unknown = { hash: 'h1', backends: [] };
  let described = 0;
  let clock = 0;
  /** what describing advances the clock by */
  let cost = 0;
  const route = createDebugModelRoute(
    {
      version: () => version,
      describe: async () => {
        described++;
        clock += cost;
        // answered a turn later: a second request arrives while the first is described
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (description instanceof Error) throw description;
        return description;
      },
    },
    { clock: () => clock },
  );
  const server = createServer(route);
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const ask = (headers: Record<string, string> = {}) =>
    send(port, 'localhost', '/debug/model', { headers, agent: false });

  const early = await ask();
  t.equal(early.status, 503, 'no model yet');
  t.equal(described, 0);

  version = 'aaaa.1';
  const [a, b] = await Promise.all([ask(), ask()]);
  t.equal(a.status, 200);
  t.equal(a.body, b.body);
  t.equal(a.headers.etag, 'W/"aaaa.1"');
  t.equal(described, 1, 'two at once: one description');
  await ask({ 'accept-encoding': 'gzip' });
  t.equal(described, 1, 'a second form of the same version: no description');

  const again = await ask({ 'if-none-match': 'W/"aaaa.1"' });
  t.equal(again.status, 304);
  t.equal(again.body, '');
  t.equal((await ask({ 'if-none-match': '"other", "aaaa.1"' })).status, 304, 'weak comparison, in a list');
  t.equal((await ask({ 'if-none-match': 'W/"aaaa.0"' })).status, 200, 'another version: the answer');
  t.equal(described, 1);

  // a new version after a cheap describe: described at once
  version = 'aaaa.2';
  description = { hash: 'h1', backends: [{ name: 'b', scores: { '10.0.0.1:80': 0.01 } }] };
  const live = await ask({ 'if-none-match': 'W/"aaaa.1"' });
  t.equal(live.status, 200, 'a new version after a cheap describe: at once');
  t.equal(described, 2);
  t.equal(live.headers.etag, 'W/"aaaa.2.0"', 'live counters: the ETag names when it was made');
  clock = LIVE_DESCRIPTION_MS - 1;
  t.equal((await ask({ 'if-none-match': 'W/"aaaa.2.0"' })).status, 304, 'live: kept until 5 s have passed');
  t.equal(described, 2, 'not described within the floor');
  clock = LIVE_DESCRIPTION_MS;
  const remade = await ask({ 'if-none-match': 'W/"aaaa.2.0"' });
  t.equal(remade.status, 200, '5 seconds later: made again');
  t.equal(remade.headers.etag, `W/"aaaa.2.${LIVE_DESCRIPTION_MS}"`);
  t.equal(described, 3);

  // a description that takes 1 s to make is kept 10 s: describing takes a tenth of the time at most
  cost = 1000;
  clock = 20_000;
  const slow = await ask();
  t.equal(slow.headers.etag, 'W/"aaaa.2.20000"');
  t.equal(described, 4);
  clock = 20_000 + 1000 + 8000;
  t.equal((await ask({ 'if-none-match': 'W/"aaaa.2.20000"' })).status, 304, 'still kept after 9 s');
  clock = 20_000 + 10_000;
  t.equal((await ask({ 'if-none-match': 'W/"aaaa.2.20000"' })).status, 200, 'made again after 10 s');
  t.equal(described, 5);
  cost = 0;

  // and so is a new version: the last describe (at 30 s) took 1 s, so not before 40 s
  version = 'aaaa.3';
  description = { hash: 'h3', backends: [] };
  clock = 39_999;
  const late = await ask({ 'if-none-match': 'W/"aaaa.2.30000"' });
  t.equal(late.status, 304, 'a new version 9 s after a 1 s describe: still the previous answer');
  t.equal(described, 5);
  clock = 40_000;
  const third = await ask({ 'if-none-match': 'W/"aaaa.2.30000"' });
  t.equal(third.status, 200, '10 s after: the new version');
  t.equal(third.headers.etag, 'W/"aaaa.3"');
  t.equal(described, 6);

  version = 'aaaa.4';
  clock = 50_000;
  description = new Error('the thread is gone');
  const failed = await ask();
  t.equal(failed.status, 500);
  t.match(failed.body, /describing the model failed: Error: the thread is gone/);
  description = null;
  version = 'aaaa.5';
  t.equal((await ask()).status, 503, 'described as nothing: not yet');
});

t.test('everyVersion: each new version described at once (tests that follow changes)', async (t) => {
  let version = 'v.1';
  let described = 0;
  const route = createDebugModelRoute(
    {
      version: () => version,
      describe: () => {
        described++;
        return { hash: version, backends: [] };
      },
    },
    { clock: () => 0, everyVersion: true },
  );
  const server = createServer(route);
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const ask = (headers: Record<string, string> = {}) =>
    send(port, 'localhost', '/debug/model', { headers, agent: false });
  t.equal((await ask()).headers.etag, 'W/"v.1"');
  version = 'v.2';
  const next = await ask({ 'if-none-match': 'W/"v.1"' });
  t.equal(next.status, 200);
  t.equal(next.headers.etag, 'W/"v.2"');
  t.equal(described, 2);
  t.equal((await ask({ 'if-none-match': 'W/"v.2"' })).status, 304, 'the same version: kept');
  t.equal(described, 2);
});

t.test('/debug/traffic: one answer per tick, made once however many ask, 304 for its ETag', async (t) => {
  let version = 'w.1';
  let described = 0;
  let failure: Error | null = null;
  // large enough to be gzipped
  const routes = (n: number) =>
    Array.from({ length: 50 }, (_, i) => ({ ingress: `d/i${i}`, path: '/', requests: n }));
  const route = createDebugTrafficRoute({
    version: () => version,
    describe: async () => {
      described++;
      const made = described;
      // answered a turn later: requests arriving meanwhile wait for this one
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (failure !== null) throw failure;
      return { windowSeconds: 60, routes: routes(made) };
    },
  });
  const server = createServer(route);
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const ask = (headers: Record<string, string> = {}, path = '/debug/traffic') =>
    send(port, 'localhost', path, { headers, agent: false });

  const [a, b, c] = await Promise.all([ask(), ask(), ask()]);
  t.equal(described, 1, 'three at once: made once');
  t.equal(a.status, 200);
  t.equal(a.body, b.body);
  t.equal(a.body, c.body);
  t.equal(a.headers.etag, 'W/"w.1"', 'the ETag names the tick');
  t.equal(a.headers['cache-control'], 'no-cache');
  for (let i = 0; i < 5; i++) await ask();
  t.equal(described, 1, 'asked again within the tick: the kept answer');
  const zipped = await ask({ 'accept-encoding': 'gzip' });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  const compact = await ask({}, '/debug/traffic?compact=1');
  t.strictSame(JSON.parse(compact.body), JSON.parse(a.body), 'compact: the same answer');
  t.notOk(compact.body.trimEnd().includes('\n'), 'compact: one line');
  t.equal(described, 1, 'other forms of the same answer: not made again');
  const notModified = await ask({ 'if-none-match': 'W/"w.1"' });
  t.equal(notModified.status, 304);
  t.equal(notModified.body, '');
  t.equal(described, 1);

  version = 'w.2';
  const next = await ask({ 'if-none-match': 'W/"w.1"' });
  t.equal(next.status, 200, 'the next tick: a new answer');
  t.equal(next.headers.etag, 'W/"w.2"');
  t.equal(described, 2);
  t.match(JSON.parse(next.body), { routes: [{ requests: 2 }] }, 'made anew');

  version = 'w.3';
  failure = new Error('the thread is gone');
  const failed = await ask();
  t.equal(failed.status, 500);
  t.match(failed.body, /describing the traffic failed: Error: the thread is gone/);
  failure = null;
  t.equal((await ask()).status, 200, 'a failure is not kept');
  t.equal(described, 4);
});

t.test('/debug/traffic: the gzip form is the plain one compressed', async (t) => {
  const route = createDebugTrafficRoute({
    version: () => 'v',
    describe: () => ({ routes: Array.from({ length: 100 }, (_, i) => ({ path: `/p${i}` })) }),
  });
  const server = createServer(route);
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const plain = await send(port, 'localhost', '/debug/traffic', { agent: false });
  const zipped = await new Promise<Buffer>((resolve, reject) => {
    get({ port, path: '/debug/traffic', headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(Buffer.concat(chunks)));
    }).on('error', reject);
  });
  t.equal(gunzipSync(zipped).toString('utf8'), plain.body);
});
