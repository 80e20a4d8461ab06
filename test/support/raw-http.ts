// Raw HTTP/1.x over a TCP socket, for requests Node's own client will not send (smuggling shapes,
// invalid bytes, half-closed connections): bytes in, what came back until the server closed.
import { connect } from 'node:net';

export interface RawReply {
  /** everything the server wrote, latin1 */
  text: string;
  /** the status of the first response, or 0 when none came */
  status: number;
  /** the server closed the connection (or reset it) before the test's timeout */
  closed: boolean;
  /** the connection was reset rather than closed */
  reset: boolean;
}

export interface RawOptions {
  /** half-close after writing (the server answers, then closes); default true */
  end?: boolean;
  /** give up (and destroy the socket) after this long; default 5,000 ms */
  timeoutMs?: number;
}

/** Writes `data` to 127.0.0.1:`port` and collects the answer until the server closes. */
export function raw(
  port: number,
  data: string | Buffer | Array<string | Buffer>,
  options: RawOptions = {},
): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let reset = false;
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5000);
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ text, status: m === null ? 0 : Number(m[1]), closed, reset });
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {
      reset = true;
    });
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      for (const part of Array.isArray(data) ? data : [data]) socket.write(part);
      if (options.end ?? true) socket.end();
    });
  });
}

/** Every response in `text` is a well-formed HTTP/1.1 response head: the status lines found. */
export function statusLines(text: string): string[] {
  return text.split('\r\n').filter((line) => line.startsWith('HTTP/'));
}
