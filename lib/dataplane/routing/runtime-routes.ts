// One route of the model → what its path matcher holds (a RoutedAction): the action (proxy, redirect,
// status), its upstream settings, backend TLS, canary, custom errors, mirror and authentication, and
// the per-path settings (https redirect, rewrite, response headers, access policy). Everything a
// route needs is computed here once, and shared between routes whose annotation values are the same
// objects (the model shares the parsed values of one Ingress).

import { customDefaultBackendName } from '../../model/annotations/custom-errors.ts';
import type { MirrorAnnotations } from '../../model/annotations/mirror.ts';
import type { ProxySslAnnotations } from '../../model/annotations/proxy-ssl.ts';
import type {
  DefaultRoute,
  LocationAnnotations,
  Model,
  Route,
  Server,
  UpstreamSettings,
} from '../../model/index.ts';
import { upstreamSettings } from '../../model/upstream-settings.ts';
import { AccessCompiler } from '../access/access.ts';
import { compileRouteAuth } from '../access/auth.ts';
import type { Zone } from '../access/rate-limit.ts';
import { createRuntimeCaches, type RuntimeCaches } from '../caches.ts';
import { compileHttpPolicy, type HttpPolicy } from '../http-policy.ts';
import { compileCustomErrors } from '../responses/custom-errors.ts';
import { compileRewrite } from '../responses/rewrite.ts';
import { compileRouteResponse } from '../responses/route-headers.ts';
import { routeTracingOf } from '../tracing/route-tracing.ts';
import { type BackendTls, compileBackendTls } from '../upstream/backend-tls.ts';
import { compileHashKey, type HashKey } from '../upstream/hash-key.ts';
import { type CompiledMirror, compileMirror } from '../upstream/mirror.ts';
import type { ProxyTarget, TargetProtocol } from '../upstream/target.ts';
import { compileCanary } from './canary.ts';
import type { Action, PathSettings, RoutedAction, RouteInfo } from './runtime.ts';
import type { UpstreamBalancers } from './runtime-balancers.ts';

/** The ProxyTarget fields a location's upstream settings decide (computed once per route). */
export type TargetSettings = Omit<ProxyTarget, 'upstream' | 'balancer' | 'hashKey' | 'affinity'>;

/** What the routes of one compile share: the ConfigMap's policies, the default backend, and caches. */
export interface RouteCompileState {
  readonly model: Model;
  readonly upstreams: UpstreamBalancers;
  /** the ConfigMap's request/response settings (client address, headers) */
  readonly http: HttpPolicy;
  /** allow/deny lists and rate-limit zones; the zones of the previous runtime are taken over */
  readonly access: AccessCompiler;
  /** the ConfigMap's upstream settings: the default backend's and the custom error backends' */
  readonly defaultSettings: TargetSettings;
  /** what a route to the controller's default backend does */
  readonly defaultBackend: Action;
  /** upstream settings by annotation values (proxy, then upstream-vhost) */
  readonly settings: Map<object, Map<object, TargetSettings>>;
  /** proxy-ssl-*, compiled once per distinct annotation value (routes of one Ingress share it) */
  readonly backendTls: Map<ProxySslAnnotations, BackendTls | null | 'denied'>;
  /** the ids of the BackendTls compiled, so the proxy can close pools of settings that left */
  readonly backendTlsIds: Set<string>;
  /** mirror-*, compiled once per distinct annotation value */
  readonly mirrors: Map<MirrorAnnotations, CompiledMirror | null>;
  /**
   * the proxy targets made so far, by settings, backend TLS, then protocol and upstream: routes to
   * one upstream with the same settings share one (immutable) target. At 10,000 Ingresses this was
   * 60,000 targets of ~20 fields for 30,000 upstreams
   */
  readonly targets: Map<TargetSettings, Map<BackendTls | null, Map<string, ProxyTarget>>>;
  /** what the data plane keeps across runtimes (path regexes, bcrypt outcomes, verified leaves) */
  readonly caches: RuntimeCaches;
  /** while one server compiles (runtime-reuse.ts): where the BackendTls ids it uses go */
  readonly recording: { backendTlsIds: Set<string> | null };
}

export function createRouteCompileState(
  model: Model,
  upstreams: UpstreamBalancers,
  previousZones: ReadonlyMap<string, Zone> | undefined,
  caches: RuntimeCaches = createRuntimeCaches(),
): RouteCompileState {
  // The controller's default backend: its Service, answering 404 itself while it has no endpoints.
  // It (and the custom error backends) get the ConfigMap's upstream settings.
  const defaultSettings = targetSettings(upstreamSettings(null, model.config));
  const logs = model.config.accessLog;
  const defaultBackendLogs = !logs.disabled && logs.forDefaultBackend;
  const defaultBackend: Action =
    model.defaultBackend === null
      ? // ingress-nginx proxies these to its own 404 server under this upstream name, which its
        // access log and dashboards show
        {
          type: 'status',
          status: 404,
          route: null,
          accessLog: defaultBackendLogs,
          upstream: 'upstream-default-backend',
        }
      : proxyTo({ model, upstreams }, model.defaultBackend, null, defaultBackendLogs, defaultSettings, 404);
  return {
    model,
    upstreams,
    http: compileHttpPolicy(model.config),
    access: new AccessCompiler(model.config.access, previousZones, caches.zones),
    defaultSettings,
    defaultBackend,
    settings: new Map(),
    backendTls: new Map(),
    backendTlsIds: new Set(),
    mirrors: new Map(),
    targets: new Map(),
    caches,
    recording: { backendTlsIds: null },
  };
}

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
    maxResponseHead: settings.bufferSize,
    bufferRequest: settings.requestBuffering,
    upstreamHost: settings.upstreamVhost?.includes('$') ? null : settings.upstreamVhost,
    upstreamHostOf: vhostTemplate(settings.upstreamVhost),
    rewrite,
    closeConnection: settings.connectionClose,
    limitRate:
      settings.limitRate > 0 ? { bytesPerSecond: settings.limitRate, after: settings.limitRateAfter } : null,
  };
}

/** The upstream settings of a route: routes without their own share the parsed defaults. */
function settingsOf(state: RouteCompileState, annotations: LocationAnnotations): TargetSettings {
  let byVhost = state.settings.get(annotations.proxy);
  if (byVhost === undefined) {
    byVhost = new Map();
    state.settings.set(annotations.proxy, byVhost);
  }
  let settings = byVhost.get(annotations.upstreamVhost);
  if (settings === undefined) {
    settings = targetSettings(upstreamSettings(annotations, state.model.config));
    byVhost.set(annotations.upstreamVhost, settings);
  }
  return settings;
}

function backendTlsOf(state: RouteCompileState, value: ProxySslAnnotations): BackendTls | null | 'denied' {
  if (value.secret === null) return null;
  if (value.denied !== null) return 'denied';
  let compiled = state.backendTls.get(value);
  if (compiled === undefined) {
    try {
      compiled = compileBackendTls(value);
    } catch {
      // the build validated the PEMs and the ciphers; should OpenSSL still refuse them, deny the
      // location rather than connect without the TLS it asked for
      compiled = 'denied';
    }
    state.backendTls.set(value, compiled);
    if (compiled !== null && compiled !== 'denied') state.backendTlsIds.add(compiled.id);
  }
  if (compiled !== null && compiled !== 'denied') state.recording.backendTlsIds?.add(compiled.id);
  return compiled;
}

function mirrorOf(state: RouteCompileState, value: MirrorAnnotations): CompiledMirror | null {
  if (value.target === null) return null;
  let compiled = state.mirrors.get(value);
  if (compiled === undefined) {
    compiled = compileMirror(value);
    state.mirrors.set(value, compiled);
  }
  return compiled;
}

/** The target of `upstreamName` with these settings, made once per compile (RouteCompileState.targets). */
function sharedTarget(
  targets: RouteCompileState['targets'] | undefined,
  key: {
    settings: TargetSettings;
    backendTls: BackendTls | null;
    protocol: TargetProtocol;
    upstream: string;
  },
  make: () => ProxyTarget,
): ProxyTarget {
  if (targets === undefined) return make();
  let byTls = targets.get(key.settings);
  if (byTls === undefined) {
    byTls = new Map();
    targets.set(key.settings, byTls);
  }
  let byName = byTls.get(key.backendTls);
  if (byName === undefined) {
    byName = new Map();
    byTls.set(key.backendTls, byName);
  }
  const name = `${key.protocol} ${key.upstream}`;
  let target = byName.get(name);
  if (target === undefined) {
    target = make();
    byName.set(name, target);
  }
  return target;
}

function proxyTo(
  state: Pick<RouteCompileState, 'model' | 'upstreams'> & { targets?: RouteCompileState['targets'] },
  upstreamName: string,
  route: RouteInfo | null,
  accessLog: boolean,
  settings: TargetSettings,
  whenEmpty: 404 | 503 = 503,
  protocol: TargetProtocol = 'HTTP',
  backendTls: BackendTls | null = null,
): Action {
  // asked for before any shared target is taken: a server's compile records the upstreams it uses
  const balancer = state.upstreams.balancerFor(upstreamName);
  if (balancer === null) return { type: 'status', status: 503, route, accessLog };
  const hashKey = state.upstreams.hashKeyOf(upstreamName);
  const affinity = state.upstreams.upstream(upstreamName)?.affinity ?? null;
  const key = { settings, backendTls, protocol, upstream: upstreamName };
  const target = sharedTarget(state.targets, key, () => ({
    upstream: upstreamName,
    balancer,
    hashKey,
    affinity,
    protocol,
    backendTls,
    ...settings,
  }));
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
}

export function routeLogs(model: Model, annotations: LocationAnnotations): boolean {
  return !model.config.accessLog.disabled && annotations.accessLog.enabled;
}

export function routeInfo(state: RouteCompileState, route: Route | DefaultRoute): RouteInfo | null {
  const { ingress } = route;
  if (ingress === null) return null;
  const upstream = route.backend.type === 'upstream' ? route.backend.upstream : null;
  const service = upstream === null ? undefined : state.upstreams.upstream(upstream)?.service;
  return {
    namespace: ingress.namespace,
    ingress: ingress.name,
    service: service?.name ?? '',
    servicePort: service?.port ?? '',
  };
}

// Anything outside printable ASCII, as UTF-8 %XX: a lone surrogate as U+FFFD's bytes, as Buffer does
const UNSAFE_IN_HEADER = /[^\x21-\x7e]/u;
const UNSAFE_IN_HEADER_ALL = /[^\x21-\x7e]/gu;
const percentEncoded = (char: string): string => {
  let out = '';
  for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
};

/**
 * A Location built from request variables (`$uri` is the decoded path: `%0d%0a` is CR LF there) with
 * every byte a header cannot carry percent-encoded. NGINX writes them raw, which splits the response;
 * Node would refuse the header (a 500), and the upgrade path writes its head by hand.
 */
export function headerSafe(location: HashKey): HashKey {
  return (input) => {
    const url = location(input);
    return UNSAFE_IN_HEADER.test(url) ? url.replace(UNSAFE_IN_HEADER_ALL, percentEncoded) : url;
  };
}

/** What a route does before the per-path settings: redirect, a denied or unsupported location, or a proxy. */
function actionFor(state: RouteCompileState, route: Route | DefaultRoute): Action {
  const { model } = state;
  // a configuration-snippet's `return` comes before the redirect annotations' in ingress-nginx's location
  const answer = route.annotations.snippet.rules?.return ?? null;
  if (answer !== null) {
    const info = routeInfo(state, route);
    const accessLog = routeLogs(model, route.annotations);
    if (answer.location !== null) {
      const variables = answer.location.includes('$');
      return {
        type: 'redirect',
        code: answer.code,
        location: answer.location,
        locationOf: variables ? headerSafe(compileHashKey(answer.location)) : null,
        route: info,
        accessLog,
      };
    }
    return { type: 'fixed', status: answer.code, body: answer.text, route: info, accessLog };
  }
  const redirect = route.annotations.redirect.redirect;
  if (redirect !== null) {
    return {
      type: 'redirect',
      code: redirect.code,
      location: redirect.url,
      route: routeInfo(state, route),
      accessLog: routeLogs(model, route.annotations),
    };
  }
  // custom-headers or a proxy-ssl-secret that cannot be honoured deny the location
  // (CUSTOM_HEADERS_DENIED, PROXY_SSL_UNAVAILABLE)
  const backendTls = backendTlsOf(state, route.annotations.proxySsl);
  if (route.annotations.customHeaders.denied !== null || backendTls === 'denied') {
    return {
      type: 'status',
      status: 503,
      route: routeInfo(state, route),
      accessLog: routeLogs(model, route.annotations),
      denied: true,
    };
  }
  // an HTTPRoute rule's weighted backends reach here one by one, as 'upstream' (gateway-routes.ts)
  if (route.backend.type !== 'upstream') return state.defaultBackend;
  return proxiedAction(state, route, route.backend.upstream, backendTls);
}

/** A route to an upstream: its settings and protocol, affinity cookie, custom errors and canary. */
function proxiedAction(
  state: RouteCompileState,
  route: Route | DefaultRoute,
  upstream: string,
  backendTls: BackendTls | null,
): Action {
  const { model } = state;
  // the route's upstream settings serve its canary too (a canary's own location annotations are ignored)
  const settings = settingsOf(state, route.annotations);
  const protocol = route.annotations.backendProtocol.protocol;
  const info = routeInfo(state, route);
  const accessLog = routeLogs(model, route.annotations);
  // FastCGI cannot be spoken: 502 rather than HTTP to a FastCGI port (BACKEND_PROTOCOL_UNSUPPORTED)
  if (protocol === 'FCGI') return { type: 'status', status: 502, route: info, accessLog };
  const proxied = proxyTo(state, upstream, info, accessLog, settings, 503, protocol, backendTls);
  const action =
    proxied.type === 'proxy' && 'setsAffinityCookie' in route && route.setsAffinityCookie
      ? { ...proxied, setsAffinityCookie: true }
      : proxied;
  const withErrors = action.type === 'proxy' ? withCustomErrors(state, action, route) : action;
  const canary = 'canary' in route ? route.canary : null;
  if (withErrors.type !== 'proxy' || canary === null) return withErrors;
  const canaryBalancer = state.upstreams.balancerFor(canary.upstream);
  // (without its balancer the route keeps no custom errors either: `action`, not `withErrors`)
  if (canaryBalancer === null) return action;
  const target: ProxyTarget = {
    upstream: canary.upstream,
    balancer: canaryBalancer,
    hashKey: state.upstreams.hashKeyOf(canary.upstream),
    affinity: state.upstreams.upstream(canary.upstream)?.affinity ?? null,
    // the canary is served through the main route's location: its backend-protocol and settings
    protocol,
    backendTls,
    ...settings,
  };
  return { ...withErrors, canary: compileCanary(canary, target) };
}

/** custom-http-errors (the route's, else the ConfigMap's) and the route's default-backend Service. */
function withCustomErrors(
  state: RouteCompileState,
  action: Action & { type: 'proxy' },
  route: Route | DefaultRoute,
): Action {
  const { model } = state;
  const { codes, backend, disableIntercept } = route.annotations.customErrors;
  const effective = codes ?? model.config.customHttpErrors;
  let upstream: string | null = null;
  if (backend !== null && route.ingress !== null) {
    const name = customDefaultBackendName(route.ingress.namespace, backend);
    if (state.upstreams.upstream(name) !== undefined) upstream = name;
  }
  const whenEmpty = upstream !== null;
  upstream ??= model.defaultBackend;
  if (upstream === null || (effective.length === 0 && !whenEmpty)) return action;
  const balancer = state.upstreams.balancerFor(upstream);
  if (balancer === null) return action;
  const target = {
    upstream,
    balancer,
    hashKey: null,
    affinity: null,
    ...state.defaultSettings,
  };
  return {
    ...action,
    errors: compileCustomErrors(effective, target, whenEmpty, action.route, !disableIntercept),
  };
}

/**
 * ingress-nginx's redirect_to_https, decided per path at compile time: never for the
 * no-tls-redirect-locations (prefixes of the rule path); force-ssl-redirect always; ssl-redirect
 * when the host has TLS settings. Unset annotations follow the ConfigMap.
 */
function httpsRedirectOf(
  config: Model['config'],
  annotations: LocationAnnotations,
  locationPath: string,
  hostHasTls: boolean,
): PathSettings['httpsRedirect'] {
  for (const prefix of config.noTlsRedirectLocations) if (locationPath.startsWith(prefix)) return null;
  const { sslRedirect, forceSslRedirect, preserveTrailingSlash, usePortInRedirects } =
    annotations.sslRedirect;
  const redirect =
    (forceSslRedirect ?? config.forceSslRedirect) || ((sslRedirect ?? config.sslRedirect) && hostHasTls);
  return redirect
    ? { code: config.httpRedirectCode, preserveTrailingSlash, withPort: usePortInRedirects }
    : null;
}

/** A route of `server` (or its default route, at `/`) with its mirror, authentication and path settings. */
export function routedAction(
  state: RouteCompileState,
  server: Server,
  route: Route | DefaultRoute,
  locationPath: string,
): RoutedAction {
  const { model, http } = state;
  const { target, forwardedPrefix } = route.annotations.rewrite;
  const response = compileRouteResponse(route.annotations, http, server.annotations.snippet.rules);
  const unmirrored = actionFor(state, route);
  const mirror = unmirrored.type === 'proxy' ? mirrorOf(state, route.annotations.mirror) : null;
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
    state.caches.bcrypt,
    settingsOf(state, route.annotations).maxResponseHead,
  );
  if (auth === 'denied' && action.type !== 'redirect' && action.type !== 'fixed') {
    return {
      type: 'status',
      status: 503,
      route: action.route,
      accessLog: action.accessLog,
      denied: true,
      httpsRedirect: null,
      rewrite: null,
      response,
      // NGINX's `return 503` in the rewrite phase: the access phase never runs
      access: null,
    };
  }
  const guarded =
    auth === null ||
    auth === 'denied' ||
    action.type === 'redirect' ||
    action.type === 'fixed' ||
    (action.type === 'status' && action.status === 503)
      ? action
      : { ...action, auth };
  return {
    ...guarded,
    // a certificate only a Gateway listener set never turns on ssl-redirect for the Ingress paths
    httpsRedirect: httpsRedirectOf(
      model.config,
      route.annotations,
      locationPath,
      server.tls !== null && server.tls.gatewayOnly !== true,
    ),
    rewrite: compileRewrite(locationPath, target, forwardedPrefix),
    response,
    access: state.access.policyOf(route.annotations, route.ingress),
    tracing:
      guarded.type === 'proxy' ? routeTracingOf(model, route, locationPath, server, guarded.route) : null,
  };
}
