// upstream-hash-by keys: NGINX variable text (`$request_uri`, `${host}-x`, `$http_x_user`) compiled
// once per route into parts, evaluated per request. Variables: request_uri, uri, args, host,
// remote_addr, binary_remote_addr, scheme, request_method, http_<header>, cookie_<name>,
// arg_<name>; any other variable is empty.

import type { IncomingMessage } from 'node:http';
import { isIPv4 } from 'node:net';
import { peerOf } from '../access/access.ts';
import { argValue, cookieValue, headerValue, queryString } from '../request-values.ts';

export interface KeyInput {
  req: IncomingMessage;
  /** the normalised path ($uri) */
  uri: string;
  /** the normalised host ($host) */
  host: string;
  https: boolean;
  /** $remote_addr: the client address (the real IP when enabled); default the socket peer */
  remoteAddress?: string;
}

type Part = string | ((input: KeyInput) => string);
export type HashKey = (input: KeyInput) => string;

/** NGINX's $binary_remote_addr: the address's 4 or 16 bytes (here as a latin1 string). */
function binaryAddress(address: string): string {
  if (isIPv4(address)) return String.fromCharCode(...address.split('.').map(Number));
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return binaryAddress(mapped[1] as string);
  const [head = '', tail = ''] = address.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(head);
  const right = groups(tail);
  const all = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  let out = '';
  for (const group of all) {
    const value = Number.parseInt(group, 16) || 0;
    out += String.fromCharCode(value >> 8, value & 0xff);
  }
  return out;
}

function variable(name: string): Part {
  switch (name) {
    case 'request_uri':
      return ({ req }) => req.url ?? '';
    case 'uri':
      return ({ uri }) => uri;
    case 'args':
      return ({ req }) => queryString(req);
    case 'host':
      return ({ host }) => host;
    case 'remote_addr':
      return ({ req, remoteAddress }) => remoteAddress ?? peerOf(req.socket);
    case 'binary_remote_addr':
      return ({ req, remoteAddress }) => binaryAddress(remoteAddress ?? peerOf(req.socket));
    case 'scheme':
      return ({ https }) => (https ? 'https' : 'http');
    case 'request_method':
      return ({ req }) => req.method ?? '';
  }
  // NGINX takes an HTTP/2 request's :authority as its Host header (a request never has both)
  if (name === 'http_host')
    return ({ req }) => headerValue(req, 'host') ?? headerValue(req, ':authority') ?? '';
  if (name.startsWith('http_')) {
    const headerName = name.slice(5).toLowerCase();
    return ({ req }) => headerValue(req, headerName, true) ?? '';
  }
  if (name.startsWith('cookie_')) {
    const cookieName = name.slice(7);
    return ({ req }) => cookieValue(req, cookieName) ?? '';
  }
  if (name.startsWith('arg_')) {
    const argName = name.slice(4);
    return ({ req }) => argValue(req, argName);
  }
  return '';
}

/** Compiles a key template once; `$name` ends at the first character that cannot be in a name. */
export function compileHashKey(template: string): HashKey {
  const parts: Part[] = [];
  const pattern = /\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)/g;
  let last = 0;
  for (const match of template.matchAll(pattern)) {
    if (match.index > last) parts.push(template.slice(last, match.index));
    parts.push(variable((match[1] ?? match[2]) as string));
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));
  if (parts.length === 1 && typeof parts[0] === 'function') return parts[0];
  return (input) => {
    let key = '';
    for (const part of parts) key += typeof part === 'string' ? part : part(input);
    return key;
  };
}
