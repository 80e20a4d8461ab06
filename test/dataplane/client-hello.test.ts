// The ClientHello peek of ssl-passthrough (lib/dataplane/listening/client-hello.ts): table tests over built and
// real (OpenSSL's, captured from tls.connect) ClientHellos, whole, cut anywhere, split over records
// and TCP chunks, truncated and malformed; property tests that it never throws and that feeding the
// bytes chunk by chunk gives the answer of the whole.

import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { connect } from 'node:tls';
import fc from 'fast-check';
import t from 'tap';
import {
  type ClientHelloPeek,
  MAX_PEEK_BYTES,
  peekClientHello,
} from '../../lib/dataplane/listening/client-hello.ts';

const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u24 = (n: number) => [(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];

function extension(type: number, data: number[]): number[] {
  return [...u16(type), ...u16(data.length), ...data];
}

/** The server_name extension's data: a ServerNameList of (type, name) entries. */
function serverNames(entries: ReadonlyArray<readonly [number, string]>): number[] {
  const list = entries.flatMap(([type, name]) => [type, ...u16(name.length), ...Buffer.from(name, 'latin1')]);
  return [...u16(list.length), ...list];
}

interface HelloParts {
  sessionId?: number[];
  suites?: number[];
  compression?: number[];
  /** null: no extensions block at all */
  extensions?: number[] | null;
}

/** A client_hello handshake message (type, length, body). */
function helloMessage(parts: HelloParts = {}): number[] {
  const sessionId = parts.sessionId ?? new Array(32).fill(7);
  const suites = parts.suites ?? [0x13, 0x01, 0x13, 0x02];
  const compression = parts.compression ?? [0];
  const extensions = parts.extensions === undefined ? [] : parts.extensions;
  const body = [
    3,
    3,
    ...new Array(32).fill(1),
    sessionId.length,
    ...sessionId,
    ...u16(suites.length),
    ...suites,
    compression.length,
    ...compression,
    ...(extensions === null ? [] : [...u16(extensions.length), ...extensions]),
  ];
  return [1, ...u24(body.length), ...body];
}

/** The message in TLS records of at most `size` bytes of fragment each. */
function records(message: number[], size = 16_384): Buffer {
  const out: number[] = [];
  for (let at = 0; at < message.length; at += size) {
    const fragment = message.slice(at, at + size);
    out.push(22, 3, 1, ...u16(fragment.length), ...fragment);
  }
  return Buffer.from(out);
}

const withName = (name: string, extra: number[] = []) =>
  helloMessage({
    extensions: [...extension(10, [0, 2, 0, 29]), ...extension(0, serverNames([[0, name]])), ...extra],
  });

/** Feeds `data` in chunks as a connection would (the peek re-reads everything received so far). */
function byChunks(data: Uint8Array, cuts: readonly number[]): ClientHelloPeek {
  let answer: ClientHelloPeek = { kind: 'more' };
  let received = 0;
  for (const cut of [...cuts, data.length]) {
    received = Math.max(received, Math.min(cut, data.length));
    answer = peekClientHello(data.subarray(0, received));
    if (answer.kind !== 'more') return answer;
  }
  return answer;
}

/** What OpenSSL sends, captured from a real tls.connect. */
async function realHello(servername: string | undefined, alpn?: string[]): Promise<Buffer> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const captured = new Promise<Buffer>((resolve) => {
    server.once('connection', (socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        if (all.length >= 5 && all.length >= 5 + all.readUInt16BE(3)) {
          resolve(all);
          socket.destroy();
        }
      });
    });
  });
  const client = connect({ port, host: '127.0.0.1', servername, ALPNProtocols: alpn });
  client.on('error', () => {});
  const hello = await captured;
  client.destroy();
  server.close();
  return hello;
}

t.test('table: whole inputs', async (t) => {
  const cases: Array<[string, Uint8Array, ClientHelloPeek]> = [
    ['server_name', records(withName('pass.test')), { kind: 'hello', servername: 'pass.test' }],
    [
      'upper case and a trailing dot',
      records(withName('Pass.TEST.')),
      { kind: 'hello', servername: 'pass.test' },
    ],
    ['no extensions block (SSL 3 style)', records(helloMessage({ extensions: null })), hello(null)],
    [
      'extensions without server_name',
      records(helloMessage({ extensions: extension(10, [0, 0]) })),
      hello(null),
    ],
    ['empty extensions block', records(helloMessage({ extensions: [] })), hello(null)],
    [
      'a host_name after another name type',
      records(
        helloMessage({
          extensions: extension(
            0,
            serverNames([
              [7, 'x'],
              [0, 'b.test'],
            ]),
          ),
        }),
      ),
      hello('b.test'),
    ],
    [
      'the first host_name wins',
      records(
        helloMessage({
          extensions: extension(
            0,
            serverNames([
              [0, 'a.test'],
              [0, 'b.test'],
            ]),
          ),
        }),
      ),
      hello('a.test'),
    ],
    [
      'a host_name with a space or non-ASCII byte is no name',
      records(helloMessage({ extensions: extension(0, serverNames([[0, 'a b']])) })),
      hello(null),
    ],
    [
      'a host_name of one dot is no name',
      records(helloMessage({ extensions: extension(0, serverNames([[0, '.']])) })),
      hello(null),
    ],
    ['split over 7-byte records', records(withName('pass.test'), 7), hello('pass.test')],
    ['split over 100-byte records', records(withName('pass.test'), 100), hello('pass.test')],
    [
      'bytes after the hello (early data) are not read',
      Buffer.concat([records(withName('pass.test')), Buffer.from([23, 3, 3, 0, 1, 0])]),
      hello('pass.test'),
    ],
    ['HTTP', Buffer.from('GET / HTTP/1.1\r\nHost: pass.test\r\n\r\n'), other()],
    ['an SSLv2-style hello', Buffer.from([0x80, 0x2e, 1, 3, 1]), other()],
    ['an alert record', Buffer.from([21, 3, 3, 0, 2, 2, 40]), other()],
    ['record version 2', Buffer.from([22, 2, 0, 0, 4, 1, 0, 0, 0]), other()],
    ['a zero-length record', Buffer.from([22, 3, 1, 0, 0]), other()],
    ['a record over 2^14', Buffer.from([22, 3, 1, 0x40, 0x01]), other()],
    ['a server_hello', records([2, ...u24(4), 3, 3, 0, 0]), other()],
    ['a hello longer than the peek', Buffer.from([22, 3, 1, 0x40, 0, 1, ...u24(20_000)]), other()],
    ['a hello body cut short by its length', records([1, ...u24(10), ...new Array(10).fill(0)]), other()],
    ['session_id over 32', records(helloMessage({ sessionId: new Array(33).fill(0) })), other()],
    ['odd cipher_suites length', records(helloMessage({ suites: [0x13, 0x01, 0x13] })), other()],
    ['no cipher suite', records(helloMessage({ suites: [] })), other()],
    ['no compression method', records(helloMessage({ compression: [] })), other()],
    [
      'extensions longer than the body',
      records([...helloMessage({ extensions: [] }).slice(0, -2), 0, 9]),
      other(),
    ],
    ['an extension running past the block', records(helloMessage({ extensions: [0, 10, 0, 9, 0] })), other()],
    [
      'two server_name extensions',
      records(
        helloMessage({
          extensions: [
            ...extension(0, serverNames([[0, 'a.test']])),
            ...extension(0, serverNames([[0, 'b.test']])),
          ],
        }),
      ),
      other(),
    ],
    ['an empty ServerNameList', records(helloMessage({ extensions: extension(0, [0, 0]) })), other()],
    [
      'a ServerNameList length that disagrees',
      records(helloMessage({ extensions: extension(0, [0, 9, 0, 0, 1, 97]) })),
      other(),
    ],
    ['an empty host_name', records(helloMessage({ extensions: extension(0, [0, 3, 0, 0, 0]) })), other()],
    [
      'a handshake record then an application record',
      Buffer.concat([records(withName('pass.test').slice(0, 20)), Buffer.from([23, 3, 3, 0, 1, 0])]),
      other(),
    ],
  ];
  for (const [name, data, expected] of cases) t.same(peekClientHello(data), expected, name);
});

t.test('table: truncated inputs ask for more, then give the answer of the whole', async (t) => {
  const whole = records(withName('pass.test'), 50);
  for (let cut = 0; cut < whole.length; cut++) {
    const answer = peekClientHello(whole.subarray(0, cut));
    if (answer.kind !== 'more') {
      t.fail(`cut at ${cut}: ${JSON.stringify(answer)}`);
      return;
    }
  }
  t.same(peekClientHello(whole), hello('pass.test'));
  t.same(byChunks(whole, [1, 2, 3, 4, 5, 6, 60, 61, 200]), hello('pass.test'), 'TCP chunks across records');
  t.same(peekClientHello(Buffer.alloc(0)), { kind: 'more' }, 'nothing yet');
  t.same(peekClientHello(Buffer.from([22, 3])), { kind: 'more' }, 'half a record header');
});

t.test('table: a peek never waits beyond MAX_PEEK_BYTES', async (t) => {
  // a hello fragmented into 1-byte records: the bytes grow beyond the bound before it completes
  const tiny = records(helloMessage({ extensions: extension(21, new Array(3000).fill(0)) }), 1);
  t.ok(tiny.length > MAX_PEEK_BYTES);
  t.same(peekClientHello(tiny.subarray(0, MAX_PEEK_BYTES)), { kind: 'other' });
  t.same(peekClientHello(tiny.subarray(0, MAX_PEEK_BYTES - 1)), { kind: 'more' });
  // the largest hello one record holds is read
  const big = helloMessage({ extensions: extension(21, new Array(16_384 - 85).fill(0)) });
  t.equal(records(big).length, MAX_PEEK_BYTES);
  t.same(peekClientHello(records(big)), hello(null), 'a 16 KiB hello in one record');
});

t.test('real ClientHellos from OpenSSL (tls.connect)', async (t) => {
  const named = await realHello('Pass.Example.test', ['h2', 'http/1.1']);
  t.same(peekClientHello(named), hello('pass.example.test'), 'with SNI and ALPN');
  const unnamed = await realHello(undefined);
  t.same(peekClientHello(unnamed), hello(null), 'an IP address: no SNI');
  // the same bytes re-cut into records of 200 bytes, and delivered a byte at a time
  const message = [...named.subarray(5)];
  t.same(peekClientHello(records(message, 200)), hello('pass.example.test'), 'over several records');
  const cuts = Array.from({ length: named.length }, (_, i) => i);
  t.same(byChunks(named, cuts), hello('pass.example.test'), 'one byte per TCP chunk');
});

t.test('property: never throws, and any answer but "more" is final', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 600 }), (data) => {
      const answer = peekClientHello(data);
      return answer.kind === 'more' || answer.kind === 'other' || answer.kind === 'hello';
    }),
    { numRuns: 2000 },
  );
  // mostly-valid inputs reach deeper: a valid hello with bytes flipped, cut and extended
  const base = records(withName('pass.test'), 64);
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(base.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      fc.nat(base.length),
      fc.uint8Array({ maxLength: 40 }),
      (flips, cut, tail) => {
        const data = Buffer.from(base);
        for (const [at, value] of flips) data[at] = value;
        const input = Buffer.concat([data.subarray(0, cut), tail]);
        const answer = peekClientHello(input);
        if (answer.kind === 'hello' && answer.servername !== null && !/^[!-~]+$/.test(answer.servername)) {
          return false;
        }
        // whatever the answer, more bytes never turn "hello"/"other" into something else
        if (answer.kind !== 'more') {
          const again = peekClientHello(Buffer.concat([input, Buffer.from([0, 1, 2])]));
          return JSON.stringify(again) === JSON.stringify(answer);
        }
        return true;
      },
    ),
    { numRuns: 3000 },
  );
  t.pass('5,000 inputs');
});

t.test('property: chunked delivery gives the answer of the whole', async (t) => {
  const hosts = fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,40}[a-z0-9])?$/);
  fc.assert(
    fc.property(
      hosts,
      fc.integer({ min: 1, max: 300 }),
      fc.array(fc.nat(400), { maxLength: 8 }),
      (host, recordSize, cuts) => {
        const whole = records(withName(host), recordSize);
        const expected = peekClientHello(whole);
        const chunked = byChunks(
          whole,
          [...cuts].sort((a, b) => a - b),
        );
        return (
          JSON.stringify(chunked) === JSON.stringify(expected) &&
          expected.kind === 'hello' &&
          expected.servername === host
        );
      },
    ),
    { numRuns: 500 },
  );
  t.pass('500 hellos');
});

function hello(servername: string | null): ClientHelloPeek {
  return { kind: 'hello', servername };
}

function other(): ClientHelloPeek {
  return { kind: 'other' };
}
