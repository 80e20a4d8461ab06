// /debug/model's answer for the runtime a data plane serves: hosts → routes → backends with their
// endpoints and balancer, the certificate each host is served with. Produced on the data plane's
// side (a worker thread would run it) as plain JSON; the controller adds its build's diagnostics.
// Never includes private keys or credentials: the status port is reachable from the cluster network.

import type {
  Backend,
  ClientAuth,
  LocationAnnotations,
  Model,
  ObjectRef,
  Server,
  Upstream,
  UpstreamSettings,
} from '../../model/index.ts';
import { redactConfig } from '../../model/redact.ts';
import { upstreamSettings } from '../../model/upstream-settings.ts';
import type { Runtime } from '../routing/runtime.ts';
import { peerKey } from '../upstream/balancer.ts';
import { type EwmaStore, ewmaScore } from '../upstream/balancers/ewma.ts';
import { bundleInfo, type CertificateInfoCache } from './certificates.ts';
import { gatewayRouteOf, WEIGHTED_BACKEND } from './gateway-route.ts';
import { canaryOf, pathSettingsOf, redactSettings, snippetOf } from './route-settings.ts';
import type {
  BackendDescription,
  ClientAuthDescription,
  HostDescription,
  HostTLS,
  PassthroughDescription,
  RouteDescription,
  RuntimeDescription,
  SnippetDescription,
} from './types.ts';

/** What a route or a default route sends requests to: an upstream name, or the controller's default. */
export const DEFAULT_BACKEND = 'default-backend';

const refOf = (ref: ObjectRef | null): string | null =>
  ref === null ? null : `${ref.namespace}/${ref.name}`;

const backendOf = (backend: Backend): string =>
  backend.type === 'upstream'
    ? backend.upstream
    : backend.type === 'weighted'
      ? WEIGHTED_BACKEND
      : DEFAULT_BACKEND;

/** What describing one runtime shares: the runtime, the certificate cache, the ConfigMap's upstream settings. */
interface Describing {
  runtime: Runtime;
  model: Model;
  certificates: CertificateInfoCache;
  defaultCertificate: RuntimeDescription['defaultCertificate'];
  upstreamDefaults: UpstreamSettings;
  /** upstreamDefaults as JSON, to tell a route's own settings from the ConfigMap's */
  defaultsJson: string;
}

/** The ewma balancers' shared state and the balancers' clock now (seconds), for `scores`. */
export interface EwmaScores {
  store: EwmaStore;
  now: number;
}

/**
 * The description of `runtime`. `certificates` (kept by the caller across calls) saves parsing the
 * same certificates on every request; only those still served stay in it. `ewma`: the data plane's
 * ewma state, to show each ewma backend's scores.
 */
export function describeRuntime(
  runtime: Runtime,
  certificates: CertificateInfoCache,
  ewma: EwmaScores | null = null,
): RuntimeDescription {
  const { model } = runtime;
  certificates.begin();
  const upstreamDefaults = redactSettings(upstreamSettings(null, model.config));
  const describing: Describing = {
    runtime,
    model,
    certificates,
    defaultCertificate: defaultCertificateOf(runtime, certificates),
    upstreamDefaults,
    defaultsJson: JSON.stringify(upstreamDefaults),
  };
  const description: RuntimeDescription = {
    hash: model.hash,
    routesHash: model.routesHash,
    hosts: [...model.servers, model.catchAll].map((server) => describeServer(describing, server)),
    backends: Object.values(model.upstreams)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((upstream) => describeUpstream(runtime, upstream, ewma)),
    defaultBackend: model.defaultBackend,
    defaultCertificate: describing.defaultCertificate,
    config: redactConfig(model.config),
    upstreamDefaults,
  };
  certificates.prune();
  return description;
}

/** The default certificate served: the configured one, unless the data plane refused it and fell back. */
function defaultCertificateOf(
  runtime: Runtime,
  certificates: CertificateInfoCache,
): RuntimeDescription['defaultCertificate'] {
  const { model, sni } = runtime;
  const configured =
    model.defaultCertificate === null ? undefined : model.certificates[model.defaultCertificate];
  return {
    secret: configured !== undefined && configured.sha256 === sni.defaultSha256 ? configured.id : 'generated',
    certificate: certificates.info(sni.defaultSha256, sni.defaultCertificate.certPem),
  };
}

/** `{ upstream }` when the location's settings differ from the ConfigMap's, else nothing. */
function upstreamOf(d: Describing, annotations: LocationAnnotations): { upstream?: UpstreamSettings } {
  const settings = redactSettings(upstreamSettings(annotations, d.model.config));
  return JSON.stringify(settings) === d.defaultsJson ? {} : { upstream: settings };
}

function tlsOf(d: Describing, server: Server): HostTLS | null {
  if (server.tls === null) return null;
  const certificate =
    server.tls.certificate === null ? undefined : d.model.certificates[server.tls.certificate];
  return {
    secret: certificate === undefined ? 'default' : certificate.id,
    ingress: refOf(server.tls.ingress) ?? '',
    ...(server.tls.ingress.kind === 'Gateway' ? { kind: 'Gateway' as const } : {}),
    certificate:
      certificate === undefined
        ? d.defaultCertificate.certificate
        : d.certificates.info(certificate.sha256, certificate.certPem),
  };
}

function passthroughOf(runtime: Runtime, server: Server): { passthrough?: PassthroughDescription } {
  const target = runtime.passthrough?.lookup(server.hostname);
  if (server.passthrough === null || target === undefined || target === null) return {};
  return {
    passthrough: {
      ingress: refOf(server.passthrough.ingress) ?? '',
      backend: target.upstream,
      endpoints: (target.balancer?.peers ?? []).map((peer) => peer.key),
      connectTimeout: target.connectTimeoutMs / 1000,
    },
  };
}

function describeClientAuth(auth: ClientAuth): ClientAuthDescription {
  return {
    secret: auth.secret,
    ingress: `${auth.ingress.namespace}/${auth.ingress.name}`,
    denied: auth.caPem === null,
    verifyClient: auth.verifyClient,
    verifyDepth: auth.verifyDepth,
    passCertificate: auth.passCertificate,
    matchCN: auth.matchCN,
    errorPage: auth.errorPage,
    caCertificates: bundleInfo(auth.caPem),
  };
}

function describeRoute(d: Describing, route: Server['routes'][number]): RouteDescription {
  return {
    path: route.path,
    pathType: route.pathType,
    ...(route.pathTypeAsWritten !== route.pathType ? { pathTypeAsWritten: route.pathTypeAsWritten } : {}),
    ingress: `${route.ingress.namespace}/${route.ingress.name}`,
    backend: backendOf(route.backend),
    backendProtocol: route.annotations.backendProtocol.protocol,
    canary: canaryOf(route.canary),
    ...gatewayRouteOf(route),
    ...pathSettingsOf(route.annotations, route.path),
    ...upstreamOf(d, route.annotations),
  };
}

function serverSnippetOf(server: Server): { serverSnippet?: SnippetDescription } {
  const snippet = snippetOf(server.annotations.snippet.rules);
  return snippet === null ? {} : { serverSnippet: snippet };
}

function describeServer(d: Describing, server: Server): HostDescription {
  const aliases = server.annotations.alias.aliases;
  const { defaultRoute } = server;
  return {
    host: server.hostname,
    ...(aliases.length > 0 ? { aliases: [...aliases] } : {}),
    ingress: refOf(server.ingress),
    ...(server.ingress?.kind === 'HTTPRoute' ? { ingressKind: 'HTTPRoute' as const } : {}),
    regex: server.regex,
    ...(server.annotations.fromToWww.from === null
      ? {}
      : { wwwRedirectFrom: server.annotations.fromToWww.from }),
    tls: tlsOf(d, server),
    ...(server.clientAuth === null ? {} : { clientAuth: describeClientAuth(server.clientAuth) }),
    ...passthroughOf(d.runtime, server),
    ...serverSnippetOf(server),
    routes: server.routes.map((route) => describeRoute(d, route)),
    defaultRoute: {
      ingress: refOf(defaultRoute.ingress),
      backend: backendOf(defaultRoute.backend),
      ...(defaultRoute.canary === null ? {} : { canary: canaryOf(defaultRoute.canary) }),
      ...pathSettingsOf(defaultRoute.annotations, '/'),
      ...upstreamOf(d, defaultRoute.annotations),
    },
  };
}

/** Microseconds are all a score's reader can tell apart. */
const roundScore = (seconds: number): number => Math.round(seconds * 1e6) / 1e6;

function describeUpstream(runtime: Runtime, upstream: Upstream, ewma: EwmaScores | null): BackendDescription {
  const balancer = runtime.balancers.get(upstream.name);
  const endpoints = upstream.endpoints.map((e) => peerKey(e.address, e.port));
  const description: BackendDescription = {
    name: upstream.name,
    service: `${upstream.service.namespace}/${upstream.service.name}:${upstream.service.port}`,
    externalName: upstream.externalName,
    loadBalance: upstream.loadBalance,
    balancer: balancer?.kind ?? null,
    endpoints,
  };
  if (balancer?.kind === 'ewma' && ewma !== null) {
    const scores: Record<string, number> = {};
    for (const key of endpoints) scores[key] = roundScore(ewmaScore(ewma.store, key, ewma.now));
    description.scores = scores;
  }
  return description;
}
