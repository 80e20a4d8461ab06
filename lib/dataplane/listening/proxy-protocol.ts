// The PROXY protocol (HAProxy's proxy-protocol.txt, versions 1 and 2): the header a load balancer
// puts before a connection's first byte to say whom the connection came from. Self-contained (only
// node:net), so the HTTP/HTTPS listeners and the TCP services share it:
//
//   parseProxyHeader(bytes)            pure and total: `more`, `header` or `invalid`, never a throw
//   readProxyHeader(socket, ms, done)  reads one header off a new socket within a deadline; the bytes
//                                      after it are put back (socket.unshift) for whoever reads next
//   encodeProxyV1 / encodeProxyV2      the header to send to an upstream
//
// Strict as NGINX is: a v1 line is at most 107 bytes with single spaces, addresses of the family it
// names and ports without leading zeros; a v2 header at most 4096 bytes (NGINX's bound, TLVs
// included); anything else is invalid and the caller closes the connection without an answer.
// LOCAL (v2), UNKNOWN (v1), and v2's UNSPEC, AF_UNIX and DGRAM say "no address": the socket's own stand.

import { isIPv4, isIPv6, type Socket } from 'node:net';

/** What a header says about the connection (source: the client; destination: where it connected to). */
export interface ProxyAddresses {
  family: 'IPv4' | 'IPv6';
  sourceAddress: string;
  sourcePort: number;
  destinationAddress: string;
  destinationPort: number;
}

export type ProxyHeaderParse =
  /** a header's beginning: read more */
  | { kind: 'more' }
  /** `length` bytes are the header; `addresses` null: LOCAL / UNKNOWN, the socket's own addresses stand */
  | { kind: 'header'; version: 1 | 2; length: number; addresses: ProxyAddresses | null }
  | { kind: 'invalid'; reason: string };

/** The longest v1 line, CRLF included (the spec's bound). */
export const MAX_V1_HEADER = 107;
/** The longest v2 header, TLVs included (NGINX's NGX_PROXY_PROTOCOL_MAX_HEADER). */
export const MAX_V2_HEADER = 4096;

const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V2_FIXED = 16;
const MORE: ProxyHeaderParse = { kind: 'more' };

/** Reads the PROXY header at the start of `data` (everything received so far on the connection). */
export function parseProxyHeader(data: Uint8Array): ProxyHeaderParse {
  if (data.length === 0) return MORE;
  if (data[0] === 0x0d) return startsLike(data, V2_SIGNATURE) ? parseV2(data) : invalid('no PROXY header');
  return startsLike(data, V1_PREFIX) ? parseV1(data) : invalid('no PROXY header');
}

/** Whether data and prefix agree on their common length (so a short data may still become it). */
function startsLike(data: Uint8Array, prefix: Uint8Array): boolean {
  const n = Math.min(data.length, prefix.length);
  for (let i = 0; i < n; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

function invalid(reason: string): ProxyHeaderParse {
  return { kind: 'invalid', reason };
}

function parseV1(data: Uint8Array): ProxyHeaderParse {
  if (data.length <= V1_PREFIX.length) return MORE;
  // the CR may be at index 105 at most, so that CRLF ends within 107 bytes
  const lastCr = MAX_V1_HEADER - 2;
  const limit = Math.min(data.length, lastCr + 1);
  let cr = -1;
  for (let i = V1_PREFIX.length; i < limit; i++) {
    const byte = data[i] as number;
    if (byte === 0x0d) {
      cr = i;
      break;
    }
    // printable ASCII only: no NUL, no bare LF, no tab in a v1 line
    if (byte < 0x20 || byte > 0x7e) return invalid('a v1 header with a control byte');
  }
  if (cr === -1) return data.length > lastCr ? invalid('a v1 header over 107 bytes') : MORE;
  if (cr + 1 >= data.length) return MORE;
  if (data[cr + 1] !== 0x0a) return invalid('a v1 header not ended by CRLF');
  const length = cr + 2;
  const fields = Buffer.from(data.buffer, data.byteOffset + V1_PREFIX.length, cr - V1_PREFIX.length)
    .toString('latin1')
    .split(' ');
  // UNKNOWN may be followed by anything up to the CRLF, which the receiver ignores
  if (fields[0] === 'UNKNOWN') return { kind: 'header', version: 1, length, addresses: null };
  if (fields.length !== 5) return invalid('a v1 header without exactly five fields');
  const [protocol, source, destination, sourcePort, destinationPort] = fields as [
    string,
    string,
    string,
    string,
    string,
  ];
  let family: 'IPv4' | 'IPv6';
  if (protocol === 'TCP4') {
    if (!isIPv4(source) || !isIPv4(destination)) return invalid('a TCP4 header with a bad address');
    family = 'IPv4';
  } else if (protocol === 'TCP6') {
    if (!isPlainIPv6(source) || !isPlainIPv6(destination)) return invalid('a TCP6 header with a bad address');
    family = 'IPv6';
  } else {
    return invalid('a v1 header of an unknown protocol');
  }
  const from = portOf(sourcePort);
  const to = portOf(destinationPort);
  if (from === -1 || to === -1) return invalid('a v1 header with a bad port');
  return {
    kind: 'header',
    version: 1,
    length,
    addresses: {
      family,
      sourceAddress: source,
      sourcePort: from,
      destinationAddress: destination,
      destinationPort: to,
    },
  };
}

/** An IPv6 address without a zone (Node's isIPv6 accepts `fe80::1%eth0`). */
function isPlainIPv6(text: string): boolean {
  return !text.includes('%') && isIPv6(text);
}

/** 0..65535 in decimal without leading zeros, or -1. */
function portOf(text: string): number {
  if (!/^(?:0|[1-9]\d{0,4})$/.test(text)) return -1;
  const port = Number(text);
  return port > 65535 ? -1 : port;
}

function parseV2(data: Uint8Array): ProxyHeaderParse {
  if (data.length < V2_FIXED) return MORE;
  const versionCommand = data[12] as number;
  if (versionCommand >> 4 !== 2) return invalid('a v2 header of another version');
  const command = versionCommand & 0x0f;
  if (command > 1) return invalid('a v2 header with an unknown command');
  const familyTransport = data[13] as number;
  const family = familyTransport >> 4;
  const transport = familyTransport & 0x0f;
  if (family > 3 || transport > 2) return invalid('a v2 header with an unknown family or transport');
  const length = V2_FIXED + (((data[14] as number) << 8) | (data[15] as number));
  if (length > MAX_V2_HEADER) return invalid('a v2 header over 4096 bytes');
  // the address block and TLVs are validated only once the whole header is in
  if (data.length < length) return MORE;
  // LOCAL: the balancer's own connection (health checks); whatever follows is skipped
  if (command === 0) return { kind: 'header', version: 2, length, addresses: null };
  // STREAM over INET or INET6; UNSPEC, AF_UNIX and DGRAM carry no TCP client: as NGINX, the socket's own
  if (transport !== 1 || (family !== 1 && family !== 2))
    return { kind: 'header', version: 2, length, addresses: null };
  const block = family === 1 ? 12 : 36;
  if (length - V2_FIXED < block) return invalid('a v2 header shorter than its address family');
  const at = V2_FIXED;
  if (family === 1) {
    return {
      kind: 'header',
      version: 2,
      length,
      addresses: {
        family: 'IPv4',
        sourceAddress: ipv4At(data, at),
        destinationAddress: ipv4At(data, at + 4),
        sourcePort: u16(data, at + 8),
        destinationPort: u16(data, at + 10),
      },
    };
  }
  return {
    kind: 'header',
    version: 2,
    length,
    addresses: {
      family: 'IPv6',
      sourceAddress: ipv6At(data, at),
      destinationAddress: ipv6At(data, at + 16),
      sourcePort: u16(data, at + 32),
      destinationPort: u16(data, at + 34),
    },
  };
}

function u16(data: Uint8Array, at: number): number {
  return ((data[at] as number) << 8) | (data[at + 1] as number);
}

function ipv4At(data: Uint8Array, at: number): string {
  return `${data[at]}.${data[at + 1]}.${data[at + 2]}.${data[at + 3]}`;
}

/** An IPv6 address as inet_ntop writes it: lower-case, the longest run of zero groups as `::`. */
export function ipv6At(data: Uint8Array, at: number): string {
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push(u16(data, at + 2 * i));
  // ::ffff:a.b.c.d, the form a dual-stack socket reports for an IPv4 peer
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${ipv4At(data, at + 12)}`;
  }
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (list: number[]): string => list.map((g) => g.toString(16)).join(':');
  if (bestStart === -1) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** The result of `readProxyHeader`. */
export type ProxyHeaderRead =
  | { ok: true; version: 1 | 2; addresses: ProxyAddresses | null }
  /** `reason` says what was wrong without any byte of the client's */
  | { ok: false; cause: 'invalid' | 'timeout' | 'closed'; reason: string };

/**
 * Reads the PROXY header of a new connection, then calls `done` once. On success the bytes received
 * after the header are put back (`socket.unshift`) and the socket is left paused: whoever takes it next
 * reads them first (an HTTP server given the socket must `resume()` it; TLS reads the buffer itself).
 * On failure the socket is left as it is: the caller closes it (NGINX answers nothing).
 *
 * The header must be complete within `timeoutMs` (a deadline, not an idle timeout: a client dripping
 * bytes gets no more time). With `timeoutMs` null no timer is set and the caller keeps the deadline
 * itself (the listeners sweep all their pending connections with one timer) by calling the returned
 * function with 'timeout'; called with 'closed' it gives up (the socket is then the caller's to close).
 */
export function readProxyHeader(
  socket: Socket,
  timeoutMs: number | null,
  done: (result: ProxyHeaderRead) => void,
): (cause: 'timeout' | 'closed') => void {
  let received: Buffer | null = null;
  let finished = false;
  const finish = (result: ProxyHeaderRead): void => {
    if (finished) return;
    finished = true;
    if (timer !== undefined) clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onEnd);
    socket.off('error', onError);
    done(result);
  };
  const onData = (chunk: Buffer): void => {
    received = received === null ? chunk : Buffer.concat([received, chunk]);
    const parsed = parseProxyHeader(received);
    if (parsed.kind === 'more') return;
    socket.pause();
    if (parsed.kind === 'invalid') {
      finish({ ok: false, cause: 'invalid', reason: parsed.reason });
      return;
    }
    if (parsed.length < received.length) socket.unshift(received.subarray(parsed.length));
    received = null;
    finish({ ok: true, version: parsed.version, addresses: parsed.addresses });
  };
  // a client gone before its header; an 'error' (a reset) is one failed read, never an unhandled error.
  // A socket destroyed by someone else says neither: its caller's deadline ends the read
  const onEnd = (): void =>
    finish({ ok: false, cause: 'closed', reason: 'the connection ended before a PROXY header' });
  const onError = (): void =>
    finish({ ok: false, cause: 'closed', reason: 'the connection failed before a PROXY header' });
  const late = (within: string): ProxyHeaderRead => ({
    ok: false,
    cause: 'timeout',
    reason: `no PROXY header within ${within}`,
  });
  const timer = timeoutMs === null ? undefined : setTimeout(() => finish(late(`${timeoutMs} ms`)), timeoutMs);
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('error', onError);
  return (cause) =>
    finish(cause === 'timeout' ? late('the timeout') : { ok: false, cause: 'closed', reason: 'cancelled' });
}

/** A TCP endpoint of a header to send: an IPv4 or IPv6 address (IPv4-mapped IPv6 counts as IPv4). */
export interface ProxyEndpoint {
  address: string;
  port: number;
}

/** The v1 line for a connection from `source` to `destination`; `PROXY UNKNOWN` when the families differ or are not IP. */
export function encodeProxyV1(source: ProxyEndpoint, destination: ProxyEndpoint): Buffer {
  const from = plainAddress(source.address);
  const to = plainAddress(destination.address);
  if (from.family === null || from.family !== to.family) return Buffer.from('PROXY UNKNOWN\r\n', 'latin1');
  const protocol = from.family === 'IPv4' ? 'TCP4' : 'TCP6';
  return Buffer.from(
    `PROXY ${protocol} ${from.address} ${to.address} ${source.port} ${destination.port}\r\n`,
    'latin1',
  );
}

/**
 * The v2 header (PROXY command, STREAM) for a connection from `source` to `destination`, without
 * TLVs; a LOCAL header when the families differ or are not IP.
 */
export function encodeProxyV2(source: ProxyEndpoint, destination: ProxyEndpoint): Buffer {
  const from = plainAddress(source.address);
  const to = plainAddress(destination.address);
  if (from.family === null || from.family !== to.family) {
    const local = Buffer.alloc(V2_FIXED);
    V2_SIGNATURE.copy(local);
    local[12] = 0x20;
    return local;
  }
  const v4 = from.family === 'IPv4';
  const block = v4 ? 12 : 36;
  const out = Buffer.alloc(V2_FIXED + block);
  V2_SIGNATURE.copy(out);
  out[12] = 0x21;
  out[13] = v4 ? 0x11 : 0x21;
  out.writeUInt16BE(block, 14);
  const size = v4 ? 4 : 16;
  writeAddress(out, V2_FIXED, from.address, v4);
  writeAddress(out, V2_FIXED + size, to.address, v4);
  out.writeUInt16BE(source.port, V2_FIXED + 2 * size);
  out.writeUInt16BE(destination.port, V2_FIXED + 2 * size + 2);
  return out;
}

function plainAddress(address: string): { family: 'IPv4' | 'IPv6' | null; address: string } {
  const mapped = address.startsWith('::ffff:') && isIPv4(address.slice(7));
  if (mapped) return { family: 'IPv4', address: address.slice(7) };
  if (isIPv4(address)) return { family: 'IPv4', address };
  if (isPlainIPv6(address)) return { family: 'IPv6', address };
  return { family: null, address };
}

function writeAddress(out: Buffer, at: number, address: string, v4: boolean): void {
  if (v4) {
    const parts = address.split('.');
    for (let i = 0; i < 4; i++) out[at + i] = Number(parts[i]);
    return;
  }
  // expand `::` and a trailing dotted quad into eight groups
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const q = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((q[0] << 8) | q[1]).toString(16)}:${((q[2] << 8) | q[3]).toString(16)}`;
  }
  const [head = '', rest] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups =
    rest === undefined
      ? left
      : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  for (let i = 0; i < 8; i++) out.writeUInt16BE(Number.parseInt(groups[i] ?? '0', 16), at + 2 * i);
}
