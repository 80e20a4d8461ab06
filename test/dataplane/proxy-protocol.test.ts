// The PROXY protocol parser (a table of headers: v1 and v2, valid and malformed), the encoders (each
// header they write parses back to the same addresses), and readProxyHeader on real sockets: a header
// split across writes, the bytes after it handed on unchanged, a deadline that a dripping client does
// not extend, a connection that ends or sends something else.
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import {
  encodeProxyV1,
  encodeProxyV2,
  MAX_V2_HEADER,
  type ProxyHeaderParse,
  type ProxyHeaderRead,
  parseProxyHeader,
  readProxyHeader,
} from '../../lib/dataplane/listening/proxy-protocol.ts';

const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

/** A v2 header: version/command byte, family/transport byte, then the body (its length is written). */
function v2(versionCommand: number, familyTransport: number, body: Buffer, length = body.length): Buffer {
  const fixed = Buffer.alloc(4);
  fixed[0] = versionCommand;
  fixed[1] = familyTransport;
  fixed.writeUInt16BE(length, 2);
  return Buffer.concat([SIGNATURE, fixed, body]);
}

const ipv4Body = Buffer.from([203, 0, 113, 7, 10, 0, 0, 1, 0xc3, 0x50, 0x01, 0xbb]); // :50000 → :443
const ipv6Body = Buffer.concat([
  Buffer.from('20010db8000000000000000000000042', 'hex'),
  Buffer.from('20010db8000000000000000000000001', 'hex'),
  Buffer.from([0x30, 0x39, 0x00, 0x50]), // :12345 → :80
]);
/** AWS NLB style: a VPC endpoint id TLV (0xEA) and a NOOP padding TLV */
const tlvs = Buffer.concat([
  Buffer.from([0xea, 0x00, 0x06]),
  Buffer.from('\x01vpce1', 'latin1'),
  Buffer.from([0x04, 0x00, 0x02, 0x00, 0x00]),
]);

const header = (
  version: 1 | 2,
  length: number,
  addresses: Extract<ProxyHeaderParse, { kind: 'header' }>['addresses'],
): ProxyHeaderParse => ({ kind: 'header', version, length, addresses });
const v4 = (src: string, sport: number, dst: string, dport: number) => ({
  family: 'IPv4' as const,
  sourceAddress: src,
  sourcePort: sport,
  destinationAddress: dst,
  destinationPort: dport,
});
const v6 = (src: string, sport: number, dst: string, dport: number) => ({
  ...v4(src, sport, dst, dport),
  family: 'IPv6' as const,
});

const line = (text: string) => Buffer.from(text, 'latin1');
/** Resolves once the socket closes, reset or not (events.once would reject on the reset's error). */
const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

const cases: { name: string; input: Buffer; want: ProxyHeaderParse['kind'] | ProxyHeaderParse }[] = [
  // v1
  {
    name: 'v1 TCP4',
    input: line('PROXY TCP4 203.0.113.7 10.0.0.1 50000 443\r\nGET / HTTP/1.1\r\n'),
    want: header(1, 43, v4('203.0.113.7', 50000, '10.0.0.1', 443)),
  },
  {
    name: 'v1 TCP6',
    input: line('PROXY TCP6 2001:db8::42 2001:db8::1 12345 80\r\n'),
    want: header(1, 46, v6('2001:db8::42', 12345, '2001:db8::1', 80)),
  },
  { name: 'v1 UNKNOWN', input: line('PROXY UNKNOWN\r\n'), want: header(1, 15, null) },
  {
    name: 'v1 UNKNOWN with addresses (ignored)',
    input: line('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'),
    want: header(1, 35, null),
  },
  { name: 'v1 port 0 and 65535', input: line('PROXY TCP4 1.2.3.4 5.6.7.8 0 65535\r\n'), want: 'header' },
  { name: 'v1 beginning', input: line('PROX'), want: 'more' },
  { name: 'v1 without its CRLF yet', input: line('PROXY TCP4 203.0.113.7 10.0.0.1 50000'), want: 'more' },
  { name: 'v1 with its CR only', input: line('PROXY TCP4 203.0.113.7 10.0.0.1 50000 443\r'), want: 'more' },
  {
    name: 'v1 of 107 bytes exactly',
    input: line(`PROXY UNKNOWN ${'x'.repeat(91)}\r\n`),
    want: header(1, 107, null),
  },
  { name: 'v1 of 108 bytes', input: line(`PROXY UNKNOWN ${'x'.repeat(92)}\r\n`), want: 'invalid' },
  { name: 'v1 of 106 bytes, CR last', input: line(`PROXY UNKNOWN ${'x'.repeat(91)}\r`), want: 'more' },
  {
    name: 'v1 TCP6 of the longest addresses',
    input: line(`PROXY TCP6 ${'ffff:'.repeat(7)}ffff ${'ffff:'.repeat(7)}fffe 65535 65535\r\n`),
    want: 'header',
  },
  {
    name: 'v1 over 107 bytes without a CRLF',
    input: line(`PROXY UNKNOWN ${'x'.repeat(100)}`),
    want: 'invalid',
  },
  {
    name: 'v1 over 107 bytes with a CRLF later',
    input: line(`PROXY UNKNOWN ${'x'.repeat(95)}\r\n`),
    want: 'invalid',
  },
  { name: 'v1 bad IPv4 address', input: line('PROXY TCP4 203.0.113.300 10.0.0.1 1 2\r\n'), want: 'invalid' },
  {
    name: 'v1 IPv6 address in TCP4',
    input: line('PROXY TCP4 2001:db8::1 10.0.0.1 1 2\r\n'),
    want: 'invalid',
  },
  {
    name: 'v1 IPv4 address in TCP6',
    input: line('PROXY TCP6 10.0.0.2 2001:db8::1 1 2\r\n'),
    want: 'invalid',
  },
  { name: 'v1 IPv6 with a zone', input: line('PROXY TCP6 fe80::1%eth0 fe80::2 1 2\r\n'), want: 'invalid' },
  { name: 'v1 port over 65535', input: line('PROXY TCP4 1.2.3.4 5.6.7.8 65536 80\r\n'), want: 'invalid' },
  {
    name: 'v1 port with a leading zero',
    input: line('PROXY TCP4 1.2.3.4 5.6.7.8 080 80\r\n'),
    want: 'invalid',
  },
  { name: 'v1 double space', input: line('PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n'), want: 'invalid' },
  { name: 'v1 missing a field', input: line('PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n'), want: 'invalid' },
  { name: 'v1 unknown protocol', input: line('PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n'), want: 'invalid' },
  { name: 'v1 bare LF', input: line('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n'), want: 'invalid' },
  { name: 'v1 CR without LF', input: line('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX'), want: 'invalid' },
  { name: 'v1 lower-case', input: line('proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n'), want: 'invalid' },
  // no header at all
  { name: 'a plain request', input: line('GET / HTTP/1.1\r\nHost: a\r\n\r\n'), want: 'invalid' },
  { name: 'a POST (starts with P)', input: line('POST / HTTP/1.1\r\n'), want: 'invalid' },
  { name: 'a TLS ClientHello', input: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]), want: 'invalid' },
  { name: 'nothing yet', input: Buffer.alloc(0), want: 'more' },
  // v2
  {
    name: 'v2 PROXY TCP4',
    input: Buffer.concat([v2(0x21, 0x11, ipv4Body), line('GET')]),
    want: header(2, 28, v4('203.0.113.7', 50000, '10.0.0.1', 443)),
  },
  {
    name: 'v2 PROXY TCP6',
    input: v2(0x21, 0x21, ipv6Body),
    want: header(2, 52, v6('2001:db8::42', 12345, '2001:db8::1', 80)),
  },
  {
    name: 'v2 PROXY TCP4 with TLVs (skipped)',
    input: Buffer.concat([v2(0x21, 0x11, Buffer.concat([ipv4Body, tlvs])), line('rest')]),
    want: header(2, 28 + tlvs.length, v4('203.0.113.7', 50000, '10.0.0.1', 443)),
  },
  { name: 'v2 LOCAL', input: v2(0x20, 0x00, Buffer.alloc(0)), want: header(2, 16, null) },
  { name: 'v2 LOCAL with an address block', input: v2(0x20, 0x11, ipv4Body), want: header(2, 28, null) },
  { name: 'v2 PROXY UNSPEC', input: v2(0x21, 0x00, Buffer.alloc(0)), want: header(2, 16, null) },
  { name: 'v2 PROXY over DGRAM', input: v2(0x21, 0x12, ipv4Body), want: header(2, 28, null) },
  { name: 'v2 PROXY AF_UNIX', input: v2(0x21, 0x31, Buffer.alloc(216)), want: header(2, 232, null) },
  { name: 'v2 signature only', input: SIGNATURE, want: 'more' },
  { name: 'v2 half the signature', input: SIGNATURE.subarray(0, 5), want: 'more' },
  { name: 'v2 address block not in yet', input: v2(0x21, 0x11, ipv4Body).subarray(0, 20), want: 'more' },
  {
    name: 'v2 bad signature',
    input: Buffer.concat([Buffer.from('0d0a0d0a000d0a515549540b', 'hex'), Buffer.alloc(4)]),
    want: 'invalid',
  },
  { name: 'v2 version 1', input: v2(0x11, 0x11, ipv4Body), want: 'invalid' },
  { name: 'v2 unknown command', input: v2(0x22, 0x11, ipv4Body), want: 'invalid' },
  { name: 'v2 unknown family', input: v2(0x21, 0x41, ipv4Body), want: 'invalid' },
  { name: 'v2 unknown transport', input: v2(0x21, 0x13, ipv4Body), want: 'invalid' },
  { name: 'v2 TCP4 block too short', input: v2(0x21, 0x11, ipv4Body.subarray(0, 8)), want: 'invalid' },
  { name: 'v2 TCP6 with a TCP4 block', input: v2(0x21, 0x21, ipv4Body), want: 'invalid' },
  {
    name: 'v2 over 4096 bytes',
    input: v2(0x21, 0x11, Buffer.alloc(0), MAX_V2_HEADER - 16 + 1),
    want: 'invalid',
  },
  {
    name: 'v2 of 4096 bytes exactly',
    input: v2(0x21, 0x11, Buffer.concat([ipv4Body, Buffer.alloc(MAX_V2_HEADER - 16 - 12)])),
    want: 'header',
  },
];

t.test('parseProxyHeader', async (t) => {
  for (const c of cases) {
    const got = parseProxyHeader(c.input);
    if (typeof c.want === 'string') t.equal(got.kind, c.want, c.name);
    else t.strictSame(got, c.want, c.name);
  }
});

t.test('IPv6 addresses from v2 are written as inet_ntop writes them', async (t) => {
  const of = (hex: string) => {
    const got = parseProxyHeader(v2(0x21, 0x21, Buffer.concat([Buffer.from(hex, 'hex'), Buffer.alloc(20)])));
    return got.kind === 'header' ? got.addresses?.sourceAddress : got.kind;
  };
  t.equal(of('00000000000000000000000000000001'), '::1');
  t.equal(of('00000000000000000000ffffcb007107'), '::ffff:203.0.113.7', 'IPv4-mapped');
  t.equal(of('20010db8000000010000000000000001'), '2001:db8:0:1::1', 'the longest zero run');
  t.equal(of('20010db8000100020003000400050006'), '2001:db8:1:2:3:4:5:6', 'no zero run');
  t.equal(of('20010db8000000010001000000000000'), '2001:db8:0:1:1::', 'a trailing run');
  t.equal(of('fe800000000000000000000000000000'), 'fe80::');
});

t.test('encodeProxyV1 / encodeProxyV2 parse back to their addresses', async (t) => {
  const unmap = (a: string) => (a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a);
  const pairs: [string, number, string, number, boolean][] = [
    ['203.0.113.7', 50000, '10.0.0.1', 443, true],
    ['::ffff:203.0.113.7', 1, '::ffff:10.0.0.1', 2, true],
    ['2001:db8::42', 12345, '2001:db8::1', 80, true],
    ['::1', 0, '::2', 65535, true],
    // families that differ: UNKNOWN / LOCAL
    ['::1', 0, '::ffff:1.2.3.4', 65535, false],
    ['not an address', 1, '1.2.3.4', 2, false],
  ];
  for (const [src, sport, dst, dport, addressed] of pairs) {
    for (const encode of [encodeProxyV1, encodeProxyV2]) {
      const bytes = encode({ address: src, port: sport }, { address: dst, port: dport });
      const got = parseProxyHeader(bytes);
      const name = `${encode.name} ${src}:${sport} → ${dst}:${dport}`;
      if (got.kind !== 'header') {
        t.fail(`${name}: ${got.kind}`);
        continue;
      }
      t.equal(got.length, bytes.length, `${name}: the whole header`);
      const a = got.addresses;
      t.strictSame(
        a === null ? null : [a.sourceAddress, a.sourcePort, a.destinationAddress, a.destinationPort],
        addressed ? [unmap(src), sport, unmap(dst), dport] : null,
        name,
      );
    }
  }
  t.equal(
    encodeProxyV1({ address: 'x', port: 1 }, { address: '1.2.3.4', port: 2 }).toString(),
    'PROXY UNKNOWN\r\n',
  );
});

/** A server whose connections go through readProxyHeader; each result with the bytes read after it. */
async function readerServer(t: Test, timeoutMs: number) {
  const results: { result: ProxyHeaderRead; after: Promise<Buffer>; socket: Socket }[] = [];
  const arrived: Socket[] = [];
  const server = createServer((socket) => {
    arrived.push(socket);
    server.emit('arrived', socket);
    readProxyHeader(socket, timeoutMs, (result) => {
      if (!result.ok) socket.destroy();
      // the rest, read the way the next owner reads: flowing again
      const after = new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        if (!result.ok) return resolve(Buffer.alloc(0));
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.once('end', () => resolve(Buffer.concat(chunks)));
        socket.resume();
      });
      results.push({ result, after, socket });
      server.emit('result');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const s of arrived) s.destroy();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const next = async () => {
    while (results.length === 0) await once(server, 'result');
    return results.shift() as (typeof results)[number];
  };
  return { server, port, next };
}

t.test('readProxyHeader on real sockets', async (t) => {
  const { server, port, next } = await readerServer(t, 300);

  await t.test('a header split across writes, the bytes after it unchanged', async (t) => {
    const client = connect(port, '127.0.0.1');
    const [accepted] = (await once(server, 'arrived')) as [Socket];
    const bytes = Buffer.concat([
      v2(0x21, 0x11, Buffer.concat([ipv4Body, tlvs])),
      line('\x16\x03\x01 hello'),
    ]);
    // the first part must reach the server alone: the next write waits for its 'data'
    client.write(bytes.subarray(0, 10));
    await once(accepted, 'data');
    client.write(bytes.subarray(10, 31));
    await once(accepted, 'data');
    client.end(bytes.subarray(31));
    const { result, after } = await next();
    t.strictSame(result, { ok: true, version: 2, addresses: v4('203.0.113.7', 50000, '10.0.0.1', 443) });
    t.equal((await after).toString('latin1'), '\x16\x03\x01 hello', 'the bytes after the header, as sent');
  });

  await t.test('a v1 header alone, then the request in a later write', async (t) => {
    const client = connect(port, '127.0.0.1');
    client.write('PROXY TCP4 198.51.100.2 10.0.0.1 4000 80\r\n');
    const { result, after } = await next();
    t.ok(result.ok);
    client.end('GET / HTTP/1.1\r\n\r\n');
    t.equal((await after).toString(), 'GET / HTTP/1.1\r\n\r\n');
  });

  await t.test('no header, a bad one: a failure at once, without waiting for the deadline', async (t) => {
    for (const [sent, reason] of [
      ['GET / HTTP/1.1\r\nHost: a\r\n\r\n', 'no PROXY header'],
      ['PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n', 'a v1 header with a bad port'],
      [`PROXY UNKNOWN ${'x'.repeat(120)}`, 'a v1 header over 107 bytes'],
    ] as const) {
      const client = connect(port, '127.0.0.1');
      client.on('error', () => {});
      client.write(sent);
      const { result } = await next();
      t.strictSame(result, { ok: false, cause: 'invalid', reason }, reason);
      await closed(client);
    }
  });

  await t.test('a client that closes before its header', async (t) => {
    const client = connect(port, '127.0.0.1');
    client.end('PROXY TCP');
    const { result } = await next();
    t.equal(result.ok === false && result.cause, 'closed');
  });
});

t.test('the deadline is one for the whole header: a dripping client does not extend it', async (t) => {
  const { port, next } = await readerServer(t, 150);
  const client = connect(port, '127.0.0.1');
  client.on('error', () => {});
  // a byte every 20 ms: an idle timeout of 150 ms would never fire, and the header would be complete
  // after 840 ms (so a reader without a deadline would report ok)
  const bytes = 'PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n'.split('');
  const drip = setInterval(() => {
    const byte = bytes.shift();
    if (byte === undefined || client.destroyed) clearInterval(drip);
    else client.write(byte);
  }, 20);
  t.teardown(() => clearInterval(drip));
  const { result } = await next();
  t.strictSame(result, { ok: false, cause: 'timeout', reason: 'no PROXY header within 150 ms' });
  t.ok(bytes.length > 0, 'ended while bytes were still coming');
  t.ok(bytes.length > 0, 'while bytes were still coming');
  await closed(client);
});
