// Values NGINX variables read from a request, looked up in rawHeaders (no header object is built):
// $http_<name>, $cookie_<name>, $args, $arg_<name>.

import type { IncomingMessage } from 'node:http';

/** The first value of a header; `name` lower-cased. `underscores`: match as NGINX's $http_<name>,
 * where the header's dashes read as underscores. */
export function headerValue(req: IncomingMessage, name: string, underscores = false): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const candidate = raw[i] as string;
    if (candidate.length !== name.length) continue;
    const lower = candidate.toLowerCase();
    if ((underscores ? lower.replaceAll('-', '_') : lower) === name) return raw[i + 1];
  }
  return undefined;
}

/** $cookie_<name>: the value of that cookie in the Cookie header(s), or undefined. */
export function cookieValue(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const header = raw[i] as string;
    if (header.length !== 6 || header.toLowerCase() !== 'cookie') continue;
    for (const pair of (raw[i + 1] as string).split(';')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
    }
  }
  return undefined;
}

/** $args: the query string without `?`. */
export function queryString(req: IncomingMessage): string {
  return argsOf(req.url ?? '');
}

/** The query string of a request target, ended at a `#` as NGINX ends it (and the path). */
export function argsOf(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return '';
  const hash = url.indexOf('#');
  if (hash === -1) return url.slice(q + 1);
  return hash < q ? '' : url.slice(q + 1, hash);
}

/** $arg_<name>: the first value of that query argument, as written (not decoded), or ''. */
export function argValue(req: IncomingMessage, name: string): string {
  for (const pair of queryString(req).split('&')) {
    const eq = pair.indexOf('=');
    if ((eq === -1 ? pair : pair.slice(0, eq)) === name) return eq === -1 ? '' : pair.slice(eq + 1);
  }
  return '';
}
