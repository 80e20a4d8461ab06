// The access log's own parts: lines in any escaping survive any string a client sends, and the
// batching (lines wait for a full batch or 100 ms, close() writes what waits).
import { once } from 'node:events';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import t from 'tap';
import { BATCH_BYTES, createAccessLog, FLUSH_DELAY_ENV, flushDelayOf } from '../lib/access-log.ts';
import { compileLogFormat, type LogEscape } from '../lib/dataplane/access-log-format.ts';
import { createLogger } from '../lib/log.ts';
import { DEFAULT_LOG_FORMAT_UPSTREAM, parseLogFormat } from '../lib/model/configmap/log-format.ts';
import { JSON_LOG_FORMAT } from './support/json-log-format.ts';
import { record } from './support/request-record.ts';

function encoderOf(format: string, escaping: LogEscape) {
  const parsed = parseLogFormat(format);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return compileLogFormat(parsed.parts, escaping);
}

/** Strings a client can send: Node reads request lines and headers as latin1, a character a byte. */
const clientText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
);

t.test('escape=json: any string a client sends comes back intact from JSON', async (t) => {
  const encoder = encoderOf(JSON_LOG_FORMAT, 'json');
  const buf = Buffer.alloc(64 * 1024);
  fc.assert(
    fc.property(clientText, clientText, clientText, clientText, (uri, userAgent, referer, method) => {
      const end = encoder.encode(buf, 0, record({ uri, userAgent, referer, method }), 0);
      // the client's bytes as they came (NGINX copies bytes from 0x80 raw): latin1 reads them back
      const parsed = JSON.parse(buf.toString('latin1', 0, end)) as Record<string, unknown>;
      return (
        parsed.request_uri === (uri === '' ? '' : uri) &&
        parsed.http_user_agent === userAgent &&
        parsed.http_referer === referer &&
        parsed.request_method === method
      );
    }),
    { numRuns: 1000 },
  );
  t.pass('every generated line parsed back to its values');
});

/** NGINX's default escaping undone: `\xHH` is the byte HH. */
const unescapeDefault = (text: string) =>
  text.replace(/\\x([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

t.test(
  'escape=default: printable ASCII only, no quote inside a value, and the bytes recoverable',
  async (t) => {
    const encoder = encoderOf(DEFAULT_LOG_FORMAT_UPSTREAM, 'default');
    const buf = Buffer.alloc(64 * 1024);
    fc.assert(
      fc.property(clientText, clientText, (userAgent, referer) => {
        const end = encoder.encode(buf, 0, record({ userAgent, referer }), 0);
        const line = buf.toString('latin1', 0, end);
        if (/[^\x20-\x7e]/.test(line)) return false;
        const quoted = line.split('"');
        // "$request" "$http_referer" "$http_user_agent": six quotes, never one more
        return (
          quoted.length === 7 &&
          unescapeDefault(quoted[3] as string) === (referer === '' ? '-' : referer) &&
          unescapeDefault(quoted[5] as string) === (userAgent === '' ? '-' : userAgent)
        );
      }),
      { numRuns: 1000 },
    );
    t.pass('every line was printable ASCII with its six quotes');
  },
);

t.test('escape=none: a client never ends a line', async (t) => {
  const encoder = encoderOf(DEFAULT_LOG_FORMAT_UPSTREAM, 'none');
  const buf = Buffer.alloc(64 * 1024);
  fc.assert(
    fc.property(clientText, clientText, (uri, userAgent) => {
      const end = encoder.encode(buf, 0, record({ uri, userAgent }), 0);
      return !buf.subarray(0, end).includes(0x0a) && !buf.subarray(0, end).includes(0x0d);
    }),
    { numRuns: 1000 },
  );
  t.pass('no CR or LF');
});

t.test('times: $request_time as toFixed(3), $time_local and $time_iso8601 as the clock says', async (t) => {
  const encoder = encoderOf('$request_time|$time_iso8601|$time_local|$msec', 'default');
  const buf = Buffer.alloc(256);
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const expected = (requestTime: number, now: number) => {
    const d = new Date(now);
    const hms = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
    return [
      requestTime.toFixed(3),
      `${d.toISOString().slice(0, 10)}T${hms}+00:00`,
      `${pad(d.getUTCDate())}/${months[d.getUTCMonth()]}/${d.getUTCFullYear()}:${hms} +0000`,
      `${Math.floor(now / 1000)}.${pad(now % 1000, 3)}`,
    ].join('|');
  };
  // one clock through a sequence: the cached second follows; away from exact halves of a millisecond
  let now = 1_795_432_768_000;
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 3_600_000 })), {
        maxLength: 50,
      }),
      fc.double({ min: 0.01, max: 0.49, noNaN: true }),
      (steps, frac) => {
        for (const [step, ms] of steps) {
          now += step;
          const requestTime = (ms + frac) / 1000;
          const end = encoder.encode(buf, 0, record({ requestTime }), now);
          if (buf.toString('latin1', 0, end) !== expected(requestTime, now)) return false;
        }
        return true;
      },
    ),
  );
  t.pass('the same text as Date and toFixed');
});

const DEFAULT_ENCODER = encoderOf(DEFAULT_LOG_FORMAT_UPSTREAM, 'default');

/** Lines of the default format, as a data-plane thread hands them over. */
function encoded(...uris: string[]): Uint8Array {
  const buf = Buffer.alloc(uris.length * 1024);
  let at = 0;
  for (const uri of uris) {
    at = DEFAULT_ENCODER.encode(buf, at, record({ uri }), Date.now());
    buf[at++] = 0x0a;
  }
  return new Uint8Array(buf.subarray(0, at));
}

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

const SETTINGS = {
  disabled: false,
  skipUrls: [],
  path: '',
  format: DEFAULT_LOG_FORMAT_UPSTREAM,
  escapeJson: false,
  escapeNone: false,
};

/** The request target of a line of the default format ("GET <uri> HTTP/1.1"), unescaped. */
const uriOf = (line: string) => unescapeDefault(/"GET (\S+) HTTP\/1\.1"/.exec(line)?.[1] ?? '?');
const urisOf = (lines: string[]) => lines.map(uriOf);

t.test('lines wait to be written together; close() writes what waits', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  log.write(record({ uri: '/one' }));
  log.write(record({ uri: '/two' }));
  t.equal(out.writes.length, 0, 'nothing written per line');
  await log.close();
  t.equal(out.writes.length, 1, 'one write for both');
  t.strictSame(urisOf(out.lines()), ['/one', '/two']);
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

t.test("the batch delay: 100 ms, another only from the benchmark's variable", async (t) => {
  t.equal(flushDelayOf({}), 100);
  t.equal(flushDelayOf({ [FLUSH_DELAY_ENV]: '60000' }), 60000);
  for (const bad of ['', '0', '-5', '1.5', 'soon', '3600001'])
    t.equal(flushDelayOf({ [FLUSH_DELAY_ENV]: bad }), 100, `"${bad}": the default`);
});

t.test('a full batch is written at once, the rest waits', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  t.teardown(() => log.close());
  log.configure(SETTINGS);
  const lineLength = encoded('/app/x').byteLength;
  const perBatch = Math.ceil(BATCH_BYTES / lineLength);
  for (let i = 0; i < perBatch + 1; i++) log.write(record());
  t.equal(out.writes.length, 1, 'one write, synchronously, once a batch is full');
  t.equal(out.lines().length, perBatch);
  await once(out.stream, 'wrote');
  t.equal(out.lines().length, perBatch + 1, 'the last line came with the timer');
});

t.test('bytes from 0x80 are escaped as NGINX does; a line longer than a batch on its own', async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  // UTF-8 of "café/日本" as the client sent it, which Node reads as latin1
  const utf8 = Buffer.from('/caf\u00e9/\u65e5\u672c', 'utf8').toString('latin1');
  log.write(record({ uri: utf8 }));
  t.equal(out.writes.length, 0);
  const huge = `/${'\u00e9'.repeat(BATCH_BYTES / 2)}`;
  log.write(record({ uri: huge }));
  log.write(record({ uri: '/after' }));
  await log.close();
  t.strictSame(urisOf(out.lines()), [utf8, huge, '/after']);
  t.match(out.lines()[0], '"GET /caf\\xC3\\xA9/\\xE6\\x97\\xA5\\xE6\\x9C\\xAC HTTP/1.1"');
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
  t.strictSame(urisOf(out.lines()), ['/kept']);
});

t.test("a data-plane thread's lines join the batch whole, in the order they come", async (t) => {
  const out = sink();
  const log = createAccessLog({ log: createLogger('silent'), stdout: out.stream });
  log.configure(SETTINGS);
  log.write(record({ uri: '/here' }));
  log.writeLines(encoded('/thread-1/a', '/thread-1/b'));
  log.writeLines(encoded('/thread-2/a'));
  t.equal(out.writes.length, 0, 'they wait with the batch');
  // a buffer longer than a batch: what waits first, then the buffer as it is
  const long = encoded(...Array.from({ length: Math.ceil(BATCH_BYTES / 100) }, (_, i) => `/long/${i}`));
  t.ok(long.byteLength > BATCH_BYTES);
  log.writeLines(long);
  t.equal(out.writes.length, 2);
  log.writeLines(encoded('/thread-1/c'));
  await log.close();
  t.equal(out.writes.length, 3);
  for (const write of out.writes) t.ok(write.endsWith('\n'), 'every write ends with a whole line');
  t.strictSame(urisOf(out.lines()), [
    '/here',
    '/thread-1/a',
    '/thread-1/b',
    '/thread-2/a',
    ...Array.from({ length: Math.ceil(BATCH_BYTES / 100) }, (_, i) => `/long/${i}`),
    '/thread-1/c',
  ]);
});
