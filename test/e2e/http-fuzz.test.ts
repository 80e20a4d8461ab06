// HTTP fuzzing of the running proxy: seeded fast-check requests and a corpus of
// hostile ones, over raw TCP to a standalone controller (an echo backend per route, an allowlisted
// /admin that 127.0.0.1 may not reach). Properties, for every request: the answer is a well-formed
// HTTP/1.1 response or a closed connection, never a hang (the per-request timeout); input known to be
// invalid gets a 4xx; a request that reaches a backend reached the one the router picks for
// normalizePath(target) (of an absolute-form target: its host and path), and never the denied /admin (routing and access decide on the same path);
// after each run the process still answers /healthz and a normal request.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, get as httpGet } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { absoluteForm, normalizeHost, normalizePath } from '../../lib/dataplane/routing/router.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { listen, send, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { THREAD_MODE } from '../support/threads.ts';

t.setTimeout(120_000);

const HOST = 'fuzz.test';
/** A request must be answered (or its connection closed) within this long. */
const REQUEST_TIMEOUT_MS = 5000;
/** Random requests per run (about 2 ms each here). */
const RUNS = 1500;

interface Outcome {
  /** the bytes the proxy wrote, latin1 */
  text: string;
  status: number;
  /** the test's timeout struck: neither a complete response nor a close */
  hung: boolean;
}

/**
 * Where a response written into `text` ends, or -1 while incomplete: the head, then a Content-Length
 * body, a chunked body (up to its last chunk), or nothing (HEAD, 1xx, 204, 304).
 */
function responseEnd(text: string, head: boolean): number {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd === -1) return -1;
  const status = Number(text.slice(9, 12));
  const start = headEnd + 4;
  if (head || status < 200 || status === 204 || status === 304) return start;
  const headers = text.slice(0, headEnd).toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(headers);
  if (length !== null) return text.length >= start + Number(length[1]) ? start + Number(length[1]) : -1;
  if (/\r\ntransfer-encoding: *chunked/.test(headers)) {
    const last = text.indexOf('\r\n0\r\n\r\n', start - 2);
    return last === -1 ? -1 : last + 7;
  }
  return -1; // until the close
}

/** Sends `bytes` on a new connection; resolves on the first complete response, the close, or the timeout. */
function exchange(
  port: number,
  bytes: Buffer,
  options: { halfClose: boolean; head: boolean },
): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (hung: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(text);
      resolve({ text, status: m === null ? 0 : Number(m[1]), hung });
    };
    const timer = setTimeout(() => finish(true), REQUEST_TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (responseEnd(Buffer.concat(chunks).toString('latin1'), options.head) !== -1) finish(false);
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(false));
    socket.on('connect', () => {
      socket.write(bytes);
      if (options.halfClose) socket.end();
    });
  });
}

/** One generated request: its bytes, and what the test knows about it. */
interface Case {
  bytes: Buffer;
  target: string;
  /** surely malformed: a 4xx is the only right answer */
  invalid: boolean;
  halfClose: boolean;
  head: boolean;
  /** an Upgrade request (answered by the tunnel or an error, never routed as a plain request) */
  upgrade: boolean;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A control byte (or DEL) in `text`; HTAB allowed when `tab` (header values), a space when `space`. */
function hasControl(text: string, tab: boolean, space: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7f || (c < 0x20 && !(tab && c === 9)) || (space && c === 0x20)) return true;
  }
  return false;
}
const SEGMENTS = [
  '',
  '.',
  '..',
  'app',
  'admin',
  'admin.',
  'ADMIN',
  '%61dmin',
  '%2e',
  '%2E%2e',
  '%2f',
  '%2Fadmin',
  '%00',
  '%',
  '%zz',
  '%c3%a9',
  '%ff',
  'a%20b',
  'x;y',
  'é',
  'app?',
  '#frag',
];

const segment = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom(...SEGMENTS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const pathArb = fc
  .tuple(
    fc.oneof(
      { weight: 8, arbitrary: fc.constant('/') },
      { weight: 1, arbitrary: fc.constantFrom('//', '*', 'http://fuzz.test/', '') },
    ),
    fc.array(segment, { maxLength: 6 }),
    fc.constantFrom('/', '//', '/./'),
    fc.option(fc.constantFrom('?a=1', '?x=/../admin', '?%00', '?'), { nil: undefined }),
    fc.nat(3),
  )
  .map(([first, segments, separator, query, longer]) => {
    const path = `${first}${segments.join(separator)}${query ?? ''}`;
    // now and then a very long target (over one 8k buffer: 414)
    return longer === 3 && segments.length > 4 ? `${path}${'/a'.repeat(5000)}` : path;
  });
const methodArb = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH') },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 10 }) },
);
const headerArb = fc.tuple(
  fc.oneof(
    {
      weight: 12,
      arbitrary: fc.constantFrom('X-Test', 'Accept', 'Cookie', 'Content-Type', 'X-Forwarded-For'),
    },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
  ),
  fc.oneof(
    { weight: 12, arbitrary: fc.string({ maxLength: 20 }) },
    // any byte but CR and LF (those would start another line: kept for the corpus)
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 20 })
        .map((b) => Buffer.from(b.filter((x) => x !== 10 && x !== 13)).toString('latin1')),
    },
    { weight: 1, arbitrary: fc.constant('v'.repeat(9000)) },
  ),
);
type Framing = 'none' | 'length' | 'chunked' | 'bad-chunked' | 'short' | 'both';
const caseArb = fc
  .record({
    method: methodArb,
    target: pathArb,
    version: fc.oneof(
      { weight: 12, arbitrary: fc.constant('HTTP/1.1') },
      { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.1x') },
    ),
    host: fc.oneof(
      { weight: 8, arbitrary: fc.constant(HOST) },
      { weight: 1, arbitrary: fc.constantFrom('FUZZ.TEST.', 'fuzz.test:80', 'other.test', '') },
    ),
    headers: fc.array(headerArb, { maxLength: 3 }),
    framing: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom<Framing>('none', 'length', 'chunked') },
      { weight: 1, arbitrary: fc.constantFrom<Framing>('bad-chunked', 'short', 'both') },
    ),
    body: fc.string({ maxLength: 30 }),
    upgrade: fc.oneof(
      { weight: 7, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('websocket', 'h2c', 'x'.repeat(20)) },
    ),
    halfClose: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  })
  .map((r): Case => {
    const lines = [`${r.method} ${r.target} ${r.version}`];
    if (r.host !== '') lines.push(`Host: ${r.host}`);
    let invalid =
      !TOKEN.test(r.method) ||
      !/^HTTP\/1\.[01]$/.test(r.version) ||
      r.target === '' ||
      hasControl(r.target, false, true) ||
      (r.host === '' && r.version === 'HTTP/1.1');
    for (const [name, value] of r.headers) {
      lines.push(`${name}: ${value}`);
      if (!TOKEN.test(name) || hasControl(value, true, false) || value.length > 8000) invalid = true;
    }
    if (r.upgrade !== undefined)
      lines.push(
        'Connection: Upgrade',
        `Upgrade: ${r.upgrade}`,
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      );
    else lines.push('Connection: close');
    const body = Buffer.from(r.body, 'utf8');
    let payload = Buffer.alloc(0);
    switch (r.framing) {
      case 'length':
        lines.push(`Content-Length: ${body.length}`);
        payload = body;
        break;
      case 'chunked':
        lines.push('Transfer-Encoding: chunked');
        payload = Buffer.concat([
          Buffer.from(`${body.length.toString(16)}\r\n`),
          body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]);
        if (body.length === 0) payload = Buffer.from('0\r\n\r\n');
        if (r.version === 'HTTP/1.0') invalid = true;
        break;
      case 'bad-chunked':
        lines.push('Transfer-Encoding: chunked');
        payload = Buffer.from(`zz${r.body.length}\r\n${r.body}\r\n`);
        invalid = true;
        break;
      case 'short':
        // a body shorter than announced: only complete when the client half-closes
        lines.push(`Content-Length: ${body.length + 10}`);
        payload = body;
        break;
      case 'both':
        lines.push(`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked');
        payload = body;
        invalid = true;
        break;
    }
    return {
      bytes: Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]),
      target: r.target,
      invalid,
      halfClose: r.halfClose || r.framing === 'short',
      head: r.method === 'HEAD',
      upgrade: r.upgrade !== undefined,
    };
  });

/** Raw requests worth keeping whatever the generator draws (smuggling, encodings, odd framing). */
/** 'incomplete': the client half-closes after it (nothing more is coming) */
const CORPUS: Array<[string, string, 'invalid' | 'any' | 'incomplete']> = [
  ['NUL in the path', `GET /app/\0 HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 'invalid'],
  ['encoded NUL', `GET /app/%00 HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 'invalid'],
  [
    'dot segments out of the root',
    `GET /../../etc/passwd HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`,
    'invalid',
  ],
  [
    'encoded dot segments to admin',
    `GET /app/%2e%2e/admin HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`,
    'any',
  ],
  ['double slashes to admin', `GET //admin// HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 'any'],
  ['overlong UTF-8', `GET /%c0%ae%c0%ae/admin HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 'any'],
  [
    'CL.TE',
    `POST /app HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG`,
    'invalid',
  ],
  [
    'TE.TE obfuscated',
    `POST /app HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\nTransfer-encoding: x\r\n\r\n0\r\n\r\n`,
    'invalid',
  ],
  [
    'TE with a tab',
    `POST /app HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding:\tchunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    'any',
  ],
  [
    'chunk size overflow',
    `POST /app HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n`,
    'invalid',
  ],
  [
    'header without colon',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\nNoColon\r\nConnection: close\r\n\r\n`,
    'invalid',
  ],
  [
    'CR in a header value',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\nX-A: a\rb\r\nConnection: close\r\n\r\n`,
    'invalid',
  ],
  ['request line only LF', `GET /app HTTP/1.1\nHost: ${HOST}\n\n`, 'invalid'],
  [
    'absolute-form target',
    `GET http://${HOST}/app HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`,
    'any',
  ],
  ['asterisk-form target', `OPTIONS * HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 'any'],
  [
    'websocket upgrade to a plain backend',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    'any',
  ],
  [
    'upgrade with a huge header',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Big: ${'b'.repeat(9000)}\r\n\r\n`,
    'invalid',
  ],
  ['very long URI', `GET /${'a'.repeat(70_000)} HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`, 'invalid'],
  [
    'very long header name',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\n${'N'.repeat(40_000)}: v\r\n\r\n`,
    'invalid',
  ],
  [
    'many headers',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\n${'X-R: 1\r\n'.repeat(5000)}Connection: close\r\n\r\n`,
    'invalid',
  ],
  [
    'pipelined after close',
    `GET /app HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\nGET /admin HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`,
    'any',
  ],
  ['garbage', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 'invalid'],
  ['empty lines then nothing', '\r\n\r\n', 'incomplete'],
];

t.test(
  'HTTP fuzzing through the proxy',
  {
    skip:
      THREAD_MODE &&
      'the expected backend is read from the runtime compiled on the main thread, and a backend arrival is matched to its request by order, which threads reorder',
  },
  async (t) => {
    /** what each backend received: [backend, request target] */
    const reached: Array<[string, string]> = [];
    const backends: string[] = ['app', 'root', 'admin'];
    const ports: number[] = [];
    for (const name of backends) {
      const server = createServer((req, res) => {
        reached.push([name, req.url ?? '']);
        req.resume();
        req.on('end', () => res.end(JSON.stringify({ backend: name })));
        req.on('error', () => {});
      });
      ports.push(await listen(server));
      t.teardown(() => {
        server.closeAllConnections();
        server.close();
      });
    }
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-http-fuzz-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'routes.yaml'),
      [
        INGRESS_CLASS,
        ...backends.map((name, i) => serviceYaml(name, [ports[i] as number])),
        ingressYaml({ name: 'app', host: HOST, service: 'app', path: '/app' }),
        ingressYaml({ name: 'root', host: HOST, service: 'root', path: '/' }),
        // 127.0.0.1 is not allowed: every request routed here is a 403, the backend never sees one
        ingressYaml({
          name: 'admin',
          host: HOST,
          service: 'admin',
          path: '/admin',
          annotations: { 'whitelist-source-range': '10.0.0.0/8' },
        }),
      ].join(''),
    );
    const controller = await start(testConfig(dir), createLogger('silent'), {
      accessLogStdout: { write() {} },
    });
    t.teardown(() => controller.stop(0));
    const port = controller.http.port;
    const runtime = controller.dataPlane.current;
    if (runtime === null) throw new Error('no runtime after start');
    /**
     * The backend the router picks for a request target, from normalizePath and the compiled host (an
     * absolute-form target's own host and path).
     */
    const expectedBackend = (target: string): string | null => {
      const split = absoluteForm(target);
      const path = normalizePath(split === null ? target : split.target);
      if (path === null) return null;
      const host = split === null ? HOST : normalizeHost(split.authority);
      const location = runtime.hosts.lookup(host).paths.match(path).locationPath;
      return location === '/app' ? 'app' : location === '/admin' ? 'admin' : 'root';
    };

    const healthy = async () => {
      const health = await new Promise<number>((resolve, reject) => {
        httpGet(
          { port: controller.healthz.port, host: '127.0.0.1', path: '/healthz', agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        ).on('error', reject);
      });
      const normal = await send(port, HOST, '/app/ok', { agent: false });
      return health === 200 && normal.status === 200 && normal.body.includes('"app"');
    };

    /** The properties every answer must have; `label` names the request in failures. */
    const check = (
      label: string,
      c: Pick<Case, 'target' | 'invalid' | 'upgrade'>,
      outcome: Outcome,
      before: number,
    ) => {
      const problems: string[] = [];
      if (outcome.hung) problems.push('no complete response and no close within the timeout');
      if (outcome.text !== '' && !/^HTTP\/1\.1 \d{3} [^\r\n]*\r\n/.test(outcome.text)) {
        problems.push(`not an HTTP/1.1 response: ${JSON.stringify(outcome.text.slice(0, 80))}`);
      }
      // 505: an HTTP/1 request line claiming HTTP/2.0 (NGINX's answer too)
      if (
        c.invalid &&
        outcome.text !== '' &&
        !((outcome.status >= 400 && outcome.status < 500) || outcome.status === 505)
      ) {
        problems.push(`invalid input answered ${outcome.status}`);
      }
      const now = reached.slice(before);
      for (const [backend] of now) {
        if (backend === 'admin') problems.push('the denied /admin backend was reached');
      }
      if (now.length > 0 && !c.upgrade) {
        const [backend, url] = now[0] as [string, string];
        const expected = expectedBackend(c.target);
        if (c.invalid) problems.push(`invalid input reached ${backend}`);
        else if (backend !== expected) {
          problems.push(
            `${JSON.stringify(c.target)} (upstream ${JSON.stringify(url)}) reached ${backend}, the router says ${expected}`,
          );
        }
      }
      if (
        !c.invalid &&
        !c.upgrade &&
        expectedBackend(c.target) === 'admin' &&
        outcome.status !== 0 &&
        outcome.status !== 403 &&
        outcome.status < 400
      ) {
        problems.push(`a path routed to /admin answered ${outcome.status}`);
      }
      if (problems.length > 0) throw new Error(`${label}: ${problems.join('; ')}`);
    };

    await t.test('a corpus of hostile requests', async (t) => {
      for (const [name, request, kind] of CORPUS) {
        const before = reached.length;
        const outcome = await exchange(port, Buffer.from(request, 'latin1'), {
          halfClose: kind === 'incomplete',
          head: false,
        });
        const target = request.split(' ')[1] ?? '';
        t.doesNotThrow(
          () =>
            check(
              name,
              { target, invalid: kind === 'invalid', upgrade: request.includes('Upgrade:') },
              outcome,
              before,
            ),
          name,
        );
      }
      // a connection closed half-way through the head, and one reset mid-body
      const cut = connect(port, '127.0.0.1');
      cut.on('error', () => {});
      cut.write(`POST /app HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 100\r\n\r\nabc`, () =>
        cut.resetAndDestroy(),
      );
      const half = await exchange(port, Buffer.from(`GET /app HTTP/1.1\r\nHost: ${HOST}\r\nX-Par`), {
        halfClose: true,
        head: false,
      });
      t.equal(half.hung, false, 'a head cut by a half-close: answered or closed');
      t.ok(await healthy(), 'still healthy after the corpus');
    });

    await t.test('random requests (seeded)', async (t) => {
      let runs = 0;
      let routed = 0;
      let refused = 0;
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          runs++;
          const before = reached.length;
          const outcome = await exchange(port, c.bytes, { halfClose: c.halfClose, head: c.head });
          check(JSON.stringify(c.bytes.toString('latin1').slice(0, 200)), c, outcome, before);
          if (reached.length > before) routed++;
          if (outcome.status >= 400 && outcome.status < 500) refused++;
          if (process.env.FUZZ_DEBUG)
            console.error(outcome.status, JSON.stringify(c.bytes.toString('latin1').slice(0, 120)));
        }),
        { seed: 20261123, numRuns: RUNS, endOnFailure: true },
      );
      t.equal(runs, RUNS, `${runs} requests`);
      // the generator reaches both sides: requests routed to a backend, requests refused
      t.ok(routed > RUNS / 10, `${routed} reached a backend`);
      t.ok(refused > RUNS / 10, `${refused} answered 4xx`);
      t.ok(await healthy(), 'still healthy: /healthz 200 and a normal request served');
    });
  },
);
