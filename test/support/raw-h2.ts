// A raw HTTP/2 client over TLS, for frames Node's own client will not send: it opens streams
// without regard to the server's SETTINGS_MAX_CONCURRENT_STREAMS (Node's client queues them), and
// may leave the server's SETTINGS unacknowledged. Header blocks are HPACK without Huffman coding
// or dynamic table: static-table entries and literals only.
import { EventEmitter } from 'node:events';
import { connect, type TLSSocket } from 'node:tls';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7 } as const;
export const ERROR = { PROTOCOL_ERROR: 1, REFUSED_STREAM: 7 } as const;

export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK string literal (no Huffman), for values shorter than 127 bytes. */
function literal(value: string): Buffer {
  const bytes = Buffer.from(value, 'latin1');
  if (bytes.length >= 127) throw new Error('raw-h2: header too long for this encoder');
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

/** A GET request's header block: :method GET and :scheme https indexed, :path and :authority literal. */
export function getHeaderBlock(path: string, authority: string): Buffer {
  return Buffer.concat([
    Buffer.from([0x82, 0x87]),
    // literal without indexing, name from the static table (4 = :path, 1 = :authority)
    Buffer.from([0x04]),
    literal(path),
    Buffer.from([0x01]),
    literal(authority),
  ]);
}

export interface RawH2 extends EventEmitter<{ frame: [Frame]; close: [] }> {
  socket: TLSSocket;
  /** every frame received so far */
  frames: Frame[];
  /** HEADERS with END_STREAM | END_HEADERS on each of `streams` (odd ids) */
  requestAll(streams: readonly number[], path: string, authority: string): void;
  ackSettings(): void;
  /** resolves once `predicate` holds for the frames received (checked at each frame) */
  until(predicate: (frames: readonly Frame[]) => boolean): Promise<void>;
  close(): void;
}

/**
 * Connects with ALPN h2 and sends the preface and an empty SETTINGS; the server's SETTINGS are
 * acknowledged only when `ackSettings` is called.
 */
export async function rawH2(port: number, servername: string): Promise<RawH2> {
  const socket = connect({
    port,
    host: '127.0.0.1',
    servername,
    ALPNProtocols: ['h2'],
    rejectUnauthorized: false,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  if (socket.alpnProtocol !== 'h2') throw new Error(`raw-h2: ALPN chose ${socket.alpnProtocol}`);
  const emitter = new EventEmitter<{ frame: [Frame]; close: [] }>();
  const frames: Frame[] = [];
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const received: Frame = {
        type: pending[3] as number,
        flags: pending[4] as number,
        stream: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      };
      pending = pending.subarray(9 + length);
      frames.push(received);
      emitter.emit('frame', received);
    }
  });
  socket.on('error', () => {});
  socket.on('close', () => emitter.emit('close'));
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));
  return Object.assign(emitter, {
    socket,
    frames,
    requestAll(streams: readonly number[], path: string, authority: string) {
      const block = getHeaderBlock(path, authority);
      socket.write(Buffer.concat(streams.map((id) => frame(FRAME.HEADERS, 0x5, id, block))));
    },
    ackSettings() {
      socket.write(frame(FRAME.SETTINGS, 0x1, 0, Buffer.alloc(0)));
    },
    until(predicate: (frames: readonly Frame[]) => boolean) {
      return new Promise<void>((resolve, reject) => {
        if (predicate(frames)) {
          resolve();
          return;
        }
        const check = () => {
          if (!predicate(frames)) return;
          emitter.off('frame', check);
          emitter.off('close', closed);
          resolve();
        };
        const closed = () => {
          emitter.off('frame', check);
          reject(new Error('raw-h2: the connection closed first'));
        };
        emitter.on('frame', check);
        emitter.once('close', closed);
      });
    },
    close() {
      socket.destroy();
    },
  });
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export function errorCode(received: Frame): number {
  return received.type === FRAME.GOAWAY ? received.payload.readUInt32BE(4) : received.payload.readUInt32BE(0);
}
