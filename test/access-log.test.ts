// The access log's own parts: the line (any string a client sends survives JSON), the clock, and
// the batching (lines wait for a full batch or 100 ms, close() writes what waits).
import { once } from 'node:events';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { accessLogLine, BATCH_BYTES, createAccessLog } from '../lib/access-log.ts';
import {
  encodeAccessLogLine,
  isoBytes,
  maxLineBytes,
  secondsText as seconds,
} from '../lib/dataplane/access-log-encoder.ts';
import { createLogger } from '../lib/log.ts';
import { record } from './support/request-record.ts';

t.test('accessLogLine: pino line format, NGINX field names, in this order', async (t) => {
  const line = accessLogLine(
    record({
      uri: '/app/x?q=1',
      userAgent: 'curl/8',
      requestId: 'abc',
      previousAddrs: '10.0.0.2:8080, ',
      previousStatuses: '502, ',
      previousTimes: '0.001, ',
    }),
    '2026-11-23T10:00:00.123Z',
  );
  const parsed = JSON.parse(line) as Record<string, unknown>;
  t.strictSame(Object.keys(parsed), [
    'level',
    'time',
    'remote_addr',
    'request_method',
    'request_uri',
    'server_protocol',
    'host',
    'status',
    'bytes_sent',
    'http_referer',
    'http_user_agent',
    'request_length',
    'request_time',
    'proxy_upstream_name',
    'proxy_alternative_upstream_name',
    'upstream_addr',
    'upstream_response_length',
    'upstream_response_time',
    'upstream_status',
    'req_id',
    'namespace',
    'ingress',
    'service',
    'service_port',
    'location_path',
  ]);
  t.match(parsed, {
    level: 30,
    time: '2026-11-23T10:00:00.123Z',
    request_uri: '/app/x?q=1',
    status: 200,
    request_time: 0.004,
    upstream_addr: '10.0.0.2:8080, 10.0.0.1:8080',
    upstream_status: '502, 200',
    upstream_response_time: '0.001, 0.004',
    upstream_response_length: 100,
    req_id: 'abc',
  });
});

t.test('accessLogLine: a request that reached no upstream', async (t) => {
  const parsed = JSON.parse(
    accessLogLine(
      record({ upstreamAddr: '', upstreamStatus: 0, responseTime: -1, upstreamResponseLength: -1 }),
      'T',
    ),
  ) as Record<string, unknown>;
  t.match(parsed, {
    upstream_addr: '',
    upstream_status: '',
    upstream_response_time: '',
    upstream_response_length: '-',
  });
  // a try that got no answer
  const failed = JSON.parse(
    accessLogLine(record({ upstreamStatus: 0, responseTime: -1, upstreamResponseLength: -1 }), 'T'),
  ) as Record<string, unknown>;
  t.match(failed, { upstream_status: '-', upstream_response_time: '-' });
});

t.test('accessLogLine: any string the client controls comes back intact from JSON', async (t) => {
  const anyString = fc.string({ unit: 'binary', maxLength: 40 });
  const text = fc.oneof(anyString, fc.string({ unit: 'grapheme-ascii', maxLength: 40 }));
  fc.assert(
    fc.property(text, text, text, text, text, text, (uri, userAgent, referer, host, requestId, method) => {
      const parsed = JSON.parse(
        accessLogLine(record({ uri, userAgent, referer, host, requestId, method }), 'T'),
      ) as Record<string, unknown>;
      return (
        parsed.request_uri === uri &&
        parsed.http_user_agent === userAgent &&
        parsed.http_referer === referer &&
        parsed.host === host &&
        parsed.req_id === requestId &&
        parsed.request_method === method
      );
    }),
  );
  t.pass('every generated line parsed back to its values');
});

t.test('seconds: NGINX millisecond resolution, as toFixed(3) prints it', async (t) => {
  const table: [number, string][] = [
    [0, '0.000'],
    [0.004, '0.004'],
    [0.0123, '0.012'],
    [0.0996, '0.100'],
    [0.1, '0.100'],
    [1.5, '1.500'],
    [59.9999, '60.000'],
    [123.45678, '123.457'],
  ];
  for (const [value, text] of table) t.equal(seconds(value), text, String(value));
  // away from exact halves of a millisecond, the same text as toFixed(3) for any duration
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 3_600_000 }),
      fc.double({ min: 0.01, max: 0.49, noNaN: true }),
      (ms, frac) => {
        const value = (ms + frac) / 1000;
        return seconds(value) === value.toFixed(3);
      },
    ),
  );
});

t.test('isoBytes: what Date#toISOString says, across seconds and milliseconds', async (t) => {
  const iso = isoBytes();
  const text = (now: number) => {
    const buf = Buffer.alloc(64);
    return buf.toString('latin1', 0, iso.put(buf, 0, now));
  };
  for (const now of [0, 5, 99, 999, 1000, 1001, 59_999, 1_795_432_768_861, 253_402_300_799_999]) {
    t.equal(text(now), new Date(now).toISOString(), String(now));
  }
  // one clock through a sequence: the cached second prefix follows
  let now = 1_795_432_768_000;
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 50 }), (steps) => {
      for (const step of steps) {
        now += step;
        if (text(now) !== new Date(now).toISOString()) return false;
      }
      return true;
    }),
  );
});

t.test('encodeAccessLogLine: the bytes of accessLogLine, for any record', async (t) => {
  const anyText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: 'grapheme-ascii', maxLength: 30 }),
    fc.constantFrom('', '-', '10.0.0.1:8080, ', '0.001, ', '502, '),
  );
  const count = fc.oneof(fc.constant(-1), fc.nat(), fc.integer({ min: -1, max: 2 ** 40 }));
  const duration = fc.oneof(fc.constant(-1), fc.double({ min: 0, max: 100_000, noNaN: true }));
  const fields = fc.record({
    remoteAddress: anyText,
    method: anyText,
    uri: anyText,
    protocol: anyText,
    host: anyText,
    referer: anyText,
    userAgent: anyText,
    requestId: anyText,
    namespace: anyText,
    ingress: anyText,
    service: anyText,
    servicePort: anyText,
    path: anyText,
    upstream: anyText,
    canary: anyText,
    upstreamAddr: anyText,
    previousAddrs: anyText,
    previousStatuses: anyText,
    previousTimes: anyText,
    status: fc.integer({ min: 0, max: 999 }),
    upstreamStatus: fc.integer({ min: 0, max: 599 }),
    bytesSent: count,
    requestLength: count,
    upstreamResponseLength: count,
    requestTime: fc.double({ min: 0, max: 100_000, noNaN: true }),
    responseTime: duration,
  });
  const time = fc.integer({ min: 0, max: 253_402_300_799_999 });
  const iso = isoBytes();
  const buf = Buffer.alloc(64 * 1024);
  fc.assert(
    fc.property(fields, time, (overrides, now) => {
      const r = record(overrides);
      const end = encodeAccessLogLine(buf, 7, r, now, iso);
      const expected = Buffer.from(accessLogLine(r, new Date(now).toISOString()));
      return end - 7 <= maxLineBytes(r) && buf.subarray(7, end).equals(expected);
    }),
    { numRuns: 2000 },
  );
  t.pass('the same bytes, within maxLineBytes');
});

/** A stand-in for standard output that remembers each write. */
function sink() {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString());
      stream.emit('wrote');
      done();
    },
  });
  return {
    stream,
    writes,
    lines: () =>
      writes
        .join('')
        .split('\n')
        .filter((l) => l !== ''),
  };
}

const SETTINGS = { disabled: false, skipUrls: [], path: '' };

t.test('lines wait to be written together; close() writes what waits', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  log.write(record({ uri: '/one' }));
  log.write(record({ uri: '/two' }));
  t.equal(out.writes.length, 0, 'nothing written per line');
  await log.close();
  t.equal(out.writes.length, 1, 'one write for both');
  t.strictSame(
    out.lines().map((l) => (JSON.parse(l) as { request_uri: string }).request_uri),
    ['/one', '/two'],
  );
});

t.test('a quiet log is written out by the timer', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  t.teardown(() => log.close());
  log.configure(SETTINGS);
  log.write(record({ uri: '/alone' }));
  await once(out.stream, 'wrote');
  t.equal(out.lines().length, 1);
});

t.test('a full batch is written at once, the rest waits', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  t.teardown(() => log.close());
  log.configure(SETTINGS);
  const lineLength = accessLogLine(record(), 'x'.repeat(24)).length + 1;
  const perBatch = Math.ceil(BATCH_BYTES / lineLength);
  for (let i = 0; i < perBatch + 1; i++) log.write(record());
  t.equal(out.writes.length, 1, 'one write, synchronously, once a batch is full');
  t.equal(out.lines().length, perBatch);
  await once(out.stream, 'wrote');
  t.equal(out.lines().length, perBatch + 1, 'the last line came with the timer');
});

t.test('lines with non-ASCII text are written as UTF-8; a line longer than a batch on its own', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  log.write(record({ uri: '/caf\u00e9/\u65e5\u672c/\u{1f600}' }));
  const huge = `/${'\u00e9'.repeat(BATCH_BYTES)}`;
  log.write(record({ uri: huge }));
  log.write(record({ uri: '/after' }));
  await log.close();
  t.strictSame(
    out.lines().map((l) => (JSON.parse(l) as { request_uri: string }).request_uri),
    ['/caf\u00e9/\u65e5\u672c/\u{1f600}', huge, '/after'],
  );
  t.equal(out.writes.length, 3, 'the batch before, the long line, the batch after');
});

t.test('what is not logged: disabled, skipped URLs, routes without a log', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure({ ...SETTINGS, skipUrls: ['/healthz'] });
  log.write(record({ uri: '/healthz' }));
  log.write(record({ uri: '/quiet', accessLog: false }));
  log.write(record({ uri: '/kept' }));
  log.configure({ ...SETTINGS, disabled: true });
  log.write(record({ uri: '/while-disabled' }));
  await log.close();
  t.strictSame(
    out.lines().map((l) => (JSON.parse(l) as { request_uri: string }).request_uri),
    ['/kept'],
  );
});

t.test("a data-plane thread's lines join the batch whole, in the order they come", async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  const encoded = (...uris: string[]) =>
    new Uint8Array(Buffer.from(uris.map((uri) => `${accessLogLine(record({ uri }), 'T')}\n`).join('')));
  log.write(record({ uri: '/here' }));
  log.writeLines(encoded('/thread-1/a', '/thread-1/b'));
  log.writeLines(encoded('/thread-2/a'));
  t.equal(out.writes.length, 0, 'they wait with the batch');
  // a buffer longer than a batch: what waits first, then the buffer as it is
  const long = encoded(...Array.from({ length: Math.ceil(BATCH_BYTES / 400) }, (_, i) => `/long/${i}`));
  t.ok(long.byteLength > BATCH_BYTES);
  log.writeLines(long);
  t.equal(out.writes.length, 2);
  log.writeLines(encoded('/thread-1/c'));
  await log.close();
  t.equal(out.writes.length, 3);
  for (const write of out.writes) t.ok(write.endsWith('\n'), 'every write ends with a whole line');
  t.strictSame(
    out.lines().map((l) => (JSON.parse(l) as { request_uri: string }).request_uri),
    [
      '/here',
      '/thread-1/a',
      '/thread-1/b',
      '/thread-2/a',
      ...Array.from({ length: Math.ceil(BATCH_BYTES / 400) }, (_, i) => `/long/${i}`),
      '/thread-1/c',
    ],
  );
});
