// Per-request metrics and the access log after real traffic through a standalone controller: the
// series the two ingress-nginx Grafana dashboards query, with values that match the requests sent,
// and one access log line per logged request.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { requestLogged, requestMeasured } from '../../lib/dataplane/events.ts';
import type { MeasuredRequest } from '../../lib/dataplane/request-measure.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { get, testConfig } from '../support/http.ts';
import { JSON_LOG_ENTRIES } from '../support/json-log-format.ts';
import { INGRESS_CLASS } from '../support/manifests.ts';
import { parseExposition, samplesOf, sampleValue } from '../support/prometheus.ts';
import { raw } from '../support/raw-http.ts';
import { nextSwap } from '../support/swaps.ts';
import { TEST_THREADS_ENTRY } from '../support/threads.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const b64 = (text: string) => Buffer.from(text).toString('base64');

function manifests(backendPort: number, configData: string): Record<string, string> {
  const ingress = (name: string, host: string, paths: string, annotations = '{}', tls = '') => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}, namespace: m, annotations: ${annotations} }
spec:
  ingressClassName: ingress-ts
${tls}  rules:
    - host: ${host}
      http:
        paths:
${paths}
`;
  const path = (p: string, type = 'Prefix') =>
    `          - { path: ${p}, pathType: ${type}, backend: { service: { name: web, port: { number: 80 } } } }`;
  return {
    'base.yaml': `${INGRESS_CLASS}---
apiVersion: v1
kind: ConfigMap
metadata: { name: config, namespace: m }
data: ${configData.replace('{', `{ ${TEST_THREADS_ENTRY}${JSON_LOG_ENTRIES}`)}
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: m }
spec: { ports: [{ name: http, port: 80, targetPort: ${backendPort} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: web-1, namespace: m, labels: { kubernetes.io/service-name: web } }
addressType: IPv4
ports: [{ name: http, port: ${backendPort}, protocol: TCP }]
endpoints: [{ addresses: [127.0.0.1] }]
---
apiVersion: v1
kind: Secret
metadata: { name: site-tls, namespace: m }
type: kubernetes.io/tls
data: { tls.crt: ${b64(fixture('a-example.crt'))}, tls.key: ${b64(fixture('a-example.key'))} }
`,
    'site.yaml': ingress(
      'site',
      'a.example.com',
      `${path('/app')}\n${path('/api', 'Exact')}`,
      '{}',
      '  tls: [{ hosts: [a.example.com], secretName: site-tls }]\n',
    ),
    'quiet.yaml': ingress(
      'quiet',
      'quiet.example.test',
      path('/'),
      '{ nginx.ingress.kubernetes.io/enable-access-log: "false" }',
    ),
  };
}

interface Backend {
  port: number;
  requestIds: string[];
  close(): Promise<void>;
}

async function startBackend(): Promise<Backend> {
  const requestIds: string[] = [];
  const server = createServer((req, res) => {
    requestIds.push(String(req.headers['x-request-id']));
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      if (req.url === '/app/fail') res.writeHead(500).end('broken');
      else if (req.method === 'POST') res.writeHead(201, { 'content-type': 'text/plain' }).end(`got ${body}`);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requestIds,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Resolves with the next `n` requests the data plane publishes: their records, or with data-plane
 * threads their measures (the records stay in the threads, which write the access log lines).
 */
function nextRecords(n: number): Promise<MeasuredRequest[]> {
  return new Promise((resolve) => {
    const seen: MeasuredRequest[] = [];
    const on = (message: unknown) => {
      seen.push(message as MeasuredRequest);
      if (seen.length === n) {
        unsubscribe(requestLogged.name, on);
        unsubscribe(requestMeasured.name, on);
        resolve(seen);
      }
    };
    subscribe(requestLogged.name, on);
    subscribe(requestMeasured.name, on);
  });
}

function post(port: number, host: string, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, method: 'POST', headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sends exact bytes on a fresh connection; resolves with every byte received until the server closes. */
function rawExchange(port: number, bytes: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** Requests one after the other on one connection, each sent once the previous response ended
 * (with a Content-Length, or chunked); resolves with each response's bytes. */
function sequentialExchange(port: number, requests: string[]): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const responses: Buffer[] = [];
    let current: Buffer[] = [];
    const sendNext = () => socket.write(requests[responses.length] as string);
    socket.on('connect', sendNext);
    socket.on('data', (chunk: Buffer) => {
      current.push(chunk);
      const text = Buffer.concat(current).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head));
      const complete =
        length === null ? text.endsWith('\r\n0\r\n\r\n') : text.length >= head + 4 + Number(length[1]);
      if (!complete) return;
      responses.push(Buffer.concat(current));
      current = [];
      if (responses.length < requests.length) sendNext();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(responses));
  });
}

async function setUp(t: Test, configData = '{ skip-access-log-urls: "/api" }', ...flags: string[]) {
  const backend = await startBackend();
  t.teardown(() => backend.close());
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-request-metrics-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(manifests(backend.port, configData))) {
    await writeFile(join(dir, file), text);
  }
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      sink.emit('lines');
      done();
    },
  });
  const controller = await start(
    testConfig(dir, '--configmap', 'm/config', ...flags),
    createLogger('silent'),
    { env: { POD_NAMESPACE: 'ns1', POD_NAME: 'pod-1' }, accessLogStdout: sink },
  );
  t.teardown(() => controller.stop(0));
  const scrape = async () => {
    const reply = await get(controller.healthz.port, 'localhost', '/metrics');
    t.equal(reply.status, 200);
    return parseExposition(reply.body);
  };
  /** The access log's lines once there are `n` (they are written in batches, within 100 ms). */
  const linesAt = async (n: number) => {
    while (lines.length < n) await once(sink, 'lines');
    return lines;
  };
  return { backend, controller, dir, lines, linesAt, scrape };
}

t.test('the dashboards series, with values that match the traffic', async (t) => {
  const { backend, controller, lines, linesAt, scrape } = await setUp(t);
  const http = controller.http.port;

  const done = nextRecords(7 + 1 + 2 + 1 + 1 + 3);
  // a.example.com has TLS: plain HTTP requests are redirected (308), and logged
  for (let i = 0; i < 7; i++) t.equal((await get(http, 'a.example.com', `/app/${i}`)).status, 308);
  t.equal((await get(http, 'a.example.com', '/api')).status, 308, 'a URL skip-access-log-urls names');
  // the quiet Ingress (enable-access-log: false) proxies to the backend
  t.equal(await post(http, 'quiet.example.test', '/api', 'abcd'), 201);
  t.equal(await post(http, 'quiet.example.test', '/api', 'efgh'), 201);
  t.equal((await get(http, 'quiet.example.test', '/app/fail')).status, 500);
  t.equal((await get(http, 'quiet.example.test', '/hello')).status, 200);
  // the default backend (no Ingress names the host): counted nowhere, logged only with
  // enable-access-log-for-default-backend
  for (let i = 0; i < 3; i++) t.equal((await get(http, 'nobody.example.test', '/')).status, 404);
  const records = await done;
  t.equal(records.length, 15);

  const metrics = await scrape();
  const base = { namespace: 'm', ingress: 'site', service: 'web', canary: '', host: 'a.example.com' };
  const redirects = { ...base, status: '308', method: 'GET', path: '/app' };
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_requests', redirects), 7, '7 requests → 7');
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_request_duration_seconds_count', redirects), 7);
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_request_duration_seconds_bucket', {
      ...redirects,
      le: '+Inf',
    }),
    7,
  );
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_response_duration_seconds_count', redirects),
    undefined,
    'a redirect has no upstream time',
  );
  const quiet = {
    namespace: 'm',
    ingress: 'quiet',
    service: 'web',
    canary: '',
    host: 'quiet.example.test',
    path: '/',
  };
  const posts = { ...quiet, status: '201', method: 'POST' };
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_requests', posts), 2);
  for (const name of ['response', 'header', 'connect']) {
    t.equal(sampleValue(metrics, `nginx_ingress_controller_${name}_duration_seconds_count`, posts), 2, name);
  }
  const postRecords = records.filter((r) => r.method === 'POST');
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_request_size_sum', posts),
    postRecords.reduce((sum, r) => sum + r.requestLength, 0),
  );
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_response_size_sum', posts),
    postRecords.reduce((sum, r) => sum + r.bytesSent, 0),
  );
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_response_size_count', posts), 2);
  t.equal(sampleValue(metrics, 'nginx_ingress_controller_bytes_sent_count', posts), 2);
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_requests', { ...quiet, status: '500', method: 'GET' }),
    1,
    'upstream status',
  );
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_requests', { ...quiet, status: '200', method: 'GET' }),
    1,
    'an Ingress without access log is still counted',
  );
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_requests', {
      ...base,
      status: '308',
      method: 'GET',
      path: '/api',
    }),
    1,
    'a URL the access log skips is still counted',
  );
  t.notOk(
    samplesOf(metrics, 'nginx_ingress_controller_requests').some(
      (s) => s.labels.host === 'nobody.example.test',
    ),
    'hosts no Ingress names are dropped (--metrics-per-host)',
  );
  for (const s of samplesOf(metrics, 'nginx_ingress_controller_requests')) {
    t.strictSame(
      Object.keys(s.labels),
      [
        'status',
        'method',
        'path',
        'namespace',
        'ingress',
        'service',
        'canary',
        'host',
        'controller_namespace',
        'controller_class',
        'controller_pod',
      ],
      'ingress-nginx labels, in its order',
    );
  }

  // the 13 series the two official dashboards query
  const dashboard = [
    'nginx_ingress_controller_requests',
    'nginx_ingress_controller_request_duration_seconds_bucket',
    'nginx_ingress_controller_request_duration_seconds_count',
    'nginx_ingress_controller_response_duration_seconds_bucket',
    'nginx_ingress_controller_response_duration_seconds_sum',
    'nginx_ingress_controller_request_size_sum',
    'nginx_ingress_controller_response_size_bucket',
    'nginx_ingress_controller_response_size_sum',
    'nginx_ingress_controller_response_size_count',
    'nginx_ingress_controller_config_hash',
    'nginx_ingress_controller_config_last_reload_successful',
    'nginx_ingress_controller_config_last_reload_successful_timestamp_seconds',
    'nginx_ingress_controller_success',
    'nginx_ingress_controller_ssl_expire_time_seconds',
    'nginx_ingress_controller_nginx_process_connections',
    'nginx_ingress_controller_nginx_process_cpu_seconds_total',
    'nginx_ingress_controller_nginx_process_resident_memory_bytes',
  ];
  for (const name of dashboard) t.ok(samplesOf(metrics, name).length > 0, `${name} is exported`);
  t.equal(
    sampleValue(metrics, 'nginx_ingress_controller_ssl_expire_time_seconds', { host: 'a.example.com' }),
    Math.floor(Date.parse('2126-10-29T04:05:09Z') / 1000),
    'certificate expiry',
  );

  // the access log: one line per logged request, with log-format-upstream's fields
  await linesAt(7);
  t.equal(lines.length, 7, 'the redirects; not the skipped URL, the quiet Ingress or the default backend');
  const redirect = lines[0] as Record<string, unknown>;
  t.match(redirect, {
    request_method: 'GET',
    request_uri: '/app/0',
    status: 308,
    host: 'a.example.com',
    namespace: 'm',
    ingress: 'site',
    service: 'web',
    location_path: '/app',
    upstream_addr: '',
  });
  t.match(String(redirect.time), /^\d{4}-\d\d-\d\dT/);
  t.equal(backend.requestIds.length, 4, 'the backend saw the quiet host requests');
});

t.test('upstream fields, exact lengths and the deletion of an Ingress', async (t) => {
  const { backend, controller, dir, lines, linesAt, scrape } = await setUp(t, '{}');
  const http = controller.http.port;
  // the quiet Ingress logs nothing: switch its log on
  await writeFile(
    join(dir, 'quiet.yaml'),
    (await readFile(join(dir, 'quiet.yaml'), 'utf8')).replace('"false"', '"true"'),
  );
  await nextSwap();

  const request =
    'GET /exact HTTP/1.1\r\nHost: quiet.example.test\r\nUser-Agent: raw/1\r\nConnection: close\r\n\r\n';
  const logged = lines.length;
  const done = nextRecords(1);
  const received = await rawExchange(http, request);
  const [record] = await done;
  t.equal(record?.requestLength, Buffer.byteLength(request), '$request_length: request line + headers');
  t.equal(record?.bytesSent, received.length, '$bytes_sent: every byte the client received');
  t.equal(record?.upstreamStatus, 200);
  t.equal(record?.upstreamResponseLength, 5, 'the body of "hello"');
  await linesAt(logged + 1);
  const line = lines[lines.length - 1] as Record<string, unknown>;
  t.match(line, {
    request_uri: '/exact',
    http_user_agent: 'raw/1',
    status: 200,
    upstream_addr: `127.0.0.1:${backend.port}`,
    upstream_status: '200',
    upstream_response_length: '5',
    proxy_upstream_name: 'm-web-80',
    req_id: backend.requestIds[backend.requestIds.length - 1],
    request_length: Buffer.byteLength(request),
    bytes_sent: received.length,
  });
  t.match(String(line.upstream_response_time), /^\d+\.\d+$/);

  // keep-alive: each request's $bytes_sent counts its own response, not the connection's so far
  const keptAlive = nextRecords(2);
  const both = await sequentialExchange(http, [
    'GET /exact HTTP/1.1\r\nHost: quiet.example.test\r\n\r\n',
    'GET /exact HTTP/1.1\r\nHost: quiet.example.test\r\nConnection: close\r\n\r\n',
  ]);
  const [first, second] = await keptAlive;
  t.strictSame(
    [first?.bytesSent, second?.bytesSent],
    both.map((response) => response.length),
    'each: the bytes of its own response',
  );

  // an Ingress that goes away takes its series with it
  const before = await scrape();
  t.ok(samplesOf(before, 'nginx_ingress_controller_requests').some((s) => s.labels.ingress === 'quiet'));
  const swapped = nextSwap();
  await rm(join(dir, 'quiet.yaml'));
  await swapped;
  const after = await scrape();
  for (const name of [
    'nginx_ingress_controller_requests',
    'nginx_ingress_controller_request_duration_seconds_count',
  ]) {
    t.notOk(
      samplesOf(after, name).some((s) => s.labels.ingress === 'quiet'),
      `${name}: the deleted Ingress's series are gone`,
    );
  }
});

t.test('requests refused before routing: an access log line each, no request metrics', async (t) => {
  const { controller, lines, linesAt, scrape } = await setUp(t, '{}');
  const http = controller.http.port;
  const host = 'a.example.com';
  const requests = (samples: ReturnType<typeof parseExposition>) =>
    samplesOf(samples, 'nginx_ingress_controller_requests').reduce((sum, s) => sum + s.value, 0);
  t.equal((await get(http, host, '/app')).status, 308, 'a routed request (to HTTPS), counted');
  await linesAt(1);
  const counted = requests(await scrape());
  t.equal(counted, 1);

  const longLine = `GET /${'u'.repeat(9000)} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
  const bigHead = `GET /big HTTP/1.1\r\nHost: ${host}\r\n${'X-A: b\r\n'.repeat(6000)}\r\n`;
  const identity = `POST /te HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: identity\r\n\r\n`;
  const smuggling = `POST /cl HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`;
  // what a TLS ClientHello looks like to the HTTP port
  const handshake = Buffer.from([0x16, 0x03, 0x01, 0x00, 0xf1, 0x01, 0x00, 0x00, 0xed, 0x03, 0x03]);
  const cases: Array<[string, string | Buffer, number, Record<string, unknown>]> = [
    [
      'a request line over one buffer (parsed, then refused)',
      longLine,
      414,
      { request_method: 'GET', server_protocol: 'HTTP/1.1', host, location_path: '', ingress: '' },
    ],
    [
      "a head over the whole limit (Node's parser)",
      bigHead,
      400,
      // no Host read: NGINX's $host is the default server's name
      { request_method: 'GET', request_uri: '/big', server_protocol: 'HTTP/1.1', host: '_' },
    ],
    [
      'Transfer-Encoding: identity (parsed, then refused)',
      identity,
      400,
      { request_method: 'POST', request_uri: '/te', host, request_length: Buffer.byteLength(identity) },
    ],
    [
      "two Content-Length headers (Node's parser)",
      smuggling,
      400,
      { request_method: 'POST', request_uri: '/cl', server_protocol: 'HTTP/1.1' },
    ],
    [
      'HTTP/1.1 without Host (parsed, then refused)',
      'GET /nohost HTTP/1.1\r\n\r\n',
      400,
      { request_method: 'GET', request_uri: '/nohost', host: '_' },
    ],
    [
      'TLS bytes on the HTTP port (no request line)',
      handshake,
      400,
      // escape=json: controls escaped, other bytes raw (as NGINX), so a UTF-8 reader gets U+FFFD for them
      { request_method: '', request_uri: handshake.toString('utf8'), server_protocol: '' },
    ],
  ];
  for (const [name, bytes, status, fields] of cases) {
    const before = lines.length;
    const reply = await raw(http, bytes);
    t.equal(reply.status, status, `${name}: ${status}`);
    const [line] = (await linesAt(before + 1)).slice(before);
    t.match(
      line,
      { status, bytes_sent: Buffer.byteLength(reply.text, 'latin1'), remote_addr: '127.0.0.1', ...fields },
      `${name}: its access log line`,
    );
    t.match(String(line?.req_id), /^[0-9a-f]{32}$/, `${name}: a request id`);
  }
  t.equal(requests(await scrape()), counted, 'none of them in nginx_ingress_controller_requests');
});

t.test('access log settings from the ConfigMap: disable-access-log, access-log-path', async (t) => {
  const { controller, dir, lines } = await setUp(t, '{ disable-access-log: "true" }');
  const http = controller.http.port;
  let done = nextRecords(1);
  await get(http, 'a.example.com', '/app');
  await done;
  t.equal(lines.length, 0, 'disable-access-log: no line');

  const file = join(dir, 'logs', 'access.log');
  const swapped = nextSwap();
  const base = await readFile(join(dir, 'base.yaml'), 'utf8');
  await writeFile(
    join(dir, 'base.yaml'),
    base.replace('disable-access-log: "true"', `access-log-path: "${file}"`),
  );
  await swapped;
  done = nextRecords(2);
  await get(http, 'a.example.com', '/app/one');
  await get(http, 'a.example.com', '/app/two');
  await done;
  await controller.stop(0);
  const written = (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.strictSame(
    written.map((l) => l.request_uri),
    ['/app/one', '/app/two'],
    'lines go to the file the ConfigMap names',
  );
  t.equal(lines.length, 0);
});
