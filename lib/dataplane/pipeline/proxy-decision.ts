// The end of a decision (decide.ts), once the rewrite phase let the request through: the access
// phase (rate limits, allow/deny lists) and what answers: a route's own status, the error backend of
// a route without endpoints, or the upstream, with the canary picked and the proxy's request context.

import {
  type AccessPolicy,
  ADMITTED_WITH_SLOT,
  ALLOWLISTED,
  admit,
  leave,
  peerOf,
  proxiedServerPort,
} from '../access/access.ts';
import { zoneNow } from '../access/shared-zone.ts';
import { clientAddressOf } from '../listening/connection-settings.ts';
import { cookieValue } from '../request-values.ts';
import type { RewriteResult } from '../responses/rewrite.ts';
import { routeToCanary } from '../routing/canary.ts';
import type { PathMatch } from '../routing/router.ts';
import type { Action, CompiledServer, PathSettings, RoutedAction, Runtime } from '../routing/runtime.ts';
import { affinityCookie } from '../upstream/affinity-cookie.ts';
import { StickyBalancer } from '../upstream/balancers/sticky.ts';
import { mirrorRequestOf } from '../upstream/mirror.ts';
import { generateRequestId } from '../upstream/request-id.ts';
import type { ProxyTarget, SessionContext } from '../upstream/target.ts';
import type { Arrival, Decision, RequestHead } from './decide.ts';

type StatusAction = Extract<Action, { type: 'status' }> & PathSettings;
type ProxyAction = Extract<Action, { type: 'proxy' }> & PathSettings;

/**
 * A route that answers by itself: the built-in default backend (404) answers in NGINX's content
 * phase, after the access phase (a host's unmatched paths inherit its Ingress's lists); an unknown
 * upstream's 503 comes before it.
 */
export function statusDecision(
  runtime: Runtime,
  head: RequestHead,
  action: StatusAction,
  match: PathMatch<RoutedAction>,
  hostname: string,
  incomingId: string | undefined,
): Decision {
  const denied =
    action.access === null || action.status === 503
      ? 0
      : accessStatus(runtime, head, action.access, action.auth?.any === true);
  if (denied === ALLOWLISTED) {
    const status = action.status;
    return { kind: 'error', status, host: hostname, match, requestId: incomingId, allowlisted: true };
  }
  return { kind: 'error', status: denied || action.status, host: hostname, match, requestId: incomingId };
}

/** The access phase of a request answered at once: its status, 0, or ALLOWLISTED (satisfy any: skip auth); a connection slot is given back at once. */
function accessStatus(
  runtime: Runtime,
  head: RequestHead,
  access: AccessPolicy,
  satisfyAny: boolean,
): number {
  const peer = peerOf(head.socket);
  const client = runtime.http.clientAddress === null ? peer : clientAddressOf(head, runtime.http, peer);
  const verdict = admit(access, client, zoneNow(), satisfyAny);
  if (verdict >= 100) return verdict;
  if ((verdict & ADMITTED_WITH_SLOT) !== 0) leave(access, client);
  return verdict & ALLOWLISTED;
}

/**
 * A route whose upstream has no endpoints: its error backend answers when it has endpoints and
 * takes that code (default-backend, custom-http-errors), else the plain error page (503; 404 for
 * the default backend).
 */
export function emptyUpstreamDecision(
  runtime: Runtime,
  arrival: Arrival,
  head: RequestHead,
  server: CompiledServer,
  action: ProxyAction,
  match: PathMatch<RoutedAction>,
  hostname: string,
  incomingId: string | undefined,
): Decision {
  const errors = action.errors ?? null;
  const code = action.whenEmpty;
  if (
    errors === null ||
    errors.target.balancer.peers.length === 0 ||
    !(errors.whenEmpty || errors.codes.has(code))
  ) {
    return { kind: 'error', status: code, host: hostname, match, requestId: incomingId };
  }
  const http = runtime.http;
  const requestId = incomingId ?? generateRequestId();
  const peerAddress = peerOf(head.socket);
  const remoteAddress = http.clientAddress === null ? peerAddress : clientAddressOf(head, http, peerAddress);
  const https = arrival.https;
  return {
    kind: 'customError',
    code,
    errors,
    context: {
      https,
      listenPort: arrival.port,
      serverPort: proxiedServerPort(head.socket),
      remoteAddress,
      peerAddress,
      requestId,
      policy: http,
      hsts: https && server.tls ? runtime.tlsPolicy.hsts : null,
      hashKey: '',
      session: null,
    },
    host: hostname,
    match,
    requestId,
    clientAddress: remoteAddress,
  };
}

/**
 * The access phase (rate limits, then denylist/allowlist: access.ts), then the upstream: the canary
 * picked once per request (retries stay where it sent them) and the proxy's request context. `uri`:
 * $uri after rewrite-target.
 */
export function proxyDecision(
  runtime: Runtime,
  arrival: Arrival,
  head: RequestHead,
  server: CompiledServer,
  action: ProxyAction,
  match: PathMatch<RoutedAction>,
  uri: string,
  hostname: string,
  incomingId: string | undefined,
  rewritten: RewriteResult | null,
  certHeaders: string[] | undefined,
): Decision {
  const http = runtime.http;
  const peerAddress = peerOf(head.socket);
  const remoteAddress = http.clientAddress === null ? peerAddress : clientAddressOf(head, http, peerAddress);
  let release: (() => void) | null = null;
  let allowlisted = false;
  const access = action.access;
  if (access !== null) {
    const verdict = admit(access, remoteAddress, zoneNow(), action.auth?.any === true);
    // satisfy any: an allowlisted client skips authentication (the flags share the verdict)
    if (verdict > 0 && verdict < 100) {
      if ((verdict & ADMITTED_WITH_SLOT) !== 0) release = () => leave(access, remoteAddress);
      allowlisted = (verdict & ALLOWLISTED) !== 0;
    } else if (verdict !== 0) {
      return {
        kind: 'error',
        status: verdict,
        host: hostname,
        match,
        requestId: incomingId,
        clientAddress: remoteAddress,
      };
    }
  }
  const requestId = incomingId ?? (http.generateRequestId ? generateRequestId() : '');
  const https = arrival.https;
  const affinity = action.target.affinity ?? action.canary?.target.affinity ?? null;
  const cookie = affinity === null ? undefined : cookieValue(head, affinity.cookieName);
  const target = canaryOrMain(head, action, cookie, arrival.random);
  const canary = target === action.target ? '' : target.upstream;
  return {
    kind: 'proxy',
    target,
    canary,
    release,
    tracing: action.tracing ?? null,
    context: {
      https,
      listenPort: arrival.port,
      serverPort: proxiedServerPort(head.socket),
      remoteAddress,
      peerAddress,
      requestId,
      policy: allowlisted ? (action.auth?.policy ?? http) : http,
      errors: action.errors ?? null,
      hsts: https && server.tls ? runtime.tlsPolicy.hsts : null,
      hashKey:
        target.hashKey === null
          ? ''
          : target.hashKey({ req: head, uri, host: hostname, https, remoteAddress }),
      session: sessionOf(head, target, cookie, action.setsAffinityCookie, match.locationPath, https),
      upstreamHost:
        target.upstreamHostOf == null
          ? null
          : target.upstreamHostOf({ req: head, uri, host: hostname, https }) || null,
      mirror:
        action.mirror === null
          ? null
          : mirrorRequestOf(action.mirror, { req: head, uri, host: hostname, https, remoteAddress }),
      // every field present, undefined when unused: one object shape for every request (a spread
      // of an optional part would allocate it and leave the context in a shape of its own)
      clientCertHeaders: certHeaders,
      traceHeaders: undefined,
      path: rewritten === null ? undefined : rewritten.path,
      forwardedPrefix: rewritten === null ? undefined : rewritten.forwardedPrefix,
    },
    host: hostname,
    match,
    requestId,
    clientAddress: remoteAddress,
    allowlisted,
  };
}

/**
 * The upstream of a request: the canary or the route's own. A canary without endpoints never gets the
 * request. A request whose affinity cookie was minted by the main upstream stays on main, one minted
 * by a sticky canary goes to the canary; else the canary's header, cookie or weight decides (canary.ts).
 */
function canaryOrMain(
  head: RequestHead,
  action: ProxyAction,
  cookie: string | undefined,
  random: () => number,
): ProxyTarget {
  const main = action.target;
  const alternative = action.canary;
  if (alternative === null || alternative.target.balancer.peers.length === 0) return main;
  if (affinitized(cookie, main)) return main;
  const toCanary = affinitized(cookie, alternative.target) || routeToCanary(head, alternative, random);
  return toCanary ? alternative.target : main;
}

/** The session key of an affinity cookie (`<session key>|<backend key>`) minted by `target`'s upstream. */
function sessionKeyOf(cookie: string | undefined, target: ProxyTarget): string | null {
  if (cookie === undefined || !(target.balancer instanceof StickyBalancer)) return null;
  const bar = cookie.indexOf('|');
  if (bar === -1 || cookie.slice(bar + 1) !== target.balancer.backendKey) return null;
  return cookie.slice(0, bar);
}

const affinitized = (cookie: string | undefined, target: ProxyTarget): boolean =>
  sessionKeyOf(cookie, target) !== null;

/** The affinity part of a request's context: its session, and how to bake a new session's cookie. */
function sessionOf(
  head: RequestHead,
  target: ProxyTarget,
  cookie: string | undefined,
  setsCookie: boolean,
  locationPath: string,
  https: boolean,
): SessionContext | null {
  const affinity = target.affinity;
  if (affinity === null || !(target.balancer instanceof StickyBalancer)) return null;
  return {
    key: sessionKeyOf(cookie, target),
    changeOnFailure: affinity.changeOnFailure,
    cookie: setsCookie
      ? (value) =>
          affinityCookie(affinity, value, {
            https,
            locationPath,
            userAgent: head.headers['user-agent'] ?? '',
            now: Date.now(),
          })
      : null,
  };
}
