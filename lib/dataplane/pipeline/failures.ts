// The error boundary's answers: an unexpected exception while serving a request or a connection is
// contained to it, answered 500 when nothing was sent yet, and published with the request id (log
// line, ingress_ts_request_errors_total). The process goes on serving.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RequestFailure, requestFailed } from '../events.ts';
import { sendErrorPage, sendSocketErrorPage } from '../responses/error-pages.ts';
import { generateRequestId } from '../upstream/request-id.ts';

/**
 * A failure while serving `req`: a 500 when nothing was sent yet (the connection closed after it,
 * whatever state the failure left behind), else the response cut. `requestId`: the record's, if kept.
 */
export function failRequest(
  error: unknown,
  where: RequestFailure['where'],
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string | undefined,
): void {
  try {
    if (!res.headersSent && !res.writableEnded && !res.destroyed) {
      for (const name of res.getHeaderNames()) res.removeHeader(name);
      res.shouldKeepAlive = false;
      sendErrorPage(res, 500);
    } else {
      res.destroy();
    }
  } catch {
    res.destroy();
  }
  publishFailure(error, where, req, requestId);
}

/** The same for a connection: a raw 500 when `unanswered` (nothing written yet), then closed. */
export function failSocket(
  error: unknown,
  where: RequestFailure['where'],
  req: IncomingMessage | null,
  socket: Duplex,
  unanswered: boolean,
): void {
  try {
    if (unanswered && socket.writable) sendSocketErrorPage(socket, 500);
    else socket.destroy();
  } catch {
    socket.destroy();
  }
  publishFailure(error, where, req);
}

export function publishFailure(
  error: unknown,
  where: RequestFailure['where'],
  req: IncomingMessage | null,
  requestId?: string,
): void {
  if (!requestFailed.hasSubscribers) return;
  let id = requestId ?? '';
  if (id === '' && req !== null) {
    const incoming = req.headers['x-request-id'];
    id = typeof incoming === 'string' && incoming !== '' ? incoming : generateRequestId();
  }
  const failure: RequestFailure = {
    where,
    requestId: id,
    message: error instanceof Error ? error.message : String(error),
    stack: error instanceof Error ? (error.stack ?? '') : '',
  };
  requestFailed.publish(failure);
}
