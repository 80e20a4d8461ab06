// A server holding HTTPRoute routes: each route compiled into a candidate of the gateway path matcher
// (its protocols, conditions, and one action per weighted backend) with its filters applied once
// here: header edits become the route's HttpPolicy, a redirect becomes a redirect action whose
// Location is built per request, a URL rewrite becomes the route's rewrite (path) and its target's
// upstream Host (hostname). Ingress routes of the same host join as candidates without conditions.

import { FRAMING_RESPONSE_HEADERS } from '../../model/annotations/validators.ts';
import type { GatewayRouteMatch, HeaderEdits, Route, Server } from '../../model/index.ts';
import type { HttpPolicy } from '../http-policy.ts';
import { escapeUri, gatewayRewrite } from '../responses/rewrite.ts';
import type { RouteResponse } from '../responses/route-headers.ts';
import type { HashKey } from '../upstream/hash-key.ts';
import type { CompiledMirror, HeaderEdit } from '../upstream/mirror.ts';
import { proxyOwnsRequestHeader, upstreamPath } from '../upstream/request-headers.ts';
import { compileConditions } from './gateway-conditions.ts';
import {
  GatewayPathMatcher,
  type GatewayPathRule,
  RegexFirstMatcher,
  type WeightedValue,
} from './gateway-matcher.ts';
import { compilePathModifier, modifiedPath } from './gateway-paths.ts';
import { normalizePath, type PathMatcher } from './router.ts';
import type { RoutedAction } from './runtime.ts';
import { headerSafe, type RouteCompileState, routedAction, routeInfo, routeLogs } from './runtime-routes.ts';

export function hasGatewayRoutes(server: Server): boolean {
  for (const route of server.routes) if (route.gateway !== undefined) return true;
  return false;
}

/** The matcher of the Ingress routes given, answering `fallback()` when none matches. */
export type IngressPaths = <F>(routes: readonly Route[], fallback: () => F) => PathMatcher<RoutedAction | F>;

/**
 * The path matcher of a server with HTTPRoute routes. `ingressPaths` makes the matcher of the
 * host's Ingress routes given: in regex mode the Ingress regex routes are tried before every
 * HTTPRoute route (a newer HTTPRoute never takes a regex host); otherwise they join the candidates,
 * in the model's order. The host's default route answers what nothing matches.
 */
export function compileGatewayPaths(
  state: RouteCompileState,
  server: Server,
  ingressPaths: IngressPaths,
): PathMatcher<RoutedAction> {
  const rules: GatewayPathRule<RoutedAction>[] = [];
  const regexRoutes: Route[] = [];
  for (const route of server.routes) {
    if (route.gateway !== undefined) rules.push(gatewayRule(state, server, route, route.gateway));
    else if (server.regex) regexRoutes.push(route);
    else {
      const value = routedAction(state, server, route, route.path);
      const { path, pathType } = route;
      rules.push({ path, pathType, protocols: 'both', conditions: null, values: [{ value, weight: 1 }] });
    }
  }
  const defaultRoute = (): RoutedAction => routedAction(state, server, server.defaultRoute, '/');
  if (!server.regex) return new GatewayPathMatcher(rules, ingressPaths([], defaultRoute));
  // compiled in the order they always were: the regex routes, then the default route
  const regex = ingressPaths(regexRoutes, () => null);
  return new RegexFirstMatcher(regex, new GatewayPathMatcher(rules, ingressPaths([], defaultRoute)));
}

const DEFAULT = { type: 'default' } as const;

function gatewayRule(
  state: RouteCompileState,
  server: Server,
  route: Route,
  match: GatewayRouteMatch,
): GatewayPathRule<RoutedAction> {
  const policy = headerPolicy(state.http, match.requestHeaders, match.responseHeaders);
  // what a route answers by itself (500, redirect) takes its path settings from this
  const base = routedAction(state, server, { ...route, backend: DEFAULT }, route.path);
  const response: RouteResponse | null =
    policy === null ? base.response : { basis: state.http, policy, cors: null };
  const own = {
    route: routeInfo(state, { ...route, backend: DEFAULT }),
    accessLog: routeLogs(state.model, route.annotations),
    httpsRedirect: base.httpsRedirect,
    rewrite: null,
    response,
    access: base.access,
  };
  // the CRD writes a path value escaped (`/caf%C3%A9`), the request path is matched decoded ($uri)
  const path = normalizePath(route.path) ?? route.path;
  const rule = {
    path,
    locationPath: route.path,
    pathType: route.pathType,
    protocols: match.protocols,
    conditions: compileConditions(match),
  };
  const redirect = match.redirect;
  if (redirect !== null) {
    const location = headerSafe(redirectLocation(redirect, match.listenerPorts, path));
    const value: RoutedAction = {
      type: 'redirect',
      code: redirect.statusCode,
      location: '',
      locationOf: location,
      ...own,
    };
    return { ...rule, values: [{ value, weight: 1 }] };
  }
  const failed: RoutedAction = { type: 'status', status: 500, ...own };
  const rewrite = match.rewrite;
  const rewritePath = rewrite?.path == null ? null : gatewayRewrite(compilePathModifier(rewrite.path, path));
  const hostname = rewrite?.hostname ?? null;
  const mirror = gatewayMirror(state, match);
  const served = (upstream: string): RoutedAction => {
    let action = routedAction(
      state,
      server,
      { ...route, backend: { type: 'upstream', upstream } },
      route.path,
    );
    if (policy !== null) action = { ...action, response };
    if (rewritePath !== null) action = { ...action, rewrite: rewritePath };
    if (mirror !== null && action.type === 'proxy') action = { ...action, mirror };
    if (hostname !== null && action.type === 'proxy') {
      action = { ...action, target: { ...action.target, upstreamHost: hostname, upstreamHostOf: null } };
    }
    return action;
  };
  const backend = route.backend;
  const values: WeightedValue<RoutedAction>[] = [];
  if (backend.type === 'weighted') {
    for (const { upstream, weight } of backend.backends) {
      if (weight > 0) values.push({ value: upstream === null ? failed : served(upstream), weight });
    }
  } else if (backend.type === 'upstream') {
    values.push({ value: served(backend.upstream), weight: 1 });
  }
  // no backendRefs, or every weight 0: the spec's 500
  if (values.length === 0) values.push({ value: failed, weight: 1 });
  return { ...rule, values };
}

/**
 * RequestMirror: a copy of each request (its share by `percent`) to an endpoint of the mirror's
 * upstream, picked by that upstream's balancer. The copy is the request as the rule's backend gets
 * it: with the rule's RequestHeaderModifier edits, its URLRewrite path and hostname (the Host), as
 * Envoy mirrors the request after the route's edits; the spec asks for filters in the order written
 * "wherever possible", and the model keeps no order between a rule's filters. Only the first mirror
 * is served (several mirrors are the extended feature HTTPRouteRequestMultipleMirrors).
 */
function gatewayMirror(state: RouteCompileState, match: GatewayRouteMatch): CompiledMirror | null {
  const first = match.mirrors[0];
  if (first === undefined || first.percent <= 0) return null;
  const balancer = state.upstreams.balancerFor(first.upstream);
  if (balancer === null) return null;
  // the KeyInput's `uri` is $uri after the rule's URLRewrite: the path the backend gets, decoded
  const rewritten = match.rewrite?.path != null;
  const hostname = match.rewrite?.hostname ?? null;
  return {
    url: ({ req, uri }) => {
      const peer = balancer.pick();
      if (peer === undefined) return '';
      if (!rewritten) return `http://${peer.key}${upstreamPath(req.url)}`;
      const url = req.url ?? '/';
      const query = url.indexOf('?');
      const args = query === -1 ? '' : url.slice(query);
      return `http://${peer.key}${escapeUri(uri)}${args}`;
    },
    host: ({ req, host }) => hostname ?? req.headers.host ?? host,
    requestBody: true,
    percent: first.percent,
    edit: match.requestHeaders === null ? undefined : (mirrorEdit(match.requestHeaders) ?? undefined),
  };
}

/**
 * A rule's request header edits for the mirror's copy, with the proxied request's rules: remove,
 * set, add (onto the line the client sent or the rule set, joined with `,`); never a header the
 * proxy owns.
 */
function mirrorEdit(edits: HeaderEdits): HeaderEdit | null {
  const allowed = (name: string): boolean => !proxyOwnsRequestHeader(name);
  const dropped = new Set<string>();
  for (const name of edits.remove) if (allowed(name)) dropped.add(name.toLowerCase());
  const set = edits.set.filter((h) => allowed(h.name));
  const add = edits.add.filter((h) => allowed(h.name));
  for (const { name } of set) dropped.add(name.toLowerCase());
  if (dropped.size === 0 && add.length === 0) return null;
  return (lines) => {
    const out: string[] = [];
    for (let i = 0; i < lines.length; i += 2) {
      const name = lines[i] as string;
      if (!dropped.has(name.toLowerCase())) out.push(name, lines[i + 1] as string);
    }
    for (const { name, value } of set) out.push(name, value);
    for (const { name, value } of add) {
      const lower = name.toLowerCase();
      let at = -1;
      for (let i = 0; i < out.length; i += 2) {
        if ((out[i] as string).toLowerCase() !== lower) continue;
        if (at === -1) at = i;
        else {
          // repeated lines become one, as the proxied request's append joins them
          out[at + 1] = `${out[at + 1]},${out[i + 1]}`;
          out.splice(i, 2);
          i -= 2;
        }
      }
      if (at === -1) out.push(name, value);
      else out[at + 1] = `${out[at + 1]},${value}`;
    }
    return out;
  };
}

const WELL_KNOWN_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * RequestRedirect's Location, per request: the scheme (else the request's), hostname (else the
 * request's, without its port), port (else the scheme's well-known port when a scheme is given,
 * else the listener's port as written in the Gateway), left out when it is the scheme's default;
 * the path (as sent, or modified), then the query as sent.
 */
function redirectLocation(
  redirect: NonNullable<GatewayRouteMatch['redirect']>,
  listenerPorts: GatewayRouteMatch['listenerPorts'],
  routePath: string,
): HashKey {
  const modifier = redirect.path === null ? null : compilePathModifier(redirect.path, routePath);
  return ({ req, uri, host, https }) => {
    const scheme = redirect.scheme ?? (https ? 'https' : 'http');
    const listenerPort = https ? listenerPorts.https : listenerPorts.http;
    const port =
      redirect.port ?? (redirect.scheme === null ? listenerPort : (WELL_KNOWN_PORTS[scheme] ?? listenerPort));
    const omitted = port === null || WELL_KNOWN_PORTS[scheme] === port;
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    // the modified path is decoded (`$uri`): escaped again, or an escaped `?` or `#` would end it
    const path =
      modifier === null ? (query === -1 ? url : url.slice(0, query)) : escapeUri(modifiedPath(modifier, uri));
    const hostname = redirect.hostname ?? host;
    return `${scheme}://${hostname}${omitted ? '' : `:${port}`}${path}${query === -1 ? '' : url.slice(query)}`;
  };
}

/**
 * Request and response header edits on top of the runtime's policy, in the spec's order: remove,
 * set, add. Names the proxy sets or strips itself (Host, Content-Length, Transfer-Encoding,
 * Connection, X-Forwarded-*, X-Request-ID...) are left out of request edits, and framing headers out
 * of response edits: Host changes only through URLRewrite's hostname.
 */
export function headerPolicy(
  base: HttpPolicy,
  request: HeaderEdits | null,
  response: HeaderEdits | null,
): HttpPolicy | null {
  if (request === null && response === null) return null;
  let policy = base;
  if (request !== null) policy = { ...policy, ...requestEdits(policy, request) };
  if (response !== null) policy = { ...policy, ...responseEdits(policy, response) };
  return policy;
}

function requestEdits(
  base: HttpPolicy,
  edits: HeaderEdits,
): Pick<HttpPolicy, 'upstreamHeaders' | 'upstreamHeaderNames' | 'upstreamHeaderAppends'> {
  const names = Object.assign(Object.create(null) as Record<string, true>, base.upstreamHeaderNames);
  const fixed = new Map<string, string>();
  const removed = new Set<string>();
  const appends: string[] = [];
  const allowed = (name: string): boolean => !proxyOwnsRequestHeader(name);
  for (const name of edits.remove) {
    if (!allowed(name)) continue;
    names[name] = true;
    removed.add(name);
  }
  for (const { name, value } of edits.set) {
    if (!allowed(name)) continue;
    names[name] = true;
    fixed.set(name, value);
  }
  for (const { name, value } of edits.add) {
    if (!allowed(name)) continue;
    names[name] = true;
    const before = fixed.get(name);
    // onto a value this route set, or alone after a remove; else onto the client's lines
    if (before !== undefined) fixed.set(name, `${before},${value}`);
    else if (removed.has(name)) fixed.set(name, value);
    else appends.push(name, value);
  }
  const upstreamHeaders: string[] = [];
  const inherited = base.upstreamHeaders;
  for (let i = 0; i < inherited.length; i += 2) {
    const name = inherited[i] as string;
    const lower = name.toLowerCase();
    if (!removed.has(lower) && !fixed.has(lower) && !appends.includes(lower)) {
      upstreamHeaders.push(name, inherited[i + 1] as string);
    }
  }
  for (const [name, value] of fixed) upstreamHeaders.push(name, value);
  return {
    upstreamHeaders,
    upstreamHeaderNames: names,
    upstreamHeaderAppends: appends.length === 0 ? (base.upstreamHeaderAppends ?? null) : appends,
  };
}

function responseEdits(
  base: HttpPolicy,
  edits: HeaderEdits,
): Pick<HttpPolicy, 'responseDrop' | 'responseHeaders'> {
  const drop = new Set(base.responseDrop);
  const replaced = new Set<string>();
  const allowed = (name: string): boolean => !FRAMING_RESPONSE_HEADERS.has(name);
  for (const name of edits.remove) if (allowed(name)) replaced.add(name);
  for (const { name } of edits.set) if (allowed(name)) replaced.add(name);
  for (const name of replaced) drop.add(name);
  const responseHeaders: string[] = [];
  const inherited = base.responseHeaders;
  for (let i = 0; i < inherited.length; i += 2) {
    const name = inherited[i] as string;
    if (!replaced.has(name.toLowerCase())) responseHeaders.push(name, inherited[i + 1] as string);
  }
  for (const { name, value } of edits.set) if (allowed(name)) responseHeaders.push(name, value);
  // add: one more line beside the upstream's (a client reads repeated lines as one `a,b` value)
  for (const { name, value } of edits.add) if (allowed(name)) responseHeaders.push(name, value);
  return { responseDrop: drop, responseHeaders };
}
