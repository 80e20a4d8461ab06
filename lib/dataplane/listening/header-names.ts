// Request header names NGINX does not accept, dropped once when a request arrives, so that routing
// (canary-by-header), authentication (auth-url's copy of the request), NGINX variables ($http_*,
// upstream-hash-by), the access log and the upstream all see the same headers, as NGINX's parser
// never hands such a header to any of them.
//
// NGINX takes letters, digits and `-` in a name; `_` only with underscores_in_headers
// (`enable-underscores-in-headers`, off by default). Any other name is invalid and, with
// ignore_invalid_headers (`ignore-invalid-headers`, on by default), ignored: the request goes on
// without it. With `ignore-invalid-headers: false` NGINX keeps every name, underscores included.
// Node's parser has already refused (400) names with bytes outside the RFC 9110 token set (spaces,
// `@`, `(`, `:`, control bytes...), which NGINX would ignore instead: what is left to judge here are
// the token characters NGINX does not take (`_ ! # $ % & ' * + . ^ \` | ~`).

import type { IncomingMessage } from 'node:http';

/** Letters, digits and `-`: what NGINX takes in a header name. */
const NGINX_NAME = new Uint8Array(128);
for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-')
  NGINX_NAME[c.charCodeAt(0)] = 1;

const UNDERSCORE = 95;
const COLON = 58;

/** Whether NGINX would ignore a header of this name (an HTTP/2 pseudo-header never). */
export function ignoredHeaderName(name: string, underscores: boolean): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 128 && NGINX_NAME[c] === 1) continue;
    if (c === UNDERSCORE ? underscores : c === COLON && i === 0) continue;
    return true;
  }
  return false;
}

/**
 * Removes the headers NGINX would ignore from the request, in place: `rawHeaders` (what every reader
 * in the data plane walks), `headers` and `headersDistinct`. A scan of the names' bytes; nothing is
 * allocated unless a header is dropped.
 */
export function dropIgnoredHeaders(req: IncomingMessage, underscores: boolean, ignoreInvalid: boolean): void {
  if (!ignoreInvalid) return;
  const raw = req.rawHeaders;
  let built: Array<Record<string, unknown> | undefined> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!ignoredHeaderName(name, underscores)) continue;
    // Node builds these objects lazily from the header count it parsed, which would then run past the
    // shortened rawHeaders: build them before it shrinks
    built ??= [req.headers, (req as { headersDistinct?: Record<string, unknown> }).headersDistinct];
    raw.splice(i, 2);
    i -= 2;
    const lower = name.toLowerCase();
    for (const headers of built) if (headers !== undefined) delete headers[lower];
  }
}
