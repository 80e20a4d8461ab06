// A route's tracing compiled once per path: the span's name (a fixed string, or its $variables
// turned into readers of the request), whether an incoming context is trusted, and the attributes
// every span of the path shares. What a request adds to it is read in sdk.ts.

import type { IncomingMessage } from 'node:http';
import type { Attributes } from '@opentelemetry/api';
import type { DefaultRoute, Model, Route, Server } from '../../model/index.ts';
import { type RouteTracing, routeTracing } from '../../model/tracing.ts';
import type { RouteInfo } from '../routing/runtime.ts';
import { requireSdk } from './sdk-loader.ts';

/** What a span name's variable reads: the request, the Host it named and the listener's scheme. */
export interface NamedRequest {
  req: IncomingMessage;
  host: string;
  https: boolean;
}

type NamePart = string | ((r: NamedRequest) => string);

export interface CompiledTracing {
  /** a valid incoming traceparent (and its tracestate) becomes the span's parent */
  trust: boolean;
  /** the span's name when it has no variable, else null (nameParts) */
  name: string | null;
  nameParts: readonly NamePart[];
  /** http.route, http.server_name and the Kubernetes names of the route */
  attributes: Readonly<Attributes>;
}

/** $uri: the target's path with %XX decoded (NGINX also merges slashes and dot segments). */
function decodedPath(target: string): string {
  const q = target.indexOf('?');
  const path = q === -1 ? target : target.slice(0, q);
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function variable(name: string, location: string, serverName: string, route: RouteInfo | null): NamePart {
  switch (name) {
    case 'request_method':
      return (r) => r.req.method ?? '';
    case 'uri':
      return (r) => decodedPath(r.req.url ?? '/');
    case 'request_uri':
      return (r) => r.req.url ?? '/';
    case 'host':
      return (r) => (r.host === '' ? serverName : r.host);
    case 'scheme':
      return (r) => (r.https ? 'https' : 'http');
    case 'server_name':
      return serverName;
    case 'location_path':
      return location;
    case 'namespace':
      return route?.namespace ?? '';
    case 'ingress_name':
      return route?.ingress ?? '';
    case 'service_name':
      return route?.service ?? '';
    case 'service_port':
      return route?.servicePort ?? '';
    default:
      // the model accepts no other name (OPERATION_NAME_VARIABLES)
      return `$${name}`;
  }
}

/** The parts of an operation name: text, and readers for its $name / ${name} variables. */
function nameParts(
  operationName: string,
  location: string,
  serverName: string,
  route: RouteInfo | null,
): NamePart[] {
  const parts: NamePart[] = [];
  let text = '';
  let at = 0;
  for (const m of operationName.matchAll(/\$\{?([A-Za-z0-9_]+)\}?/g)) {
    text += operationName.slice(at, m.index);
    at = m.index + m[0].length;
    const part = variable(m[1] as string, location, serverName, route);
    if (typeof part === 'string') text += part;
    else {
      if (text !== '') parts.push(text);
      text = '';
      parts.push(part);
    }
  }
  text += operationName.slice(at);
  if (text !== '') parts.push(text);
  return parts;
}

/** The path's tracing, or null when its requests get no span (the default: nothing to do per request). */
export function compileRouteTracing(
  policy: RouteTracing | null,
  locationPath: string,
  serverName: string,
  route: RouteInfo | null,
): CompiledTracing | null {
  if (policy === null) return null;
  // served only once the SDK is there (DataPlane.apply, a thread's prepare wait for it)
  requireSdk();
  // NGINX's module names the span after the location when no operation name is set
  const parts = nameParts(
    policy.operationName === '' ? locationPath : policy.operationName,
    locationPath,
    serverName,
    route,
  );
  const fixed = parts.every((part) => typeof part === 'string') ? parts.join('') : null;
  const attributes: Attributes = { 'http.route': locationPath, 'http.server_name': serverName };
  if (route !== null) {
    attributes['k8s.namespace.name'] = route.namespace;
    attributes['k8s.ingress.name'] = route.ingress;
    attributes['k8s.service.name'] = route.service;
    attributes['k8s.service.port'] = route.servicePort;
  }
  return { trust: policy.trustIncomingSpan, name: fixed, nameParts: parts, attributes };
}

/** The span's name for this request. */
export function spanName(tracing: CompiledTracing, request: NamedRequest): string {
  if (tracing.name !== null) return tracing.name;
  let name = '';
  for (const part of tracing.nameParts) name += typeof part === 'string' ? part : part(request);
  return name;
}

/** The tracing of a route's path in a server, from the ConfigMap and the route's annotations. */
export function routeTracingOf(
  model: Model,
  route: Route | DefaultRoute,
  locationPath: string,
  server: Server,
  info: RouteInfo | null,
): CompiledTracing | null {
  const policy = routeTracing(model.config.tracing, route.annotations.openTelemetry);
  return compileRouteTracing(policy, locationPath, server.hostname, info);
}
