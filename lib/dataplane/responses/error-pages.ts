// The error responses the proxy writes itself, in the shape of NGINX's default error bodies minus the
// `<hr><center>nginx</center>` banner: ingress-nginx clients and monitors that look at the body or the
// reason phrase keep working, and nothing names the product or its version.

import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

export interface ErrorPage {
  status: number;
  /** the reason phrase of the status line (NGINX's `ngx_http_status_lines`) */
  statusMessage: string;
  /** the HTML body */
  body: Buffer;
}

/** Where NGINX's wording differs from Node's STATUS_CODES: [status line phrase, page title phrase]. */
const NGINX_PHRASES: Record<number, readonly [string, string]> = {
  401: ['Unauthorized', 'Authorization Required'],
  405: ['Not Allowed', 'Not Allowed'],
  413: ['Request Entity Too Large', 'Request Entity Too Large'],
  414: ['Request-URI Too Large', 'Request-URI Too Large'],
  503: ['Service Temporarily Unavailable', 'Service Temporarily Unavailable'],
  504: ['Gateway Time-out', 'Gateway Time-out'],
};

/**
 * NGINX's internal status for a request head over its buffers: answered `400 Bad Request` with a page
 * of its own ("Request Header Or Cookie Too Large") and logged as 400.
 */
export const HEADER_TOO_LARGE = 494;

function build(status: number): ErrorPage {
  if (status === HEADER_TOO_LARGE) {
    const body = Buffer.from(
      '<html>\r\n<head><title>400 Request Header Or Cookie Too Large</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>Request Header Or Cookie Too Large</center>\r\n</body>\r\n</html>\r\n',
      'latin1',
    );
    return { status: 400, statusMessage: 'Bad Request', body };
  }
  const nginx = NGINX_PHRASES[status];
  const fallback = STATUS_CODES[status] ?? 'Error';
  const statusMessage = nginx?.[0] ?? fallback;
  const title = `${status} ${nginx?.[1] ?? fallback}`;
  const body = Buffer.from(
    `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n</body>\r\n</html>\r\n`,
    'latin1',
  );
  return { status, statusMessage, body };
}

/**
 * Every status Node or NGINX names, built once when the module loads and never changed after: a
 * constant table, not a cache (each thread that loads the module has its own).
 */
const PAGES: ReadonlyMap<number, ErrorPage> = new Map(
  [
    ...new Set([...Object.keys(STATUS_CODES), ...Object.keys(NGINX_PHRASES), HEADER_TOO_LARGE].map(Number)),
  ].map((status) => [status, build(status)]),
);

/** The status a refusal goes out (and is logged) with: HEADER_TOO_LARGE is a 400. */
export function answeredStatus(status: number): number {
  return status === HEADER_TOO_LARGE ? 400 : status;
}

/** The page for a status: from the table, or built for this answer when the status has no name. */
export function errorPage(status: number): ErrorPage {
  return PAGES.get(status) ?? build(status);
}

/**
 * The statuses after whose page NGINX closes the connection (ngx_http_special_response_handler: what
 * follows a bad request, a body too large or an internal failure is not read as the next request).
 */
const CLOSES_CONNECTION: Readonly<Record<number, true>> = {
  400: true,
  [HEADER_TOO_LARGE]: true,
  413: true,
  414: true,
  495: true,
  496: true,
  497: true,
  500: true,
  501: true,
};

/**
 * Answers with NGINX's error page for `status`: text/html, exact Content-Length, headers set earlier
 * with `res.setHeader` kept, the connection closed after it for the statuses NGINX closes it after.
 * When the response head is already out, the only honest thing left is to cut the connection.
 */
export function sendErrorPage(res: ServerResponse, status: number): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (CLOSES_CONNECTION[status] === true) res.shouldKeepAlive = false;
  const page = errorPage(status);
  const headers = { 'content-type': 'text/html', 'content-length': page.body.length };
  // HTTP/2 has no reason phrase (Node warns when given one)
  if (res.req?.httpVersionMajor === 2) res.writeHead(page.status, headers);
  else res.writeHead(page.status, page.statusMessage, headers);
  res.end(page.body);
}

/**
 * The same page written as a raw HTTP/1.1 response on a socket that left the HTTP server (an Upgrade
 * request that could not be tunnelled), then the socket is ended. `headLines`: the route's own
 * header lines (ownResponseHeadLines).
 */
export function sendSocketErrorPage(socket: Duplex, status: number, headLines = ''): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(status, headLines));
}

/** A whole HTTP/1.1 error response (head and NGINX's page) that closes the connection. */
export function rawErrorResponse(status: number, headLines = ''): Buffer {
  const page = errorPage(status);
  return Buffer.concat([
    Buffer.from(
      `HTTP/1.1 ${page.status} ${page.statusMessage}\r\n${headLines}Content-Type: text/html\r\nContent-Length: ${page.body.length}\r\nConnection: close\r\n\r\n`,
      'latin1',
    ),
    page.body,
  ]);
}
