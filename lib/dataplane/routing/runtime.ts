// compile(model, previous) → Runtime: everything a request needs, built off the request path. A
// runtime is immutable once built except for balancer endpoint sets, which an endpoints-only change
// updates in place (the same Balancer objects serve the old and the new runtime).
//
// compileRuntime is a short chain of steps, each in the file named after what it owns:
// runtime-balancers.ts (balancers reused by endpoint set), runtime-routes.ts (what each route does:
// actions, upstream settings, backend TLS, canary, custom errors, mirror, auth, path settings) and
// runtime-hosts.ts (path matchers per host, the host table, the ssl-passthrough table).

import type { Model } from '../../model/index.ts';
import { type AccessPolicy, type CidrSet, cidrSetOf } from '../access/access.ts';
import type { RouteAuth } from '../access/auth.ts';
import type { CompiledClientAuth } from '../access/client-cert.ts';
import { compileHeaderBlocks, type HeaderBlocks } from '../access/header-blocks.ts';
import type { Zone } from '../access/rate-limit.ts';
import { createRuntimeCaches, type RuntimeCaches } from '../caches.ts';
import type { HttpPolicy } from '../http-policy.ts';
import { type CertificatePair, compileSniStore, type SniStore } from '../listening/sni.ts';
import type { CustomErrors } from '../responses/custom-errors.ts';
import type { CompiledRewrite } from '../responses/rewrite.ts';
import type { RouteResponse } from '../responses/route-headers.ts';
import type { CompiledTracing } from '../tracing/route-tracing.ts';
import type { Balancer, BalancerEnv } from '../upstream/balancer.ts';
import type { EwmaStore } from '../upstream/balancers/ewma.ts';
import type { HashKey } from '../upstream/hash-key.ts';
import type { CompiledMirror } from '../upstream/mirror.ts';
import type { ProxyTarget } from '../upstream/target.ts';
import type { CanaryAction } from './canary.ts';
import { LayeredMap } from './layered-map.ts';
import { changedUpstreamsOver } from './model-changes.ts';
import type { HostTable, PathMatcher } from './router.ts';
import { type PeerKeys, UpstreamBalancers, updatePeers } from './runtime-balancers.ts';
import { compilePassthrough, compileServers } from './runtime-hosts.ts';
import type { ReuseIndex } from './runtime-reuse.ts';
import { createRouteCompileState } from './runtime-routes.ts';

// a route's upstream settings as the proxy reads them: computed by the route step, and still
// importable from here, where the proxy settings tests have always found them
export { targetSettings } from './runtime-routes.ts';

/** Who a request belongs to, for logs and metrics ($namespace, $ingress_name, $service_name…). */
export interface RouteInfo {
  namespace: string;
  ingress: string;
  service: string;
  servicePort: string;
}

/**
 * What a matched path does. `accessLog`: requests here get an access log line (enable-access-log,
 * disable-access-log, enable-access-log-for-default-backend).
 */
export type Action =
  /** `whenEmpty`: the answer while the balancer has no peers (503; 404 for the default backend);
   * `canary`: the canary sharing the route's traffic (canary.ts), or null */
  | {
      type: 'proxy';
      target: ProxyTarget;
      route: RouteInfo | null;
      whenEmpty: 404 | 503;
      accessLog: boolean;
      canary: CanaryAction | null;
      /** responses here set the affinity cookie of a new session (the route's Ingress has affinity) */
      setsAffinityCookie: boolean;
      /** custom-http-errors / default-backend of the route, or null */
      errors?: CustomErrors | null;
      /** authentication (auth-type basic, auth-url, global auth) before proxying, or none */
      auth?: RouteAuth | null;
      /** mirror-target: a copy of each request proxied here goes there (mirror.ts), or null */
      mirror: CompiledMirror | null;
    }
  /** the built-in default backend (404), or an upstream the model does not know (503);
   * `denied`: a "location denied" 503 (NGINX `return 503` in the rewrite phase: before ssl-redirect);
   * `auth`: authentication before that answer (404, 502), or none; `upstream`: $proxy_upstream_name
   * of the built-in default backend (`upstream-default-backend`, as ingress-nginx names it) */
  | {
      type: 'status';
      status: number;
      route: RouteInfo | null;
      accessLog: boolean;
      denied?: boolean;
      auth?: RouteAuth | null;
      upstream?: string;
    }
  /** permanent-redirect / temporal-redirect: `code` to `location`, as written; a snippet's `return`
   * URL with variables: `locationOf` builds it per request */
  | {
      type: 'redirect';
      code: number;
      location: string;
      locationOf?: HashKey | null;
      route: RouteInfo | null;
      accessLog: boolean;
    }
  /** a configuration-snippet's `return <code> [text]`: this status and body (null: the error page
   * of a 4xx/5xx, nothing for any other code), answered first in the location */
  | {
      type: 'fixed';
      status: number;
      body: string | null;
      route: RouteInfo | null;
      accessLog: boolean;
      /** never: a return ends the rewrite phase, before the access phase */
      auth?: null;
    };

/** Per-path settings every matched action carries (the same action object may serve many paths). */
export interface PathSettings {
  /** plain-HTTP requests here answer `code` to https (ssl-redirect, force-ssl-redirect), or null */
  httpsRedirect: { code: number; preserveTrailingSlash: boolean; withPort: boolean } | null;
  /** rewrite-target (with x-forwarded-prefix), or null */
  rewrite: CompiledRewrite | null;
  /** custom-headers and CORS of the route (route-headers.ts), or null: the runtime's `http` policy */
  response: RouteResponse | null;
  /** rate limits and allow/deny lists (access.ts), or null when the path has none */
  access: AccessPolicy | null;
  /** OpenTelemetry: proxied requests here get a span (tracing/route-tracing.ts), or null: none */
  tracing?: CompiledTracing | null;
}

/** What a path matcher of a compiled server holds. */
export type RoutedAction = Action & PathSettings;

export interface CompiledServer {
  hostname: string;
  /** from-to-www-redirect: this name only redirects to that host (308 by default), or null */
  redirectTo: string | null;
  /** app-root: `/` answers 302 to this path on the request's scheme and Host, or null */
  appRoot: string | null;
  /** the host has TLS settings: HTTP requests are redirected to HTTPS and HTTPS responses get HSTS */
  tls: boolean;
  /** auth-tls-*: client certificate authentication of the host, or null */
  clientAuth: CompiledClientAuth | null;
  paths: PathMatcher<RoutedAction>;
  /** a wildcard host some HTTPRoute names: it matches any number of labels, not just one */
  anyDepth?: true;
}

/** ssl-redirect and HSTS, from the global ConfigMap; the per-route redirect decision is PathSettings.httpsRedirect. */
export interface TlsPolicy {
  /** redirect HTTP to HTTPS on hosts with TLS */
  sslRedirect: boolean;
  /** redirect HTTP to HTTPS on every host */
  forceSslRedirect: boolean;
  redirectCode: number;
  /** rule paths (prefixes) never redirected */
  noRedirect: readonly string[];
  /** the Strict-Transport-Security value for HTTPS responses of hosts with TLS, or null */
  hsts: string | null;
}

export interface Runtime {
  readonly hash: string;
  readonly routesHash: string;
  readonly hosts: HostTable<CompiledServer>;
  readonly sni: SniStore;
  /** by upstream name; reused by the next compile while kind and peers allow */
  readonly balancers: ReadonlyMap<string, Balancer>;
  /** every peer key in use (with how many balancers use it), so the proxy can close pools of peers that left */
  readonly peerKeys: PeerKeys;
  /**
   * the peer keys the runtime this one was compiled over used and this one does not, when the
   * compile knows them (an endpoints-only change of noted upstreams); null: compare the two
   */
  readonly retiredPeers: readonly string[] | null;
  /** BackendTls ids compiled (proxy-ssl-*), so the proxy can close pools of settings that left */
  readonly backendTlsIds: ReadonlySet<string>;
  readonly tlsPolicy: TlsPolicy;
  /** the ConfigMap's request/response settings (client address, headers) */
  readonly http: HttpPolicy;
  /** block-cidrs: client addresses denied on every request (403), or null */
  readonly blockCidrs: CidrSet | null;
  /** block-user-agents, block-referers: requests denied (403) whatever the host, or null */
  readonly headerBlocks: HeaderBlocks | null;
  /**
   * ssl-passthrough: by ClientHello server name (exact, then `*.` wildcard, as the host table), the
   * target to relay to, or null for names whose TLS is terminated here; null when no host passes
   * through (connections are not peeked at)
   */
  readonly passthrough: HostTable<PassthroughTarget | null> | null;
  /** rate-limit zones by Ingress and limits; the next compile takes over those still in use */
  readonly rateLimitZones: ReadonlyMap<string, Zone>;
  /** each server's compile with what it depended on: the next compile keeps those still valid */
  readonly reuse: ReuseIndex;
  readonly model: Model;
}

/** Where an ssl-passthrough host's TLS connections are relayed (passthrough.ts). */
export interface PassthroughTarget {
  hostname: string;
  /** the upstream name ('' for none), for logs and /debug/model */
  upstream: string;
  /** its endpoints (`peers`, updated in place by an endpoints-only change); null: no upstream */
  balancer: Balancer | null;
  /** the ConfigMap's proxy-connect-timeout (the route's annotations do not apply to passthrough) */
  connectTimeoutMs: number;
  /** the round-robin position: the next connection starts at this peer */
  next: number;
}

export interface RuntimeDeps {
  generatedDefaultCertificate: CertificatePair;
  balancerEnv: BalancerEnv;
  ewmaStore: EwmaStore;
  /** the data plane's caches, kept across its runtimes; default: this compile's alone */
  caches?: RuntimeCaches;
}

/**
 * The steps, in order: balancers (taken over from `previous` by kind and endpoint set), the state
 * the routes share (ConfigMap policies, the default backend, caches by annotation value), the
 * servers (each server's routes compiled into its path matcher, or its compile kept from `previous`
 * when its content and inputs are unchanged: runtime-reuse.ts), the host table, then the passthrough
 * table, which uses the same balancers. The SNI store reuses `previous`'s TLS contexts by content on
 * its own.
 */
export function compileRuntime(model: Model, previous: Runtime | null, deps: RuntimeDeps): Runtime {
  if (previous !== null && previous.routesHash === model.routesHash) return updateEndpoints(previous, model);
  const upstreams = new UpstreamBalancers(model, previous?.balancers, deps);
  const routes = createRouteCompileState(
    model,
    upstreams,
    previous?.rateLimitZones,
    deps.caches ?? createRuntimeCaches(),
  );
  const servers = compileServers(routes, previous);
  const hosts = servers.hosts;
  // zones no route uses any more are forgotten (in-flight requests keep theirs until they end)
  routes.caches.zones.retain(routes.access.zones.keys());
  const passthrough =
    servers.reuse.passthroughs === 0
      ? null
      : compilePassthrough(model, upstreams, routes.defaultSettings.connectTimeoutMs);
  const sni = compileSniStore(model, deps.generatedDefaultCertificate, previous?.sni);
  return {
    hash: model.hash,
    routesHash: model.routesHash,
    hosts,
    sni,
    balancers: upstreams.balancers,
    peerKeys: upstreams.peerKeys,
    retiredPeers: null,
    backendTlsIds: routes.backendTlsIds,
    tlsPolicy: tlsPolicyOf(model),
    http: routes.http,
    blockCidrs: cidrSetOf(model.config.access.blockCidrs),
    headerBlocks: compileHeaderBlocks(model.config.access),
    passthrough,
    rateLimitZones: routes.access.zones,
    reuse: servers.reuse,
    model,
  };
}

/** ssl-redirect and HSTS from the ConfigMap: the HSTS header is written once here. */
function tlsPolicyOf(model: Model): TlsPolicy {
  const { hsts } = model.config;
  let header: string | null = null;
  if (hsts.enabled) {
    header = `max-age=${hsts.maxAge}`;
    if (hsts.includeSubdomains) header += '; includeSubDomains';
    if (hsts.preload) header += '; preload';
  }
  return {
    sslRedirect: model.config.sslRedirect,
    forceSslRedirect: model.config.forceSslRedirect,
    redirectCode: model.config.httpRedirectCode,
    noRedirect: model.config.noTlsRedirectLocations,
    hsts: header,
  };
}

/**
 * Only endpoints changed: keep every compiled structure, update the balancers in place. When the
 * model names the upstreams it changes (model-changes.ts), only their balancers are looked at and
 * the peer counts are patched; otherwise every balancer is.
 */
function updateEndpoints(previous: Runtime, model: Model): Runtime {
  const changed = changedUpstreamsOver(model, previous.model);
  if (changed === null) return updateAllEndpoints(previous, model);
  const counts = new Map<string, number>();
  const add = (key: string, by: number): void => {
    counts.set(key, (counts.get(key) ?? previous.peerKeys.get(key) ?? 0) + by);
  };
  for (const name of changed) {
    const balancer = previous.balancers.get(name);
    if (balancer === undefined) continue;
    const before = balancer.peers;
    updatePeers(balancer, model.upstreams[name]);
    if (balancer.peers === before) continue;
    for (const peer of before) add(peer.key, -1);
    for (const peer of balancer.peers) add(peer.key, 1);
  }
  const retired: string[] = [];
  const changes: Array<[string, number | undefined]> = [];
  for (const [key, count] of counts) {
    if (count > 0) changes.push([key, count]);
    else if (previous.peerKeys.has(key)) {
      retired.push(key);
      changes.push([key, undefined]);
    }
  }
  const peerKeys = changes.length === 0 ? previous.peerKeys : previous.peerKeys.patched(changes);
  return { ...previous, hash: model.hash, peerKeys, retiredPeers: retired, model };
}

function updateAllEndpoints(previous: Runtime, model: Model): Runtime {
  const counts = new Map<string, number>();
  for (const [name, balancer] of previous.balancers) {
    updatePeers(balancer, model.upstreams[name]);
    for (const peer of balancer.peers) counts.set(peer.key, (counts.get(peer.key) ?? 0) + 1);
  }
  return { ...previous, hash: model.hash, peerKeys: new LayeredMap(counts), retiredPeers: null, model };
}
