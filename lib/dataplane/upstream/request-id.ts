// Request ids (X-Request-ID, NGINX's $request_id) for requests that come without one.

import { randomBytes } from 'node:crypto';

/** ids per draw of random bytes */
const IDS_PER_DRAW = 256;

let idHex = '';
let idOffset = 0;

/**
 * 32 lower-case hex characters, like NGINX's `$request_id`. The random bytes of 256 ids are drawn and
 * turned into hex at once: an id is then a slice of that text, not a native call and a new string
 * encoded from bytes per request.
 */
export function generateRequestId(): string {
  if (idOffset >= idHex.length) {
    idHex = randomBytes(16 * IDS_PER_DRAW).toString('hex');
    idOffset = 0;
  }
  const id = idHex.slice(idOffset, idOffset + 32);
  idOffset += 32;
  return id;
}
