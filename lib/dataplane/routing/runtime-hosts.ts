// The host side of a compile: each server of the model with its path matcher, the host table (hosts,
// then aliases, then from-to-www names) and the ssl-passthrough table beside it.

import type { Model, Server } from '../../model/index.ts';
import { compileClientAuth } from '../access/client-cert.ts';
import { dataplaneError } from '../events.ts';
import { createPathMatcher, HostTable, type PathRule } from './router.ts';
import type { CompiledServer, PassthroughTarget, RoutedAction, Runtime } from './runtime.ts';
import type { UpstreamBalancers } from './runtime-balancers.ts';
import {
  type CompiledServerRecord,
  globalKeyOf,
  type ReuseIndex,
  recorded,
  ServerReuse,
} from './runtime-reuse.ts';
import { type RouteCompileState, routedAction } from './runtime-routes.ts';

/** A server's routes as one path matcher; its default route answers what no path matches. */
export function compileServer(state: RouteCompileState, server: Server): CompiledServer {
  const rules: PathRule<RoutedAction>[] = server.routes.map((route) => {
    const value = routedAction(state, server, route, route.path);
    return {
      path: route.path,
      pathType: route.pathType,
      value,
      captures: value.rewrite?.reuseCaptures === true,
    };
  });
  const fallback = routedAction(state, server, server.defaultRoute, '/');
  return {
    hostname: server.hostname,
    redirectTo: null,
    appRoot: server.annotations.appRoot.path,
    tls: server.tls !== null,
    clientAuth: compileClientAuth(server.clientAuth, state.caches.verifiedLeaves),
    paths: createPathMatcher(
      rules,
      fallback,
      server.regex,
      (path, error) =>
        dataplaneError.publish({
          message: `host ${server.hostname}: path ${path} is not a valid regex: ${error.message}`,
        }),
      state.caches.pathRegexes,
    ),
  };
}

/** Every server of the model compiled (or kept from `previous`), and what the next compile may keep. */
export interface CompiledServers {
  readonly catchAll: CompiledServer;
  /** in the model's order */
  readonly servers: ReadonlyArray<readonly [Server, CompiledServer]>;
  readonly reuse: ReuseIndex;
}

/**
 * Each server compiled, unless `previous` holds its compile for the same content and inputs
 * (runtime-reuse.ts). Without `previous` (or when the ConfigMap or the default backend changed),
 * every server is compiled.
 */
export function compileServers(state: RouteCompileState, previous: Runtime | null): CompiledServers {
  const { model } = state;
  const globalKey = globalKeyOf(model);
  const reuse = new ServerReuse(state, previous, globalKey);
  const hashes = model.contentHashes;
  const one = (server: Server, hash: string | undefined, old: CompiledServerRecord | null | undefined) => {
    if (old !== undefined && old !== null && reuse.take(old, hash) !== null) return old;
    const { compiled, deps } = recorded(state, () => compileServer(state, server));
    return { hash: hash ?? '', compiled, deps };
  };
  const catchAll = one(model.catchAll, hashes?.catchAll, reuse.previous?.catchAll);
  const records = new Map<string, CompiledServerRecord>();
  const servers = model.servers.map((server, index) => {
    const record = one(server, hashes?.servers[index], reuse.previous?.servers.get(server.hostname));
    records.set(server.hostname, record);
    return [server, record.compiled] as const;
  });
  return { catchAll: catchAll.compiled, servers, reuse: { globalKey, servers: records, catchAll } };
}

/**
 * The host table: the catch-all for unknown names, every server by its name, then its aliases, then
 * its from-to-www name (last: a host or an alias of that name wins), which only redirects.
 */
export function compileHostTable(
  state: RouteCompileState,
  servers: CompiledServers = compileServers(state, null),
): HostTable<CompiledServer> {
  const hosts = new HostTable<CompiledServer>(servers.catchAll);
  const compiled = servers.servers;
  for (const [server, entry] of compiled) hosts.add(server.hostname, entry);
  for (const [server, entry] of compiled)
    for (const alias of server.annotations.alias.aliases) hosts.add(alias, entry);
  for (const [server, entry] of compiled) {
    const from = server.annotations.fromToWww.from;
    if (from !== null)
      hosts.add(from, {
        ...entry,
        hostname: from,
        redirectTo: server.hostname,
        appRoot: null,
        clientAuth: null,
      });
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
