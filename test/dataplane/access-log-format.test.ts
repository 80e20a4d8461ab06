// The compiled log format: a format and a record in, the bytes NGINX would write out. Expected lines
// are written by hand from NGINX's rules (ngx_http_log_module: `-` for a value not found, escape=
// default/json/none; the upstream module's lists), not by this encoder.
import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import t from 'tap';
import {
  compileLogFormat,
  escapeOf,
  hasWriter,
  type LogEscape,
  logEncoderOf,
} from '../../lib/dataplane/access-log-format.ts';
import type { RequestRecord } from '../../lib/dataplane/request-record.ts';
import {
  DEFAULT_LOG_FORMAT_UPSTREAM,
  LOG_VARIABLES,
  type LogFormatPart,
  parseLogFormat,
} from '../../lib/model/configmap/log-format.ts';
import { JSON_LOG_FORMAT } from '../support/json-log-format.ts';
import { record } from '../support/request-record.ts';

/** 2026-11-26 18:52:07.123 UTC */
const TIME = Date.UTC(2026, 10, 26, 18, 52, 7, 123);

function partsOf(format: string): LogFormatPart[] {
  const parsed = parseLogFormat(format);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return parsed.parts;
}

function line(format: string, r: RequestRecord, escaping: LogEscape = 'default'): Buffer {
  const encoder = compileLogFormat(partsOf(format), escaping);
  const buf = Buffer.alloc(4096);
  return buf.subarray(0, encoder.encode(buf, 0, r, TIME));
}

const text = (format: string, r: RequestRecord, escaping: LogEscape = 'default') =>
  line(format, r, escaping).toString('latin1');

t.test('the default format: ingress-nginx config.go, and a proxied request as NGINX writes it', async (t) => {
  t.equal(
    DEFAULT_LOG_FORMAT_UPSTREAM,
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id',
  );
  const r = record({ userAgent: 'curl/8.5.0', referer: 'https://r.test/', requestId: 'f00d' });
  t.equal(
    text(DEFAULT_LOG_FORMAT_UPSTREAM, r),
    '127.0.0.1 - - [26/Nov/2026:18:52:07 +0000] "GET /app/x HTTP/1.1" 200 100 "https://r.test/" "curl/8.5.0" 50 0.004 [ns-web-80] [] 10.0.0.1:8080 100 0.004 200 f00d',
  );
});

t.test(
  'values NGINX does not find are "-"; lists of tries; no upstream; refused before routing',
  async (t) => {
    const tries = record({
      previousAddrs: '10.0.0.2:8080, ',
      previousStatuses: '502, ',
      previousTimes: '0.001, ',
      previousLengths: '0, ',
      upstreamStatus: 0,
      responseTime: -1,
      upstreamResponseLength: -1,
    });
    t.equal(
      text('$upstream_addr $upstream_status $upstream_response_time $upstream_response_length', tries),
      '10.0.0.2:8080, 10.0.0.1:8080 502, - 0.001, - 0, -',
    );
    const none = record({ upstream: '', upstreamAddr: '', upstreamStatus: 0, responseTime: -1 });
    t.equal(
      text(
        '[$proxy_upstream_name] $upstream_addr $upstream_status $upstream_response_time $upstream_connect_time',
        none,
      ),
      '[-] - - - -',
      'routed without an upstream: NGINX\'s server-level "-"',
    );
    const refused = record({
      ...none,
      refused: true,
      method: '',
      protocol: '',
      uri: '\x16\x03\x01',
      host: '',
      status: 400,
    });
    t.equal(
      text('[$proxy_upstream_name] "$request" $status $host $request_method $server_protocol', refused),
      '[] "\\x16\\x03\\x01" 400 _ - -',
      'a first line that was no request line is $request as it came (escaped)',
    );
    t.equal(text('$status', record({ status: 9 })), '009', 'three digits');
  },
);

t.test('escape=default, json and none on hostile bytes', async (t) => {
  const hostile = 'a"b\\c\nd\re\tf\x01\x1f\x7f\xe9';
  const r = record({ userAgent: hostile, uri: '/x"\ny' });
  t.equal(
    text('"$http_user_agent" "$request_uri"', r),
    '"a\\x22b\\x5Cc\\x0Ad\\x0De\\x09f\\x01\\x1F\\x7F\\xE9" "/x\\x22\\x0Ay"',
  );
  const json = line('{"ua":"$http_user_agent","uri":"$request_uri"}', r, 'json');
  t.same(
    json,
    Buffer.concat([
      Buffer.from('{"ua":"a\\"b\\\\c\\nd\\re\\tf\\u0001\\u001F\x7f', 'latin1'),
      Buffer.from([0xe9]),
      Buffer.from('","uri":"/x\\"\\ny"}', 'latin1'),
    ]),
    'json: controls escaped, other bytes as the client sent them',
  );
  const none = line('$http_user_agent', r, 'none');
  t.same(
    none,
    Buffer.from('a"b\\c\\x0Ad\\x0De\tf\x01\x1f\x7f\xe9', 'latin1'),
    'none: raw, but never CR or LF',
  );
  for (const escaping of ['default', 'json', 'none'] as const)
    t.notOk(
      line(DEFAULT_LOG_FORMAT_UPSTREAM, r, escaping).includes(0x0a),
      `${escaping}: no newline from the client`,
    );
  t.equal(text('[$remote_user]', record(), 'json'), '[]', 'json: not found is empty');
  t.equal(text('[$remote_user]', record(), 'none'), '[]', 'none: not found is empty');
});

t.test('one encoder, line after line: a value that was safe before and is not now is escaped', async (t) => {
  // the line string checks the upstream, the method, the protocol and the connection's address only
  // when they change: each change must be seen, whatever came before
  const encoder = compileLogFormat(partsOf(DEFAULT_LOG_FORMAT_UPSTREAM), 'default');
  const buf = Buffer.alloc(4096);
  const of = (r: RequestRecord) => buf.subarray(0, encoder.encode(buf, 0, r, TIME)).toString('latin1');
  const plain = of(record());
  t.match(plain, /^127\.0\.0\.1 .* \[ns-web-80\] \[\] 10\.0\.0\.1:8080 /);
  const changes: Array<[Partial<RequestRecord>, string]> = [
    [{ upstream: 'ns-"web"-80' }, '[ns-\\x22web\\x22-80]'],
    [{ canary: 'ns\ncanary' }, '[ns\\x0Acanary]'],
    [{ upstreamAddr: '10.0.0.1:8080\r' }, ' 10.0.0.1:8080\\x0D '],
    [{ remoteAddress: '127.0.0.1"' }, '127.0.0.1\\x22 - '],
    [{ method: 'G\x01T' }, '"G\\x01T /app/x HTTP/1.1"'],
    [{ protocol: 'HTTP/1.1\x7f' }, '"GET /app/x HTTP/1.1\\x7F"'],
  ];
  for (const [change, expected] of changes) {
    t.equal(of(record()), plain, 'the safe line first');
    t.ok(of(record(change)).includes(expected), `${Object.keys(change)[0]}: ${expected}`);
    t.ok(of(record(change)).includes(expected), 'and again');
    t.equal(of(record()), plain, 'then the safe line again');
  }
});

t.test('request headers, cookies, arguments and credentials', async (t) => {
  const headers = [
    'X-Forwarded-For',
    '1.1.1.1',
    'Cookie',
    'a=1; Session=s3',
    'x-forwarded-for',
    '2.2.2.2',
    'Authorization',
    `Basic ${Buffer.from('alice:secret').toString('base64')}`,
    'X-Empty',
    '',
  ];
  const r = record({ headers, uri: '/p%20q/r?page=2&Q=x%20y&flag' });
  t.equal(
    text('$http_x_forwarded_for|$cookie_session|$arg_page|$arg_q|$arg_flag|$http_x_empty|$http_x_none', r),
    '1.1.1.1, 2.2.2.2|s3|2|x%20y|-||-',
  );
  t.equal(
    text('$remote_user $http_authorization', r),
    'alice Basic',
    'the user, the scheme: never the password',
  );
  t.notMatch(text('$remote_user $http_authorization $http_cookie', r), /secret|YWxpY2U6c2VjcmV0/);
  t.equal(text('$uri|$args|$is_args|$query_string', r), '/p q/r|page=2&Q=x%20y&flag|?|page=2&Q=x%20y&flag');
  t.equal(text('$uri|$args|$is_args', record({ uri: '/a' })), '/a|-|');
  t.equal(text('$proxy_add_x_forwarded_for', r), '1.1.1.1, 2.2.2.2, 127.0.0.1');
  t.equal(text('$proxy_add_x_forwarded_for', record()), '127.0.0.1');
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
t.test('times, route and connection variables; ${name}', async (t) => {
  const r = record({
    https: true,
    connection: 7,
    connectionRequests: 3,
    serverPort: 443,
    sslProtocol: 'TLSv1.3',
  });
  // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
  t.equal(text('$time_iso8601 $msec ${status}x', r), '2026-11-26T18:52:07+00:00 1795719127.123 200x');
  t.equal(
    text('$namespace/$ingress_name/$service_name:$service_port $location_path $host $server_name', r),
    'ns/site/web:80 /app a.test a.test',
  );
  t.equal(
    text('$scheme $https $connection $connection_requests $server_port $ssl_protocol $ssl_cipher $pipe', r),
    'https on 7 3 443 TLSv1.3 - .',
  );
  t.equal(text('$https|$server_name', record({ namespace: '' })), '|_');
  t.equal(
    text('$upstream_connect_time $upstream_header_time $realip_remote_addr', r),
    '0.001 0.003 127.0.0.1',
  );
  t.ok(compileLogFormat(partsOf('$ssl_cipher'), 'default').connectionDetails);
  t.notOk(compileLogFormat(partsOf(DEFAULT_LOG_FORMAT_UPSTREAM), 'default').connectionDetails);
});

t.test("one encoder's times: each line has its own second, going forward or back", async (t) => {
  const encoder = compileLogFormat(partsOf('$time_local|$time_iso8601'), 'default');
  const buf = Buffer.alloc(256);
  const at = (time: number) => buf.toString('latin1', 0, encoder.encode(buf, 0, record(), time));
  t.equal(at(TIME), '26/Nov/2026:18:52:07 +0000|2026-11-26T18:52:07+00:00');
  t.equal(
    at(TIME + 876),
    '26/Nov/2026:18:52:07 +0000|2026-11-26T18:52:07+00:00',
    'the last ms of the second',
  );
  t.equal(at(TIME + 877), '26/Nov/2026:18:52:08 +0000|2026-11-26T18:52:08+00:00', 'the next second');
  t.equal(at(TIME - 124), '26/Nov/2026:18:52:06 +0000|2026-11-26T18:52:06+00:00', 'a clock set back');
  t.equal(at(Date.UTC(2027, 0, 1)), '01/Jan/2027:00:00:00 +0000|2027-01-01T00:00:00+00:00');
});

t.test('counts on both sides of 2^31, widths, and what is not a count', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0'],
    [9, '9'],
    [10, '10'],
    [1024, '1024'],
    [2 ** 31 - 1, '2147483647'],
    [2 ** 31, '2147483648'],
    [5 * 2 ** 30 + 7, '5368709127'],
    [Number.MAX_SAFE_INTEGER, '9007199254740991'],
    [12.9, '12'],
    [-1, '0'],
    [Number.NaN, '0'],
    [Number.POSITIVE_INFINITY, '0'],
  ];
  for (const [requestLength, expected] of cases)
    t.equal(text('$request_length', record({ requestLength })), expected, `${requestLength}`);
  t.equal(text('$status', record({ status: 7 })), '007', '$status: three digits');
  t.equal(text('$request_time', record({ requestTime: 2 ** 31 + 0.25 })), '2147483648.250');
});

t.test("the format's own text: NGINX's quoted-string escapes, UTF-8 as written", async (t) => {
  t.equal(text('a\\tb\\"c\\\\d\\\'e \\x', record()), 'a\tb"c\\d\'e \\x');
  t.same(line('ü $status', record()), Buffer.from('ü 200', 'utf8'));
});

t.test('formats NGINX refuses are refused, naming the problem', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['$remote_addr $no_such_variable', /unknown variable "\$no_such_variable"/],
    ['$sent_http_content_type', /unknown variable/],
    ['$ cost', /without a variable name/],
    ['${status', /without its/],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: NGINX's ${name} syntax
    ['${sta-tus}', /invalid variable name/],
    ["it's", /'/],
    ['$http_', /unknown variable/],
  ];
  for (const [format, problem] of cases) {
    const parsed = parseLogFormat(format);
    t.ok('problem' in parsed && problem.test(parsed.problem), `${format}: ${JSON.stringify(parsed)}`);
  }
  t.same(partsOf('$STATUS'), [{ variable: 'status' }], 'names without case, as NGINX');
});

t.test('every variable the model accepts has a writer', async (t) => {
  for (const name of LOG_VARIABLES) t.ok(hasWriter(name), name);
  for (const name of ['http_x_a', 'cookie_b', 'arg_c']) t.ok(hasWriter(name), name);
  t.notOk(hasWriter('no_such'));
});

t.test('a line that does not fit says so, and fits in a larger buffer', async (t) => {
  const encoder = compileLogFormat(partsOf(DEFAULT_LOG_FORMAT_UPSTREAM), 'default');
  const r = record({ userAgent: 'u'.repeat(300) });
  const small = Buffer.alloc(100);
  const end = encoder.encode(small, 10, r, TIME);
  t.ok(end > small.length);
  const big = Buffer.alloc(end - 10);
  t.equal(encoder.encode(big, 0, r, TIME), big.length);
  t.match(big.toString(), /"u{300}"/);
});

t.test('the JSON format of the docs reproduces the fields ingress-ts logged before', async (t) => {
  const r = record({ userAgent: 'ua"x', referer: '' });
  const parsed = JSON.parse(line(JSON_LOG_FORMAT, r, 'json').toString('utf8'));
  t.same(parsed, {
    level: 30,
    time: '2026-11-26T18:52:07+00:00',
    remote_addr: '127.0.0.1',
    request_method: 'GET',
    request_uri: '/app/x',
    server_protocol: 'HTTP/1.1',
    host: 'a.test',
    status: 200,
    bytes_sent: 120,
    http_referer: '',
    http_user_agent: 'ua"x',
    request_length: 50,
    request_time: 0.004,
    proxy_upstream_name: 'ns-web-80',
    proxy_alternative_upstream_name: '',
    upstream_addr: '10.0.0.1:8080',
    upstream_response_length: '100',
    upstream_response_time: '0.004',
    upstream_status: '200',
    req_id: 'id',
    namespace: 'ns',
    ingress: 'site',
    service: 'web',
    service_port: '80',
    location_path: '/app',
  });
});

t.test(
  'the encoder of a model: escape=none over json; compiled again only when the format changes',
  async (t) => {
    t.equal(escapeOf({ format: '', escapeJson: true, escapeNone: true }), 'none');
    t.equal(escapeOf({ format: '', escapeJson: true, escapeNone: false }), 'json');
    const settings = { format: '$status', escapeJson: false, escapeNone: false };
    const a = logEncoderOf(settings);
    t.equal(logEncoderOf({ ...settings }), a);
    t.not(logEncoderOf({ ...settings, escapeJson: true }), a);
  },
);

t.test('docs/observability.md gives the default format and the JSON value exactly', async (t) => {
  const docs = await readFile(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  t.ok(docs.includes(`\n${DEFAULT_LOG_FORMAT_UPSTREAM}\n`), 'the default format');
  t.ok(docs.includes(`log-format-upstream: '${JSON_LOG_FORMAT}'`), 'the JSON line of before');
});

t.test('any record, in any escaping: the encoder never throws, a value never ends a line', async (t) => {
  const anyText = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.constantFrom('', '-', '10.0.0.1:8080, ', '\r\n', '\ud800', '\udfff\ud800'),
  );
  const count = fc.oneof(
    fc.integer({ min: -5, max: 2 ** 40 }),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -1, 2 ** 60),
  );
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
    path: anyText,
    upstream: anyText,
    upstreamAddr: anyText,
    previousAddrs: anyText,
    headers: fc.array(anyText, { maxLength: 8 }),
    status: count,
    bytesSent: count,
    headBytes: count,
    requestLength: count,
    requestTime: count,
    responseTime: count,
    upstreamStatus: count,
    upstreamResponseLength: count,
    connectionRequests: count,
  });
  const format = `${DEFAULT_LOG_FORMAT_UPSTREAM} $uri $args $arg_a $cookie_b $http_x $proxy_add_x_forwarded_for $msec $time_iso8601 $upstream_connect_time $connection_requests`;
  const encoders = (['default', 'json', 'none'] as const).map((escaping) =>
    compileLogFormat(partsOf(format), escaping),
  );
  const buf = Buffer.alloc(64 * 1024);
  fc.assert(
    fc.property(fields, fc.integer({ min: 0, max: 253_402_300_799_999 }), (overrides, time) => {
      for (const encoder of encoders) {
        const end = encoder.encode(buf, 0, record(overrides as Partial<RequestRecord>), time);
        if (end > buf.length || buf.subarray(0, end).includes(0x0a)) return false;
      }
      return true;
    }),
    { numRuns: 1500 },
  );
  t.pass('every record encoded, no newline');
});

t.test('a Referer with userinfo is logged without it; without one, as sent', async (t) => {
  const logged = (referer: string) => line('"$http_referer"', record({ referer })).toString('utf8');
  t.equal(logged('https://user:secret@r.test/p?q=a@b'), '"https://r.test/p?q=a@b"', 'user:password@ dropped');
  t.equal(logged('http://token@r.test/'), '"http://r.test/"');
  t.equal(logged('https://r.test/p?mail=a@b'), '"https://r.test/p?mail=a@b"', 'an @ after the host stays');
  t.equal(logged('not a url @ all'), '"not a url @ all"');
});
