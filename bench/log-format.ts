// What a log format costs per line: the encoder of the access log alone, in this thread, writing
// lines into a batch buffer as the writer does (a new 128 KiB batch when one is full). Compared:
// - `json-before`: the hand-written JSON line ingress-ts wrote before log-format-upstream
//   (bench/support/json-line-encoder.ts), the baseline;
// - `default-text`: ingress-nginx's default log-format-upstream, compiled (the new default);
// - `json-format`: the documented log-format-upstream value that reproduces the old JSON fields,
//   with escape=json;
// - `custom-28`: a text format with 28 variables (upstream timings, route, a request header, ...).
// CPU time of this thread (process.threadCpuUsage) per line, interleaved rounds, the median; bytes per
// line; young-generation collections (scavenges) per 100,000 lines, a load-independent measure of
// what a line allocates.
// Usage: node bench/log-format.ts [--rounds 7] [--lines 200000] [--no-write]
//
// Instructions per line under callgrind: `--encode NAME --count N` encodes 30,000 lines of warm-up
// and N more with one encoder and exits, with no report; run it under callgrind with N=0 and N=20000
// and divide the difference of the totals by 20,000 (bench/README.md, "The log format's cost").
// `--records bench` uses the line of bench/instructions.ts instead (no user agent or referer, `/`).
// `--format TEXT` adds an encoder of that format (escape=default), named `format`: with
// `--encode format`, what one variable costs (e.g. `--format '"$req_id"'`).
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { compileLogFormat, type LogLineEncoder } from '../lib/dataplane/access-log-format.ts';
import type { RequestRecord } from '../lib/dataplane/request-record.ts';
import {
  DEFAULT_LOG_FORMAT_UPSTREAM,
  JSON_LOG_FORMAT_UPSTREAM,
  parseLogFormat,
} from '../lib/model/configmap/log-format.ts';
import { encodeAccessLogLine, isoBytes } from './support/json-line-encoder.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    lines: { type: 'string', default: '200000' },
    'no-write': { type: 'boolean', default: false },
    encode: { type: 'string' },
    count: { type: 'string', default: '0' },
    records: { type: 'string', default: 'browser' },
    format: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const LINES = Number(values.lines);

const CUSTOM_FORMAT =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent $bytes_sent ' +
  '"$http_referer" "$http_user_agent" $request_length $request_time $upstream_connect_time ' +
  '$upstream_header_time $upstream_response_time $upstream_addr $upstream_status ' +
  '$upstream_response_length [$proxy_upstream_name] $namespace/$ingress_name/$service_name:$service_port ' +
  '$location_path $host $scheme $server_protocol $req_id "$http_x_forwarded_for" $connection ' +
  '$connection_requests';

function compiled(format: string, escaping: 'default' | 'json'): LogLineEncoder {
  const parsed = parseLogFormat(format);
  if ('problem' in parsed) throw new Error(parsed.problem);
  return compileLogFormat(parsed.parts, escaping);
}

type Encode = (buf: Buffer, at: number, r: RequestRecord, time: number) => number;

const iso = isoBytes();
const ENCODERS: Array<[string, Encode]> = [
  ['json-before', (buf, at, r, time) => encodeAccessLogLine(buf, at, r, time, iso)],
  ['default-text', compiled(DEFAULT_LOG_FORMAT_UPSTREAM, 'default').encode],
  ['json-format', compiled(JSON_LOG_FORMAT_UPSTREAM, 'json').encode],
  ['custom-28', compiled(CUSTOM_FORMAT, 'default').encode],
];
if (values.format !== undefined) ENCODERS.push(['format', compiled(values.format, 'default').encode]);

/** Requests of a browser and of an API client, proxied, some retried. */
function records(): RequestRecord[] {
  const agents = [
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    'curl/8.5.0',
    'okhttp/4.12.0',
  ];
  return Array.from({ length: 16 }, (_, i) => {
    const agent = agents[i % agents.length] as string;
    const retried = i % 8 === 7;
    return {
      start: 0,
      remoteAddress: `10.244.${i}.17`,
      method: i % 4 === 3 ? 'POST' : 'GET',
      uri: `/api/v1/orders/${1000 + i}?page=${i}&sort=desc`,
      protocol: 'HTTP/1.1',
      host: 'shop.example.com',
      path: '/api',
      https: i % 2 === 0,
      userAgent: agent,
      referer: i % 3 === 0 ? '' : 'https://shop.example.com/cart',
      requestId: `5f3c9a0e7b1d4c2a9e8f${String(i).padStart(12, '0')}`,
      requestLength: 412 + i,
      status: 200,
      bytesSent: 1187 + i * 10,
      requestTime: 0.004 + i / 1000,
      namespace: 'shop',
      ingress: 'storefront',
      service: 'orders',
      servicePort: '8080',
      upstream: 'shop-orders-8080',
      canary: '',
      upstreamAddr: `10.1.${i}.2:8080`,
      upstreamStatus: 200,
      connectTime: 0.001,
      headerTime: 0.003,
      responseTime: 0.0035 + i / 1000,
      upstreamResponseLength: 1024 + i,
      previousAddrs: retried ? '10.1.9.9:8080, ' : '',
      previousStatuses: retried ? '502, ' : '',
      previousTimes: retried ? '0.001, ' : '',
      previousConnectTimes: retried ? '0.001, ' : '',
      previousHeaderTimes: retried ? '-, ' : '',
      previousLengths: retried ? '0, ' : '',
      accessLog: true,
      headers: [
        'Host',
        'shop.example.com',
        'User-Agent',
        agent,
        'Accept',
        'application/json',
        'Accept-Encoding',
        'gzip, br',
        'Accept-Language',
        'en-US,en;q=0.9',
        'X-Forwarded-For',
        `203.0.113.${i}`,
        'Cookie',
        `session=abc${i}; theme=dark`,
        'Connection',
        'keep-alive',
      ],
      peer: `10.244.${i}.17`,
      headBytes: 187,
      refused: false,
      connection: 1000 + i,
      connectionRequests: 1 + (i % 5),
      serverPort: 0,
      sslProtocol: '',
      sslCipher: '',
    };
  });
}

/** The line bench/instructions.ts makes: undici's GET / with no user agent, one upstream. */
function benchRecords(): RequestRecord[] {
  const ids = Buffer.alloc(16 * 16, 0x5a).toString('hex');
  return records().map((r, i) => ({
    ...r,
    remoteAddress: '127.0.0.1',
    peer: '127.0.0.1',
    method: 'GET',
    uri: '/',
    userAgent: '',
    referer: '',
    host: 'bench.test',
    upstream: 'default-bench-upstream-80',
    upstreamAddr: '127.0.0.1:41234',
    // a slice of a longer string, as generateRequestId makes it
    requestId: ids.slice(i * 32, i * 32 + 32),
    requestLength: 38,
    bytesSent: 1211,
    headBytes: 187,
    previousAddrs: '',
    previousStatuses: '',
    previousTimes: '',
    previousConnectTimes: '',
    previousHeaderTimes: '',
    previousLengths: '',
    headers: ['host', 'bench.test'],
  }));
}

let scavenges = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)
      scavenges++;
});
observer.observe({ entryTypes: ['gc'] });

const BATCH = 128 * 1024;
const CAPACITY = BATCH + 64 * 1024;

/** `lines` lines into batches as the writer fills them: CPU µs, bytes. */
function run(encode: Encode, recs: RequestRecord[], lines: number) {
  let batch = Buffer.allocUnsafeSlow(CAPACITY);
  let used = 0;
  let bytes = 0;
  const cpu = process.threadCpuUsage();
  const start = Date.now();
  for (let i = 0; i < lines; i++) {
    const end = encode(batch, used, recs[i & 15] as RequestRecord, start + (i >> 4));
    bytes += end - used;
    used = end;
    batch[used++] = 0x0a;
    if (used >= BATCH) {
      batch = Buffer.allocUnsafeSlow(CAPACITY);
      used = 0;
    }
  }
  const spent = process.threadCpuUsage(cpu);
  return { cpuUs: spent.user + spent.system, bytes };
}

const wait = () => new Promise((resolve) => setImmediate(resolve));

async function main() {
  const recs = values.records === 'bench' ? benchRecords() : records();
  if (values.encode !== undefined) {
    const chosen = ENCODERS.find(([name]) => name === values.encode);
    if (chosen === undefined) throw new Error(`--encode: one of ${ENCODERS.map(([n]) => n).join(', ')}`);
    run(chosen[1], recs, 30_000 + Number(values.count));
    observer.disconnect();
    return;
  }
  for (const [, encode] of ENCODERS) run(encode, recs, 50_000); // warm up
  await wait();
  const samples = new Map<string, Array<{ ns: number; bytes: number; scavenges: number }>>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, encode] of round % 2 === 0 ? ENCODERS : [...ENCODERS].reverse()) {
      const gcBefore = scavenges;
      const r = run(encode, recs, LINES);
      await wait(); // the observer's entries of this run arrive on the event loop
      const list = samples.get(name) ?? [];
      list.push({
        ns: (r.cpuUs * 1000) / LINES,
        bytes: r.bytes / LINES,
        scavenges: ((scavenges - gcBefore) * 100_000) / LINES,
      });
      samples.set(name, list);
    }
  }
  await wait();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const base = median((samples.get('json-before') ?? []).map((s) => s.ns));
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const rows = [...samples].map(([name, list]) => {
    const ns = median(list.map((s) => s.ns));
    const min = Math.min(...list.map((s) => s.ns));
    return `| ${name} | ${ns.toFixed(0)} | ${min.toFixed(0)} | ${(ns / base).toFixed(2)} | ${median(list.map((s) => s.bytes)).toFixed(0)} | ${median(list.map((s) => s.scavenges)).toFixed(1)} |`;
  });
  const report = [
    `# Log format encoder, ${new Date().toISOString().slice(0, 10)}`,
    '',
    `Node ${process.version}, ${ROUNDS} interleaved rounds of ${LINES} lines each; load average ${load}.`,
    '',
    '| encoder | CPU ns/line (median) | min | × json-before | bytes/line | scavenges per 100k lines |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(report);
  if (!values['no-write']) {
    const file = join(
      import.meta.dirname,
      'results',
      `log-format-${new Date().toISOString().slice(0, 10)}.md`,
    );
    writeFileSync(file, report);
    process.stdout.write(`\nwritten to ${file}\n`);
  }
  observer.disconnect();
}

await main();
