// A data-plane thread's records: each finished request becomes its access log line, encoded in the
// thread with the bytes of the one-thread writer, and its measures for the metrics; the lines are
// taken in order as buffers of whole lines; the model's settings decide which requests get a line.
import t, { type Test } from 'tap';
import { logEncoderOf } from '../../../lib/dataplane/access-log-format.ts';
import { requestLogged, requestRefused } from '../../../lib/dataplane/events.ts';
import { RECORD_BATCH } from '../../../lib/dataplane/record-queue.ts';
import { type MeasuredRequest, unpackMeasures } from '../../../lib/dataplane/request-measure.ts';
import type { RequestRecord } from '../../../lib/dataplane/request-record.ts';
import {
  createThreadRecords,
  LINES_BATCH_BYTES,
  MEASURES_BATCH,
  type ThreadRecords,
} from '../../../lib/dataplane/worker/thread-records.ts';
import { JSON_LOG_FORMAT } from '../../support/json-log-format.ts';
import { measuresOf, record } from '../../support/request-record.ts';

// the JSON line of the docs, so that lines are read back by field
const FORMAT = { format: JSON_LOG_FORMAT, escapeJson: true, escapeNone: false };
const LOGGING = { disabled: false, skipUrls: [], ...FORMAT };

/** The line the one-thread writer encodes for `r` (newline included), at `time`. */
function oneThreadLine(r: RequestRecord, time = 0): string {
  const buf = Buffer.alloc(64 * 1024);
  return buf.toString('latin1', 0, logEncoderOf(FORMAT).encode(buf, 0, r, time));
}

function setUp(t: Test, measured = true) {
  let fulls = 0;
  const records = createThreadRecords({ full: () => fulls++, measures: measured });
  t.teardown(() => records.stop());
  const taken: MeasuredRequest[] = [];
  /** the measures packed so far, as the main thread reads them */
  const measures = () => {
    const batch = records.takeMeasures();
    if (batch !== null) unpackMeasures(batch, (measured) => taken.push(measured));
    return taken;
  };
  return { records, measures, fulls: () => fulls };
}

/** Every line taken so far, as text, with the buffers' boundaries checked: whole lines only. */
function takeText(t: Test, records: ThreadRecords): string[] {
  const chunks = records.takeLines().map((chunk) => Buffer.from(chunk).toString('latin1'));
  for (const chunk of chunks) t.ok(chunk.endsWith('\n'), 'a buffer ends with a whole line');
  return chunks.join('').split('\n').slice(0, -1);
}

/** The line with its time replaced, for comparing with the one-thread writer's. */
const withoutTime = (line: string) => line.replace(/"time":"[^"]*"/, '"time":"T"');

t.test('a line per finished request, the bytes of the one-thread writer, timed when it ends', async (t) => {
  const { records } = setUp(t);
  records.configure(LOGGING);
  const finished = [
    record({ uri: '/a?q="quoted"', userAgent: 'ua\u0001\u00e9' }),
    record({
      uri: '/b',
      previousAddrs: '10.0.0.2:8080, ',
      previousStatuses: '502, ',
      previousTimes: '0.001, ',
    }),
    record({ uri: '/c', upstreamAddr: '', upstreamStatus: 0, responseTime: -1, upstreamResponseLength: -1 }),
  ];
  const before = Date.now();
  for (const r of finished) requestLogged.publish(r);
  const after = Date.now();
  const lines = takeText(t, records);
  t.equal(lines.length, 3);
  lines.forEach((line, i) => {
    const r = finished[i] as RequestRecord;
    t.equal(withoutTime(line), withoutTime(oneThreadLine(r)), `line ${i}: the same bytes`);
    // $time_iso8601 has whole seconds; each request ended as its record was made
    const time = Date.parse(String(JSON.parse(line).time));
    t.ok(time >= before - (before % 1000) - 1000 && time <= after, `line ${i}: timed when it ended`);
  });
  t.strictSame(records.takeLines(), [], 'taken once');
});

t.test('with metrics off no measures are sent, the lines still are', async (t) => {
  const { records, measures } = setUp(t, false);
  records.configure(LOGGING);
  requestLogged.publish(record({ uri: '/unmeasured' }));
  t.equal(measures().length, 0, 'no measures');
  t.equal(takeText(t, records).length, 1, 'the line');
});

t.test('what crosses per request: the measures, without the strings only the line quotes', async (t) => {
  const { records, measures } = setUp(t);
  records.configure(LOGGING);
  const r = record({ uri: '/long/uri', userAgent: 'agent', referer: 'ref', requestId: 'id-1' });
  requestLogged.publish(r);
  t.equal(measures().length, 1);
  t.strictSame(measures()[0], measuresOf(r));
  // a refusal is logged and not measured (NGINX's metrics never see it)
  requestRefused.publish(record({ uri: '/refused', status: 400, refused: true }));
  t.equal(measures().length, 1, 'no measures for a refusal');
  t.strictSame(
    takeText(t, records).map((line) => JSON.parse(line).request_uri),
    ['/long/uri', '/refused'],
  );
});

t.test("the model's settings decide which requests get a line; measures go on regardless", async (t) => {
  const { records, measures } = setUp(t);
  const publishAll = () => {
    requestLogged.publish(record({ uri: '/healthz' }));
    requestLogged.publish(record({ uri: '/app' }));
    requestLogged.publish(record({ uri: '/quiet', accessLog: false }));
    requestRefused.publish(record({ uri: '/refused', status: 400, refused: true }));
  };
  const uris = () => takeText(t, records).map((line) => JSON.parse(line).request_uri);
  publishAll();
  t.strictSame(uris(), [], 'no model yet: no line');
  records.configure(LOGGING);
  publishAll();
  t.strictSame(uris(), ['/healthz', '/app', '/refused'], 'enable-access-log: false has no line');
  records.configure({ ...LOGGING, skipUrls: ['/healthz', '/refused'] });
  publishAll();
  t.strictSame(uris(), ['/app'], 'skip-access-log-urls');
  records.configure({ ...LOGGING, disabled: true });
  publishAll();
  t.strictSame(uris(), [], 'disable-access-log');
  t.equal(measures().length, 4 * 3, 'every routed request measured, logged or not');
});

t.test('a full buffer asks for the batch to leave; lines keep their order across buffers', async (t) => {
  // metrics off: the lines alone ask (the measures' own asking is the next test's)
  const { records, fulls } = setUp(t, false);
  records.configure(LOGGING);
  const lineBytes = oneThreadLine(record({ uri: '/0000' })).length + 1;
  // a buffer fills as the run of records it is in is handled: within RECORD_BATCH records more
  const n = Math.ceil((2 * LINES_BATCH_BYTES) / lineBytes) + RECORD_BATCH;
  for (let i = 0; i < n; i++) requestLogged.publish(record({ uri: `/${String(i).padStart(4, '0')}` }));
  t.equal(fulls(), 2, 'once per full buffer');
  const chunks = records.takeLines();
  t.equal(chunks.length, 3, 'two full buffers and the rest');
  t.ok(
    chunks.every((chunk, i) => i === chunks.length - 1 || chunk.byteLength >= LINES_BATCH_BYTES),
    'full buffers are sent whole',
  );
  const buffers = new Set(chunks.map((chunk) => chunk.buffer));
  t.equal(buffers.size, chunks.length, 'each in memory of its own (each can be transferred)');
  const uris = Buffer.concat(chunks)
    .toString('latin1')
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line).request_uri);
  t.strictSame(
    uris,
    Array.from({ length: n }, (_, i) => `/${String(i).padStart(4, '0')}`),
    'every line once, in order',
  );
});

t.test('a line longer than a buffer gets a buffer of its own, after the lines before it', async (t) => {
  const { records, fulls } = setUp(t);
  records.configure(LOGGING);
  requestLogged.publish(record({ uri: '/before' }));
  const huge = `/${'x'.repeat(200_000)}`;
  requestLogged.publish(record({ uri: huge }));
  requestLogged.publish(record({ uri: '/after' }));
  // the rest of the run: it is handled as its last record arrives
  const rest = Array.from({ length: RECORD_BATCH - 3 }, (_, i) => `/${i}`);
  for (const uri of rest) requestLogged.publish(record({ uri }));
  t.ok(fulls() >= 1, 'the batch was asked to leave');
  t.strictSame(
    takeText(t, records).map((line) => JSON.parse(line).request_uri),
    ['/before', huge, '/after', ...rest],
  );
});

t.test('a buffer that fills while a batch is taken asks nothing: that batch takes it', async (t) => {
  const { records, fulls } = setUp(t, false);
  records.configure(LOGGING);
  // fewer than a run, but more lines than a buffer holds: they are encoded by the take itself
  const uris = Array.from({ length: RECORD_BATCH - 1 }, (_, i) => `/${i}/${'x'.repeat(4096)}`);
  for (const uri of uris) requestLogged.publish(record({ uri }));
  t.equal(fulls(), 0, 'nothing handled yet');
  t.strictSame(
    takeText(t, records).map((line) => JSON.parse(line).request_uri),
    uris,
  );
  t.equal(fulls(), 0, 'not asked from within the take');
});

t.test('a batch asked for while a run is handled takes every line once, in order', async (t) => {
  // as a thread does: the full buffer's asking sends the batch at once, which takes what waits
  const taken: Uint8Array[] = [];
  let asked = 0;
  const records: ThreadRecords = createThreadRecords({
    full: () => {
      asked++;
      taken.push(...records.takeLines());
    },
    measures: false,
  });
  t.teardown(() => records.stop());
  records.configure(LOGGING);
  const lineBytes = oneThreadLine(record({ uri: '/0000' })).length + 1;
  const n = Math.ceil(LINES_BATCH_BYTES / lineBytes) + 2 * RECORD_BATCH;
  const uris = Array.from({ length: n }, (_, i) => `/${String(i).padStart(4, '0')}`);
  for (const uri of uris) requestLogged.publish(record({ uri }));
  t.equal(asked, 1, 'asked once, for the full buffer');
  taken.push(...records.takeLines());
  t.strictSame(
    Buffer.concat(taken)
      .toString('latin1')
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line).request_uri),
    uris,
  );
});

t.test('stop: no more records read', async (t) => {
  const { records } = setUp(t);
  records.configure(LOGGING);
  records.stop();
  requestLogged.publish(record());
  t.strictSame(records.takeLines(), []);
});

t.test('256 measures waiting ask for the batch to leave, as a full buffer of lines does', async (t) => {
  const { records, measures, fulls } = setUp(t);
  records.configure({ ...LOGGING, disabled: true });
  for (let i = 0; i < MEASURES_BATCH - 1; i++) requestLogged.publish(record({ uri: `/${i}` }));
  t.equal(fulls(), 0);
  requestLogged.publish(record({ uri: '/last' }));
  t.equal(fulls(), 1, 'the 256th asks');
  t.equal(measures().length, MEASURES_BATCH, 'all of them taken with the batch');
  requestLogged.publish(record({ uri: '/next' }));
  t.equal(fulls(), 1, 'a new count after the take');
});
