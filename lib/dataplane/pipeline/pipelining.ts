// HTTP/1.1 pipelining: Node hands over every request of a pipelined batch at once; NGINX serves them
// one after the other, so one connection holds at most one request upstream (an HTTP/2 connection:
// one per stream, bounded by SETTINGS_MAX_CONCURRENT_STREAMS). Requests behind the one served wait
// here, and the connection is not read meanwhile.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Arrival } from './decide.ts';

const PIPELINE = Symbol('pipelined requests');

/** A request waiting for the one before it on its connection. */
export interface Waiting {
  req: IncomingMessage;
  res: ServerResponse;
  arrival: Arrival;
}

/**
 * An HTTP/1.1 connection's pipeline: the response being served (null between requests), and the
 * requests after it. Made at the connection's first request and kept with it: a keep-alive
 * connection's later requests reuse it (no object per request, and the socket's shape changes
 * once, not twice per request).
 */
interface Pipeline {
  /** kept here: `res.req.socket` is null once Node detached the connection from the response */
  socket: PipelinedSocket;
  current: ServerResponse | null;
  waiting: Waiting[];
}

type PipelinedSocket = IncomingMessage['socket'] & { [PIPELINE]?: Pipeline };
/** Each HTTP/1.x response knows its connection's pipeline. */
type PipelinedResponse = ServerResponse & { [PIPELINE]?: Pipeline };

/**
 * Stops or restarts reading a client connection. Node's HTTP parser reads the socket's handle itself,
 * so `socket.pause()` would not stop it parsing (and keeping) every request a client pipelines; the
 * handle's own readStop does, and the bytes wait in the kernel as they do in front of NGINX.
 */
function reading(socket: IncomingMessage['socket'], on: boolean): void {
  const handle = (socket as unknown as { _handle?: { readStart?(): number; readStop?(): number } | null })
    ._handle;
  if (on) handle?.readStart?.();
  else handle?.readStop?.();
}

/**
 * True when `req` waits behind a request of its connection still being served (it is queued, served
 * by nextPipelined); false when it is served now (it becomes its connection's current request).
 */
export function waitsInPipeline(req: IncomingMessage, res: ServerResponse, arrival: Arrival): boolean {
  if ((req as IncomingMessage & { stream?: unknown }).stream !== undefined) return false;
  const socket = req.socket as PipelinedSocket;
  let pipeline = socket[PIPELINE];
  if (pipeline !== undefined && pipeline.current !== null) {
    (res as PipelinedResponse)[PIPELINE] = pipeline;
    // and no more is read meanwhile: what waits is bounded by one read, not by what the client sends
    if (pipeline.waiting.push({ req, res, arrival }) === 1) reading(socket, false);
    return true;
  }
  if (pipeline === undefined) {
    pipeline = { socket, current: res, waiting: [] };
    socket[PIPELINE] = pipeline;
  } else pipeline.current = res;
  (res as PipelinedResponse)[PIPELINE] = pipeline;
  return false;
}

/**
 * The response of an HTTP/1.1 request closed: the next pipelined request of its connection, if any,
 * is `serve`d. When the connection ends with this response, the requests after it are `dropped`.
 */
export function nextPipelined(
  res: ServerResponse,
  serve: (next: Waiting) => void,
  dropped: (res: ServerResponse) => void,
): void {
  const pipeline = (res as PipelinedResponse)[PIPELINE];
  if (pipeline === undefined || pipeline.current !== res) return;
  const socket = pipeline.socket;
  if (socket.destroyed || !res.shouldKeepAlive) {
    // never answered (Node never closes their responses), so none of them goes upstream
    pipeline.current = null;
    const waiting = pipeline.waiting;
    pipeline.waiting = [];
    for (const next of waiting) dropped(next.res);
    return;
  }
  const next = pipeline.waiting.shift();
  if (next === undefined) {
    pipeline.current = null;
    return;
  }
  // the last request read so far: its body, and the requests after it, may be read again
  if (pipeline.waiting.length === 0) reading(socket, true);
  pipeline.current = next.res;
  serve(next);
}
