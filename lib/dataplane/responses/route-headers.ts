// Response headers of a route: custom-headers and CORS, added to every response
// of the route whatever its status (NGINX's more_set_headers), on top of the ConfigMap's
// add-headers. Compiled once per route into an HttpPolicy whose `responseHeaders` / `responseDrop`
// the proxy already applies to upstream responses and the proxy's own answers, so a request only
// picks a policy: the route's, or, when CORS applies to its Origin, the CORS one (one small object
// per request when the Origin is echoed).
//
// The hook for every response the proxy answers itself (error pages, redirects, denials of other
// access checks): `setOwnResponseHeaders(res, responsePolicy(req, action.response, runtime.http))`
// before writeHead. Upstream responses get the same through `RequestContext.policy`.

import type { IncomingMessage } from 'node:http';
import type { LocationAnnotations, SnippetRules } from '../../model/index.ts';
import type { HttpPolicy } from '../http-policy.ts';

export interface CompiledCors {
  /** cors-allow-origin `*`: every request matches and Access-Control-Allow-Origin is `*` */
  anyOrigin: boolean;
  /** the allowed origins (anchored, case-insensitive), or null when none is valid */
  origins: RegExp | null;
  /** the route's policy with the CORS headers; without Access-Control-Allow-Origin unless `anyOrigin` */
  policy: HttpPolicy;
}

export interface RouteResponse {
  /** the policy the route's were made from (the runtime's): a request's policy that is not this one
   * was changed by authentication, whose changes are kept */
  basis: HttpPolicy;
  /** the route's policy when CORS does not apply (add-headers + custom-headers) */
  policy: HttpPolicy;
  /** enable-cors, or null */
  cors: CompiledCors | null;
}

/** A policy whose responses also carry `headers`, which replace the upstream's (and add-headers'). */
function extend(base: HttpPolicy, headers: ReadonlyArray<readonly [string, string]>): HttpPolicy {
  if (headers.length === 0) return base;
  const names = new Set(headers.map(([name]) => name.toLowerCase()));
  const responseDrop = new Set(base.responseDrop);
  for (const name of names) responseDrop.add(name);
  const responseHeaders: string[] = [];
  const inherited = base.responseHeaders;
  for (let i = 0; i < inherited.length; i += 2) {
    const name = inherited[i] as string;
    if (!names.has(name.toLowerCase())) responseHeaders.push(name, inherited[i + 1] as string);
  }
  for (const [name, value] of headers) responseHeaders.push(name, value);
  return { ...base, responseDrop, responseHeaders };
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * ingress-nginx's origin regex: each origin quoted, its `*` one DNS label; matched
 * case-insensitively against the whole Origin header (NGINX anchors only the end).
 */
export function compileOrigins(origins: readonly string[]): RegExp | null {
  if (origins.length === 0) return null;
  const alternatives = origins.map((origin) => escapeRegex(origin).replace('\\*', '[A-Za-z0-9-]+'));
  return new RegExp(`^(?:${alternatives.join('|')})$`, 'i');
}

const without = (list: readonly string[], drop: (lower: string) => boolean): string[] => {
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    if (!drop(name.toLowerCase())) out.push(name, list[i + 1] as string);
  }
  return out;
};

/**
 * The policy of a route with a server-snippet and a configuration-snippet (snippets/read.ts), as
 * NGINX merges them: headers-more's operations run the server's first, then the location's, each
 * in order (a set replaces, a clear removes, `X-*` removes by prefix); add_header is NGINX's, where a
 * location's list replaces the server's whole; proxy_hide_header names are dropped; request headers
 * set or removed the same way on the way upstream.
 */
export function snippetPolicy(
  base: HttpPolicy,
  server: SnippetRules | null,
  location: SnippetRules | null,
): HttpPolicy {
  if (server === null && location === null) return base;
  const levels = [server, location].filter((rules): rules is SnippetRules => rules !== null);
  let responseHeaders = [...base.responseHeaders];
  const responseDrop = new Set(base.responseDrop);
  const prefixes = [...(base.responseDropPrefixes ?? [])];
  let upstreamHeaders = [...base.upstreamHeaders];
  let upstreamHeaderNames = base.upstreamHeaderNames;
  for (const rules of levels) {
    for (const [name, value] of rules.responseOps) {
      const lower = name.toLowerCase();
      if (lower.endsWith('*')) {
        const prefix = lower.slice(0, -1);
        prefixes.push(prefix);
        responseHeaders = without(responseHeaders, (n) => n.startsWith(prefix));
        continue;
      }
      responseDrop.add(lower);
      responseHeaders = without(responseHeaders, (n) => n === lower);
      if (value !== null) responseHeaders.push(name, value);
    }
    for (const name of rules.hideHeaders) responseDrop.add(name);
    for (const [name, value] of rules.requestOps) {
      const lower = name.toLowerCase();
      upstreamHeaderNames = { ...upstreamHeaderNames, [lower]: true };
      upstreamHeaders = without(upstreamHeaders, (n) => n === lower);
      if (value !== null) upstreamHeaders.push(name, value);
    }
  }
  const statusHeaders = [...base.statusHeaders];
  const adds =
    location !== null && location.addHeaders.length > 0 ? location.addHeaders : (server?.addHeaders ?? []);
  for (const { name, value, always } of adds) {
    // NGINX adds nothing for an empty value
    if (value === '') continue;
    if (always) responseHeaders.push(name, value);
    else statusHeaders.push(name, value);
  }
  return {
    ...base,
    responseHeaders,
    responseDrop,
    responseDropPrefixes: prefixes.length === 0 ? null : prefixes,
    statusHeaders,
    upstreamHeaders,
    upstreamHeaderNames,
  };
}

/**
 * The route's response headers, or null when it adds nothing to the runtime's policy. `server`:
 * the rules of its host's server-snippet, if any.
 */
export function compileRouteResponse(
  annotations: LocationAnnotations,
  base: HttpPolicy,
  server: SnippetRules | null = null,
): RouteResponse | null {
  const { cors, customHeaders } = annotations;
  const location = annotations.snippet.rules;
  if (!cors.enabled && customHeaders.headers.length === 0 && server === null && location === null)
    return null;
  // ingress-nginx's location: the snippet's lines come before its custom-headers lines
  const policy = extend(snippetPolicy(base, server, location), customHeaders.headers);
  if (!cors.enabled) return { basis: base, policy, cors: null };
  const anyOrigin = cors.allowOrigin.length === 1 && cors.allowOrigin[0] === '*';
  const headers: Array<[string, string]> = [];
  if (anyOrigin) headers.push(['Access-Control-Allow-Origin', '*']);
  if (cors.allowCredentials) headers.push(['Access-Control-Allow-Credentials', 'true']);
  headers.push(['Access-Control-Allow-Methods', cors.allowMethods]);
  headers.push(['Access-Control-Allow-Headers', cors.allowHeaders]);
  if (cors.exposeHeaders !== '') headers.push(['Access-Control-Expose-Headers', cors.exposeHeaders]);
  headers.push(['Access-Control-Max-Age', String(cors.maxAge)]);
  let corsPolicy = extend(policy, headers);
  if (!anyOrigin) {
    // the echoed Allow-Origin is added per request: the upstream's never passes
    const responseDrop = new Set(corsPolicy.responseDrop);
    responseDrop.add('access-control-allow-origin');
    corsPolicy = { ...corsPolicy, responseDrop };
  }
  return {
    basis: base,
    policy,
    cors: { anyOrigin, origins: anyOrigin ? null : compileOrigins(cors.allowOrigin), policy: corsPolicy },
  };
}

/** The Origin header when the route's CORS applies to it, `*` for allow-origin `*`, else null. */
export function corsOrigin(req: IncomingMessage, cors: CompiledCors): string | null {
  if (cors.anyOrigin) return '*';
  const origin = req.headers.origin;
  if (origin === undefined || cors.origins === null || !cors.origins.test(origin)) return null;
  return origin;
}

/** The policy of this request's response on a route (`response` null: the runtime's). */
export function responsePolicy(
  req: IncomingMessage,
  response: RouteResponse | null | undefined,
  base: HttpPolicy,
): HttpPolicy {
  if (response === null || response === undefined) return base;
  const chosen = routePolicy(req, response);
  return base === response.basis ? chosen : withAuthentication(chosen, base, response.basis);
}

function routePolicy(req: IncomingMessage, response: RouteResponse): HttpPolicy {
  const cors = response.cors;
  if (cors === null) return response.policy;
  const origin = corsOrigin(req, cors);
  if (origin === null) return response.policy;
  if (cors.anyOrigin) return cors.policy;
  return {
    ...cors.policy,
    responseHeaders: [...cors.policy.responseHeaders, 'Access-Control-Allow-Origin', origin],
  };
}

/**
 * The route's policy with what authentication did to `basis` to make `authenticated`: the client's
 * Authorization (basic auth) and its copies of auth-response-headers no longer passed upstream, the
 * auth service's headers appended upstream, its cookies appended to the response. Authentication
 * only appends to the lists and adds names, so what it added is what follows basis's entries.
 */
function withAuthentication(chosen: HttpPolicy, authenticated: HttpPolicy, basis: HttpPolicy): HttpPolicy {
  const names =
    authenticated.upstreamHeaderNames === basis.upstreamHeaderNames
      ? chosen.upstreamHeaderNames
      : Object.assign(
          Object.create(null) as Record<string, true>,
          chosen.upstreamHeaderNames,
          authenticated.upstreamHeaderNames,
        );
  return {
    ...chosen,
    upstreamHeaderNames: names,
    upstreamHeaders: appended(chosen.upstreamHeaders, authenticated.upstreamHeaders, basis.upstreamHeaders),
    responseHeaders: appended(chosen.responseHeaders, authenticated.responseHeaders, basis.responseHeaders),
  };
}

const appended = (
  to: readonly string[],
  grown: readonly string[],
  from: readonly string[],
): readonly string[] => (grown.length === from.length ? to : [...to, ...grown.slice(from.length)]);

/** A CORS preflight this route answers itself: OPTIONS from an allowed Origin. */
export function isPreflight(req: IncomingMessage, response: RouteResponse | null | undefined): boolean {
  const cors = response?.cors;
  return req.method === 'OPTIONS' && cors !== null && cors !== undefined && corsOrigin(req, cors) !== null;
}
