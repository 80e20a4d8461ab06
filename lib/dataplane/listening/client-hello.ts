// The server name of a TLS ClientHello, read from the first bytes of a connection without
// terminating TLS (ssl-passthrough peeks at it to choose between relaying and the TLS server).
// Pure and total: every byte sequence gives an answer, never an exception.
//
// The layout (TLS 1.3's records, handshake and ClientHello; the server_name extension of TLS's extensions):
//   record:       type(1)=22 handshake, legacy_version(2) major 3, length(2) 1..2^14, fragment
//   handshake:    msg_type(1)=1 client_hello, length(3), body (may span several records)
//   ClientHello:  legacy_version(2), random(32), session_id<0..32>, cipher_suites<2..2^16-2>,
//                 compression_methods<1..2^8-1>, extensions<8..2^16-1> (absent in an SSL 3 style hello)
//   server_name:  extension 0: ServerNameList<1..2^16-1> of name_type(1) + HostName<1..2^16-1>;
//                 the first host_name (type 0) is the name
// Anything that does not follow it is "not a ClientHello" and goes to the TLS server unchanged, which
// fails its handshake as it would have without the peek.

/** What the bytes so far say. */
export type ClientHelloPeek =
  /** a TLS record start that needs more bytes to hold the whole ClientHello */
  | { kind: 'more' }
  /** a complete ClientHello; `servername`: its host_name, lower-case without a trailing dot, or null */
  | { kind: 'hello'; servername: string | null }
  /** not TLS, malformed, or larger than MAX_PEEK_BYTES: hand the connection over as it is */
  | { kind: 'other' };

/** The most bytes a peek reads: one full record (2^14 bytes of ClientHello and its 5-byte header). */
export const MAX_PEEK_BYTES = 16_384 + 5;

const RECORD_HEADER = 5;
const MAX_RECORD = 16_384;
const HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const SERVER_NAME = 0;
const HOST_NAME = 0;

const MORE: ClientHelloPeek = { kind: 'more' };
const OTHER: ClientHelloPeek = { kind: 'other' };

/**
 * Reads the ClientHello at the start of `data` (everything received so far on the connection).
 * Call again with more bytes after `more`; past MAX_PEEK_BYTES the answer is `other`.
 */
export function peekClientHello(data: Uint8Array): ClientHelloPeek {
  // the handshake message, gathered from the fragments of consecutive handshake records
  const fragments: Uint8Array[] = [];
  let gathered = 0;
  let needed = -1;
  let offset = 0;
  while (true) {
    if (needed !== -1 && gathered >= needed) break;
    if (offset + RECORD_HEADER > data.length) return incomplete(data);
    if (data[offset] !== HANDSHAKE || data[offset + 1] !== 3) return OTHER;
    const length = ((data[offset + 3] as number) << 8) | (data[offset + 4] as number);
    if (length === 0 || length > MAX_RECORD) return OTHER;
    const end = offset + RECORD_HEADER + length;
    // a record may end beyond the bytes received: take what there is, it may already hold the hello
    const fragment = data.subarray(offset + RECORD_HEADER, Math.min(end, data.length));
    fragments.push(fragment);
    gathered += fragment.length;
    if (needed === -1 && gathered >= 4) {
      const head = concat(fragments, gathered, 4);
      if (head[0] !== CLIENT_HELLO) return OTHER;
      needed = 4 + (((head[1] as number) << 16) | ((head[2] as number) << 8) | (head[3] as number));
      if (needed > MAX_PEEK_BYTES) return OTHER;
    }
    if (end > data.length) {
      if (needed !== -1 && gathered >= needed) break;
      return incomplete(data);
    }
    offset = end;
  }
  const message = concat(fragments, gathered, needed);
  return parseClientHello(message.subarray(4));
}

function incomplete(data: Uint8Array): ClientHelloPeek {
  return data.length >= MAX_PEEK_BYTES ? OTHER : MORE;
}

/** The first `length` bytes of the fragments, joined. */
function concat(fragments: readonly Uint8Array[], gathered: number, length: number): Uint8Array {
  const first = fragments[0] as Uint8Array;
  if (first.length >= length) return first.subarray(0, length);
  const out = new Uint8Array(Math.min(gathered, length));
  let at = 0;
  for (const fragment of fragments) {
    const take = Math.min(fragment.length, out.length - at);
    out.set(fragment.subarray(0, take), at);
    at += take;
    if (at === out.length) break;
  }
  return out;
}

/** The body of a client_hello handshake message. */
function parseClientHello(body: Uint8Array): ClientHelloPeek {
  let at = 2 + 32;
  if (at + 1 > body.length) return OTHER;
  const sessionId = body[at] as number;
  if (sessionId > 32) return OTHER;
  at += 1 + sessionId;
  if (at + 2 > body.length) return OTHER;
  const suites = u16(body, at);
  if (suites < 2 || suites % 2 !== 0) return OTHER;
  at += 2 + suites;
  if (at + 1 > body.length) return OTHER;
  const compression = body[at] as number;
  if (compression < 1) return OTHER;
  at += 1 + compression;
  if (at === body.length) return { kind: 'hello', servername: null };
  if (at + 2 > body.length) return OTHER;
  const extensionsEnd = at + 2 + u16(body, at);
  if (extensionsEnd !== body.length) return OTHER;
  at += 2;
  let servername: string | null = null;
  let seen = false;
  while (at < extensionsEnd) {
    if (at + 4 > extensionsEnd) return OTHER;
    const type = u16(body, at);
    const end = at + 4 + u16(body, at + 2);
    if (end > extensionsEnd) return OTHER;
    if (type === SERVER_NAME) {
      // TLS allows one extension of a type at most (the TLS server refuses the hello): no guessing which
      if (seen) return OTHER;
      seen = true;
      const names = serverNameOf(body.subarray(at + 4, end));
      if (names === undefined) return OTHER;
      servername = names;
    }
    at = end;
  }
  return { kind: 'hello', servername };
}

/**
 * The host_name of a server_name extension's data: null when it names none or an unusable one (not a
 * host name), undefined when the extension is malformed.
 */
function serverNameOf(ext: Uint8Array): string | null | undefined {
  if (ext.length < 2) return undefined;
  const end = 2 + u16(ext, 0);
  if (end !== ext.length || end === 2) return undefined;
  let at = 2;
  let name: string | null = null;
  while (at < end) {
    if (at + 3 > end) return undefined;
    const type = ext[at] as number;
    const length = u16(ext, at + 1);
    const stop = at + 3 + length;
    if (length === 0 || stop > end) return undefined;
    if (type === HOST_NAME && name === null) name = hostName(ext.subarray(at + 3, stop));
    at = stop;
  }
  return name;
}

/** Printable ASCII without spaces, lower-cased, one trailing dot removed (as sni.ts and the router). */
function hostName(bytes: Uint8Array): string | null {
  let name = '';
  for (const byte of bytes) {
    if (byte <= 0x20 || byte >= 0x7f) return null;
    name += String.fromCharCode(byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte);
  }
  if (name.endsWith('.')) name = name.slice(0, -1);
  return name === '' ? null : name;
}

function u16(bytes: Uint8Array, at: number): number {
  return ((bytes[at] as number) << 8) | (bytes[at + 1] as number);
}
