// The PROXY protocol as TCP services use it (the two PROXY flags of an entry): a header read from
// the client before anything is relayed, and a v1 header written to the upstream. The reader is one
// function behind a small type so that the listeners' own parser can take its place; this one reads
// v1 (text) only, bounded to 107 bytes as the specification bounds it.

import type { Socket } from 'node:net';

/** The connection's addresses as the header carries them; null for UNKNOWN (a health check). */
export interface ProxyAddresses {
  sourceAddress: string;
  sourcePort: number;
  destinationAddress: string;
  destinationPort: number;
}

export interface ProxyHeaderRead {
  addresses: ProxyAddresses | null;
  /** bytes after the header, to be relayed first */
  rest: Buffer;
}

/** Reads one header from `socket`; rejects when it is missing, malformed or not complete in time. */
export type ProxyHeaderReader = (socket: Socket, timeoutMs: number) => Promise<ProxyHeaderRead>;

const V1_MAX = 107;

/** `PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222` (without CRLF) → addresses, or why not. */
export function parseProxyV1(line: string): ProxyAddresses | null | Error {
  const parts = line.split(' ');
  if (parts[0] !== 'PROXY') return new Error('not a PROXY protocol header');
  if (parts[1] === 'UNKNOWN') return null;
  if ((parts[1] !== 'TCP4' && parts[1] !== 'TCP6') || parts.length !== 6) {
    return new Error('malformed PROXY protocol v1 header');
  }
  const [, , sourceAddress = '', destinationAddress = '', source = '', destination = ''] = parts;
  const port = (text: string) => (/^\d{1,5}$/.test(text) && Number(text) <= 65535 ? Number(text) : -1);
  const sourcePort = port(source);
  const destinationPort = port(destination);
  if (sourcePort < 0 || destinationPort < 0) return new Error('malformed PROXY protocol v1 ports');
  return { sourceAddress, sourcePort, destinationAddress, destinationPort };
}

export const readProxyHeaderV1: ProxyHeaderReader = (socket, timeoutMs) =>
  new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    const finish = (error: Error | null, read?: ProxyHeaderRead) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.pause();
      if (error !== null) reject(error);
      else resolve(read as ProxyHeaderRead);
    };
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n');
      if (end === -1) {
        if (buffered.length >= V1_MAX) finish(new Error('PROXY protocol header too long'));
        return;
      }
      if (end + 2 > V1_MAX) return finish(new Error('PROXY protocol header too long'));
      const parsed = parseProxyV1(buffered.subarray(0, end).toString('latin1'));
      if (parsed instanceof Error) return finish(parsed);
      finish(null, { addresses: parsed, rest: buffered.subarray(end + 2) });
    };
    const onEnd = () => finish(new Error('the connection ended before its PROXY protocol header'));
    const timer = setTimeout(() => finish(new Error('no PROXY protocol header in time')), timeoutMs);
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.resume();
  });

/** The v1 header NGINX's `proxy_protocol on` sends: the client's and the listener's addresses. */
export function encodeProxyV1(addresses: ProxyAddresses): string {
  // an IPv4 client of a dual-stack socket appears as ::ffff:a.b.c.d: written as IPv4
  const source = addresses.sourceAddress.replace(/^::ffff:(?=\d+\.)/i, '');
  const destination = addresses.destinationAddress.replace(/^::ffff:(?=\d+\.)/i, '');
  const v6 = (address: string) => address.includes(':');
  if (v6(source) === v6(destination)) {
    const family = v6(source) ? 'TCP6' : 'TCP4';
    return `PROXY ${family} ${source} ${destination} ${addresses.sourcePort} ${addresses.destinationPort}\r\n`;
  }
  // one of each: both as IPv6
  const asV6 = (address: string) => (v6(address) ? address : `::ffff:${address}`);
  return `PROXY TCP6 ${asV6(source)} ${asV6(destination)} ${addresses.sourcePort} ${addresses.destinationPort}\r\n`;
}
