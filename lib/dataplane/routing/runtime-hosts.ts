// The host side of a compile: each server of the model with its path matcher, the host table (hosts,
// then aliases, then from-to-www names) and the ssl-passthrough table beside it.

import type { Model, Route, Server } from '../../model/index.ts';
import { compileClientAuth } from '../access/client-cert.ts';
import { dataplaneError } from '../events.ts';
import { compileGatewayPaths, hasGatewayRoutes } from './gateway-routes.ts';
import { LayeredMap } from './layered-map.ts';
import { createPathMatcher, HostTable, type PathMatcher, type PathRule } from './router.ts';
import type { CompiledServer, PassthroughTarget, RoutedAction, Runtime } from './runtime.ts';
import type { UpstreamBalancers } from './runtime-balancers.ts';
import { compileChangedServers, isStateful, wwwRedirect } from './runtime-changes.ts';
import {
  type CompiledServerRecord,
  globalKeyOf,
  type HostClaims,
  type ReuseIndex,
  recorded,
  ServerReuse,
} from './runtime-reuse.ts';
import { type RouteCompileState, routedAction } from './runtime-routes.ts';

/** A server's routes as one path matcher; its default route answers what no path matches. */
export function compileServer(state: RouteCompileState, server: Server): CompiledServer {
  // the routes compile before the default route, as they always have (compiles share state by order)
  const matcherWith = <F>(routes: readonly Route[], fallback: () => F): PathMatcher<RoutedAction | F> => {
    const rules = routes.map((route): PathRule<RoutedAction> => {
      const value = routedAction(state, server, route, route.path);
      return {
        path: route.path,
        pathType: route.pathType,
        value,
        captures: value.rewrite?.reuseCaptures === true,
      };
    });
    return createPathMatcher<RoutedAction | F>(
      rules,
      fallback(),
      server.regex,
      (path, error) =>
        dataplaneError.publish({
          message: `host ${server.hostname}: path ${path} is not a valid regex: ${error.message}`,
        }),
      state.caches.pathRegexes,
    );
  };
  const matcherOf = (routes: readonly Route[]): PathMatcher<RoutedAction> =>
    matcherWith(routes, () => routedAction(state, server, server.defaultRoute, '/'));
  const gateway = hasGatewayRoutes(server);
  return {
    hostname: server.hostname,
    redirectTo: null,
    appRoot: server.annotations.appRoot.path,
    tls: server.tls !== null,
    clientAuth: compileClientAuth(server.clientAuth, state.caches.verifiedLeaves),
    paths: gateway ? compileGatewayPaths(state, server, matcherWith) : matcherOf(server.routes),
    ...(gateway && server.hostname.startsWith('*.') ? { anyDepth: true } : {}),
  };
}

/** An HTTPRoute's wildcard host matches any number of labels (Gateway API); an Ingress's one. */
const matchesAnyDepth = (entry: CompiledServer): boolean => entry.anyDepth === true;

/** Every server of the model compiled (or kept from `previous`), and what the next compile may keep. */
export interface CompiledServers {
  readonly catchAll: CompiledServer;
  readonly hosts: HostTable<CompiledServer>;
  readonly reuse: ReuseIndex;
}

/** `server` compiled, with what its compile used and the content hash it was compiled for. */
function compileRecord(
  state: RouteCompileState,
  server: Server,
  hash: string | undefined,
): CompiledServerRecord {
  const { compiled, deps } = recorded(state, () => compileServer(state, server));
  return { hash: hash ?? '', compiled, deps };
}

/**
 * Each server compiled, unless `previous` holds its compile for the same content and inputs: then
 * only the servers that changed are compiled and the host table is patched (runtime-changes.ts).
 * Without `previous` (or when the ConfigMap or the default backend changed), every server is compiled.
 */
export function compileServers(state: RouteCompileState, previous: Runtime | null): CompiledServers {
  const { model } = state;
  const globalKey = globalKeyOf(model);
  const reuse = new ServerReuse(state, previous, globalKey);
  if (previous !== null && reuse.previous !== null)
    return compileChangedServers(state, reuse, previous, (server, hash) =>
      compileRecord(state, server, hash),
    );
  const hashes = model.contentHashes;
  const catchAll = compileRecord(state, model.catchAll, hashes?.catchAll);
  const records = new LayeredMap<CompiledServerRecord>();
  const stateful = new Map<string, CompiledServerRecord>();
  let passthroughs = 0;
  const servers = model.servers.map((server, index) => {
    const record = compileRecord(state, server, hashes?.servers[index]);
    records.addIfAbsent(server.hostname, record);
    if (isStateful(record)) stateful.set(server.hostname, record);
    if (server.passthrough !== null) passthroughs++;
    return [server, record.compiled] as const;
  });
  return {
    catchAll: catchAll.compiled,
    hosts: hostTableOf(catchAll.compiled, servers),
    reuse: { globalKey, servers: records, catchAll, claims: claimsOf(model.servers), stateful, passthroughs },
  };
}

/** The names servers answer to besides their own, each with its claimants in the model's order. */
function claimsOf(servers: readonly Server[]): HostClaims {
  const aliases = new Map<string, string[]>();
  const wwwFrom = new Map<string, string[]>();
  const claim = (claims: Map<string, string[]>, name: string, hostname: string): void => {
    const list = claims.get(name);
    if (list === undefined) claims.set(name, [hostname]);
    else list.push(hostname);
  };
  for (const server of servers) {
    for (const alias of server.annotations.alias.aliases) claim(aliases, alias, server.hostname);
    const from = server.annotations.fromToWww.from;
    if (from !== null) claim(wwwFrom, from, server.hostname);
  }
  return { aliases, wwwFrom };
}

/** The host table of a compile from scratch (runtime-steps.test.ts checks its precedence). */
export function compileHostTable(state: RouteCompileState): HostTable<CompiledServer> {
  return compileServers(state, null).hosts;
}

/**
 * The host table: the catch-all for unknown names, every server by its name, then its aliases, then
 * its from-to-www name (last: a host or an alias of that name wins), which only redirects.
 * runtime-changes.ts patches it by the same precedence.
 */
function hostTableOf(
  catchAll: CompiledServer,
  compiled: ReadonlyArray<readonly [Server, CompiledServer]>,
): HostTable<CompiledServer> {
  const hosts = new HostTable<CompiledServer>(catchAll, undefined, undefined, matchesAnyDepth);
  for (const [server, entry] of compiled) hosts.add(server.hostname, entry);
  for (const [server, entry] of compiled)
    for (const alias of server.annotations.alias.aliases) hosts.add(alias, entry);
  for (const [server, entry] of compiled) {
    const from = server.annotations.fromToWww.from;
    if (from !== null) hosts.add(from, wwwRedirect(entry, from, server.hostname));
  }
  return hosts;
}

/**
 * The passthrough table: every name the host table knows, in the same order (hosts, then aliases,
 * then from-to-www names), so that an exact name whose TLS is terminated is never caught by a
 * passthrough wildcard. Only a host's own name passes through, not its aliases (ingress-nginx
 * matches the server's hostname). Null when no host passes through.
 */
export function compilePassthrough(
  model: Model,
  upstreams: UpstreamBalancers,
  connectTimeoutMs: number,
): HostTable<PassthroughTarget | null> | null {
  if (!model.servers.some((server) => server.passthrough !== null)) return null;
  const table = new HostTable<PassthroughTarget | null>(null);
  for (const server of model.servers) {
    const passthrough = server.passthrough;
    if (passthrough === null) {
      table.add(server.hostname, null);
      continue;
    }
    const upstream =
      passthrough.backend.type === 'upstream' ? passthrough.backend.upstream : model.defaultBackend;
    table.add(server.hostname, {
      hostname: server.hostname,
      upstream: upstream ?? '',
      balancer: upstream === null ? null : upstreams.balancerFor(upstream),
      connectTimeoutMs,
      next: 0,
    });
  }
  for (const server of model.servers) {
    for (const alias of server.annotations.alias.aliases) table.add(alias, null);
    const from = server.annotations.fromToWww.from;
    if (from !== null) table.add(from, null);
  }
  return table;
}
