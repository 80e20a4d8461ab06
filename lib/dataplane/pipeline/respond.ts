// Carrying out a decision (decide.ts): on a request's response, or on the raw socket of an upgrade
// request. The proxy and the error backend take over from here; everything else is answered here.

import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { sendClientAuthRejection, sendSocketClientAuthRejection } from '../access/client-cert.ts';
import { DEFAULT_HTTP_POLICY } from '../http-policy.ts';
import type { RequestRecord } from '../request-record.ts';
import { sendErrorPage, sendSocketErrorPage } from '../responses/error-pages.ts';
import { type RouteResponse, responsePolicy } from '../responses/route-headers.ts';
import type { RoutedAction, Runtime } from '../routing/runtime.ts';
import { ownResponseHeadLines, setOwnResponseHeaders } from '../upstream/response-headers.ts';
import type { UpstreamProxy } from '../upstream/upstream-proxy.ts';
import type { Decision } from './decide.ts';

const REDIRECT_REASONS: Record<number, string> = {
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Moved Temporarily',
  303: 'See Other',
  304: 'Not Modified',
  305: 'Use Proxy',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
};

/**
 * A decision carried out on the response: an error page, a redirect, the error backend or the proxy.
 * `runtime`: the one that routed the request, whose header policy the proxy's own answers follow.
 */
export function respond(
  req: IncomingMessage,
  res: ServerResponse,
  decision: Decision,
  record: RequestRecord | null,
  runtime: Runtime | null,
  proxy: UpstreamProxy,
): void {
  // the route's response headers (custom-headers, CORS) on every response, whoever answers
  const routeResponse = routeResponseOf(decision);
  if (
    decision.kind === 'error' ||
    decision.kind === 'redirect' ||
    decision.kind === 'preflight' ||
    decision.kind === 'clientAuth' ||
    decision.kind === 'fixed'
  ) {
    if (runtime !== null) {
      // the status decides whether a snippet's add_header (without `always`) goes too
      const status =
        decision.kind === 'redirect'
          ? decision.code
          : decision.kind === 'preflight'
            ? 204
            : decision.kind === 'fixed'
              ? decision.status
              : undefined;
      setOwnResponseHeaders(res, responsePolicy(req, routeResponse, runtime.http), status);
    }
  } else if (routeResponse !== null) {
    decision.context.policy = responsePolicy(
      req,
      routeResponse,
      decision.context.policy ?? DEFAULT_HTTP_POLICY,
    );
  }
  if (decision.kind === 'preflight') sendPreflight(res);
  else if (decision.kind === 'error') sendErrorPage(res, decision.status);
  else if (decision.kind === 'clientAuth')
    sendClientAuthRejection(req, res, decision.status, runtime?.http.defaultType);
  else if (decision.kind === 'redirect') {
    sendRedirect(req, res, decision.code, decision.location);
  } else if (decision.kind === 'fixed')
    sendFixed(req, res, decision.status, decision.body, runtime?.http.defaultType ?? DEFAULT_TYPE);
  else if (decision.kind === 'customError')
    proxy.customError(req, res, decision.errors, decision.code, decision.context, record);
  else {
    if (decision.release) res.once('close', decision.release);
    proxy.web(req, res, decision.target, decision.context, record);
  }
}

/**
 * A decision carried out on an upgrade request's socket (HTTP/1.1 written by hand), closing it unless
 * the proxy takes the tunnel; `record.status` says what went out.
 */
export function respondUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  decision: Decision,
  record: RequestRecord | null,
  runtime: Runtime | null,
  proxy: UpstreamProxy,
): void {
  if (decision.kind === 'clientAuth') {
    const lines = ownHeadLines(req, decision, runtime);
    const status = sendSocketClientAuthRejection(socket, decision.status, runtime?.http.defaultType, lines);
    if (record !== null) record.status = status;
  } else if (decision.kind === 'preflight') {
    if (record !== null) record.status = 204;
    socket.end(
      `HTTP/1.1 204 No Content\r\n${ownHeadLines(req, decision, runtime, 204)}Content-Type: text/plain charset=UTF-8\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    );
  } else if (decision.kind === 'fixed' && (decision.body !== null || decision.status < 400)) {
    const status = decision.status;
    if (record !== null) record.status = status;
    const body = Buffer.from(decision.body ?? '', 'utf8');
    socket.end(
      Buffer.concat([
        Buffer.from(
          `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n${ownHeadLines(req, decision, runtime, status)}Content-Type: ${runtime?.http.defaultType ?? DEFAULT_TYPE}\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
        ),
        body,
      ]),
    );
  } else if (decision.kind === 'error' || decision.kind === 'customError' || decision.kind === 'fixed') {
    // an upgrade is not sent to an error backend: the plain error page
    const status =
      decision.kind === 'error'
        ? decision.status
        : decision.kind === 'fixed'
          ? decision.status
          : decision.code;
    if (record !== null) record.status = status;
    // a snippet's `return <4xx/5xx>` passes its status on (add_header ... always), as respond's does
    sendSocketErrorPage(
      socket,
      status,
      ownHeadLines(req, decision, runtime, decision.kind === 'fixed' ? status : undefined),
    );
  } else if (decision.kind === 'redirect') {
    const code = decision.code;
    if (record !== null) record.status = code;
    socket.end(
      `HTTP/1.1 ${code} ${REDIRECT_REASONS[code] ?? 'Redirect'}\r\n${ownHeadLines(req, decision, runtime, code)}Location: ${decision.location}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
  } else {
    const routeResponse = routeResponseOf(decision);
    if (routeResponse !== null && runtime !== null)
      decision.context.policy = responsePolicy(req, routeResponse, decision.context.policy ?? runtime.http);
    if (decision.release) socket.once('close', decision.release);
    proxy.upgrade(req, socket, head, decision.target, decision.context, record);
  }
}

/**
 * The route's response headers (custom-headers, CORS, snippet headers) as the lines of an answer
 * written by hand on an upgrade request's socket: the same headers `respond` sets on a request's
 * answer for that decision and status.
 */
export function ownHeadLines(
  req: IncomingMessage,
  decision: Decision,
  runtime: Runtime | null,
  status?: number,
): string {
  if (runtime === null) return '';
  return ownResponseHeadLines(responsePolicy(req, routeResponseOf(decision), runtime.http), status);
}

/** The custom-headers and CORS of the route a request matched, or null. */
export function routeResponseOf(decision: Decision): RouteResponse | null {
  return (decision.match?.value as RoutedAction | undefined)?.response ?? null;
}

/** The answer to a CORS preflight (ingress-nginx: 204, this Content-Type as written, no body). */
function sendPreflight(res: ServerResponse): void {
  res.writeHead(204, { 'Content-Type': 'text/plain charset=UTF-8', 'Content-Length': '0' });
  res.end();
}

/**
 * NGINX's default_type as ingress-nginx configures it (its ConfigMap key default-type, default
 * text/html): the Content-Type of a `return <code> text`.
 */
const DEFAULT_TYPE = 'text/html';

/**
 * A snippet's `return <code> [text]`: the text with the default type (NGINX sends the text of any
 * code so); without text, a 4xx/5xx gets the error page and any other code an empty body.
 */
/** A snippet's `return` with a text: NGINX's `default_type` (the ConfigMap's default-type) names it. */
function sendFixed(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: string | null,
  type: string,
): void {
  if (body === null && status >= 400) {
    sendErrorPage(res, status);
    return;
  }
  const bytes = Buffer.from(body ?? '', 'utf8');
  if (body === null || status === 204) {
    res.writeHead(status, status === 204 ? {} : { 'Content-Length': '0' });
    res.end();
    return;
  }
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': bytes.length });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}

/** A redirect answered by the proxy itself, with NGINX's body. */
export function sendRedirect(
  req: IncomingMessage,
  res: ServerResponse,
  code: number,
  location: string,
): void {
  const title = `${code} ${REDIRECT_REASONS[code] ?? 'Redirect'}`;
  const body = `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n</body>\r\n</html>\r\n`;
  res.writeHead(code, {
    Location: location,
    'Content-Type': 'text/html',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
