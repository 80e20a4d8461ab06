// custom-http-errors / default-backend in the data plane: which statuses of a route go to an error
// backend, and the request that goes there. ingress-nginx sends the error backend the client's
// request (method and headers) with the URI rewritten to `/` and X-Code, X-Format (the client's
// Accept), X-Original-URI, X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port and
// X-Request-ID; the error backend's response (its status, headers and body) goes to the client.

import type { IncomingMessage } from 'node:http';
import { headerValue } from '../request-values.ts';
import type { RouteInfo } from '../routing/runtime.ts';
import type { ProxyTarget } from '../upstream/target.ts';

export interface CustomErrors {
  /** statuses (of the upstream, or the proxy's own 502/503/504) answered by the error backend */
  readonly codes: ReadonlySet<number>;
  /** the error backend: the route's default-backend Service, else --default-backend-service */
  readonly target: ProxyTarget;
  /** the route names a default-backend Service: it also serves while the route has no endpoints */
  readonly whenEmpty: boolean;
  /** X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port of the route, flat */
  readonly routeHeaders: readonly string[];
  /** the upstream's responses with these statuses too (false: disable-proxy-intercept-errors) */
  readonly upstreamResponses: boolean;
}

export function compileCustomErrors(
  codes: readonly number[],
  target: ProxyTarget,
  whenEmpty: boolean,
  route: RouteInfo | null,
  upstreamResponses = true,
): CustomErrors {
  return {
    codes: new Set(codes),
    target,
    whenEmpty,
    upstreamResponses,
    routeHeaders: [
      'x-namespace',
      route?.namespace ?? '',
      'x-ingress-name',
      route?.ingress ?? '',
      'x-service-name',
      route?.service ?? '',
      'x-service-port',
      route?.servicePort ?? '',
    ],
  };
}

/** Whether a status goes to the error backend now (it has endpoints). */
export function intercepts(errors: CustomErrors | null, status: number): errors is CustomErrors {
  return errors?.codes.has(status) === true && errors.target.balancer.peers.length > 0;
}

/** Whether an upstream response with this status goes to the error backend (proxy_intercept_errors). */
export function interceptsResponse(errors: CustomErrors | null, status: number): errors is CustomErrors {
  return errors?.upstreamResponses === true && intercepts(errors, status);
}

/** Headers the client's request does not carry to the error backend (its body stays behind). */
const NOT_FORWARDED = new Set(['content-length', 'transfer-encoding', 'x-request-id']);

/**
 * The error backend's request headers: the forwarded request headers (without body framing), then
 * the X-Code family.
 */
export function errorRequestHeaders(
  req: IncomingMessage,
  forwarded: readonly string[],
  errors: CustomErrors,
  code: number,
  requestId: string,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < forwarded.length; i += 2) {
    const name = forwarded[i] as string;
    if (NOT_FORWARDED.has(name.toLowerCase())) continue;
    out.push(name, forwarded[i + 1] as string);
  }
  out.push(
    'x-code',
    String(code),
    'x-format',
    headerValue(req, 'accept') ?? '',
    'x-original-uri',
    req.url ?? '/',
    'x-request-id',
    requestId,
  );
  for (const value of errors.routeHeaders) out.push(value);
  return out;
}
