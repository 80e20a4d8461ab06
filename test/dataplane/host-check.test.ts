// The Host part of what is refused before routing (rejectedStatus), as a table: NGINX 1.27's
// ngx_http_process_host, ngx_http_process_request_header and its request-line host, request heads in,
// 0 / 400 / 405 out. The host itself is judged by validHost (router.test.ts).
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { rejectedStatus } from '../../lib/dataplane/listening/client-limits.ts';
import { DEFAULT_GLOBAL_CONFIG } from '../../lib/model/index.ts';

interface Row {
  name: string;
  version?: '1.0' | '1.1' | '2.0';
  method?: string;
  url?: string;
  headers: string[];
  expect: number;
}

const ROWS: Row[] = [
  { name: 'a valid Host', headers: ['Host', 'a.test'], expect: 0 },
  { name: 'a Host with a port and upper case', headers: ['host', 'A.Test.:8080'], expect: 0 },
  { name: 'two dots in a row', headers: ['Host', 'a..test'], expect: 400 },
  { name: 'a path in the Host', headers: ['Host', 'a.test/../admin'], expect: 400 },
  { name: 'a space in the Host', headers: ['Host', 'a.test b'], expect: 400 },
  { name: 'a tab in the Host', headers: ['Host', 'a\tb'], expect: 400 },
  { name: 'an empty Host', headers: ['Host', ''], expect: 400 },
  { name: 'a lone dot', headers: ['Host', '.'], expect: 400 },
  { name: 'HTTP/1.1 without Host', headers: [], expect: 400 },
  { name: 'HTTP/1.0 without Host', version: '1.0', headers: [], expect: 0 },
  { name: 'HTTP/1.0 with an invalid Host', version: '1.0', headers: ['Host', 'a..b'], expect: 400 },
  { name: 'two Host headers', headers: ['Host', 'a.test', 'Host', 'a.test'], expect: 400 },
  { name: 'HTTP/2 :authority', version: '2.0', headers: [':authority', 'a.test'], expect: 0 },
  { name: 'HTTP/2 host without :authority', version: '2.0', headers: ['host', 'a.test'], expect: 0 },
  { name: 'HTTP/2 invalid :authority', version: '2.0', headers: [':authority', 'a..test'], expect: 400 },
  { name: 'HTTP/2 invalid host', version: '2.0', headers: ['host', 'a/b'], expect: 400 },
  { name: 'HTTP/2 neither :authority nor host', version: '2.0', headers: [], expect: 400 },
  {
    name: 'HTTP/2 :authority and host: the second is a duplicate Host',
    version: '2.0',
    headers: [':authority', 'a.test', 'host', 'b.test'],
    expect: 400,
  },
  {
    name: 'absolute-form: its authority routes, a valid Host is fine',
    url: 'http://b.test/p',
    headers: ['Host', 'a.test'],
    expect: 0,
  },
  {
    name: 'absolute-form with an invalid authority',
    url: 'http://a..test/p',
    headers: ['Host', 'a.test'],
    expect: 400,
  },
  {
    name: 'absolute-form with an authority the request-line parser refuses',
    url: 'http://a_b.test/p',
    headers: ['Host', 'a.test'],
    expect: 400,
  },
  {
    name: 'absolute-form with a port that is not a number',
    url: 'http://a.test:8o/p',
    headers: ['Host', 'a.test'],
    expect: 400,
  },
  {
    name: 'absolute-form: the Host header is judged too',
    url: 'http://a.test/p',
    headers: ['Host', 'a..test'],
    expect: 400,
  },
  { name: 'absolute-form without Host on HTTP/1.1', url: 'http://a.test/p', headers: [], expect: 400 },
  { name: 'TRACE', method: 'TRACE', headers: ['Host', 'a.test'], expect: 405 },
  {
    name: 'TRACE with an invalid Host: the Host first',
    method: 'TRACE',
    headers: ['Host', 'a..b'],
    expect: 400,
  },
];

t.test('rejectedStatus: the Host as NGINX refuses it', async (t) => {
  for (const row of ROWS) {
    const version = row.version ?? '1.1';
    const [major, minor] = version.split('.').map(Number) as [number, number];
    const req = {
      httpVersion: version,
      httpVersionMajor: major,
      httpVersionMinor: minor,
      method: row.method ?? 'GET',
      url: row.url ?? '/',
      rawHeaders: row.headers,
      // an HTTP/2 request of the compatibility API has its stream
      stream: major === 2 ? {} : undefined,
    } as unknown as IncomingMessage;
    t.equal(rejectedStatus(req, DEFAULT_GLOBAL_CONFIG), row.expect, row.name);
  }
});
