// Many small GETs through one port on keep-alive connections, one request in flight on each, for the
// tests that count thousands of answers (canary shares, hash owners). node:http's client (agent,
// outgoing message, parser, events) costs a quarter of the CPU of such a test; here a request is one
// string written and a response is found by its Content-Length. Not pipelined: responses queued
// behind each other on one connection wait on delayed ACKs and made the canary test several times
// slower.
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  body: string;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** One response at the start of `buffer`, or null while it is incomplete. */
function takeResponse(buffer: Buffer): { reply: RawReply; close: boolean; size: number } | null {
  const headEnd = buffer.indexOf(HEAD_END);
  if (headEnd === -1) return null;
  const head = buffer.toString('latin1', 0, headEnd);
  const status = Number(head.slice(9, 12));
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (length === null) throw new Error(`rawGets: a response without Content-Length:\n${head}`);
  const size = headEnd + HEAD_END.length + Number(length[1]);
  if (buffer.length < size) return null;
  const body = buffer.toString('utf8', headEnd + HEAD_END.length, size);
  return { reply: { status, body }, close: /\r\nconnection: *close/i.test(head), size };
}

/**
 * GET each of `paths` on `host` at 127.0.0.1:`port`; resolves with the answers in the order of
 * `paths`. A request the server did not answer before closing its connection (a keep-alive request
 * limit) is sent again on a new one; a connection closed before any answer fails the whole.
 */
export function rawGets(
  port: number,
  host: string,
  paths: readonly string[],
  connections: number,
): Promise<RawReply[]> {
  const replies: RawReply[] = new Array(paths.length);
  const pending: number[] = paths.map((_, i) => i).reverse();
  let answered = 0;
  return new Promise((resolve, reject) => {
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      reject(error);
    };
    const open = () => {
      const socket: Socket = connect(port, '127.0.0.1');
      const inFlight: number[] = [];
      let buffer: Buffer = Buffer.alloc(0);
      let answeredHere = 0;
      let closing = false;
      const send = () => {
        let text = '';
        while (!closing && inFlight.length === 0 && pending.length > 0) {
          const i = pending.pop() as number;
          inFlight.push(i);
          text += `GET ${paths[i]} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
        }
        if (text !== '') socket.write(text);
        else if (inFlight.length === 0) socket.end();
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
        try {
          for (let taken = takeResponse(buffer); taken !== null; taken = takeResponse(buffer)) {
            buffer = buffer.subarray(taken.size);
            replies[inFlight.shift() as number] = taken.reply;
            answered++;
            answeredHere++;
            if (taken.close) closing = true;
          }
        } catch (error) {
          socket.destroy();
          fail(error as Error);
          return;
        }
        if (answered === paths.length) resolve(replies);
        send();
      });
      // a reset after the server's last answer (requests it never read) is a close like any other
      let lastError: Error | undefined;
      socket.on('error', (error) => {
        lastError = error;
      });
      socket.on('close', () => {
        if (failed || answered === paths.length) return;
        pending.push(...inFlight.reverse());
        if (pending.length === 0) return;
        if (answeredHere === 0) fail(lastError ?? new Error('rawGets: a connection closed unanswered'));
        else open();
      });
    };
    if (paths.length === 0) resolve(replies);
    else for (let c = 0; c < Math.min(connections, paths.length); c++) open();
  });
}
