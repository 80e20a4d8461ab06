// The PROXY protocol as TCP services use it (the two PROXY flags of an entry): a header read from
// the client before anything is relayed, and a v1 header written to the upstream (NGINX's
// `proxy_protocol on` in a stream server). Both are the listeners' own (listening/proxy-protocol.ts):
// the same strict, bounded v1 and v2 parser; this file adapts it to the relay.

import type { Socket } from 'node:net';
import { encodeProxyV1 as encodeV1, readProxyHeader } from '../listening/proxy-protocol.ts';

/** The connection's addresses as the header carries them; null for LOCAL / UNKNOWN (a health check). */
export interface ProxyAddresses {
  sourceAddress: string;
  sourcePort: number;
  destinationAddress: string;
  destinationPort: number;
}

export interface ProxyHeaderRead {
  addresses: ProxyAddresses | null;
  /** bytes after the header, to be relayed first (none: the reader puts them back on the socket) */
  rest: Buffer;
}

/** Reads one header from `socket`; rejects when it is missing, malformed or not complete in time. */
export type ProxyHeaderReader = (socket: Socket, timeoutMs: number) => Promise<ProxyHeaderRead>;

const NOTHING = Buffer.alloc(0);

/** The listeners' reader: v1 and v2, the bytes after the header put back, the socket left paused. */
export const readClientProxyHeader: ProxyHeaderReader = (socket, timeoutMs) =>
  new Promise((resolve, reject) => {
    readProxyHeader(socket, timeoutMs, (result) => {
      if (!result.ok) {
        reject(new Error(`PROXY protocol header: ${result.reason}`));
        return;
      }
      const a = result.addresses;
      const addresses =
        a === null
          ? null
          : {
              sourceAddress: a.sourceAddress,
              sourcePort: a.sourcePort,
              destinationAddress: a.destinationAddress,
              destinationPort: a.destinationPort,
            };
      resolve({ addresses, rest: NOTHING });
    });
    // the relay pauses a new client until it knows where to send its bytes: the header is read now
    socket.resume();
  });

/** The v1 header for the upstream: the client's and the listener's addresses. */
export function encodeProxyV1(addresses: ProxyAddresses): Buffer {
  return encodeV1(
    { address: addresses.sourceAddress, port: addresses.sourcePort },
    { address: addresses.destinationAddress, port: addresses.destinationPort },
  );
}
