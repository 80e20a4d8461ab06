// How much request head NGINX's buffers hold, as a table: the request line and header lines as
// lengths in, 0 / 414 / HEADER_TOO_LARGE out. HTTP/1 fills the client-header-buffer-size buffer
// first and moves each line that does not fit to a new large buffer (large-client-header-buffers),
// so one long line per large buffer can use it up; HTTP/2 bounds each name and value and their sum.
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import {
  headSizeStatus,
  maxHeaderSize,
  maxRequestLine,
} from '../../lib/dataplane/listening/client-limits.ts';
import { HEADER_TOO_LARGE } from '../../lib/dataplane/responses/error-pages.ts';
import { DEFAULT_GLOBAL_CONFIG, type GlobalConfig } from '../../lib/model/index.ts';

const TOO_LARGE = HEADER_TOO_LARGE;

interface Row {
  name: string;
  /** client-header-buffer-size and large-client-header-buffers, when not the defaults (1k, 4 8k) */
  first?: number;
  large?: { count: number; size: number };
  http2?: boolean;
  /** the request target's length (the line is GET, the target and HTTP/1.1) */
  target?: number;
  /** header value lengths, each under a two-letter name (a line of value + 6 bytes) */
  values?: number[];
  expect: number;
}

// a request line is "GET " + target + " HTTP/1.1\r\n": target + 15; a header line "xN: " + value + CRLF: value + 6
const ROWS: Row[] = [
  { name: 'a plain request', target: 10, values: [20, 30], expect: 0 },
  { name: 'a request line of exactly one large buffer', target: 8192 - 15, expect: 0 },
  { name: 'a request line a byte longer: 414', target: 8192 - 14, expect: 414 },
  { name: 'a header line of exactly one large buffer', values: [8192 - 6], expect: 0 },
  { name: 'a header line a byte longer', values: [8192 - 5], expect: TOO_LARGE },
  { name: 'four lines of 7000 (one large buffer each)', values: [7000, 7000, 7000, 7000], expect: 0 },
  {
    name: 'a fifth line of 7000: no large buffer left',
    values: [7000, 7000, 7000, 7000, 7000],
    expect: TOO_LARGE,
  },
  {
    name: 'five lines of 4200 (25 KB in all): each takes a large buffer of its own, as in NGINX',
    values: [4200, 4200, 4200, 4200, 4200],
    expect: TOO_LARGE,
  },
  { name: 'eight lines of 4000 pack two to a large buffer', values: Array(8).fill(4000), expect: 0 },
  { name: 'many small lines within the buffers', values: Array(300).fill(90), expect: 0 },
  { name: 'many small lines beyond them', values: Array(400).fill(90), expect: TOO_LARGE },
  {
    name: 'client-header-buffer-size 64k: a 20 KB line in the first buffer passes',
    first: 65536,
    values: [20_000],
    expect: 0,
  },
  {
    name: 'client-header-buffer-size 64k: a 20 KB request line too',
    first: 65536,
    target: 20_000,
    expect: 0,
  },
  {
    name: 'client-header-buffer-size 64k: past the first buffer, the line size holds again',
    first: 65536,
    values: [60_000, 9_000],
    expect: TOO_LARGE,
  },
  {
    name: 'large-client-header-buffers 2 16k: a 12 KB line passes, three do not',
    large: { count: 2, size: 16384 },
    values: [12_000, 12_000, 12_000],
    expect: TOO_LARGE,
  },
  {
    name: 'HTTP/2: names and values within 8k and 32k in all',
    http2: true,
    values: [8000, 8000, 8000],
    expect: 0,
  },
  { name: 'HTTP/2: a value over 8k', http2: true, values: [8193], expect: TOO_LARGE },
  { name: 'HTTP/2: 33 KB in all', http2: true, values: [8000, 8000, 8000, 8000, 1000], expect: TOO_LARGE },
  {
    name: 'HTTP/2: a long :path is a field like any other (no 414)',
    http2: true,
    target: 9000,
    expect: TOO_LARGE,
  },
];

function judge(row: Row): number {
  const config: GlobalConfig = {
    ...DEFAULT_GLOBAL_CONFIG,
    clientHeaderBufferSize: row.first ?? 1024,
    largeClientHeaderBuffers: row.large ?? { count: 4, size: 8192 },
  } as GlobalConfig;
  const url = `/${'u'.repeat(Math.max(0, (row.target ?? 1) - 1))}`;
  const raw: string[] = [];
  if (row.http2) raw.push(':method', 'GET', ':path', url, ':authority', 'a.test', ':scheme', 'https');
  (row.values ?? []).forEach((length, i) => {
    raw.push(`x${String.fromCharCode(97 + (i % 26))}`, 'v'.repeat(length));
  });
  const req = { httpVersionMajor: row.http2 ? 2 : 1 } as IncomingMessage;
  return headSizeStatus(req, 'GET', url, raw, config);
}

t.test('what NGINX buffers hold', async (t) => {
  for (const row of ROWS) t.equal(judge(row), row.expect, row.name);
});

t.test("Node's own bounds never refuse what the buffers hold", async (t) => {
  t.equal(maxHeaderSize(DEFAULT_GLOBAL_CONFIG), 1024 + 4 * 8192, 'the first buffer plus the large ones');
  t.equal(maxRequestLine(DEFAULT_GLOBAL_CONFIG), 8192);
  t.equal(maxRequestLine({ ...DEFAULT_GLOBAL_CONFIG, clientHeaderBufferSize: 65536 } as GlobalConfig), 65536);
});
