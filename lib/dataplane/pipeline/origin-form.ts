// The request target in the form the decision reads: an absolute-form target turned into origin form.

import type { IncomingMessage } from 'node:http';
import { absoluteForm } from '../routing/router.ts';

/**
 * An absolute-form request (`GET http://host/p HTTP/1.1`) becomes the origin-form request it stands
 * for: its target's authority replaces the Host header (HTTP/1.1 says a server must ignore the
 * received Host then: the target names the host; NGINX too takes $host from the request line), so routing, the upstream's Host
 * and X-Forwarded-Host all see one host, and `req.url` is the path and query. Any other target that
 * does not start with "/" is left alone: `*` was refused already (rejectedStatus), the rest are
 * refused with 400 where the path is normalised.
 */
export function toOriginForm(req: IncomingMessage): void {
  const split = absoluteForm(req.url ?? '');
  if (split === null) return;
  req.url = split.target;
  const raw = req.rawHeaders;
  let at = -1;
  for (let i = 0; i < raw.length && at === -1; i += 2)
    if ((raw[i] as string).toLowerCase() === 'host') at = i;
  if (at === -1) raw.push('Host', split.authority);
  else raw[at + 1] = split.authority;
  req.headers.host = split.authority;
}
