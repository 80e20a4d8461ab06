// The HTTPS server the API server calls for each Ingress it is about to store: POST
// /networking/v1/ingresses (the path ingress-nginx's chart registers), an AdmissionReview in, an
// AdmissionReview with the same uid out. Bounded in size and time; a body that is not a review of
// an Ingress gets 400, and an unexpected exception 500 without details: nothing a client sends
// stops the process or reaches it as a stack trace.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { type AdmissionRequest, admissionResponse, readAdmissionReview } from './admission-review.ts';
import { type AdmissionReviewed, admissionReviewed } from './events.ts';
import type { Verdict } from './review.ts';

export const ADMISSION_PATH = '/networking/v1/ingresses';

/**
 * An AdmissionReview carries the object and, for an update, the old object. The API server accepts
 * request bodies of up to 3 MiB (JSON), and etcd stores objects of up to 1.5 MiB, whose JSON can be
 * twice that; two objects of 3 MiB and the review around them fit in 9 MiB, which is also
 * ingress-nginx's limit. A review refused for its size would refuse a valid Ingress under
 * failurePolicy Fail, so the bound is generous; a body over it gets 413 and is not read further.
 */
export const MAX_BODY_BYTES = 9 * 1024 * 1024;
/** The API server's webhook timeout is at most 30 s (10 s by default): after that nobody waits. */
const REQUEST_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 10_000;

export interface AdmissionServerOptions {
  /** the verdict on one request (sync: the build runs on this thread) */
  review: (request: AdmissionRequest) => Verdict;
  /** an unexpected exception while reviewing (logged by the caller; the client gets a bare 500) */
  onError: (error: unknown, request: AdmissionRequest | null) => void;
  /** the serving certificate and key (PEM), or null to start without one (handshakes fail until
   * setCertificate gives one) */
  certificate: { cert: string; key: string } | null;
}

/** What the rest of the process holds of the webhook server. */
export interface AdmissionServer {
  readonly port: number;
  /** Serves this pair from the next handshake on; throws (keeping the pair in use) when they do
   * not parse or do not match. The error message never quotes the key. */
  setCertificate(certPem: string, keyPem: string): void;
  close(): Promise<void>;
}

/** Checks a pair as TLS would use it; the error names what is wrong, not the key. */
function checkedPair(cert: string, key: string): { cert: string; key: string } {
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    const reason = (error as { code?: string }).code ?? 'the pair does not load';
    throw new Error(`the webhook certificate and key cannot be used (${reason})`);
  }
  return { cert, key };
}

function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The body, or null once it went over the bound (the answer 413 is sent then). */
function readBody(req: IncomingMessage, res: ServerResponse, done: (body: string) => void): void {
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_BODY_BYTES) {
    tooLarge(req, res);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      chunks.length = 0;
      tooLarge(req, res);
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (size <= MAX_BODY_BYTES) done(Buffer.concat(chunks).toString('utf8'));
  });
  req.on('error', () => {});
}

function tooLarge(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  send(res, 413, `the body is larger than ${MAX_BODY_BYTES} bytes\n`);
  // stop reading what is left: the connection closes once the answer is out
  req.pause();
  res.on('finish', () => req.socket.destroy());
}

function publish(event: AdmissionReviewed): void {
  if (admissionReviewed.hasSubscribers) admissionReviewed.publish(event);
}

export async function startAdmissionServer(
  options: AdmissionServerOptions,
  port: number,
  host: string,
): Promise<AdmissionServer> {
  const server: Server = createServer({
    ...(options.certificate === null ? {} : checkedPair(options.certificate.cert, options.certificate.key)),
    requestTimeout: REQUEST_TIMEOUT_MS,
    headersTimeout: HEADERS_TIMEOUT_MS,
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== ADMISSION_PATH) return send(res, 404, 'not found\n');
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return send(res, 405, 'method not allowed\n');
    }
    const started = performance.now();
    readBody(req, res, (body) => answer(options, res, body, started));
  });
  // a client that goes away or sends garbage costs its own connection only
  server.on('clientError', (_error, socket) => socket.destroy());
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host === '' ? undefined : host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    setCertificate(certPem, keyPem) {
      server.setSecureContext(checkedPair(certPem, keyPem));
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function answer(options: AdmissionServerOptions, res: ServerResponse, body: string, started: number): void {
  const read = readAdmissionReview(body);
  if ('error' in read) {
    publish({ result: 'invalid', namespace: '', name: '', seconds: (performance.now() - started) / 1000 });
    send(res, 400, `${read.error}\n`);
    return;
  }
  const { request } = read;
  let verdict: Verdict;
  try {
    verdict = options.review(request);
  } catch (error) {
    options.onError(error, request);
    publish({ result: 'error', namespace: request.namespace, name: request.name, seconds: 0 });
    send(res, 500, 'the review failed\n');
    return;
  }
  const seconds = (performance.now() - started) / 1000;
  publish({
    result: verdict.outcome === 'ignored' ? 'ignored' : verdict.allowed ? 'allowed' : 'denied',
    namespace: request.namespace,
    name: request.name,
    seconds,
    verdict,
  });
  send(res, 200, JSON.stringify(admissionResponse(request.uid, verdict)), 'application/json');
}
