// The access log of a standalone controller with `worker-processes: 2`: the threads encode the lines
// and the controller writes them to its one output, every write whole lines, one line per request;
// a ConfigMap change of the log settings reaches both threads with the swap; the graceful stop
// writes the lines of the requests it drained.
import { writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import type { Controller } from '../../lib/main.ts';
import { send } from '../support/echo.ts';
import { JSON_LOG_ENTRIES } from '../support/json-log-format.ts';
import { untilRefused } from '../support/listening.ts';
import { planeStats } from '../support/plane.ts';
import { nextSwap } from '../support/swaps.ts';
import { configMap, startSite } from '../support/threads-site.ts';

// three controllers with two threads each; tap's 30 s default is tight on a shared machine
t.setTimeout(90_000);

type Line = Record<string, unknown>;

/** The access log's output (the JSON line of the docs, which every configuration here sets): every
 * write must be whole JSON lines; `until(n)` waits for n lines. */
function accessSink() {
  const lines: Line[] = [];
  const partial: string[] = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = chunk.toString();
      if (!text.endsWith('\n')) partial.push(text);
      for (const line of text.split('\n').slice(0, -1)) lines.push(JSON.parse(line) as Line);
      for (const w of waiting.filter((w) => lines.length >= w.n)) w.resolve();
      done();
    },
  });
  const until = (n: number) =>
    lines.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ n, resolve }));
  return { lines, partial, stream, until };
}

async function setUp(t: Test, config: string, handler?: (req: IncomingMessage, res: ServerResponse) => void) {
  const accessLog = accessSink();
  const { controller, dir, running } = await startSite(t, config, { accessLog: accessLog.stream }, handler);
  return { controller, dir, accessLog, running };
}

/** Requests each thread served so far. */
async function perThread(controller: Controller): Promise<number[]> {
  await planeStats(controller.handle);
  return ((await controller.handle.describe())?.threads ?? []).map((thread) => thread.requests);
}

const spread = (before: number[], after: number[]) => after.map((n, i) => n - (before[i] ?? 0));

t.test('two threads: one whole line per request, written by the controller', async (t) => {
  const { controller, accessLog } = await setUp(t, `{ ${JSON_LOG_ENTRIES}worker-processes: "2" }`);
  t.equal(controller.threads, 2);
  const before = await perThread(controller);
  const N = 50;
  const replies = await Promise.all(
    Array.from({ length: N }, (_, i) => send(controller.http.port, 'site.test', `/page/${i}`)),
  );
  t.ok(
    replies.every((reply) => reply.status === 200),
    'all answered',
  );
  await accessLog.until(N);
  const counts = spread(before, await perThread(controller));
  t.ok(
    counts.every((n) => n > 0),
    `both threads served (${counts.join(' + ')})`,
  );
  t.equal(accessLog.lines.length, N, 'one line per request');
  t.strictSame(accessLog.partial, [], 'every write holds whole lines');
  t.strictSame(
    accessLog.lines.map((line) => line.request_uri).sort(),
    Array.from({ length: N }, (_, i) => `/page/${i}`).sort(),
  );
  for (const line of accessLog.lines) {
    t.match(line, { level: 30, status: 200, host: 'site.test', ingress: 'site', service: 'web' });
  }
});

t.test('a change of skip-access-log-urls or disable-access-log reaches both threads', async (t) => {
  const { controller, dir, accessLog } = await setUp(t, `{ ${JSON_LOG_ENTRIES}worker-processes: "2" }`);
  const round = async (expected: number) => {
    const from = accessLog.lines.length;
    const before = await perThread(controller);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        send(controller.http.port, 'site.test', i % 2 ? '/skip' : '/keep'),
      ),
    );
    await accessLog.until(from + expected);
    // every thread's batch so far is in; what the writer holds comes within its 100 ms
    await planeStats(controller.handle);
    const counts = spread(before, await perThread(controller));
    t.ok(
      counts.every((n) => n > 0),
      `both threads served (${counts.join(' + ')})`,
    );
    return accessLog.lines.slice(from).map((line) => line.request_uri);
  };
  t.equal((await round(40)).length, 40);

  let swapped = nextSwap();
  await writeFile(
    join(dir, 'config.yaml'),
    configMap(`{ ${JSON_LOG_ENTRIES}worker-processes: "2", skip-access-log-urls: "/skip" }`),
  );
  await swapped;
  t.strictSame(await round(20), Array(20).fill('/keep'), 'the skipped URL from neither thread');

  swapped = nextSwap();
  await writeFile(
    join(dir, 'config.yaml'),
    configMap(`{ ${JSON_LOG_ENTRIES}worker-processes: "2", disable-access-log: "true" }`),
  );
  await swapped;
  await round(0);
  swapped = nextSwap();
  await writeFile(join(dir, 'config.yaml'), configMap(`{ ${JSON_LOG_ENTRIES}worker-processes: "2" }`));
  await swapped;
  const after = await round(40);
  t.equal(after.length, 40, 'nothing while disabled, everything once enabled again');
});

t.test('the graceful stop writes the line of every request it drained', async (t) => {
  const N = 16;
  const held: Array<() => void> = [];
  let allHeld = () => {};
  const arrived = new Promise<void>((resolve) => {
    allHeld = resolve;
  });
  const { controller, accessLog, running } = await setUp(
    t,
    `{ ${JSON_LOG_ENTRIES}worker-processes: "2" }`,
    (req, res) => {
      req.resume();
      held.push(() => res.end('late'));
      if (held.length === N) allHeld();
    },
  );
  const replies = Promise.all(
    Array.from({ length: N }, (_, i) => send(controller.http.port, 'site.test', `/held/${i}`)),
  );
  await arrived;
  const counts = await perThread(controller);
  t.ok(
    counts.every((n) => n > 0),
    `in flight in both threads (${counts.join(' + ')})`,
  );
  running.stopped = true;
  const stopped = controller.stop(0, 10_000);
  // every thread has stopped accepting: the drain has begun everywhere
  await untilRefused(controller.http.port);
  for (const answer of held) answer();
  t.ok((await replies).every((reply) => reply.status === 200));
  await stopped;
  // no waiting: the stop wrote out what the threads and the writer held
  t.strictSame(
    accessLog.lines.map((line) => line.request_uri).sort(),
    Array.from({ length: N }, (_, i) => `/held/${i}`).sort(),
    'a line for every request drained',
  );
});
