// Compression of proxied responses through the real proxy (use-gzip, enable-brotli and their keys):
// real clients (HTTP/1.1, HTTP/2 over TLS, a raw HTTP/1.0 one) decode gzip and brotli with node:zlib;
// each response that must go out as it is does (small, wrong type, encoded, HEAD, 204, 304, 206,
// no-transform, SSE, gRPC-Web, q=0, gzip-disable, HTTP/1.0); the head's edits (Vary, ETag,
// Content-Length, Accept-Ranges); a streaming upstream is not held back; a big body to a client that
// stops reading pauses the upstream; clients that abort end their upstream requests.
import { randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import { connect as h2connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { accessLogSink } from '../support/access-log-sink.ts';
import { listen, testConfig } from '../support/http.ts';
import { JSON_LOG_KEYS } from '../support/json-log-format.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { raw } from '../support/raw-http.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const HOST = 'a.example.com';
const CERT = pem('a-example');

const BIG = 32 << 20;

/** Compressible text of `n` bytes. */
const text = (n: number) => 'hello compression, hello world. '.repeat(Math.ceil(n / 32)).slice(0, n);

/** The backend: what it serves by path, and what the streaming paths tell the test. */
function backend() {
  const events = new EventEmitter<{ blocked: []; closed: []; trickle: [] }>();
  const state = { bigWritten: 0, blocked: false, aborted: 0, trickleRelease: () => {} };
  const html = (res: ServerResponse, status: number, body: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      etag: '"v1"',
      'accept-ranges': 'bytes',
      ...extra,
    });
    res.end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const url = req.url ?? '/';
    const page = /^\/page\/(\d+)$/.exec(url);
    const status = /^\/status\/(\d{3})$/.exec(url);
    if (page !== null) return html(res, 200, text(Number(page[1])));
    if (status !== null) {
      const code = Number(status[1]);
      if (code === 204 || code === 304) {
        res.writeHead(code, { etag: '"v1"' });
        return res.end();
      }
      if (code === 206) return html(res, 206, text(1000), { 'content-range': 'bytes 0-999/5000' });
      return html(res, code, text(5000));
    }
    switch (url) {
      case '/json': {
        const body = JSON.stringify({
          items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `n${i}` })),
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
        return res.end(body);
      }
      case '/chunked':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write(text(3000));
        res.write(text(3000));
        return res.end(text(3000));
      case '/png':
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '5000' });
        return res.end(Buffer.alloc(5000, 7));
      case '/encoded': {
        const body = gzipSync(text(5000));
        res.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip',
          'content-length': String(body.length),
        });
        return res.end(body);
      }
      case '/no-transform':
        return html(res, 200, text(5000), { 'cache-control': 'public, no-transform' });
      case '/vary':
        return html(res, 200, text(5000), { vary: 'Origin' });
      case '/sse':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return res.end(`data: ${text(2000)}\n\n`);
      case '/grpc-web':
        res.writeHead(200, { 'content-type': 'application/grpc-web+proto', 'content-length': '5000' });
        return res.end(text(5000));
      case '/trickle':
        // one chunk, then the rest only once the test has seen the first decoded at the client
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write(text(2000));
        state.trickleRelease = () => res.end(text(2000));
        events.emit('trickle');
        return;
      case '/big': {
        // 32 MiB of random hex (it compresses to about half, more than loopback buffers hold): the
        // client's pause must reach here
        res.writeHead(200, { 'content-type': 'text/html' });
        state.bigWritten = 0;
        const pump = () => {
          while (state.bigWritten < BIG) {
            const chunk = randomBytes(8192).toString('hex');
            state.bigWritten += chunk.length;
            if (!res.write(chunk)) {
              state.blocked = true;
              events.emit('blocked');
              res.once('drain', () => {
                state.blocked = false;
                pump();
              });
              return;
            }
          }
          res.end();
        };
        pump();
        return;
      }
      case '/abort': {
        // writes until the proxy gives up on it
        res.writeHead(200, { 'content-type': 'text/html' });
        const timer = setInterval(() => res.write(text(16384)), 5);
        res.on('close', () => {
          clearInterval(timer);
          state.aborted++;
          events.emit('closed');
        });
        return;
      }
      default:
        return html(res, 200, text(5000));
    }
  });
  return { server, state, events };
}

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/1.1 request; the body as it came (not decoded). */
function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      { port, host: '127.0.0.1', path, method, headers: { host: HOST, ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function decode(reply: { headers: IncomingHttpHeaders; body: Buffer }): string {
  const coding = reply.headers['content-encoding'];
  if (coding === 'gzip') return gunzipSync(reply.body).toString();
  if (coding === 'br') return brotliDecompressSync(reply.body).toString();
  return reply.body.toString();
}

const configMap = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: e2e }
data: ${JSON.stringify(withTestThreads(data))}
`;

// the access log as JSON lines, to read bytes_sent
const ON = { ...JSON_LOG_KEYS, 'use-gzip': 'true', 'enable-brotli': 'true', 'gzip-disable': 'BadBot/[0-9]' };

t.test('gzip and brotli through the proxy', async (t) => {
  const up = backend();
  const upPort = await listen(up.server);
  t.teardown(() => {
    up.server.closeAllConnections();
    up.server.close();
  });
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-compression-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const manifests = (config: Record<string, string>) =>
    [
      INGRESS_CLASS,
      configMap(config),
      serviceYaml('web', [upPort]),
      ingressYaml({ name: 'web', host: HOST, service: 'web' }).replace(
        '  rules:',
        `  tls: [{ hosts: [${HOST}], secretName: a-tls }]\n  rules:`,
      ),
      ingressYaml({
        name: 'paced',
        host: 'paced.test',
        service: 'web',
        annotations: { 'limit-rate': '1000', 'limit-rate-after': '1' },
      }),
      `---\n${tlsSecret('e2e', 'a-tls', CERT)}`,
    ].join('');
  const file = join(dir, 'all.yaml');
  await writeFile(file, manifests({ ...ON, 'ssl-redirect': 'false' }));
  const log = accessLogSink();
  const logLine = async (part: string) => JSON.parse(await log.line(part)) as Record<string, unknown>;
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: log.stream,
  });
  t.teardown(() => controller.stop(0));
  const port = controller.http.port;

  await t.test('HTTP/1.1: brotli when accepted, else gzip; the head edited', async (t) => {
    const br = await get(port, '/page/5000', { 'accept-encoding': 'gzip, deflate, br' });
    t.equal(br.status, 200);
    t.equal(br.headers['content-encoding'], 'br');
    t.equal(decode(br), text(5000), 'brotli decodes to the upstream body');
    t.ok(br.body.length < 1000, `compressed: ${br.body.length} bytes for 5000`);
    t.equal(br.headers['content-length'], undefined, 'no Content-Length');
    t.equal(br.headers['transfer-encoding'], 'chunked', 'chunked');
    t.equal(br.headers['accept-ranges'], undefined, 'no Accept-Ranges');
    t.equal(br.headers.etag, 'W/"v1"', 'the ETag made weak');
    t.equal(br.headers.vary, 'Accept-Encoding');

    const gz = await get(port, '/page/5000', { 'accept-encoding': 'gzip' });
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.equal(decode(gz), text(5000), 'gzip decodes to the upstream body');

    const json = await get(port, '/json', { 'accept-encoding': 'gzip' });
    t.equal(json.headers['content-encoding'], 'gzip', 'application/json is in the default list');
    t.equal(JSON.parse(decode(json)).items.length, 200);

    const chunked = await get(port, '/chunked', { 'accept-encoding': 'br' });
    t.equal(chunked.headers['content-encoding'], 'br', 'a body of unknown length');
    t.equal(decode(chunked), text(3000).repeat(3));

    const vary = await get(port, '/vary', { 'accept-encoding': 'gzip' });
    t.equal(vary.headers.vary, 'Origin, Accept-Encoding', 'merged with the upstream Vary');

    const line = await logLine('"request_uri":"/page/5000"');
    t.ok(
      (line.bytes_sent as number) < 1500,
      `bytes_sent counts the compressed body: ${line.bytes_sent} (the body is 5000 bytes)`,
    );
  });

  await t.test('what goes out as it is', async (t) => {
    const asIs = async (
      name: string,
      path: string,
      headers: Record<string, string>,
      vary: boolean,
      method = 'GET',
    ) => {
      const reply = await get(port, path, { 'accept-encoding': 'gzip, br', ...headers }, method);
      t.equal(
        reply.headers['content-encoding'],
        path === '/encoded' ? 'gzip' : undefined,
        `${name}: not compressed`,
      );
      t.equal(
        reply.headers.vary,
        vary ? 'Accept-Encoding' : undefined,
        `${name}: Vary ${vary ? '' : 'not '}added`,
      );
      return reply;
    };
    const small = await asIs('below brotli-min-length (20)', '/page/19', {}, false);
    t.equal(small.headers['content-length'], '19', 'its length stays');
    t.equal(small.headers.etag, '"v1"', 'its ETag stays strong');
    await asIs(
      'gzip-only client below gzip-min-length (256)',
      '/page/200',
      { 'accept-encoding': 'gzip' },
      true,
    );
    await asIs('a type not listed', '/png', {}, false);
    const encoded = await asIs('already encoded', '/encoded', {}, false);
    t.equal(gunzipSync(encoded.body).toString(), text(5000), 'passed on untouched');
    await asIs('HEAD', '/page/5000', {}, false, 'HEAD');
    await asIs('204', '/status/204', {}, false);
    await asIs('304', '/status/304', {}, false);
    await asIs('206', '/status/206', {}, false);
    await asIs('500', '/status/500', {}, false);
    await asIs('Cache-Control: no-transform', '/no-transform', {}, false);
    await asIs('server-sent events', '/sse', {}, false);
    await asIs('gRPC-Web', '/grpc-web', {}, false);
    const refused = await asIs(
      'gzip;q=0, br;q=0',
      '/page/5000',
      { 'accept-encoding': 'gzip;q=0, br;q=0' },
      true,
    );
    t.equal(refused.body.toString(), text(5000));
    await asIs('no Accept-Encoding', '/page/5000', { 'accept-encoding': '' }, true);
    await asIs(
      'gzip-disable matches',
      '/page/5000',
      { 'accept-encoding': 'gzip', 'user-agent': 'BadBot/2' },
      true,
    );
    const br = await get(port, '/page/5000', { 'accept-encoding': 'br', 'user-agent': 'BadBot/2' });
    t.equal(br.headers['content-encoding'], 'br', 'gzip-disable leaves brotli alone');
    const notFound = await get(port, '/status/404', { 'accept-encoding': 'gzip' });
    t.equal(notFound.headers['content-encoding'], 'gzip', '404 is compressed, as NGINX does');
    t.equal(decode(notFound), text(5000));
  });

  await t.test('limit-rate: the paced body is compressed too', async (t) => {
    for (const path of ['/page/20000', '/chunked']) {
      const reply = await get(port, path, { host: 'paced.test', 'accept-encoding': 'gzip' });
      t.equal(reply.headers['content-encoding'], 'gzip', path);
      t.equal(decode(reply), path === '/chunked' ? text(3000).repeat(3) : text(20000), `${path} decoded`);
    }
  });

  await t.test('HTTP/1.0: no coding (gzip_http_version 1.1)', async (t) => {
    const reply = await raw(
      port,
      `GET /page/5000 HTTP/1.0\r\nHost: ${HOST}\r\nAccept-Encoding: gzip, br\r\n\r\n`,
      // the proxy closes the connection after an HTTP/1.0 response
      { end: false },
    );
    t.equal(reply.status, 200, reply.text.slice(0, 300));
    const [head, body] = reply.text.split('\r\n\r\n');
    t.notMatch(head, /content-encoding/i);
    t.match(head, /vary: Accept-Encoding/i);
    t.equal(body, text(5000));
  });

  await t.test('HTTP/2 over TLS: brotli and gzip decoded', async (t) => {
    const session = h2connect(`https://127.0.0.1:${controller.https.port}`, {
      servername: HOST,
      rejectUnauthorized: false,
    });
    t.teardown(() => session.close());
    const h2get = (accept: string) =>
      new Promise<Raw>((resolve, reject) => {
        const stream = session.request({
          ':path': '/page/20000',
          ':authority': HOST,
          'accept-encoding': accept,
        });
        const chunks: Buffer[] = [];
        let headers: IncomingHttpHeaders = {};
        stream.on('response', (h) => {
          headers = h as IncomingHttpHeaders;
        });
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () =>
          resolve({ status: Number(headers[':status']), headers, body: Buffer.concat(chunks) }),
        );
        stream.on('error', reject);
      });
    for (const accept of ['br', 'gzip']) {
      const reply = await h2get(accept);
      t.equal(reply.status, 200);
      t.equal(reply.headers['content-encoding'], accept);
      t.equal(reply.headers['content-length'], undefined);
      t.equal(decode(reply), text(20000), `${accept} over HTTP/2`);
    }
  });

  await t.test('a streaming upstream is not held: each chunk reaches the client', async (t) => {
    const arrived = once(up.events, 'trickle');
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          port,
          host: '127.0.0.1',
          path: '/trickle',
          headers: { host: HOST, 'accept-encoding': 'gzip' },
          agent: false,
        },
        (res) => {
          t.equal(res.headers['content-encoding'], 'gzip');
          const gunzip = createGunzip();
          res.pipe(gunzip);
          let decoded = '';
          gunzip.on('data', (c: Buffer) => {
            const before = decoded.length;
            decoded += c.toString();
            // the first upstream chunk decoded in full while the upstream still holds the rest
            if (before < 2000 && decoded.length >= 2000) void arrived.then(() => up.state.trickleRelease());
          });
          gunzip.on('end', () => resolve(decoded));
          gunzip.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.equal(body, text(2000) + text(2000));
  });

  // that the pause reaches the upstream is proven without timing in test/dataplane/compression-stream.test.ts
  await t.test('a big body to a client that stops reading, then reads: all of it, decoded', async (t) => {
    const blocked = once(up.events, 'blocked');
    const res = await new Promise<IncomingMessage>((resolve) => {
      request(
        {
          port,
          host: '127.0.0.1',
          path: '/big',
          headers: { host: HOST, 'accept-encoding': 'gzip' },
          agent: false,
        },
        (r) => {
          r.pause();
          resolve(r);
        },
      ).end();
    });
    await blocked;
    t.ok(up.state.bigWritten < BIG, `the upstream waited after ${up.state.bigWritten} bytes of ${BIG}`);
    t.equal(res.headers['content-encoding'], 'gzip');
    const gunzip = createGunzip();
    let total = 0;
    gunzip.on('data', (c: Buffer) => {
      total += c.length;
    });
    res.pipe(gunzip);
    res.resume();
    await once(gunzip, 'end');
    t.equal(total, BIG, 'every byte once the client reads again');
  });

  await t.test('aborted clients end their upstream requests; the proxy goes on', async (t) => {
    const n = 40;
    const before = up.state.aborted;
    const all = Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const req = request(
            {
              port,
              host: '127.0.0.1',
              path: '/abort',
              headers: { host: HOST, 'accept-encoding': 'br' },
              agent: false,
            },
            (res) => {
              res.once('data', () => {
                req.destroy();
                resolve();
              });
            },
          );
          req.on('error', () => resolve());
          req.end();
        }),
    );
    await Promise.all(all);
    while (up.state.aborted < before + n) await once(up.events, 'closed');
    t.equal(up.state.aborted - before, n, 'every upstream request ended');
    const after = await get(port, '/page/5000', { 'accept-encoding': 'gzip' });
    t.equal(decode(after), text(5000));
  });

  await t.test('use-gzip and enable-brotli off: responses as they are, no Vary', async (t) => {
    const swapped = nextSwap();
    await writeFile(file, manifests({ 'ssl-redirect': 'false' }));
    await swapped;
    const reply = await get(port, '/page/5000', { 'accept-encoding': 'gzip, br' });
    t.equal(reply.headers['content-encoding'], undefined);
    t.equal(reply.headers.vary, undefined);
    t.equal(reply.headers['content-length'], '5000');
    t.equal(reply.headers.etag, '"v1"');
  });
});
