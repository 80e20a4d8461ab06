// HTTP/2 on the HTTPS listener and backend-protocol through the proxy: ALPN offers h2 and http/1.1
// (use-http2 "false" → http/1.1 only, ssl-protocols applied, both on a swap); an h2 client reaches an
// HTTP/1.1 backend (GET and a streamed POST); HTTP/1.1 and WebSocket keep working on the HTTPS
// listener; gRPC to a cleartext h2 backend (GRPC) and a TLS one (GRPCS): unary, server streaming,
// client streaming, a failing call's status, message and custom trailer reaching the client exactly
// (trailers-only and after messages); HTTPS to a TLS HTTP/1.1 backend; FCGI answering 502.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  type ClientHttp2Session,
  createServer as createH2cServer,
  type Http2Server,
  connect as http2Connect,
} from 'node:http2';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import type { ModelDescription } from '../../lib/debug-model.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { pem } from '../model/helpers.ts';
import { get, listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml, tlsSecret } from '../support/manifests.ts';
import { nextSwap } from '../support/swaps.ts';
import { withTestThreads } from '../support/threads.ts';

const HOST = 'a.example.com';
const CERT = pem('a-example');

// A gRPC service without protobuf: messages are raw bytes (UTF-8 text here).
const bytes = {
  requestSerialize: (value: Buffer) => value,
  requestDeserialize: (value: Buffer) => value,
  responseSerialize: (value: Buffer) => value,
  responseDeserialize: (value: Buffer) => value,
};
function echoService(name: string): grpc.ServiceDefinition {
  const method = (path: string, requestStream: boolean, responseStream: boolean) => ({
    path: `/${name}/${path}`,
    requestStream,
    responseStream,
    originalName: path,
    ...bytes,
  });
  return {
    Unary: method('Unary', false, false),
    Fail: method('Fail', false, false),
    ServerStream: method('ServerStream', false, true),
    ClientStream: method('ClientStream', true, false),
  };
}

/** What the gRPC handlers saw of the proxied requests (the last one). */
interface Seen {
  authority: string;
  forwardedProto: string;
}

function echoImplementation(
  label: string,
  seen: { last: Seen | null; onCancel: () => void },
): grpc.UntypedServiceImplementation {
  const note = (call: { metadata: grpc.Metadata; getHost(): string }) => {
    const metadata = call.metadata;
    seen.last = {
      authority: call.getHost(),
      forwardedProto: String(metadata.get('x-forwarded-proto')[0] ?? ''),
    };
  };
  return {
    Unary(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
      note(call);
      callback(null, Buffer.from(`${label}:${call.request.toString()}`));
    },
    Fail(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
      note(call);
      const trailer = new grpc.Metadata();
      trailer.set('x-reason', 'quota-exceeded');
      callback({ code: grpc.status.PERMISSION_DENIED, details: 'not for you', metadata: trailer });
    },
    ServerStream(call: grpc.ServerWritableStream<Buffer, Buffer>) {
      note(call);
      if (call.request.toString() === 'forever') {
        // one message, then silence until the client cancels (seen here as the call's 'cancelled')
        call.write(Buffer.from('first'));
        call.on('cancelled', () => seen.onCancel());
        return;
      }
      const count = Number(call.request.toString());
      for (let i = 1; i <= count; i++) call.write(Buffer.from(`${label}-${i}`));
      if (count === 0) {
        call.end();
        return;
      }
      // messages, then a failure: the status travels in real trailers after DATA frames
      const trailer = new grpc.Metadata();
      trailer.set('x-after', 'messages');
      call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: 'enough', metadata: trailer });
    },
    ClientStream(call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
      note(call);
      const parts: string[] = [];
      call.on('data', (chunk: Buffer) => parts.push(chunk.toString()));
      call.on('end', () => callback(null, Buffer.from(parts.join('+'))));
    },
  };
}

async function grpcServer(
  name: string,
  credentials: grpc.ServerCredentials,
  seen: { last: Seen | null; onCancel: () => void },
): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(echoService(name), echoImplementation(name, seen));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return { server, port };
}

/** An HTTP/1.1 backend answering with what it saw, as JSON; `/…/big` answers 256 KiB of a pattern. */
const slow = { arrived: () => {}, release: () => {} };
function echoHandler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.url?.endsWith('/slow')) {
      slow.release = () => res.end('slow done');
      slow.arrived();
      return;
    }
    if (req.url?.endsWith('/big')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(BIG);
      return;
    }
    const body = JSON.stringify({
      method: req.method,
      url: req.url,
      httpVersion: req.httpVersion,
      headers: req.headers,
      cookies: req.rawHeaders.filter(
        (_, i) => i % 2 === 1 && req.rawHeaders[i - 1]?.toLowerCase() === 'cookie',
      ),
      body: Buffer.concat(chunks).toString(),
    });
    // hop-by-hop headers an HTTP/2 response may not carry: the proxy must drop them
    res.writeHead(200, {
      'content-type': 'application/json',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
    });
    res.end(body);
  });
}
/**
 * A cleartext HTTP/2 backend (prior knowledge) answering with the request headers it saw as JSON,
 * then trailers: what a gRPC server does, seen from below.
 */
async function rawH2Backend(): Promise<{ server: Http2Server; port: number }> {
  const server = createH2cServer();
  server.on('stream', (stream, headers) => {
    stream.respond({ ':status': 200, 'content-type': 'application/json' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'abc123', 'grpc-status': '0' }));
    stream.resume();
    stream.on('end', () => stream.end(JSON.stringify(headers)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const BIG = Buffer.alloc(256 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789');

function alpnOf(port: number, protocols: string[], maxVersion?: 'TLSv1.2'): Promise<string | false | Error> {
  return new Promise((resolve) => {
    const socket = tlsConnect(
      {
        port,
        host: '127.0.0.1',
        servername: HOST,
        rejectUnauthorized: false,
        ALPNProtocols: protocols,
        maxVersion,
      },
      () => {
        resolve(socket.alpnProtocol ?? false);
        socket.destroy();
      },
    );
    socket.on('error', (error) => resolve(error));
  });
}

interface H2Reply {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
  trailers: Record<string, unknown>;
}

function h2Request(
  session: ClientHttp2Session,
  path: string,
  options: { method?: string; body?: Buffer[]; headers?: Record<string, string | string[]> } = {},
): Promise<H2Reply> {
  return new Promise((resolve, reject) => {
    const stream = session.request(
      { ':method': options.method ?? 'GET', ':path': path, ':authority': HOST, ...options.headers },
      { endStream: options.body === undefined },
    );
    let head: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (headers) => {
      head = headers;
    });
    stream.on('trailers', (headers) => {
      trailers = headers;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () =>
      resolve({ status: Number(head[':status']), headers: head, body: Buffer.concat(chunks), trailers }),
    );
    stream.on('error', reject);
    if (options.body !== undefined) {
      // written in pieces, no content-length: the proxy must stream it
      for (const piece of options.body) stream.write(piece);
      stream.end();
    }
  });
}

function httpsGet(port: number, path: string): Promise<{ status: number; body: string; alpn: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        port,
        host: '127.0.0.1',
        servername: HOST,
        path,
        headers: { host: HOST },
        rejectUnauthorized: false,
      },
      (res) => {
        const alpn = String((res.socket as { alpnProtocol?: string | false }).alpnProtocol);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body,
            alpn,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const configMapYaml = (data: Record<string, string>) => `---
apiVersion: v1
kind: ConfigMap
metadata: { name: ingress-ts, namespace: e2e }
data: ${JSON.stringify(withTestThreads(data))}
`;

t.test('HTTP/2 listener and backend-protocol', async (t) => {
  // backends: gRPC cleartext, gRPC over TLS, HTTP/1.1 (with a WebSocket server), HTTPS/1.1
  const seenGrpc = { last: null as Seen | null, onCancel: () => {} };
  const seenGrpcs = { last: null as Seen | null, onCancel: () => {} };
  const plain = await grpcServer('test.Echo', grpc.ServerCredentials.createInsecure(), seenGrpc);
  const secure = await grpcServer(
    'test.Secure',
    grpc.ServerCredentials.createSsl(null, [
      { private_key: Buffer.from(CERT.key), cert_chain: Buffer.from(CERT.crt) },
    ]),
    seenGrpcs,
  );
  t.teardown(() => {
    plain.server.forceShutdown();
    secure.server.forceShutdown();
  });
  const web: Server = createServer(echoHandler);
  const webPort = await listen(web);
  const wss = new WebSocketServer({ server: web });
  wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo:${String(data)}`)));
  const raw = await rawH2Backend();
  t.teardown(() => raw.server.close());
  const tlsWeb = createHttpsServer({ cert: CERT.crt, key: CERT.key }, echoHandler);
  await new Promise<void>((resolve) => tlsWeb.listen(0, '127.0.0.1', resolve));
  const tlsWebPort = (tlsWeb.address() as AddressInfo).port;
  t.teardown(() => {
    for (const client of wss.clients) client.terminate();
    wss.close();
    web.closeAllConnections();
    web.close();
    tlsWeb.closeAllConnections();
    tlsWeb.close();
  });

  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-grpc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const route = (name: string, path: string, service: string, protocol?: string) =>
    ingressYaml({
      name,
      host: HOST,
      path,
      service,
      annotations: protocol === undefined ? {} : { 'backend-protocol': protocol },
    });
  const manifests = (config: Record<string, string>) =>
    [
      INGRESS_CLASS,
      configMapYaml(config),
      serviceYaml('grpc', [plain.port]),
      serviceYaml('grpcs', [secure.port]),
      serviceYaml('web', [webPort]),
      serviceYaml('tlsweb', [tlsWebPort]),
      serviceYaml('raw', [raw.port]),
      route('grpc', '/test.Echo', 'grpc', 'grpc').replace(
        '  rules:',
        `  tls: [{ hosts: [${HOST}], secretName: a-tls }]\n  rules:`,
      ),
      route('grpcs', '/test.Secure', 'grpcs', 'GRPCS'),
      route('web', '/web', 'web'),
      route('tlsweb', '/tls', 'tlsweb', 'HTTPS'),
      route('php', '/php', 'web', 'FCGI'),
      route('raw', '/raw', 'raw', 'GRPC'),
      ingressYaml({
        name: 'auto',
        host: 'auto.test',
        path: '/',
        service: 'tlsweb',
        annotations: { 'backend-protocol': 'AUTO_HTTP' },
      }),
      `---\n${tlsSecret('e2e', 'a-tls', CERT)}`,
    ].join('');
  const file = join(dir, 'all.yaml');
  await writeFile(file, manifests({}));
  const controller = await start(testConfig(dir, '--configmap', 'e2e/ingress-ts'), createLogger('silent'), {
    accessLogStdout: { write() {} },
  });
  t.teardown(() => controller.stop(0));
  const port = controller.https.port;

  const client = () =>
    new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(CERT.crt)), {
      'grpc.ssl_target_name_override': HOST,
      'grpc.default_authority': HOST,
    });
  const unary = (c: grpc.Client, path: string, message: string) =>
    new Promise<{ error: grpc.ServiceError | null; value: string | undefined }>((resolve) => {
      c.makeUnaryRequest(
        path,
        (v: Buffer) => v,
        (v: Buffer) => v,
        Buffer.from(message),
        (error, value) => resolve({ error, value: value?.toString() }),
      );
    });

  t.test('/debug/model shows the backend protocol of each route', async (t) => {
    const reply = await get(controller.healthz.port, 'localhost', '/debug/model');
    const model = JSON.parse(reply.body) as ModelDescription;
    const routes = model.hosts.find((h) => h.host === HOST)?.routes ?? [];
    t.strictSame(Object.fromEntries(routes.map((r) => [r.path, r.backendProtocol])), {
      '/test.Echo': 'GRPC',
      '/test.Secure': 'GRPCS',
      '/web': 'HTTP',
      '/tls': 'HTTPS',
      '/php': 'FCGI',
      '/raw': 'GRPC',
    });
  });

  t.test('ALPN: h2 and http/1.1 offered, h2 preferred', async (t) => {
    t.equal(await alpnOf(port, ['h2', 'http/1.1']), 'h2');
    t.equal(await alpnOf(port, ['http/1.1']), 'http/1.1');
    t.equal(await alpnOf(port, ['http/1.1', 'h2']), 'h2', 'the server prefers h2');
  });

  t.test('an HTTP/2 client reaches an HTTP/1.1 backend', async (t) => {
    const session = http2Connect(`https://127.0.0.1:${port}`, { servername: HOST, ca: CERT.crt });
    t.teardown(() => session.close());
    const reply = await h2Request(session, '/web/path?q=1');
    t.equal(reply.status, 200);
    const seen = JSON.parse(reply.body.toString());
    t.equal(seen.url, '/web/path?q=1', 'path and query as sent');
    t.equal(seen.httpVersion, '1.1', 'HTTP/1.1 to the backend');
    t.equal(seen.headers.host, HOST, 'Host from :authority');
    t.equal(seen.headers['x-forwarded-host'], HOST);
    t.equal(seen.headers['x-forwarded-proto'], 'https');
    t.notOk(
      Object.keys(seen.headers).some((name) => name.startsWith(':')),
      'no pseudo-header forwarded',
    );
    t.equal(reply.headers.connection, undefined, 'hop-by-hop response headers dropped');
    t.ok(typeof reply.headers['strict-transport-security'] === 'string', 'HSTS on the TLS host');

    const crumbs = await h2Request(session, '/web/c', { headers: { cookie: ['a=1', 'b=2'] } });
    t.strictSame(
      JSON.parse(crumbs.body.toString()).cookies,
      ['a=1; b=2'],
      'cookie crumbs joined into one header',
    );

    const big = await h2Request(session, '/web/big');
    t.equal(big.status, 200);
    t.ok(big.body.equals(BIG), 'a 256 KiB body arrives intact');

    const posted = await h2Request(session, '/web/upload', {
      method: 'POST',
      body: [Buffer.from('part one, '), Buffer.from('part two')],
    });
    t.equal(posted.status, 200);
    const upload = JSON.parse(posted.body.toString());
    t.equal(upload.method, 'POST');
    t.equal(upload.body, 'part one, part two', 'a body without content-length is streamed to the backend');

    const php = await h2Request(session, '/php');
    t.equal(php.status, 502, 'backend-protocol FCGI answers 502');
    const missing = await h2Request(session, '/nowhere');
    t.equal(missing.status, 404, 'the default backend over h2');
  });

  t.test('HTTP/1.1 and WebSocket keep working on the HTTPS listener', async (t) => {
    const reply = await httpsGet(port, '/web/one');
    t.equal(reply.status, 200);
    t.equal(reply.alpn, 'false', 'a client without ALPN gets HTTP/1.1');
    t.equal(JSON.parse(reply.body).url, '/web/one');

    const socket = new WebSocket(`wss://127.0.0.1:${port}/web/ws`, undefined, {
      headers: { host: HOST },
      rejectUnauthorized: false,
    });
    t.teardown(() => socket.terminate());
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const answer = new Promise<string>((resolve) => socket.once('message', (data) => resolve(String(data))));
    socket.send('hello');
    t.equal(await answer, 'echo:hello');
  });

  t.test('backend-protocol HTTPS: HTTP/1.1 over TLS, the peer certificate not verified', async (t) => {
    const reply = await httpsGet(port, '/tls/x');
    t.equal(reply.status, 200);
    t.equal(JSON.parse(reply.body).url, '/tls/x');
  });

  t.test('backend-protocol AUTO_HTTP: the client scheme to the backend', async (t) => {
    const secure = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        { port, host: '127.0.0.1', path: '/a', headers: { host: 'auto.test' }, rejectUnauthorized: false },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.equal(secure, 200, 'HTTPS from the client: TLS to the (TLS) backend');
    const plainReply = await get(controller.http.port, 'auto.test', '/a');
    t.equal(plainReply.status, 502, 'HTTP from the client: cleartext to the TLS backend fails');
  });

  t.test('GRPC to a bare h2c backend: TE: trailers sent, trailers passed on', async (t) => {
    const session = http2Connect(`https://127.0.0.1:${port}`, { servername: HOST, ca: CERT.crt });
    t.teardown(() => session.close());
    const reply = await h2Request(session, '/raw/x', { method: 'POST', body: [Buffer.from('payload')] });
    t.equal(reply.status, 200);
    const seen = JSON.parse(reply.body.toString());
    t.equal(seen.te, 'trailers', 'TE: trailers sent upstream');
    t.equal(seen[':authority'], HOST, 'the authority is the client Host');
    t.equal(seen[':path'], '/raw/x');
    t.equal(seen['x-forwarded-proto'], 'https');
    t.equal(reply.trailers['x-checksum'], 'abc123', 'a custom trailer');
    t.equal(reply.trailers['grpc-status'], '0');

    // an HTTP/1.1 client asking for trailers gets them in the chunked body
    const viaH1 = await new Promise<Record<string, string | undefined>>((resolve, reject) => {
      const req = httpsRequest(
        {
          port,
          host: '127.0.0.1',
          servername: HOST,
          path: '/raw/y',
          headers: { host: HOST, te: 'trailers' },
          rejectUnauthorized: false,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.trailers));
        },
      );
      req.on('error', reject);
      req.end();
    });
    t.equal(viaH1['x-checksum'], 'abc123', 'trailers reach an HTTP/1.1 client too');
  });

  t.test('gRPC through the proxy (GRPC: h2 cleartext to the backend)', async (t) => {
    const c = client();
    t.teardown(() => c.close());
    const ok = await unary(c, '/test.Echo/Unary', 'hi');
    t.equal(ok.error, null);
    t.equal(ok.value, 'test.Echo:hi', 'unary');
    t.equal(seenGrpc.last?.authority, HOST, 'the backend sees the client authority');
    t.equal(seenGrpc.last?.forwardedProto, 'https');

    const failed = await unary(c, '/test.Echo/Fail', 'x');
    t.equal(failed.error?.code, grpc.status.PERMISSION_DENIED, 'the status code');
    t.equal(failed.error?.details, 'not for you', 'the status message');
    t.strictSame(failed.error?.metadata.get('x-reason'), ['quota-exceeded'], 'the custom trailer');

    const streamed = await new Promise<{ messages: string[]; status: grpc.StatusObject }>((resolve) => {
      const messages: string[] = [];
      const call = c.makeServerStreamRequest(
        '/test.Echo/ServerStream',
        (v: Buffer) => v,
        (v: Buffer) => v,
        Buffer.from('3'),
      );
      call.on('data', (m: Buffer) => messages.push(m.toString()));
      call.on('error', () => {});
      call.on('status', (status) => resolve({ messages, status }));
    });
    t.strictSame(streamed.messages, ['test.Echo-1', 'test.Echo-2', 'test.Echo-3'], 'server streaming');
    t.equal(streamed.status.code, grpc.status.RESOURCE_EXHAUSTED, 'a status after messages (trailers)');
    t.equal(streamed.status.details, 'enough');
    t.strictSame(streamed.status.metadata.get('x-after'), ['messages'], 'custom trailer after messages');

    const empty = await new Promise<grpc.StatusObject>((resolve) => {
      const call = c.makeServerStreamRequest(
        '/test.Echo/ServerStream',
        (v: Buffer) => v,
        (v: Buffer) => v,
        Buffer.from('0'),
      );
      call.on('data', () => {});
      call.on('status', resolve);
    });
    t.equal(empty.code, grpc.status.OK, 'an empty stream ends OK');

    const summed = await new Promise<{ error: grpc.ServiceError | null; value: string | undefined }>(
      (resolve) => {
        const call = c.makeClientStreamRequest(
          '/test.Echo/ClientStream',
          (v: Buffer) => v,
          (v: Buffer) => v,
          (error, value) => resolve({ error, value: value?.toString() }),
        );
        for (const part of ['a', 'b', 'c']) call.write(Buffer.from(part));
        call.end();
      },
    );
    t.equal(summed.error, null);
    t.equal(summed.value, 'a+b+c', 'client streaming');

    // the client cancels a stream in progress: the proxy resets the upstream stream too
    const backendCancelled = new Promise<void>((resolve) => {
      seenGrpc.onCancel = resolve;
    });
    const cancelled = await new Promise<grpc.StatusObject>((resolve) => {
      const call = c.makeServerStreamRequest(
        '/test.Echo/ServerStream',
        (v: Buffer) => v,
        (v: Buffer) => v,
        Buffer.from('forever'),
      );
      call.on('data', () => call.cancel());
      call.on('error', () => {});
      call.on('status', resolve);
    });
    t.equal(cancelled.code, grpc.status.CANCELLED, 'the client sees its cancellation');
    await backendCancelled;
    t.pass('the backend saw the call cancelled');
    const after = await unary(c, '/test.Echo/Unary', 'again');
    t.equal(after.value, 'test.Echo:again', 'the session keeps working after a reset stream');
  });

  t.test('gRPC through the proxy (GRPCS: h2 over TLS to the backend)', async (t) => {
    const c = client();
    t.teardown(() => c.close());
    const ok = await unary(c, '/test.Secure/Unary', 'sec');
    t.equal(ok.error, null);
    t.equal(ok.value, 'test.Secure:sec');
    t.equal(seenGrpcs.last?.forwardedProto, 'https');
    const failed = await unary(c, '/test.Secure/Fail', 'x');
    t.equal(failed.error?.code, grpc.status.PERMISSION_DENIED);
    t.equal(failed.error?.details, 'not for you');
    t.strictSame(failed.error?.metadata.get('x-reason'), ['quota-exceeded']);
  });

  t.test('use-http2 "false" and ssl-protocols apply on a swap, without a restart', async (t) => {
    const swapped = nextSwap(5000);
    await writeFile(file, manifests({ 'use-http2': 'false', 'ssl-protocols': 'TLSv1.3' }));
    await swapped;
    t.equal(await alpnOf(port, ['h2', 'http/1.1']), 'http/1.1', 'h2 no longer offered');
    const refused = await alpnOf(port, ['http/1.1'], 'TLSv1.2');
    t.ok(refused instanceof Error, 'TLS 1.2 refused by ssl-protocols TLSv1.3');
    const reply = await httpsGet(port, '/web/after');
    t.equal(reply.status, 200, 'HTTP/1.1 still served');

    const back = nextSwap(5000);
    await writeFile(file, manifests({}));
    await back;
    t.equal(await alpnOf(port, ['h2', 'http/1.1']), 'h2', 'h2 offered again');
    t.equal(await alpnOf(port, ['http/1.1'], 'TLSv1.2'), 'http/1.1', 'TLS 1.2 accepted again');
  });

  t.test('stop: GOAWAY to HTTP/2 clients, a stream in flight still completes', async (t) => {
    const session = http2Connect(`https://127.0.0.1:${port}`, { servername: HOST, ca: CERT.crt });
    session.on('error', () => {});
    const arrived = new Promise<void>((resolve) => {
      slow.arrived = resolve;
    });
    const inFlight = h2Request(session, '/web/slow');
    await arrived;
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    const stopped = controller.stop(0, 60000);
    await goaway;
    slow.release();
    const reply = await inFlight;
    t.equal(reply.status, 200);
    t.equal(reply.body.toString(), 'slow done', 'the in-flight stream finished');
    await stopped;
    t.pass('the controller stopped once the stream was done, before the drain timeout');
  });
});
