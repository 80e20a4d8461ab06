// compile(model, previous) → Runtime: everything a request needs, built off the request path. A
// runtime is immutable once built except for balancer endpoint sets, which an endpoints-only change
// updates in place (the same Balancer objects serve the old and the new runtime).

import { customDefaultBackendName } from '../model/annotations/index.ts';
import type { MirrorAnnotations } from '../model/annotations/mirror.ts';
import type { ProxySslAnnotations } from '../model/annotations/proxy-ssl.ts';
import {
  type DefaultRoute,
  type LocationAnnotations,
  type Model,
  type Route,
  type Server,
  type Upstream,
  type UpstreamSettings,
  upstreamSettings,
} from '../model/index.ts';
import { AccessCompiler, type AccessPolicy, type CidrSet, cidrSetOf } from './access.ts';
import { compileRouteAuth, type RouteAuth } from './auth.ts';
import { type BackendTls, compileBackendTls } from './backend-tls.ts';
import { type Balancer, type BalancerEnv, type Peer, peerKey } from './balancer.ts';
import type { ChashBalancer } from './balancers/chash.ts';
import type { EwmaStore } from './balancers/ewma.ts';
import { balancerKindFor, createBalancer } from './balancers/index.ts';
import { type CanaryAction, compileCanary } from './canary.ts';
import { type CompiledClientAuth, compileClientAuth } from './client-cert.ts';
import { type CustomErrors, compileCustomErrors } from './custom-errors.ts';
import { dataplaneError } from './events.ts';
import { compileHashKey, type HashKey } from './hash-key.ts';
import { compileHttpPolicy, type HttpPolicy } from './http-policy.ts';
import { type CompiledMirror, compileMirror } from './mirror.ts';
import type { ProxyTarget, TargetProtocol } from './proxy.ts';
import type { Zone } from './rate-limit.ts';
import { type CompiledRewrite, compileRewrite } from './rewrite.ts';
import { compileRouteResponse, type RouteResponse } from './route-headers.ts';
import { createPathMatcher, HostTable, type PathMatcher, type PathRule } from './router.ts';
import { type CertificatePair, compileSniStore, type SniStore } from './sni.ts';

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
   * `auth`: authentication before that answer (404, 502), or none */
  | {
      type: 'status';
      status: number;
      route: RouteInfo | null;
      accessLog: boolean;
      denied?: boolean;
      auth?: RouteAuth | null;
    }
  /** permanent-redirect / temporal-redirect: `code` to `location`, as written */
  | { type: 'redirect'; code: number; location: string; route: RouteInfo | null; accessLog: boolean };

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
  /** every peer key in use, so the proxy can close pools of peers that left */
  readonly peerKeys: ReadonlySet<string>;
  /** BackendTls ids compiled (proxy-ssl-*), so the proxy can close pools of settings that left */
  readonly backendTlsIds: ReadonlySet<string>;
  readonly tlsPolicy: TlsPolicy;
  /** the ConfigMap's request/response settings (client address, headers) */
  readonly http: HttpPolicy;
  /** block-cidrs: client addresses denied on every request (403), or null */
  readonly blockCidrs: CidrSet | null;
  /**
   * ssl-passthrough: by ClientHello server name (exact, then `*.` wildcard, as the host table), the
   * target to relay to, or null for names whose TLS is terminated here; null when no host passes
   * through (connections are not peeked at)
   */
  readonly passthrough: HostTable<PassthroughTarget | null> | null;
  /** rate-limit zones by Ingress and limits; the next compile takes over those still in use */
  readonly rateLimitZones: ReadonlyMap<string, Zone>;
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
}

/** The ProxyTarget fields a location's upstream settings decide (computed once per route). */
type TargetSettings = Omit<ProxyTarget, 'upstream' | 'balancer' | 'hashKey' | 'affinity'>;

/** upstream-vhost with NGINX variables ($best_http_host is the request's Host header here). */
function vhostTemplate(vhost: string | null): HashKey | null {
  if (vhost === null || !vhost.includes('$')) return null;
  return compileHashKey(vhost.replace(/\$\{best_http_host\}|\$best_http_host\b/g, () => '$http_host'));
}

export function targetSettings(settings: UpstreamSettings): TargetSettings {
  const { nextUpstream } = settings;
  const rewrite =
    settings.cookieDomain === null && settings.cookiePath === null && settings.redirect === null
      ? null
      : { cookieDomain: settings.cookieDomain, cookiePath: settings.cookiePath, redirect: settings.redirect };
  return {
    connectTimeoutMs: settings.connectTimeout * 1000,
    sendTimeoutMs: settings.sendTimeout * 1000,
    readTimeoutMs: settings.readTimeout * 1000,
    tries: settings.nextUpstreamTries,
    retryOn: {
      error: nextUpstream.error,
      timeout: nextUpstream.timeout,
      nonIdempotent: nextUpstream.nonIdempotent,
      invalidHeader: nextUpstream.invalidHeader,
      statuses: nextUpstream.statuses.length === 0 ? null : new Set(nextUpstream.statuses),
    },
    nextUpstreamTimeoutMs: settings.nextUpstreamTimeout * 1000,
    maxBodySize: settings.bodySize,
    bufferRequest: settings.requestBuffering,
    upstreamHost: settings.upstreamVhost?.includes('$') ? null : settings.upstreamVhost,
    upstreamHostOf: vhostTemplate(settings.upstreamVhost),
    rewrite,
    closeConnection: settings.connectionClose,
    limitRate:
      settings.limitRate > 0 ? { bytesPerSecond: settings.limitRate, after: settings.limitRateAfter } : null,
  };
}

function peersOf(upstream: Upstream): Peer[] {
  return upstream.endpoints.map((e) => ({
    address: e.address,
    port: e.port,
    key: peerKey(e.address, e.port),
  }));
}

function samePeers(a: readonly Peer[], b: readonly Peer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]?.key !== b[i]?.key) return false;
  return true;
}

export function compileRuntime(model: Model, previous: Runtime | null, deps: RuntimeDeps): Runtime {
  if (previous !== null && previous.routesHash === model.routesHash) return updateEndpoints(previous, model);

  const balancers = new Map<string, Balancer>();
  const peerKeys = new Set<string>();
  const balancerFor = (name: string): Balancer | null => {
    const upstream = model.upstreams[name];
    if (upstream === undefined) return null;
    let balancer = balancers.get(name);
    if (balancer === undefined) {
      const kind = balancerKindFor(upstream.loadBalance, upstream.hashBy, upstream.affinity);
      const peers = peersOf(upstream);
      const reused = previous?.balancers.get(name);
      const subsetSize = upstream.hashBy?.subsetSize ?? 3;
      const sameSubsets =
        kind !== 'chashsubset' || (reused as ChashBalancer | undefined)?.subsetSize === subsetSize;
      if (reused !== undefined && reused.kind === kind && sameSubsets) {
        if (!samePeers(reused.peers, peers)) reused.update(peers);
        balancer = reused;
      } else {
        balancer = createBalancer(kind, peers, deps.balancerEnv, deps.ewmaStore, subsetSize, name);
      }
      balancers.set(name, balancer);
      for (const peer of peers) peerKeys.add(peer.key);
    }
    return balancer;
  };

  /** upstream-hash-by keys, compiled once per upstream */
  const hashKeys = new Map<string, HashKey | null>();
  const hashKeyOf = (name: string): HashKey | null => {
    let key = hashKeys.get(name);
    if (key === undefined) {
      const template = model.upstreams[name]?.hashBy?.key;
      key = template === undefined ? null : compileHashKey(template);
      hashKeys.set(name, key);
    }
    return key;
  };

  /** upstream settings by annotation values: routes without their own share the parsed defaults */
  const settingsCache = new Map<object, Map<object, TargetSettings>>();
  const settingsOf = (annotations: LocationAnnotations): TargetSettings => {
    let byVhost = settingsCache.get(annotations.proxy);
    if (byVhost === undefined) {
      byVhost = new Map();
      settingsCache.set(annotations.proxy, byVhost);
    }
    let settings = byVhost.get(annotations.upstreamVhost);
    if (settings === undefined) {
      settings = targetSettings(upstreamSettings(annotations, model.config));
      byVhost.set(annotations.upstreamVhost, settings);
    }
    return settings;
  };

  /** proxy-ssl-*: compiled once per distinct annotation value (routes of one Ingress share it) */
  const backendTlsCache = new Map<ProxySslAnnotations, BackendTls | null | 'denied'>();
  const backendTlsIds = new Set<string>();
  const backendTlsOf = (value: ProxySslAnnotations): BackendTls | null | 'denied' => {
    if (value.secret === null) return null;
    if (value.denied !== null) return 'denied';
    let compiled = backendTlsCache.get(value);
    if (compiled === undefined) {
      try {
        compiled = compileBackendTls(value);
      } catch {
        // the build validated the PEMs and the ciphers; should OpenSSL still refuse them, deny the
        // location rather than connect without the TLS it asked for
        compiled = 'denied';
      }
      backendTlsCache.set(value, compiled);
      if (compiled !== null && compiled !== 'denied') backendTlsIds.add(compiled.id);
    }
    return compiled;
  };

  const logs = model.config.accessLog;
  const proxyTo = (
    upstreamName: string,
    route: RouteInfo | null,
    accessLog: boolean,
    settings: TargetSettings,
    whenEmpty: 404 | 503 = 503,
    protocol: TargetProtocol = 'HTTP',
    backendTls: BackendTls | null = null,
  ): Action => {
    const balancer = balancerFor(upstreamName);
    if (balancer === null) return { type: 'status', status: 503, route, accessLog };
    const target: ProxyTarget = {
      upstream: upstreamName,
      balancer,
      hashKey: hashKeyOf(upstreamName),
      affinity: model.upstreams[upstreamName]?.affinity ?? null,
      protocol,
      backendTls,
      ...settings,
    };
    return {
      type: 'proxy',
      target,
      route,
      whenEmpty,
      accessLog,
      canary: null,
      setsAffinityCookie: false,
      mirror: null,
    };
  };

  // The controller's default backend: its Service, answering 404 itself while it has no endpoints.
  // It (and the custom error backends) get the ConfigMap's upstream settings.
  const defaultSettings = targetSettings(upstreamSettings(null, model.config));
  const defaultBackendLogs = !logs.disabled && logs.forDefaultBackend;
  const defaultBackend: Action =
    model.defaultBackend === null
      ? { type: 'status', status: 404, route: null, accessLog: defaultBackendLogs }
      : proxyTo(model.defaultBackend, null, defaultBackendLogs, defaultSettings, 404);
  const routeLogs = (annotations: LocationAnnotations) => !logs.disabled && annotations.accessLog.enabled;

  const routeInfo = (ingress: { namespace: string; name: string } | null, upstream: string | null) => {
    if (ingress === null) return null;
    const service = upstream === null ? undefined : model.upstreams[upstream]?.service;
    return {
      namespace: ingress.namespace,
      ingress: ingress.name,
      service: service?.name ?? '',
      servicePort: service?.port ?? '',
    };
  };

  const actionFor = (route: Route | DefaultRoute): Action => {
    const redirect = route.annotations.redirect.redirect;
    if (redirect !== null) {
      const upstream = route.backend.type === 'upstream' ? route.backend.upstream : null;
      return {
        type: 'redirect',
        code: redirect.code,
        location: redirect.url,
        route: routeInfo(route.ingress, upstream),
        accessLog: routeLogs(route.annotations),
      };
    }
    // custom-headers or a proxy-ssl-secret that cannot be honoured deny the location
    // (CUSTOM_HEADERS_DENIED, PROXY_SSL_UNAVAILABLE)
    const backendTls = backendTlsOf(route.annotations.proxySsl);
    if (route.annotations.customHeaders.denied !== null || backendTls === 'denied') {
      const upstream = route.backend.type === 'upstream' ? route.backend.upstream : null;
      return {
        type: 'status',
        status: 503,
        route: routeInfo(route.ingress, upstream),
        accessLog: routeLogs(route.annotations),
        denied: true,
      };
    }
    if (route.backend.type === 'default') return defaultBackend;
    const upstream = route.backend.upstream;
    // the route's upstream settings serve its canary too (a canary's own location annotations are ignored)
    const settings = settingsOf(route.annotations);
    const protocol = route.annotations.backendProtocol.protocol;
    // FastCGI cannot be spoken: 502 rather than HTTP to a FastCGI port (BACKEND_PROTOCOL_UNSUPPORTED)
    if (protocol === 'FCGI') {
      return {
        type: 'status',
        status: 502,
        route: routeInfo(route.ingress, upstream),
        accessLog: routeLogs(route.annotations),
      };
    }
    const proxied = proxyTo(
      upstream,
      routeInfo(route.ingress, upstream),
      routeLogs(route.annotations),
      settings,
      503,
      protocol,
      backendTls,
    );
    const action =
      proxied.type === 'proxy' && 'setsAffinityCookie' in route && route.setsAffinityCookie
        ? { ...proxied, setsAffinityCookie: true }
        : proxied;
    const withErrors = action.type === 'proxy' ? withCustomErrors(action, route) : action;
    const canary = 'canary' in route ? route.canary : null;
    if (withErrors.type !== 'proxy' || canary === null) return withErrors;
    const canaryBalancer = balancerFor(canary.upstream);
    if (canaryBalancer === null) return action;
    const target: ProxyTarget = {
      upstream: canary.upstream,
      balancer: canaryBalancer,
      hashKey: hashKeyOf(canary.upstream),
      affinity: model.upstreams[canary.upstream]?.affinity ?? null,
      // the canary is served through the main route's location: its backend-protocol and settings
      protocol,
      backendTls,
      ...settings,
    };
    return { ...withErrors, canary: compileCanary(canary, target) };
  };

  /** custom-http-errors (the route's, else the ConfigMap's) and the route's default-backend Service. */
  const withCustomErrors = (action: Action & { type: 'proxy' }, route: Route | DefaultRoute): Action => {
    const { codes, backend, disableIntercept } = route.annotations.customErrors;
    const effective = codes ?? model.config.customHttpErrors;
    let upstream: string | null = null;
    if (backend !== null && route.ingress !== null) {
      const name = customDefaultBackendName(route.ingress.namespace, backend);
      if (model.upstreams[name] !== undefined) upstream = name;
    }
    const whenEmpty = upstream !== null;
    upstream ??= model.defaultBackend;
    if (upstream === null || (effective.length === 0 && !whenEmpty)) return action;
    const balancer = balancerFor(upstream);
    if (balancer === null) return action;
    const target = {
      upstream,
      balancer,
      hashKey: null,
      affinity: null,
      ...defaultSettings,
    };
    return {
      ...action,
      errors: compileCustomErrors(effective, target, whenEmpty, action.route, !disableIntercept),
    };
  };

  // ingress-nginx's redirect_to_https, decided per path at compile time: never for the
  // no-tls-redirect-locations (prefixes of the rule path); force-ssl-redirect always; ssl-redirect
  // when the host has TLS settings. Unset annotations follow the ConfigMap.
  const { config } = model;
  const http = compileHttpPolicy(config);
  const httpsRedirectOf = (
    annotations: LocationAnnotations,
    locationPath: string,
    hostHasTls: boolean,
  ): PathSettings['httpsRedirect'] => {
    for (const prefix of config.noTlsRedirectLocations) if (locationPath.startsWith(prefix)) return null;
    const { sslRedirect, forceSslRedirect, preserveTrailingSlash, usePortInRedirects } =
      annotations.sslRedirect;
    const redirect =
      (forceSslRedirect ?? config.forceSslRedirect) || ((sslRedirect ?? config.sslRedirect) && hostHasTls);
    return redirect
      ? { code: config.httpRedirectCode, preserveTrailingSlash, withPort: usePortInRedirects }
      : null;
  };
  const access = new AccessCompiler(config.access, previous?.rateLimitZones);
  /** mirror-*: compiled once per distinct annotation value (routes of one Ingress share it) */
  const mirrors = new Map<MirrorAnnotations, CompiledMirror | null>();
  const mirrorOf = (value: MirrorAnnotations): CompiledMirror | null => {
    if (value.target === null) return null;
    let compiled = mirrors.get(value);
    if (compiled === undefined) {
      compiled = compileMirror(value);
      mirrors.set(value, compiled);
    }
    return compiled;
  };
  const routed = (server: Server, route: Route | DefaultRoute, locationPath: string): RoutedAction => {
    const { target, forwardedPrefix } = route.annotations.rewrite;
    const unmirrored = actionFor(route);
    const mirror = unmirrored.type === 'proxy' ? mirrorOf(route.annotations.mirror) : null;
    const action: Action =
      mirror === null || unmirrored.type !== 'proxy' ? unmirrored : { ...unmirrored, mirror };
    // authentication runs in the access phase: after redirects, the 503 of an unknown upstream and
    // rewrites; a route whose auth cannot be resolved renders `return 503` (before ssl-redirect)
    const auth = compileRouteAuth(
      route.annotations,
      locationPath,
      route.ingress !== null,
      model.config,
      http,
    );
    if (auth === 'denied' && action.type !== 'redirect') {
      return {
        type: 'status',
        status: 503,
        route: action.route,
        accessLog: action.accessLog,
        denied: true,
        httpsRedirect: null,
        rewrite: null,
        response: compileRouteResponse(route.annotations, http),
        // NGINX's `return 503` in the rewrite phase: the access phase never runs
        access: null,
      };
    }
    const guarded =
      auth === null ||
      auth === 'denied' ||
      action.type === 'redirect' ||
      (action.type === 'status' && action.status === 503)
        ? action
        : { ...action, auth };
    return {
      ...guarded,
      httpsRedirect: httpsRedirectOf(route.annotations, locationPath, server.tls !== null),
      rewrite: compileRewrite(locationPath, target, forwardedPrefix),
      response: compileRouteResponse(route.annotations, http),
      access: access.policyOf(route.annotations, route.ingress),
    };
  };

  const compileServer = (server: Server): CompiledServer => {
    const rules: PathRule<RoutedAction>[] = server.routes.map((route) => {
      const value = routed(server, route, route.path);
      return {
        path: route.path,
        pathType: route.pathType,
        value,
        captures: value.rewrite?.reuseCaptures === true,
      };
    });
    const fallback = routed(server, server.defaultRoute, '/');
    return {
      hostname: server.hostname,
      redirectTo: null,
      appRoot: server.annotations.appRoot.path,
      tls: server.tls !== null,
      clientAuth: compileClientAuth(server.clientAuth),
      paths: createPathMatcher(rules, fallback, server.regex, (path, error) =>
        dataplaneError.publish({
          message: `host ${server.hostname}: path ${path} is not a valid regex: ${error.message}`,
        }),
      ),
    };
  };

  const hosts = new HostTable<CompiledServer>(compileServer(model.catchAll));
  const compiled = model.servers.map((server) => [server, compileServer(server)] as const);
  for (const [server, entry] of compiled) hosts.add(server.hostname, entry);
  for (const [server, entry] of compiled)
    for (const alias of server.annotations.alias.aliases) hosts.add(alias, entry);
  const passthrough = compilePassthrough(model, balancerFor, defaultSettings.connectTimeoutMs);
  // from-to-www-redirect names come last: a host or an alias of that name wins
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

  return {
    hash: model.hash,
    routesHash: model.routesHash,
    hosts,
    sni: compileSniStore(model, deps.generatedDefaultCertificate, previous?.sni),
    balancers,
    peerKeys,
    backendTlsIds,
    tlsPolicy: tlsPolicyOf(model),
    http,
    blockCidrs: cidrSetOf(model.config.access.blockCidrs),
    passthrough,
    rateLimitZones: access.zones,
    model,
  };
}

/**
 * The passthrough table: every name the host table knows, in the same order (hosts, then aliases,
 * then from-to-www names), so that an exact name whose TLS is terminated is never caught by a
 * passthrough wildcard. Only a host's own name passes through, not its aliases (ingress-nginx
 * matches the server's hostname). Null when no host passes through.
 */
function compilePassthrough(
  model: Model,
  balancerFor: (name: string) => Balancer | null,
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
      balancer: upstream === null ? null : balancerFor(upstream),
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

/** Only endpoints changed: keep every compiled structure, update the balancers in place. */
function updateEndpoints(previous: Runtime, model: Model): Runtime {
  const peerKeys = new Set<string>();
  for (const [name, balancer] of previous.balancers) {
    const upstream = model.upstreams[name];
    const peers = upstream === undefined ? [] : peersOf(upstream);
    if (!samePeers(balancer.peers, peers)) balancer.update(peers);
    for (const peer of peers) peerKeys.add(peer.key);
  }
  return { ...previous, hash: model.hash, peerKeys, model };
}
