// What a request gets, decided from the compiled runtime and the request's head alone, in
// ingress-nginx's phase order: the server (blocked User-Agent or Referer, client certificate, www redirect, app-root), then the
// location's rewrite phase (CORS preflight, the route's redirect, body size, rewrite-target, a
// denied location, ssl-redirect), then the access phase and the content (a status, the error backend
// or the upstream: proxy-decision.ts). The socket code (requests.ts, respond.ts) only carries the
// decision out, so the order and each outcome are tested as a table (test/dataplane/decide.test.ts).
//
// Pure but for three things the runtime or the arrival owns: the access phase consults the route's
// rate-limit and connection zones (state of the runtime, as a balancer's is; a `proxy` decision may
// hold a connection slot that its `release` gives back), the canary weight draws `arrival.random`,
// and a proxied request without X-Request-ID gets a fresh id.

import type { IncomingMessage } from 'node:http';
import { listed, peerOf, unmapped } from '../access/access.ts';
import { serverClientAuth } from '../access/client-cert.ts';
import { blockedByHeaders } from '../access/header-blocks.ts';
import { clientAddressOf, forwardedHttps } from '../listening/connection-settings.ts';
import type { CustomErrors } from '../responses/custom-errors.ts';
import { applyRewrite } from '../responses/rewrite.ts';
import { isPreflight } from '../responses/route-headers.ts';
import { normalizeHost, normalizePath, type PathMatch } from '../routing/router.ts';
import type { Action, CompiledServer, RoutedAction, Runtime } from '../routing/runtime.ts';
import type { CompiledTracing } from '../tracing/route-tracing.ts';
import type { ProxyTarget, RequestContext } from '../upstream/target.ts';
import { emptyUpstreamDecision, proxyDecision, statusDecision } from './proxy-decision.ts';

/**
 * What the decision reads of a request: its head as Node parsed it (method, target, headers and
 * rawHeaders; the peer address and TLS state through `socket`), never its body. The data plane hands
 * over the IncomingMessage itself, so deciding builds no object of its own per request; a test makes
 * one from a few fields and a stand-in socket.
 */
export type RequestHead = IncomingMessage;

/** Where a request arrived: one per listener, made once. */
export interface Arrival {
  readonly https: boolean;
  /** $server_port as redirects and X-Forwarded-Port name it: 443 on HTTPS (the Service's port), the
   * HTTP listener's own port (known once it listens) */
  port: number;
  /** the canary weight draw (the balancers' random source, which tests seed) */
  readonly random: () => number;
}

/** Where the router placed a request: for the request record (logs, metrics). */
export interface Placement {
  /** normalized Host ('' when none) */
  host: string;
  /** null: not routed (no runtime yet, or a malformed path) */
  match: PathMatch<Action> | null;
  /** the incoming X-Request-ID, or the generated one for proxied requests */
  requestId: string | undefined;
  /** the client address (real IP when enabled), for the request record; undefined: the socket peer */
  clientAddress?: string;
  /** satisfy any: the allowlist let the client in, the route's authentication is skipped */
  allowlisted?: boolean;
}

/**
 * What a request gets: a `redirect`; a denial, which is an `error` (403 of the lists, a limit's
 * status) or a `clientAuth` rejection; an answer of the proxy itself (`error`, `preflight`, or
 * `customError`: the error backend); or `proxy` to the upstream. Every kind says where the request
 * was placed (Placement).
 */
export type Decision = Placement &
  (
    | { kind: 'error'; status: number }
    /** auth-tls: 400 (495/496: missing or bad client certificate), 403 (match-cn), 421 (SNI ≠ Host) */
    | { kind: 'clientAuth'; status: 495 | 496 | 403 | 421 }
    /** a CORS preflight from an allowed Origin: 204 with the route's CORS headers */
    | { kind: 'preflight' }
    /** `location`: permanent-/temporal-redirect's URL; null: the ssl-redirect to https */
    | { kind: 'redirect'; code: number; location: string }
    /** a snippet's `return <code> [text]`: the text with NGINX's default_type, or the error page (null) */
    | { kind: 'fixed'; status: number; body: string | null }
    /** `canary`: the canary upstream when the canary serves this request ($proxy_alternative_upstream_name), else '';
     * `release`: frees the request's limit-connections slot when it ends, or null */
    | {
        kind: 'proxy';
        target: ProxyTarget;
        context: RequestContext;
        canary: string;
        release?: (() => void) | null;
        /** the route's OpenTelemetry span settings, or null: no span */
        tracing?: CompiledTracing | null;
      }
    /** the route has no endpoints and its error backend answers (default-backend, custom-http-errors) */
    | { kind: 'customError'; code: number; errors: CustomErrors; context: RequestContext }
  );

/**
 * The decision for one request (and for a WebSocket upgrade: the same phases). `runtime` null: not
 * ready (503). The request's target is in origin form already (requests.ts turns an absolute-form
 * target into one).
 */
export function decide(runtime: Runtime | null, arrival: Arrival, head: RequestHead): Decision {
  if (runtime === null) return { kind: 'error', status: 503, host: '', match: null, requestId: undefined };
  const path = normalizePath(head.url ?? '/');
  if (path === null) return { kind: 'error', status: 400, host: '', match: null, requestId: undefined };
  // block-cidrs: denied whatever the host or path (NGINX's http-level deny)
  if (runtime.blockCidrs !== null) {
    const blocked = blockedClient(runtime, head);
    if (blocked !== null) return blocked;
  }
  // the headers routing needs, read from rawHeaders: `req.headers` would build an object per request
  let host: string | undefined;
  let incomingId: string | undefined;
  let contentLength: string | undefined;
  const raw = head.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4) {
      if (host === undefined && name.toLowerCase() === 'host') host = raw[i + 1];
    } else if (name.length === 10) {
      // HTTP/2: the authority pseudo-header is the Host
      if (host === undefined && name === ':authority') host = raw[i + 1];
    } else if (name.length === 12) {
      if (incomingId === undefined && name.toLowerCase() === 'x-request-id') incomingId = raw[i + 1];
    } else if (name.length === 14) {
      if (contentLength === undefined && name.toLowerCase() === 'content-length') contentLength = raw[i + 1];
    }
  }
  const hostname = normalizeHost(host);
  const server = runtime.hosts.lookup(hostname);
  if (incomingId === '') incomingId = undefined;
  // block-user-agents, block-referers: ingress-nginx's `if ($block_ua) { return 403; }` opens every
  // server block, before anything of the server or its locations
  if (runtime.headerBlocks !== null && blockedByHeaders(runtime.headerBlocks, head)) {
    return { kind: 'error', status: 403, host: hostname, match: null, requestId: incomingId };
  }
  // server level: the client certificate (auth-tls), before any redirect or location
  const clientAuth = serverClientAuth(head, arrival.https, hostname, server.clientAuth);
  if (clientAuth !== null) {
    if (clientAuth.kind === 'redirect') {
      const location = clientAuth.location;
      return { kind: 'redirect', code: 302, location, host: hostname, match: null, requestId: incomingId };
    }
    if (clientAuth.kind === 'reject') {
      const { status } = clientAuth;
      if (status === 503)
        return { kind: 'error', status, host: hostname, match: null, requestId: incomingId };
      return { kind: 'clientAuth', status, host: hostname, match: null, requestId: incomingId };
    }
  }
  // from-to-www-redirect: the whole name redirects, port always included ($server_port: 443 on HTTPS)
  if (server.redirectTo !== null) {
    let uri = head.url ?? '/';
    if (uri.endsWith('/')) uri = uri.slice(0, -1);
    const location = `${arrival.https ? 'https' : 'http'}://${server.redirectTo}:${arrival.port}${uri}`;
    const code = runtime.model.config.httpRedirectCode;
    return { kind: 'redirect', code, location, host: hostname, match: null, requestId: incomingId };
  }
  // the head and the port's protocol matter only to a server with HTTPRoute conditions
  const match = server.paths.match(path, head, arrival.https);
  // app-root acts at server level, before any location (and so before every other redirect)
  if (server.appRoot !== null && path === '/') {
    const location = `${arrival.https ? 'https' : 'http'}://${host ?? ''}${server.appRoot}`;
    return { kind: 'redirect', code: 302, location, host: hostname, match, requestId: incomingId };
  }
  const certHeaders = clientAuth?.kind === 'pass' ? clientAuth.headers : undefined;
  // the values travel as arguments: an object holding them would be one more allocation per request
  return locationDecision(
    runtime,
    arrival,
    head,
    server,
    match,
    path,
    hostname,
    host,
    incomingId,
    contentLength,
    certHeaders,
  );
}

/**
 * The location's rewrite phase (ingress-nginx's order: preflight, the route's redirect, body size,
 * rewrite-target, a denied location, ssl-redirect), then what answers: a status route, the error
 * backend of a route without endpoints, or the upstream.
 */
function locationDecision(
  runtime: Runtime,
  arrival: Arrival,
  head: RequestHead,
  server: CompiledServer,
  match: PathMatch<RoutedAction>,
  path: string,
  hostname: string,
  requestHost: string | undefined,
  incomingId: string | undefined,
  contentLength: string | undefined,
  certHeaders: string[] | undefined,
): Decision {
  const action = match.value;
  // CORS preflight: the first thing the location does (before redirects, ssl-redirect, access and 503)
  if (action.response !== null && isPreflight(head, action.response)) {
    return { kind: 'preflight', host: hostname, match, requestId: incomingId };
  }
  // a route's own redirect comes before ssl-redirect (ingress-nginx's rewrite phase order)
  if (action.type === 'redirect') {
    const { code, locationOf } = action;
    const location =
      locationOf == null
        ? action.location
        : locationOf({ req: head, uri: path, host: hostname, https: arrival.https });
    return { kind: 'redirect', code, location, host: hostname, match, requestId: incomingId };
  }
  // a configuration-snippet's `return <code> [text]`: the rewrite phase ends there
  if (action.type === 'fixed') {
    const { status, body } = action;
    return { kind: 'fixed', status, body, host: hostname, match, requestId: incomingId };
  }
  // proxy-body-size: a declared length over the location's limit, before the upstream is involved
  if (contentLength !== undefined && action.type === 'proxy' && tooLarge(contentLength, action.target)) {
    return { kind: 'error', status: 413, host: hostname, match, requestId: incomingId };
  }
  const https = arrival.https;
  // use-forwarded-headers: the scheme the client used in front of the load balancer decides
  const secure = runtime.http.useForwardedHeaders ? forwardedHttps(head, https) : https;
  // rewrite-target (ngx_http_rewrite, before lua's ssl-redirect): a URL target answers 302
  const rewritten =
    action.rewrite === null
      ? null
      : applyRewrite(action.rewrite, path, head.url ?? '/', match.captures, https);
  if (rewritten?.redirect !== undefined) {
    const location = rewritten.redirect;
    return { kind: 'redirect', code: 302, location, host: hostname, match, requestId: incomingId };
  }
  // a denied location answers 503 in NGINX's rewrite phase, before lua's ssl-redirect
  if (action.type === 'status' && action.denied === true) {
    return { kind: 'error', status: 503, host: hostname, match, requestId: incomingId };
  }
  const toHttps = action.httpsRedirect;
  if (!secure && toHttps !== null) {
    const forwardedHost = runtime.http.useForwardedHeaders;
    const location = httpsLocation(
      head,
      requestHost ?? hostname,
      toHttps.preserveTrailingSlash,
      forwardedHost,
      toHttps.withPort,
    );
    return { kind: 'redirect', code: toHttps.code, location, host: hostname, match, requestId: incomingId };
  }
  if (action.type === 'status') return statusDecision(runtime, head, action, match, hostname, incomingId);
  if (action.target.balancer.peers.length === 0) {
    return emptyUpstreamDecision(runtime, arrival, head, server, action, match, hostname, incomingId);
  }
  const uri = rewritten?.uri ?? path;
  return proxyDecision(
    runtime,
    arrival,
    head,
    server,
    action,
    match,
    uri,
    hostname,
    incomingId,
    rewritten,
    certHeaders,
  );
}

/** block-cidrs: the 403 of a listed client (or one without an address), else null. */
function blockedClient(runtime: Runtime, head: RequestHead): Decision | null {
  const peer = peerOf(head.socket);
  const client = runtime.http.clientAddress === null ? peer : clientAddressOf(head, runtime.http, peer);
  if (!listed(runtime.blockCidrs!, unmapped(client)) && client !== '') return null;
  return { kind: 'error', status: 403, host: '', match: null, requestId: undefined, clientAddress: client };
}

/** A Content-Length over the target's proxy-body-size (0: unlimited). */
function tooLarge(contentLength: string, target: ProxyTarget): boolean {
  const limit = target.maxBodySize ?? 0;
  return limit > 0 && Number(contentLength) > limit;
}

/**
 * ingress-nginx ssl-redirect: `https://<host without port><request URI minus one trailing slash>`
 * (the slash kept with preserve-trailing-slash); with use-port-in-redirects `https://<host>:443...`:
 * NGINX names its HTTPS listen port, which the Service maps from 443 (as X-Forwarded-Port says 443).
 * `requestHost` is the Host header or HTTP/2 :authority that routing judged (NGINX's $http_host, or
 * $host when there is none): `head.headers.host` is empty on HTTP/2, and `https://` + `/evil.example/x`
 * would send a browser to another site.
 */
export function httpsLocation(
  head: RequestHead,
  requestHost: string,
  preserveTrailingSlash = false,
  forwardedHost = false,
  withPort = false,
): string {
  const forwarded = forwardedHost ? head.headers['x-forwarded-host'] : undefined;
  const hostHeader = typeof forwarded === 'string' && forwarded !== '' ? forwarded : requestHost;
  const host = hostHeader.startsWith('[')
    ? hostHeader.slice(0, hostHeader.indexOf(']') + 1)
    : hostHeader.split(':')[0];
  let uri = head.url ?? '/';
  if (!preserveTrailingSlash && uri.endsWith('/')) uri = uri.slice(0, -1);
  return withPort ? `https://${host}:443${uri}` : `https://${host}${uri}`;
}
