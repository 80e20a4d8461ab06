// A standalone controller with `worker-processes: 2`: two data-plane threads serve, /metrics and the
// access log count every request exactly once (measures and lines the threads send), /debug/model
// lists the threads and the model each serves, a changed worker-processes is logged as needing a
// restart, and the graceful stop drains the requests in flight in both threads. Without the key,
// `auto`: a thread per CPU; with `1` the data plane stays on the main thread.
import { writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { DataPlaneThreads } from '../../lib/dataplane/worker/pool.ts';
import { resolveWorkerCount } from '../../lib/dataplane/worker/worker-count.ts';
import { send } from '../support/echo.ts';
import { get } from '../support/http.ts';
import { untilRefused } from '../support/listening.ts';
import { parseNginxLine } from '../support/nginx-log-line.ts';
import { parseExposition, samplesOf, sampleValue } from '../support/prometheus.ts';
import { nextSwap } from '../support/swaps.ts';
import { configMap, startSite } from '../support/threads-site.ts';

type Line = Record<string, unknown>;

/** Lines written to a stream, kept as objects (JSON unless `parse` says); `until(test)` resolves once
 * the lines pass it. */
function lineSink(parse: (line: string) => Line = (line) => JSON.parse(line)) {
  const lines: Line[] = [];
  const waiting: Array<{ test: (lines: Line[]) => boolean; resolve: () => void }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(parse(line));
      for (const w of waiting.filter((w) => w.test(lines))) w.resolve();
      done();
    },
  });
  const until = (test: (lines: Line[]) => boolean) =>
    test(lines) ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ test, resolve }));
  return { lines, stream, until };
}

async function setUp(t: Test, config: string, handler?: (req: IncomingMessage, res: ServerResponse) => void) {
  const log = lineSink();
  // the access log in its default format: a line that is not one fails the test
  const accessLog = lineSink((line) => ({ ...parseNginxLine(line) }));
  const { controller, dir } = await startSite(
    t,
    config,
    { accessLog: accessLog.stream, log: log.stream },
    handler,
  );
  return { controller, dir, log, accessLog };
}

const requests = (port: number, n: number) =>
  Promise.all(Array.from({ length: n }, () => send(port, 'site.test', '/'))).then((replies) =>
    replies.map((reply) => reply.status),
  );

t.test('two threads serve; metrics, access log and /debug/model see both', async (t) => {
  const { controller, accessLog } = await setUp(t, '{ worker-processes: "2" }');
  t.equal(controller.threads, 2);
  t.ok(controller.handle instanceof DataPlaneThreads, 'the pool of threads is the handle');
  t.throws(() => controller.dataPlane, /worker threads/, 'nothing of the data plane on this thread');

  t.strictSame(await requests(controller.http.port, 30), Array(30).fill(200));
  // the scrape itself collects what the threads counted since their last batch
  const metrics = parseExposition((await get(controller.healthz.port, 'localhost', '/metrics')).body);
  const counted = samplesOf(metrics, 'nginx_ingress_controller_requests').reduce(
    (sum, s) => sum + s.value,
    0,
  );
  t.equal(counted, 30, 'nginx_ingress_controller_requests: every request once');
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_nginx_process_requests_total', {}), 30);
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_nginx_process_num_procs', {}),
    3,
    'main + 2 threads',
  );
  t.equal(sampleValue(metrics, 'ingress_ts_dataplane_thread_restarts_total', {}), 0);
  await accessLog.until((lines) => lines.length >= 30);
  t.equal(accessLog.lines.length, 30, 'one access log line per request');

  // HTTPS too: each thread's listener has the default certificate, crossed as PEM
  const https = await new Promise<number>((resolve, reject) => {
    const req = httpsRequest(
      {
        port: controller.https.port,
        host: '127.0.0.1',
        servername: 'site.test',
        headers: { host: 'site.test' },
        rejectUnauthorized: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
  t.equal(https, 200, 'HTTPS served by a thread');
  // the threads' counters as of now (they arrive in batches)
  await (controller.handle as DataPlaneThreads).flushed();

  const described = JSON.parse((await get(controller.healthz.port, 'localhost', '/debug/model')).body);
  t.equal(described.threads.length, 2);
  for (const thread of described.threads)
    t.equal(thread.hash, described.hash, 'each thread serves the model');
  t.equal(
    described.threads.reduce((sum: number, thread: { requests: number }) => sum + thread.requests, 0),
    31,
    'the requests of both threads, the HTTPS one included',
  );
});

t.test('a changed worker-processes is logged as needing a restart', async (t) => {
  const { controller, dir, log } = await setUp(t, '{ worker-processes: "2" }');
  const restartNeeded = (line: Line) => String(line.msg).startsWith('worker-processes changed');
  const swapped = nextSwap();
  await writeFile(join(dir, 'config.yaml'), configMap('{ worker-processes: "auto" }'));
  await swapped;
  await log.until((lines) => lines.some(restartNeeded));
  const warning = log.lines.find(restartNeeded);
  t.match(warning, { level: 40, workerProcesses: 'auto', running: 2, threads: 2 });
  t.equal(controller.threads, 2, 'the threads running keep serving');
  t.equal((await send(controller.http.port, 'site.test', '/')).status, 200);
});

t.test('the graceful stop drains the requests in flight in both threads', async (t) => {
  const N = 16;
  const held: Array<() => void> = [];
  let allHeld = () => {};
  const arrived = new Promise<void>((resolve) => {
    allHeld = resolve;
  });
  const { controller } = await setUp(t, '{ worker-processes: "2" }', (req, res) => {
    req.resume();
    held.push(() => res.end('late'));
    if (held.length === N) allHeld();
  });
  const replies = requests(controller.http.port, N);
  await arrived;
  await (controller.handle as DataPlaneThreads).flushed();
  const perThread = (await controller.handle.describe())?.threads?.map((thread) => thread.requests) ?? [];
  t.ok(
    perThread.length === 2 && perThread.every((n) => n > 0),
    `in flight in both threads (${perThread.join(' + ')})`,
  );
  const stopped = controller.stop(0, 10_000);
  // every thread has stopped accepting: the drain has begun everywhere
  await untilRefused(controller.http.port);
  for (const answer of held) answer();
  t.strictSame(await replies, Array(N).fill(200), 'every request in flight finished');
  await stopped;
});

t.test(
  'without worker-processes: auto, a thread per CPU (of the cgroup quota, else the machine)',
  async (t) => {
    const { controller } = await setUp(t, '{}');
    t.equal(controller.threads, resolveWorkerCount('auto'));
    t.equal((await send(controller.http.port, 'site.test', '/')).status, 200);
  },
);

t.test('worker-processes 1: the data plane stays on the main thread', async (t) => {
  const { controller } = await setUp(t, '{ worker-processes: "1" }');
  t.equal(controller.threads, 1);
  t.equal(controller.handle, controller.dataPlane, 'the DataPlane itself is the handle');
  t.equal((await send(controller.http.port, 'site.test', '/')).status, 200);
});
