// Shared by the request-body e2e tests (request-boundary, body-fuzz): a backend that reads whole
// bodies, clients for HTTP/1.1, HTTPS/1.1 and h2 that send a body framed one way or another (or cut
// it midway), and a watch for exceptions nothing caught.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { type AddressInfo, connect } from 'node:net';
import type { Test } from 'tap';
import {
  type RequestFailure,
  requestFailed,
  requestLogged,
  requestMeasured,
} from '../../lib/dataplane/events.ts';
import type { MeasuredRequest } from '../../lib/dataplane/request-measure.ts';

/**
 * Answers 200 once the body is read whole: `got <n>` (n: bytes read), or `/size/<n>`: n bytes of
 * 'x'. `/status/<code>` answers that status (for proxy-next-upstream and custom-http-errors).
 */
export async function bodyBackend(t: Test): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    req.on('error', () => {});
    req.on('end', () => {
      const url = req.url ?? '/';
      const sized = /\/size\/(\d+)/.exec(url);
      const status = /\/status\/(\d{3})/.exec(url);
      if (sized !== null)
        res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(Number(sized[1])));
      else if (status !== null) res.writeHead(Number(status[1])).end(`status ${status[1]}`);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${size}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, port: (server.address() as AddressInfo).port };
}

export type Protocol = 'http' | 'https' | 'h2';
/** content-length: the body with its length; chunked: in two chunks without; empty: no body at all;
 * aborted: a declared length, half the body, then the connection (or stream) cut */
export type Framing = 'content-length' | 'chunked' | 'empty' | 'aborted';

export interface Outcome {
  /** 0: no response (cut, or aborted by the client) */
  status: number;
  body: string;
  /** bytes of the response's body received */
  received: number;
  error?: string;
}

export interface BodyRequest {
  protocol: Protocol;
  framing: Framing;
  host: string;
  path: string;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** ports of the controller */
  http: number;
  https: number;
  /** a request gives up after this long (a hang is a failure, never a wait) */
  timeoutMs?: number;
}

/** One request with a body framed as asked; resolves with what came back (never rejects). */
export function sendBody(r: BodyRequest): Promise<Outcome> {
  if (r.protocol === 'h2') return sendH2(r);
  return new Promise((resolve) => {
    const body = r.body ?? 'a'.repeat(1000);
    const headers: Record<string, string> = { host: r.host, ...r.headers };
    if (r.framing === 'content-length' || r.framing === 'aborted') {
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const options = {
      host: '127.0.0.1',
      port: r.protocol === 'https' ? r.https : r.http,
      method: r.method ?? 'POST',
      path: r.path,
      headers,
      agent: false as const,
      servername: r.host,
      rejectUnauthorized: false,
    };
    let settled = false;
    const done = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = (r.protocol === 'https' ? httpsRequest : httpRequest)(options, (res) => {
      let text = '';
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (text.length < 200) text += chunk.toString('latin1');
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text, received }));
      res.on('error', (error) => done({ status: 0, body: text, received, error: error.message }));
    });
    const timer = setTimeout(() => {
      req.destroy();
      done({ status: -1, body: '', received: 0, error: 'timed out' });
    }, r.timeoutMs ?? 5000);
    req.on('error', (error) => done({ status: 0, body: '', received: 0, error: error.message }));
    if (r.framing === 'content-length') req.end(body);
    else if (r.framing === 'chunked') {
      req.write(body.slice(0, body.length >> 1));
      req.end(body.slice(body.length >> 1));
    } else if (r.framing === 'empty') req.end();
    else {
      req.write(body.slice(0, body.length >> 1));
      // half the body is on its way: the client goes away
      setTimeout(() => {
        req.destroy();
        done({ status: 0, body: '', received: 0, error: 'aborted by the client' });
      }, 20);
    }
  });
}

function sendH2(r: BodyRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    const body = r.body ?? 'a'.repeat(1000);
    const session = http2Connect(`https://127.0.0.1:${r.https}`, {
      servername: r.host,
      rejectUnauthorized: false,
    });
    let settled = false;
    const done = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => done({ status: -1, body: '', received: 0, error: 'timed out' }),
      r.timeoutMs ?? 5000,
    );
    session.on('error', (error) => done({ status: 0, body: '', received: 0, error: error.message }));
    const headers: Record<string, string> = {
      ':method': r.method ?? 'POST',
      ':path': r.path,
      ':authority': r.host,
      ...r.headers,
    };
    if (r.framing === 'content-length' || r.framing === 'aborted') {
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const stream = session.request(headers, { endStream: r.framing === 'empty' });
    let status = 0;
    let text = '';
    let received = 0;
    stream.on('response', (head) => {
      status = Number(head[':status']);
    });
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (text.length < 200) text += chunk.toString('latin1');
    });
    stream.on('end', () => done({ status, body: text, received }));
    stream.on('error', (error) => done({ status: 0, body: text, received, error: error.message }));
    stream.on('close', () => done({ status, body: text, received }));
    if (r.framing === 'content-length') stream.end(body);
    else if (r.framing === 'chunked') {
      stream.write(body.slice(0, body.length >> 1));
      stream.end(body.slice(body.length >> 1));
    } else if (r.framing === 'aborted') {
      stream.write(body.slice(0, body.length >> 1));
      setTimeout(() => {
        stream.close(0x8); // CANCEL
        done({ status: 0, body: '', received: 0, error: 'aborted by the client' });
      }, 20);
    }
  });
}

/**
 * Collects every exception nothing caught and every unhandled rejection while the test runs, and
 * every failure the data plane's boundary contained; `check()` asserts there was no uncaught one.
 */
export function watchFailures(t: Test): { contained: RequestFailure[]; uncaught: unknown[]; check(): void } {
  const uncaught: unknown[] = [];
  const contained: RequestFailure[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  const onContained = (message: unknown) => contained.push(message as RequestFailure);
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  subscribe(requestFailed.name, onContained);
  t.teardown(() => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    unsubscribe(requestFailed.name, onContained);
  });
  return {
    contained,
    uncaught,
    check() {
      t.same(
        uncaught.map((e) => (e instanceof Error ? e.stack : String(e))),
        [],
        'no exception escaped the data plane',
      );
    },
  };
}

/**
 * Every request published from now on: its record, or with data-plane threads its measures (the
 * record stays in the thread that wrote its access log line).
 */
export function collectRecords(t: Test): MeasuredRequest[] {
  const records: MeasuredRequest[] = [];
  const on = (message: unknown) => records.push(message as MeasuredRequest);
  subscribe(requestLogged.name, on);
  subscribe(requestMeasured.name, on);
  t.teardown(() => {
    unsubscribe(requestLogged.name, on);
    unsubscribe(requestMeasured.name, on);
  });
  return records;
}

/** Resolves once `ready()` holds, checking on each turn of the event loop; false after `ms`. */
export async function until(ready: () => boolean, ms = 5000): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!ready()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return true;
}

/** Writes `bytes` on a new connection to `port`; resolves with what came back by the close (or by `ms`). */
export function rawExchange(port: number, bytes: string, ms = 5000): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.write(bytes);
  });
}

/** An auth-url service that allows every request; resolves with its URL. */
export async function allowingAuth(t: Test): Promise<string> {
  const auth = createServer((req, res) => {
    req.resume();
    res.writeHead(200).end();
  });
  await new Promise<void>((resolve) => auth.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        auth.closeAllConnections();
        auth.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(auth.address() as AddressInfo).port}/check`;
}
