// The authentication step of the access phase (after rate limits and allow/deny): auth-type basic,
// then external auth (auth-url, or the ConfigMap's global-auth-url), as NGINX runs auth_basic before
// auth_request. Compiled once per route; a route whose configuration could not be resolved was
// compiled to a 503 instead (AUTH_UNAVAILABLE), so nothing here ever lets a request through
// unchecked.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { LocationAnnotations } from '../../model/annotations/index.ts';
import type { GlobalConfig } from '../../model/index.ts';
import type { HttpPolicy } from '../http-policy.ts';
import { headerValue } from '../request-values.ts';
import { errorPage } from '../responses/error-pages.ts';
import { type BasicAuthCheck, type BcryptResults, checkBasicAuth, compileBasicAuth } from './basic-auth.ts';
import {
  type AuthRequestInput,
  compileExternalAuth,
  type ExternalAuthCheck,
  type ExternalAuthClient,
} from './external-auth.ts';

export interface RouteAuth {
  basic: BasicAuthCheck | null;
  external: ExternalAuthCheck | null;
  /** the upstream request's policy once authenticated: Authorization removed with basic auth, the
   * client's copies of auth-response-headers replaced */
  policy: HttpPolicy;
  /** satisfy any: one access module letting the request in is enough (basic auth, or the auth service) */
  any: boolean;
}

export type AuthVerdict =
  /** proxy with this policy */
  | { allowed: true; policy: HttpPolicy }
  /** answer `status` (302: to `location`) with these headers */
  | { allowed: false; status: number; headers: Array<[string, string | string[]]>; location: string | null };

function replacing(policy: HttpPolicy, names: readonly string[]): HttpPolicy {
  if (names.length === 0) return policy;
  const replaced = Object.assign(Object.create(null) as Record<string, true>, policy.upstreamHeaderNames);
  for (const name of names) replaced[name] = true;
  return { ...policy, upstreamHeaderNames: replaced };
}

/**
 * A route's authentication: null when it has none, 'denied' when its configuration is unusable
 * (the route answers 503). `locationPath` decides no-auth-locations; routes of no Ingress never get
 * global auth. `bcryptResults`: the data plane's, kept across its runtimes (default: the route's own).
 */
export function compileRouteAuth(
  annotations: LocationAnnotations,
  locationPath: string,
  hasIngress: boolean,
  config: GlobalConfig,
  http: HttpPolicy,
  bcryptResults?: BcryptResults,
  /** the route's proxy-buffer-size: the auth service's response head limit (0: undici's default) */
  maxResponseHead = 0,
): RouteAuth | 'denied' | null {
  const basic = annotations.basicAuth.auth;
  let external = annotations.externalAuth.auth;
  const global = config.globalAuth;
  if (
    external === null &&
    hasIngress &&
    global.url !== '' &&
    annotations.externalAuth.enableGlobalAuth &&
    !global.noAuthLocations.some((prefix) => locationPath.startsWith(prefix))
  ) {
    external = {
      url: global.url,
      method: global.method,
      signin: global.signin,
      signinRedirectParam: global.signinRedirectParam,
      responseHeaders: global.responseHeaders,
      requestRedirect: global.requestRedirect,
      proxySetHeaders: '',
      proxyHeaders: [],
      alwaysSetCookie: global.alwaysSetCookie,
      cacheKey: global.cacheKey,
      cacheDuration: global.cacheDuration,
      denied: null,
    };
  }
  if (basic === null && external === null) return null;
  if (basic?.denied != null || external?.denied != null) return 'denied';
  const check = external === null ? null : compileExternalAuth(external, maxResponseHead);
  const names = [...(basic === null ? [] : ['authorization']), ...(check?.responseHeaders ?? [])];
  return {
    basic: basic === null ? null : compileBasicAuth(basic, bcryptResults),
    external: check,
    policy: replacing(http, names),
    any: annotations.satisfy.any,
  };
}

function externalStep(
  check: ExternalAuthCheck,
  policy: HttpPolicy,
  client: ExternalAuthClient,
  input: AuthRequestInput,
): Promise<AuthVerdict> {
  return client.check(check, input).then((result) => {
    if (!result.allowed) return result;
    if (result.upstream.length === 0 && result.cookies.length === 0) return { allowed: true, policy };
    const upstreamHeaders = [...policy.upstreamHeaders, ...result.upstream];
    const responseHeaders = [...policy.responseHeaders];
    for (const cookie of result.cookies) responseHeaders.push('set-cookie', cookie);
    return { allowed: true, policy: { ...policy, upstreamHeaders, responseHeaders } };
  });
}

/** Runs the route's checks; synchronous when no bcrypt hash or auth service is involved. */
export function authenticate(
  auth: RouteAuth,
  req: IncomingMessage,
  client: ExternalAuthClient,
  input: AuthRequestInput,
): AuthVerdict | Promise<AuthVerdict> {
  const denied = (basic: BasicAuthCheck): AuthVerdict => ({
    allowed: false,
    status: 401,
    headers: [['www-authenticate', basic.challenge]],
    location: null,
  });
  const afterBasic = (): AuthVerdict | Promise<AuthVerdict> =>
    auth.external === null
      ? { allowed: true, policy: auth.policy }
      : externalStep(auth.external, auth.policy, client, input);
  if (auth.basic === null) return afterBasic();
  const basic = auth.basic;
  if (auth.any) return eitherStep(auth, basic, client, input, denied(basic));
  const ok = checkBasicAuth(basic, headerValue(req, 'authorization'));
  if (ok === true) return afterBasic();
  if (ok === false) return denied(basic);
  return ok.then((passed) => (passed ? afterBasic() : denied(basic)));
}

/**
 * satisfy any with basic auth: valid credentials let the request in without asking the auth service;
 * otherwise the auth service may (NGINX runs auth_basic, then auth_request, and stops at the first
 * that allows). When both refuse, the answer stays basic auth's 401 (NGINX keeps the first 401), or
 * the auth service's sign-in redirect; an auth service error (500) is answered as is.
 */
function eitherStep(
  auth: RouteAuth,
  basic: BasicAuthCheck,
  client: ExternalAuthClient,
  input: AuthRequestInput,
  refused: AuthVerdict,
): AuthVerdict | Promise<AuthVerdict> {
  const external = auth.external;
  const otherwise = (): AuthVerdict | Promise<AuthVerdict> =>
    external === null
      ? refused
      : externalStep(external, auth.policy, client, input).then((verdict) =>
          verdict.allowed || verdict.location !== null || (verdict.status !== 401 && verdict.status !== 403)
            ? verdict
            : refused,
        );
  const ok = checkBasicAuth(basic, headerValue(input.req, 'authorization'));
  if (ok === true) return { allowed: true, policy: auth.policy };
  if (ok === false) return otherwise();
  return ok.then((passed) => (passed ? { allowed: true, policy: auth.policy } : otherwise()));
}

/** A denial written on the socket of an Upgrade request (it left the HTTP server). */
export function sendSocketAuthDenial(
  socket: Duplex,
  verdict: AuthVerdict & { allowed: false },
  headLines = '',
): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  let head = headLines;
  for (const [name, value] of verdict.headers) {
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
  }
  if (verdict.location !== null) {
    socket.end(
      `HTTP/1.1 302 Moved Temporarily\r\n${head}Location: ${verdict.location}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
    return;
  }
  const page = errorPage(verdict.status);
  socket.end(
    Buffer.concat([
      Buffer.from(
        `HTTP/1.1 ${verdict.status} ${page.statusMessage}\r\n${head}Content-Type: text/html\r\nContent-Length: ${page.body.length}\r\nConnection: close\r\n\r\n`,
        'latin1',
      ),
      page.body,
    ]),
  );
}
