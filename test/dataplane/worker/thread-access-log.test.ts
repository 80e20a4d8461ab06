// The access log with two data-plane threads: each thread encodes its own lines and the main thread
// receives them as buffers of whole lines (the `accessLogLines` channel), one line per request, timed
// in the thread when the request ended; the model's log settings apply in every thread with the swap;
// close drains the requests in flight and loses none of their lines.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import t, { type Test } from 'tap';
import { accessLogLines, requestMeasured } from '../../../lib/dataplane/events.ts';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { DataPlaneThreads } from '../../../lib/dataplane/worker/pool.ts';
import type { ConfigMap, Model } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../../model/helpers.ts';
import { echoBackend, send } from '../../support/echo.ts';
import { listen } from '../../support/http.ts';
import { JSON_LOG_KEYS } from '../../support/json-log-format.ts';
import { untilRefused } from '../../support/listening.ts';

// each test starts two threads; tap's 30 s default is tight on a shared machine
t.setTimeout(90_000);

const generatedDefaultCertificate = await generateDefaultCertificate();

const configMap = (data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-ts', namespace: 'ingress' },
  data,
});

function model(backendPort: number, config: Record<string, string> = {}): Model {
  return build(
    {
      ingresses: [ingress('site', { rules: [rule('log.test', path('/', 'web:80'))] })],
      services: [service('web', [{ port: 80, targetPort: backendPort }])],
      slices: [slice('web', [{ addresses: ['127.0.0.1'] }], [{ port: backendPort }])],
      // the JSON line of the docs unless a test sets the format, so that lines are read by field
      configMaps: [configMap({ ...JSON_LOG_KEYS, ...config })],
    },
    { configMap: 'ingress/ingress-ts' },
  ).model;
}

async function threads(t: Test, backend: Server, batchIntervalMs?: number) {
  const backendPort = await listen(backend);
  t.teardown(() => new Promise<void>((resolve) => backend.close(() => resolve())));
  const pool = new DataPlaneThreads({
    threads: 2,
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate,
    batchIntervalMs,
  });
  t.teardown(() => pool.close());
  await pool.apply(model(backendPort));
  const { http } = await pool.listen();
  return { pool, port: http.port, backendPort };
}

type Line = Record<string, unknown>;

/** The lines the threads send from now on, parsed; each buffer must hold whole lines only. */
function collectLines(t: Test): { lines: Line[]; partial: string[]; atLeast: (n: number) => Promise<void> };
function collectLines<L>(
  t: Test,
  parse: (line: string) => L,
): { lines: L[]; partial: string[]; atLeast: (n: number) => Promise<void> };
function collectLines(t: Test, parse: (line: string) => unknown = (line) => JSON.parse(line)) {
  const lines: unknown[] = [];
  const partial: string[] = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const on = (message: unknown) => {
    const text = Buffer.from(message as Uint8Array).toString('utf8');
    if (!text.endsWith('\n')) partial.push(text);
    for (const line of text.split('\n').slice(0, -1)) lines.push(parse(line));
    for (const w of waiting.filter((w) => lines.length >= w.n)) w.resolve();
  };
  subscribe(accessLogLines.name, on);
  t.teardown(() => unsubscribe(accessLogLines.name, on));
  const atLeast = (n: number) =>
    lines.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ n, resolve }));
  return { lines, partial, atLeast };
}

/** Requests each thread received so far, in thread order. */
async function perThread(pool: DataPlaneThreads): Promise<number[]> {
  await pool.flushed();
  return ((await pool.describe())?.threads ?? []).map((thread) => thread.requests);
}

const served = (before: number[], after: number[]) => after.map((n, i) => n - (before[i] ?? 0));

/** Asks the threads for their batches until `n` lines have come (a thread may publish a record
 * a moment after its client has the answer, and no timer sends it here). */
async function flushUntil(pool: DataPlaneThreads, lines: readonly Line[], n: number): Promise<void> {
  while (lines.length < n) await pool.flushed();
}

t.test('N requests over both threads: N whole lines, each timed within its request', async (t) => {
  // no timer: the lines come only when asked for
  const { pool, port } = await threads(t, echoBackend('web'), 600_000);
  const { lines, partial } = collectLines(t);
  let measured = 0;
  const onMeasured = () => measured++;
  subscribe(requestMeasured.name, onMeasured);
  t.teardown(() => unsubscribe(requestMeasured.name, onMeasured));
  const before = await perThread(pool);

  const N = 60;
  // each on a connection of its own, so the kernel spreads them over the threads
  const spans = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const sent = Date.now();
      const reply = await send(port, 'log.test', `/r/${i}?q=${i}`, {
        headers: { 'user-agent': `client-${i}` },
      });
      return { status: reply.status, sent };
    }),
  );
  t.strictSame(
    spans.map((span) => span.status),
    Array(N).fill(200),
  );
  await flushUntil(pool, lines, N);
  const flushed = Date.now();
  t.equal(lines.length, N, 'one line per request');
  t.strictSame(partial, [], 'every buffer holds whole lines');
  const counts = served(before, await perThread(pool));
  t.ok(
    counts.every((n) => n > 0),
    `both threads served and logged (${counts.join(' + ')})`,
  );
  for (let i = 0; i < N; i++) {
    const line = lines.find((l) => l.request_uri === `/r/${i}?q=${i}`);
    const span = spans[i];
    if (line === undefined || span === undefined) {
      t.fail(`a line for request ${i}`);
      continue;
    }
    t.match(line, { level: 30, host: 'log.test', status: 200, http_user_agent: `client-${i}` });
    const time = Date.parse(String(line.time));
    // the thread times a line when its request ends (thread-records.test.ts checks that against the
    // clock); here: the time it gave came through, between the request's start and the flush
    // ($time_iso8601 has whole seconds)
    t.ok(
      time >= span.sent - (span.sent % 1000) && time <= flushed,
      `request ${i}: timed at ${time}, within ${span.sent}..${flushed}`,
    );
  }
  t.equal(measured, N, 'and one measure per request for the metrics');
});

t.test('the log settings of a model apply in every thread with its swap', async (t) => {
  const { pool, port, backendPort } = await threads(t, echoBackend('web'));
  const { lines, atLeast } = collectLines(t);
  /** 20 requests to each of /keep and /skip; the URIs logged meanwhile, once /keep's are in */
  const round = async (keptLines: number) => {
    const from = lines.length;
    const before = await perThread(pool);
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => send(port, 'log.test', i % 2 === 0 ? '/keep' : '/skip')),
    );
    t.ok(
      statuses.every((reply) => reply.status === 200),
      'all answered',
    );
    await atLeast(from + keptLines);
    const counts = served(before, await perThread(pool));
    t.ok(
      counts.every((n) => n > 0),
      `both threads served (${counts.join(' + ')})`,
    );
    // flushed: every line of these requests has arrived
    return lines.slice(from).map((line) => line.request_uri);
  };

  const all = await round(40);
  t.equal(all.length, 40, 'everything logged by default');

  await pool.apply(model(backendPort, { 'skip-access-log-urls': '/skip,/other' }));
  const skipped = await round(20);
  t.strictSame(skipped, Array(20).fill('/keep'), 'skip-access-log-urls: in both threads');

  await pool.apply(model(backendPort, { 'disable-access-log': 'true' }));
  t.strictSame(await round(0), [], 'disable-access-log: no line from any thread');

  await pool.apply(model(backendPort));
  t.equal((await round(40)).length, 40, 'back on everywhere');
});

t.test(
  'the log format of a model reaches every thread with its swap: whole lines in the new format',
  async (t) => {
    const { pool, port, backendPort } = await threads(t, echoBackend('web'));
    const { lines, atLeast, partial } = collectLines(t, (line) => line);
    const round = async () => {
      const from = lines.length;
      const before = await perThread(pool);
      await Promise.all(Array.from({ length: 40 }, (_, i) => send(port, 'log.test', `/f/${i}`)));
      await atLeast(from + 40);
      const counts = served(before, await perThread(pool));
      t.ok(
        counts.every((n) => n > 0),
        `both threads served (${counts.join(' + ')})`,
      );
      return lines.slice(from);
    };
    // ingress-nginx's default text format, as a ConfigMap without log-format-upstream gets it
    await pool.apply(model(backendPort, { 'log-format-upstream': '', 'log-format-escape-json': 'false' }));
    for (const line of await round())
      t.match(
        line,
        /^127\.0\.0\.1 - - \[\d\d\/\w{3}\/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET \/f\/\d+ HTTP\/1\.1" 200 \d+ "-" "-" \d+ \d+\.\d{3} \[default-web-80\] \[\] 127\.0\.0\.1:\d+ \d+ \d+\.\d{3} 200 [0-9a-f]{32}$/,
      );
    await pool.apply(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
      model(backendPort, { 'log-format-upstream': 'uri=$request_uri ns=$namespace ${status}' }),
    );
    const custom = await round();
    t.strictSame(
      custom.sort(),
      Array.from({ length: 40 }, (_, i) => `uri=/f/${i} ns=default 200`).sort(),
      'the custom format in both threads',
    );
    t.strictSame(partial, [], 'whole lines only');
  },
);

t.test('close drains the requests in flight in both threads and loses none of their lines', async (t) => {
  const held: Array<() => void> = [];
  let arrived: () => void = () => {};
  const allArrived = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const N = 24;
  const backend = createServer((req, res) => {
    req.resume();
    held.push(() => res.end('done'));
    if (held.length === N) arrived();
  });
  // no timer sends the lines meanwhile: what the threads hold when they stop leaves with the stop
  const { pool, port } = await threads(t, backend, 600_000);
  const { lines } = collectLines(t);
  const replies = Promise.all(Array.from({ length: N }, (_, i) => send(port, 'log.test', `/held/${i}`)));
  await allArrived;
  const counts = await perThread(pool);
  t.ok(
    counts.every((n) => n > 0),
    `requests in flight in both threads (${counts.join(' + ')})`,
  );
  const closed = pool.close(10_000);
  await untilRefused(port);
  for (const answer of held) answer();
  t.equal(lines.length, 0, 'nothing sent while they were held');
  t.strictSame(
    (await replies).map((reply) => reply.status),
    Array(N).fill(200),
  );
  await closed;
  // no waiting: the threads' last lines arrived before close resolved
  t.strictSame(
    lines.map((line) => line.request_uri).sort(),
    Array.from({ length: N }, (_, i) => `/held/${i}`).sort(),
    'a line for every request drained',
  );
});
