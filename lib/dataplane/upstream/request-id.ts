// Request ids (X-Request-ID, NGINX's $request_id) for requests that come without one.

import { randomBytes } from 'node:crypto';

let idBytes = Buffer.alloc(0);
let idOffset = 0;

/** 32 lower-case hex characters, like NGINX's `$request_id`; random bytes are drawn 4 KiB at a time. */
export function generateRequestId(): string {
  if (idOffset >= idBytes.length) {
    idBytes = randomBytes(4096);
    idOffset = 0;
  }
  const id = idBytes.toString('hex', idOffset, idOffset + 16);
  idOffset += 16;
  return id;
}
