// Request bodies with proxy-body-size: read whole before the first try (proxy-request-buffering), or
// streamed through a byte counter that fails the try past the limit.

import type { IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { BODY_TOO_LARGE, noop, ProxyError } from './failures.ts';

/**
 * Reads a whole request body; `done(null)` as soon as it grows past `limit` bytes (the rest is read
 * and discarded, so the connection can carry the 413 and stay usable). Nothing happens if the client
 * goes away meanwhile.
 */
export function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > limit) {
      req.off('data', onData);
      req.off('end', onEnd);
      req.resume();
      done(null);
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    // an HTTP/2 request whose client reset its stream ends too, marked aborted: a cut body
    if ((req as IncomingMessage & { aborted?: boolean }).aborted === true) return;
    done(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  };
  req.on('error', noop);
  req.on('data', onData);
  req.on('end', onEnd);
}

/** A streamed chunked body that fails the try (413, or a cut once answered) past `limit` bytes. */
export function limitBody(req: IncomingMessage, limit: number): Transform {
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limit) {
        // the rest of the client's body is discarded: the 413 (or the cut) answers it
        req.unpipe(counted);
        req.resume();
        callback(new ProxyError(BODY_TOO_LARGE, 'request body larger than proxy-body-size'));
      } else {
        callback(null, chunk);
      }
    },
  });
  req.on('error', (err) => counted.destroy(err));
  // the send timeout watches the client request: pass the counter's backpressure on to it
  req.pipe(counted);
  return counted;
}
