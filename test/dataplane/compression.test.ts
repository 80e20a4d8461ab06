// The compression decision and the head's edits, without sockets: which responses get gzip or brotli
// (or only Vary), Accept-Encoding's q-values, gzip-disable, and the header list edits.
import type { IncomingHttpHeaders } from 'node:http';
import t from 'tap';
import {
  accepts,
  compileCompression,
  editHead,
  type Negotiated,
  negotiate,
  type RequestFacts,
} from '../../lib/dataplane/responses/compression.ts';
import { type CompressionConfig, DEFAULT_COMPRESSION } from '../../lib/model/configmap/compression-keys.ts';

function compression(edit: (c: CompressionConfig) => void = () => {}) {
  const config = structuredClone(DEFAULT_COMPRESSION) as CompressionConfig;
  config.gzip.enabled = true;
  config.brotli.enabled = true;
  edit(config);
  const compiled = compileCompression(config);
  if (compiled === null) throw new Error('expected compression on');
  return compiled;
}

t.test('both codings off: nothing to compile, the hot path checks one null', async (t) => {
  t.equal(compileCompression(structuredClone(DEFAULT_COMPRESSION) as CompressionConfig), null);
});

t.test('Accept-Encoding with q-values and *', async (t) => {
  const table: Array<[string | undefined, 'gzip' | 'br', boolean]> = [
    [undefined, 'gzip', false],
    ['', 'gzip', false],
    ['gzip', 'gzip', true],
    ['GZIP', 'gzip', true],
    ['gzip, deflate, br, zstd', 'br', true],
    ['deflate, br', 'gzip', false],
    ['x-gzip', 'gzip', false],
    ['gzip;q=0', 'gzip', false],
    ['gzip; q=0.000', 'gzip', false],
    ['gzip;q=0.', 'gzip', false],
    ['gzip;q=0.001', 'gzip', true],
    ['gzip;q=1', 'gzip', true],
    ['gzip;q=1.0', 'gzip', true],
    ['gzip;q=2', 'gzip', false],
    ['gzip;q=abc', 'gzip', false],
    ['*', 'gzip', true],
    ['*', 'br', true],
    ['*;q=0', 'br', false],
    ['gzip;q=0, *', 'gzip', false],
    ['*, gzip;q=0', 'gzip', false],
    ['br;q=0, *', 'gzip', true],
    ['identity', 'gzip', false],
  ];
  for (const [header, name, want] of table) t.equal(accepts(header, name), want, `${header} → ${name}`);
});

const GET: RequestFacts = {
  method: 'GET',
  version: 11,
  acceptEncoding: 'gzip, deflate, br',
  userAgent: 'curl/8.5.0',
};
const HTML: IncomingHttpHeaders = { 'content-type': 'text/html; charset=utf-8', 'content-length': '5000' };
const GZIP: Negotiated = { coding: 'gzip', vary: true };
const BR: Negotiated = { coding: 'br', vary: true };
const VARY: Negotiated = { coding: null, vary: true };
const NONE: Negotiated = { coding: null, vary: false };

interface Case {
  name: string;
  config?: (c: CompressionConfig) => void;
  request?: Partial<RequestFacts>;
  status?: number;
  headers?: IncomingHttpHeaders;
  want: Negotiated;
}

const CASES: readonly Case[] = [
  { name: 'brotli first when both are on and accepted', want: BR },
  { name: 'gzip when br is not accepted', request: { acceptEncoding: 'gzip' }, want: GZIP },
  {
    name: 'gzip when brotli is off',
    config: (c) => {
      c.brotli.enabled = false;
    },
    want: GZIP,
  },
  {
    name: 'brotli only on: a gzip-only client gets none, but the response varies',
    config: (c) => {
      c.gzip.enabled = false;
    },
    request: { acceptEncoding: 'gzip' },
    want: VARY,
  },
  { name: 'no Accept-Encoding: as is, with Vary', request: { acceptEncoding: undefined }, want: VARY },
  { name: 'gzip;q=0 refuses', request: { acceptEncoding: 'gzip;q=0' }, want: VARY },
  { name: 'br;q=0 falls back to gzip', request: { acceptEncoding: 'br;q=0, gzip' }, want: GZIP },
  { name: 'status 403', status: 403, want: BR },
  { name: 'status 404', status: 404, want: BR },
  { name: 'status 201: NGINX compresses 200, 403, 404 only', status: 201, want: NONE },
  { name: 'status 204', status: 204, want: NONE },
  { name: 'status 206', status: 206, want: NONE },
  { name: 'status 304', status: 304, want: NONE },
  { name: 'status 500', status: 500, want: NONE },
  { name: 'HEAD', request: { method: 'HEAD' }, want: NONE },
  { name: 'already encoded', headers: { ...HTML, 'content-encoding': 'gzip' }, want: NONE },
  {
    name: 'an empty Content-Encoding is no encoding',
    headers: { ...HTML, 'content-encoding': '' },
    want: BR,
  },
  { name: 'a Content-Range reply', headers: { ...HTML, 'content-range': 'bytes 0-9/5000' }, want: NONE },
  {
    name: 'Cache-Control: no-transform',
    headers: { ...HTML, 'cache-control': 'public, no-transform' },
    want: NONE,
  },
  { name: 'Cache-Control: no-cache', headers: { ...HTML, 'cache-control': 'no-cache' }, want: BR },
  {
    name: 'server-sent events, even when listed',
    config: (c) => {
      c.gzip.types = ['*'];
      c.brotli.types = ['*'];
    },
    headers: { 'content-type': 'text/event-stream' },
    want: NONE,
  },
  {
    name: 'gRPC, even when listed',
    config: (c) => {
      c.gzip.types = ['*'];
      c.brotli.types = ['*'];
    },
    headers: { 'content-type': 'application/grpc+proto' },
    want: NONE,
  },
  { name: 'a type not listed', headers: { 'content-type': 'image/png' }, want: NONE },
  {
    name: 'a listed type, parameters ignored',
    headers: { 'content-type': 'Application/JSON; x=1' },
    want: BR,
  },
  { name: 'no type and no *', headers: {}, want: NONE },
  {
    name: '* matches any type, even none',
    config: (c) => {
      c.gzip.types = ['*'];
      c.brotli.enabled = false;
    },
    headers: {},
    want: GZIP,
  },
  {
    name: 'text/html whatever the list says',
    config: (c) => {
      c.gzip.types = ['application/json'];
      c.brotli.enabled = false;
    },
    want: GZIP,
  },
  {
    name: 'shorter than gzip-min-length (256)',
    config: (c) => {
      c.brotli.enabled = false;
    },
    headers: { ...HTML, 'content-length': '255' },
    want: NONE,
  },
  {
    name: 'exactly gzip-min-length',
    config: (c) => {
      c.brotli.enabled = false;
    },
    headers: { ...HTML, 'content-length': '256' },
    want: GZIP,
  },
  {
    name: 'unknown length (chunked): compressed',
    config: (c) => {
      c.gzip.minLength = 1_000_000;
      c.brotli.enabled = false;
    },
    headers: { 'content-type': 'text/html' },
    want: GZIP,
  },
  {
    name: 'long enough for brotli (20), not for gzip (256), gzip-only client: as is, varies',
    headers: { ...HTML, 'content-length': '100' },
    request: { acceptEncoding: 'gzip' },
    want: VARY,
  },
  { name: 'long enough for brotli only, br client', headers: { ...HTML, 'content-length': '100' }, want: BR },
  { name: 'HTTP/1.0: none (gzip_http_version 1.1)', request: { version: 10 }, want: VARY },
  { name: 'HTTP/2', request: { version: 20 }, want: BR },
  {
    name: 'gzip-disable matches the User-Agent (case-insensitive)',
    config: (c) => {
      c.gzip.disable = 'CURL/8';
    },
    request: { acceptEncoding: 'gzip' },
    want: VARY,
  },
  {
    name: 'gzip-disable does not hold back brotli (ngx_brotli does not read it)',
    config: (c) => {
      c.gzip.disable = 'curl';
    },
    want: BR,
  },
  {
    name: 'gzip-disable msie6: IE 6 before SP2',
    config: (c) => {
      c.gzip.disable = 'msie6';
    },
    request: { acceptEncoding: 'gzip', userAgent: 'Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)' },
    want: VARY,
  },
  {
    name: 'gzip-disable msie6: IE 6 SP2 (SV1) is fine',
    config: (c) => {
      c.gzip.disable = 'msie6';
    },
    request: {
      acceptEncoding: 'gzip',
      userAgent: 'Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)',
    },
    want: GZIP,
  },
  {
    name: 'gzip-disable msie6: IE 7 is fine',
    config: (c) => {
      c.gzip.disable = 'msie6';
    },
    request: { acceptEncoding: 'gzip', userAgent: 'Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)' },
    want: GZIP,
  },
];

t.test('the decision', async (t) => {
  for (const c of CASES) {
    const got = negotiate(
      compression(c.config),
      { ...GET, ...c.request },
      c.status ?? 200,
      c.headers ?? HTML,
    );
    t.strictSame(got, c.want, c.name);
  }
});

t.test('the head edits', async (t) => {
  const table: Array<[string, Array<string | string[]>, Negotiated, Array<string | string[]>]> = [
    [
      'gzip: Content-Length and Accept-Ranges dropped, ETag weak, Vary and Content-Encoding added',
      ['content-type', 'text/html', 'content-length', '5000', 'accept-ranges', 'bytes', 'etag', '"abc"'],
      GZIP,
      ['content-type', 'text/html', 'etag', 'W/"abc"', 'vary', 'Accept-Encoding', 'content-encoding', 'gzip'],
    ],
    [
      'a weak ETag stays, an existing Vary is merged',
      ['etag', 'W/"abc"', 'vary', 'Origin'],
      BR,
      ['etag', 'W/"abc"', 'vary', 'Origin, Accept-Encoding', 'content-encoding', 'br'],
    ],
    [
      'an ETag that is not quoted is dropped (ngx_http_weak_etag)',
      ['etag', 'abc'],
      GZIP,
      ['vary', 'Accept-Encoding', 'content-encoding', 'gzip'],
    ],
    [
      'Vary already naming Accept-Encoding (any case) is not duplicated',
      ['Vary', 'origin, accept-encoding'],
      GZIP,
      ['Vary', 'origin, accept-encoding', 'content-encoding', 'gzip'],
    ],
    ['Vary: * is left alone', ['vary', '*'], GZIP, ['vary', '*', 'content-encoding', 'gzip']],
    [
      'Vary only: the length, ranges and ETag stay',
      ['content-length', '10', 'accept-ranges', 'bytes', 'etag', '"x"'],
      VARY,
      ['content-length', '10', 'accept-ranges', 'bytes', 'etag', '"x"', 'vary', 'Accept-Encoding'],
    ],
    [
      'Vary given twice (a list): merged once',
      ['vary', ['Origin', 'Cookie']],
      GZIP,
      ['vary', 'Origin, Cookie, Accept-Encoding', 'content-encoding', 'gzip'],
    ],
  ];
  for (const [name, head, negotiated, want] of table) {
    const out = [...head];
    editHead(out, negotiated);
    t.strictSame(out, want, name);
  }
});
