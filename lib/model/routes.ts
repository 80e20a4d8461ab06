// The routes of each server: the first (oldest) Ingress to define host + path + pathType wins;
// once all are in, each server's regex mode, the Prefix paths that match the same requests, and
// ingress-nginx's location order.

import { usesRegex } from './annotations/index.ts';
import type { BuildCaches } from './build-caches.ts';
import { type BuildState, refName, sameRef, useUpstream } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import { orderWithGatewayRoutes, type RoutePrecedence } from './gateway/precedence.ts';
import { prefixMatchKey } from './paths.ts';
import { sortSmall } from './sort.ts';
import type { ObjectRef, Route, Server } from './types.ts';

/** Routes: the first (oldest) Ingress to define host + path + pathType wins. */
export function addRoutes(state: BuildState): void {
  for (const ingress of state.ingresses) {
    for (const rule of ingress.rules) {
      const draft = rule.host === '' ? state.catchAll : state.drafts.get(rule.host)!;
      for (const path of rule.paths) {
        const key = path.pathType === 'Prefix' ? path.path : `=${path.path}`;
        const existing = draft.routeKeys.get(key);
        if (existing !== undefined) {
          reportPathConflict(
            state.diagnostics,
            ingress.ref,
            existing,
            draft.server.hostname,
            path.pathType,
            path.path,
          );
          continue;
        }
        const route: Route = {
          path: path.path,
          pathType: path.pathType,
          pathTypeAsWritten: path.pathTypeAsWritten,
          ingress: ingress.ref,
          backend: useUpstream(state, ingress, path.backend),
          annotations: ingress.annotations.location,
          canary: null,
          setsAffinityCookie: ingress.annotations.ingress.affinity.affinity !== null,
        };
        draft.routeKeys.set(key, route);
        draft.server.routes.push(route);
      }
    }
  }
}

/** `precedence`: set once HTTPRoute routes were added (their hosts are ordered by it). */
export function finishRoutes(
  server: Server,
  diagnostics: DiagnosticsCollector,
  caches: BuildCaches,
  precedence: RoutePrecedence | null = null,
): void {
  // The default route stands for ingress-nginx's root placeholder location (path /, the creating
  // Ingress's annotations), which counts too unless an Ingress's Prefix / route replaced it (an
  // HTTPRoute's / may hold only for some requests). HTTPRoute routes never make a host regex.
  const rootReplaced = server.routes.some(
    (route) => route.gateway === undefined && route.pathType === 'Prefix' && route.path === '/',
  );
  server.regex =
    (!rootReplaced && usesRegex(server.defaultRoute.annotations, '/')) ||
    server.routes.some((route) => route.gateway === undefined && usesRegex(route.annotations, route.path));
  // In regex mode every path is a regex: one RE2 cannot compile (backreference, lookahead…) is not
  // served, found here rather than by the first request (RE2 keeps matching linear in the path).
  if (server.regex) {
    server.routes = server.routes.filter((route) => {
      if (route.gateway !== undefined) return true;
      try {
        caches.pathRegexes.compile(route.path);
        return true;
      } catch (error) {
        const host = shownHost(server.hostname);
        diagnostics.report(
          'Ingress',
          route.ingress,
          'PATH_REGEX_INVALID',
          `${route.pathTypeAsWritten} ${route.path} on host ${host} is matched as a regex (the host is in regex mode) but is not valid RE2 syntax (${(error as Error).message}); this path is not served`,
          undefined,
          { host: server.hostname === '_' ? '' : server.hostname, path: route.path },
        );
        return false;
      }
    });
  }
  // Prefix /foo and /foo/ match the same requests: keep the oldest (routes are in Ingress order).
  // Identical paths were refused already, so only a trailing slash can make two routes collide.
  // HTTPRoute routes with the same path are no conflict: their conditions and precedence decide.
  const trailingSlash = (route: Route) =>
    route.gateway === undefined &&
    route.pathType === 'Prefix' &&
    route.path.length > 1 &&
    route.path.endsWith('/');
  if (!server.regex && server.routes.some(trailingSlash)) {
    const prefixes = new Map<string, Route>();
    server.routes = server.routes.filter((route) => {
      if (route.pathType !== 'Prefix' || route.gateway !== undefined) return true;
      const key = prefixMatchKey(route.path);
      const winner = prefixes.get(key);
      if (winner === undefined) {
        prefixes.set(key, route);
        return true;
      }
      reportPathConflict(diagnostics, route.ingress, winner, server.hostname, 'Prefix', route.path);
      return false;
    });
  }
  if (precedence !== null && server.routes.some((route) => route.gateway !== undefined)) {
    server.routes = orderWithGatewayRoutes(
      server.routes,
      server.regex,
      precedence,
      compareRoutes,
      (route, by) => reportPathTaken(diagnostics, route, by, server.hostname),
    );
  } else {
    sortSmall(server.routes, compareRoutes);
  }
}

/** ingress-nginx's location order: longest first, ties by reverse-lexicographic path; the sort is
 * stable, so routes with the same path keep Ingress order (this decides regex-mode matches). */
function compareRoutes(a: Route, b: Route): number {
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  if (a.path === b.path) return 0;
  return a.path > b.path ? -1 : 1;
}

/** A server's hostname in a diagnostic: the catch-all `_` in words. */
function shownHost(hostname: string): string {
  return hostname === '_' ? '(every host)' : hostname;
}

function reportPathTaken(diagnostics: DiagnosticsCollector, route: Route, by: Route, hostname: string): void {
  const host = shownHost(hostname);
  diagnostics.report(
    'HTTPRoute',
    route.ingress,
    'HTTPROUTE_PATH_TAKEN',
    `rule ${route.gateway?.rule ?? 0}: ${route.pathType === 'Exact' ? 'Exact' : 'PathPrefix'} ${route.path} on host ${host} is already served by the older Ingress ${refName(by.ingress)} (the oldest object wins a path); this match is not served there`,
    undefined,
    { host: hostname === '_' ? '' : hostname, path: route.path },
  );
}

function reportPathConflict(
  diagnostics: DiagnosticsCollector,
  loser: ObjectRef,
  winner: Route,
  hostname: string,
  pathType: string,
  path: string,
): void {
  const host = shownHost(hostname);
  const message = sameRef(loser, winner.ingress)
    ? `${pathType} ${path} on host ${host} appears twice in this Ingress; the first one is used`
    : `${pathType} ${path} on host ${host} is already defined by the older Ingress ${refName(winner.ingress)}; this path is ignored`;
  diagnostics.report('Ingress', loser, 'PATH_CONFLICT', message, undefined, {
    host: hostname === '_' ? '' : hostname,
    path,
  });
}
