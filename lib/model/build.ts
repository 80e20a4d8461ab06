// buildModel: Kubernetes objects in, routing model and diagnostics out. Pure and deterministic:
// no I/O, no timers, no clock, no randomness. buildModel reads top to bottom as a chain of named
// steps, each owning one concern and sharing one BuildState (build-state.ts). The steps that select
// and prepare the Ingresses and assemble the result are here; the others live with their concern
// (servers.ts, server-tls.ts, routes.ts, canaries.ts, ...). Each is exported so a test can run it
// alone on a prepared state.

import { annotationPolicyOf } from './annotation-policy.ts';
import { resolveCustomHeaders } from './annotations/index.ts';
import { type AuthLookups, resolveAuthReferences } from './auth-refs.ts';
import { type BuildCaches, createBuildCaches } from './build-caches.ts';
import {
  type BuildState,
  createBuildState,
  createObjectLookups,
  type ObjectLookups,
  refName,
  type ServerDraft,
  splitKey,
} from './build-state.ts';
import { attachCanaries } from './canaries.ts';
import type { GlobalConfig } from './configmap/global-config.ts';
import { parseGlobalConfig } from './configmap/index.ts';
import type { ConfigMapLookup } from './configmap/key-parser.ts';
import { resolveDhParam } from './configmap/tls-session-keys.ts';
import { resolveCustomDefaultBackends, resolveDefaultBackendFlag } from './default-backends.ts';
import { type Diagnostic, DiagnosticsCollector } from './diagnostics.ts';
import { resolveGateways } from './gateway/resolve.ts';
import { addGatewayRoutes } from './gateway/routes.ts';
import { EMPTY_GATEWAY_GRAPH, type GatewayApiStatus, type GatewayGraph } from './gateway/types.ts';
import { modelFingerprints } from './hash.ts';
import type { CheckedIngress } from './ingress.ts';
import { checkContext, checkIngressOnce } from './ingress-checks.ts';
import { isOurIngress, ownedClassNames } from './ingress-class.ts';
import { objectKey, type Snapshot } from './k8s.ts';
import { DEFAULT_MODEL_OPTIONS, type ModelOptions } from './options.ts';
import { markPassthrough } from './passthrough.ts';
import { type ProxySslLookups, resolveProxySsl } from './proxy-ssl.ts';
import { addRoutes, finishRoutes } from './routes.ts';
import { resolveAliases, resolveWwwRedirects } from './server-names.ts';
import { resolveDefaultCertificateFlag } from './server-tls.ts';
import { addClientAuth, applyHostSettings, createServers } from './servers.ts';
import { combineSharedAffinity } from './shared-affinity.ts';
import { buildStreams } from './streams.ts';
import type { Certificate, Model, Server } from './types.ts';

export interface ModelReferences {
  /** `namespace/name` of every Service the model resolved, in first-use order */
  services: string[];
  /** `namespace/name` of every Secret the model looked up, in first-use order */
  secrets: string[];
  /** `namespace/name` of the ConfigMaps the global ConfigMap (proxy-set-headers, add-headers) and the
   * custom-headers annotations refer to */
  configMaps?: string[];
}

export interface BuildResult {
  model: Model;
  diagnostics: Diagnostic[];
  /** what the model depends on, so a store can ignore changes to anything else */
  references: ModelReferences;
  /** the status of our Gateway API objects, for the leader to write; absent: the snapshot has no
   * GatewayClass, Gateway or HTTPRoute (empty lists: routes only, whose old entries of ours go) */
  gatewayStatus?: GatewayApiStatus;
}

// Each step reads and extends the build state; the order matters, for the model (oldest wins) and
// for the order of the diagnostics and of the upstreams.
// `caches` (default: none kept) lets a caller reuse regexes and certificates from its earlier builds.
// `gatewaysOf` lets a test hand the build a GatewayGraph of its own.
export function buildModel(
  snapshot: Snapshot,
  overrides: Partial<ModelOptions> = {},
  caches: BuildCaches = createBuildCaches(),
  gatewaysOf: (state: BuildState) => GatewayGraph = resolveGateways,
): BuildResult {
  caches.pathRegexes.rotate();
  const options: ModelOptions = { ...DEFAULT_MODEL_OPTIONS, ...overrides };
  const diagnostics = new DiagnosticsCollector();
  const lookups = createObjectLookups(snapshot, caches.certificates);
  const config = readGlobalConfig(snapshot, options, lookups, diagnostics);
  caches.upstreams.begin(String(options.disableSvcExternalName));
  const state = createBuildState(snapshot, options, diagnostics, lookups, config, caches);
  selectIngresses(state);
  resolveLocationReferences(state);
  resolveDefaultBackendFlag(state);
  createServers(state);
  applyHostSettings(state);
  addClientAuth(state);
  addRoutes(state);
  const gateways = gatewaysOf(state);
  const gatewayCertificate = addGatewayRoutes(state, gateways);
  attachCanaries(state);
  markPassthrough(state);
  combineSharedAffinity(state);
  const servers = finishServers(state);
  const defaultCertificate = resolveDefaultCertificateFlag(state) ?? gatewayCertificate;
  const result = assembleResult(state, servers, defaultCertificate);
  if (gateways !== EMPTY_GATEWAY_GRAPH) result.gatewayStatus = gateways.status;
  caches.upstreams.end();
  return result;
}

/**
 * The global ConfigMap's settings alone, without building the model (its diagnostics are the
 * build's to report): what the process needs before its first build, e.g. how many data-plane
 * threads to start.
 */
export function globalConfigOf(snapshot: Snapshot, overrides: Partial<ModelOptions> = {}): GlobalConfig {
  const options: ModelOptions = { ...DEFAULT_MODEL_OPTIONS, ...overrides };
  return readGlobalConfig(snapshot, options, createObjectLookups(snapshot), new DiagnosticsCollector());
}

/** The global ConfigMap (--configmap), and the ConfigMaps its keys refer to. */
export function readGlobalConfig(
  snapshot: Snapshot,
  options: ModelOptions,
  lookups: ObjectLookups,
  diagnostics: DiagnosticsCollector,
): GlobalConfig {
  if (options.configMap === null) {
    return parseGlobalConfig(undefined, { namespace: '', name: '' }, diagnostics);
  }
  const ref = splitKey(options.configMap) ?? { namespace: '', name: options.configMap };
  const configMap = snapshot.configMaps.find(
    (c) => c.metadata?.namespace === ref.namespace && c.metadata?.name === ref.name,
  );
  if (configMap === undefined) {
    diagnostics.report(
      'ConfigMap',
      ref,
      'CONFIGMAP_NOT_FOUND',
      `--configmap ${options.configMap} does not exist; ingress-nginx defaults are used`,
    );
  }
  const config = parseGlobalConfig(configMap, ref, diagnostics, lookups.configMap);
  resolveDhParam(config, lookups.secret, diagnostics, ref);
  return config;
}

/**
 * Our Ingresses (class), oldest first, each checked (spec, annotations) and split into main
 * Ingresses and canaries: canaries never create a host, a path or host settings, they attach to
 * main routes.
 */
export function selectIngresses(state: BuildState): void {
  const { snapshot, options, config, diagnostics } = state;
  const owned = ownedClassNames(snapshot.ingressClasses, options);
  const ours = snapshot.ingresses.filter((ingress) => isOurIngress(ingress, owned, options));
  // A snapshot from the API server never holds two Ingresses with one namespace/name; a hand-made one
  // can. Which copy came first is input order, so none is used (the build stays deterministic).
  const copies = new Map<string, number>();
  for (const ingress of ours) {
    const { namespace, name } = ingress.metadata ?? {};
    if (typeof namespace !== 'string' || typeof name !== 'string') continue;
    const id = objectKey(namespace, name);
    copies.set(id, (copies.get(id) ?? 0) + 1);
  }
  const policy = annotationPolicyOf(config);
  const checks = state.caches.ingressChecks;
  checks.begin(checkContext(options, policy));
  for (const ingress of state.caches.ingressOrder.sort(ours)) {
    const checked = checkIngressOnce(ingress, options, diagnostics, policy, checks);
    if (checked === null) continue;
    if ((copies.get(refName(checked.ref)) ?? 0) > 1) {
      diagnostics.report(
        'Ingress',
        checked.ref,
        'INGRESS_INVALID',
        'the snapshot holds more than one Ingress with this namespace and name; none of them is used',
      );
      continue;
    }
    withCustomHeaders(checked, config, state.lookups.configMap, diagnostics);
    if (checked.annotations.ingress.canary.enabled) state.canaries.push(checked);
    else state.ingresses.push(checked);
  }
  checks.end();
}

/**
 * custom-headers: the referenced ConfigMap's entries become the Ingress's response headers, or its
 * location is denied (503) with a diagnostic, as ingress-nginx does.
 */
function withCustomHeaders(
  ingress: CheckedIngress,
  config: GlobalConfig,
  lookup: ConfigMapLookup,
  diagnostics: DiagnosticsCollector,
): void {
  const location = ingress.annotations.location;
  if (location.customHeaders.configMap === null) return;
  const customHeaders = resolveCustomHeaders(location.customHeaders, {
    namespace: ingress.ref.namespace,
    allowCrossNamespace: config.allowCrossNamespaceResources,
    allowed: config.globalAllowedResponseHeaders,
    lookup,
  });
  if (customHeaders.denied !== null) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'CUSTOM_HEADERS_DENIED',
      `custom-headers ${customHeaders.configMap}: ${customHeaders.denied}; the paths of this Ingress answer 503`,
    );
  }
  ingress.annotations = { ...ingress.annotations, location: { ...location, customHeaders } };
}

/** auth-secret, auth-proxy-set-headers and proxy-ssl-secret; a canary's location annotations are
 * never used, so only main Ingresses look theirs up. */
export function resolveLocationReferences(state: BuildState): void {
  const { config, lookups, diagnostics } = state;
  const authLookups: AuthLookups & ProxySslLookups = {
    allowCrossNamespace: config.allowCrossNamespaceResources,
    secret: lookups.secret,
    configMap: lookups.configMap,
    diagnostics,
    certificates: state.caches.certificates,
  };
  for (const ingress of state.ingresses) {
    const { location } = ingress.annotations;
    const withAuth = resolveAuthReferences(location, ingress.ref, authLookups);
    const resolved = resolveProxySsl(withAuth, ingress.ref, authLookups);
    // Ingresses without annotations share one parsed object: only an Ingress with auth or
    // proxy-ssl-secret gets a new one
    if (resolved !== location) ingress.annotations = { ...ingress.annotations, location: resolved };
  }
}

/**
 * Finish: hosts in name order; per server regex mode and Prefix paths that match the same requests,
 * then route order; server aliases, www redirects, the default-backend annotation's upstreams.
 * Returns the host servers (the catch-all stays in the state).
 */
export function finishServers(state: BuildState): Server[] {
  const { catchAll, drafts, diagnostics } = state;
  const servers = state.caches.hostOrder.of(drafts).map((host) => (drafts.get(host) as ServerDraft).server);
  for (const server of [catchAll.server, ...servers])
    finishRoutes(server, diagnostics, state.caches, state.routePrecedence);
  resolveAliases(servers, drafts, diagnostics);
  resolveWwwRedirects(servers, drafts, diagnostics);
  resolveCustomDefaultBackends([catchAll.server, ...servers], state.resolver, state.config, diagnostics);
  return servers;
}

/** The model (with its content hashes), the diagnostics in the order found, and the references. */
function assembleResult(
  state: BuildState,
  servers: Server[],
  defaultCertificate: string | null,
): BuildResult {
  const { certificates, config, resolver, lookups } = state;
  const certificateRecord: Record<string, Certificate> = {};
  for (const id of [...certificates.keys()].sort()) certificateRecord[id] = certificates.get(id)!;
  const upstreams = resolver.upstreams();
  const streams = buildStreams({
    configMaps: {
      TCP: state.options.tcpServicesConfigMap ?? null,
      UDP: state.options.udpServicesConfigMap ?? null,
    },
    reservedPorts: state.options.reservedPorts ?? [],
    disableSvcExternalName: state.options.disableSvcExternalName,
    configMap: lookups.configMap,
    resolver,
    diagnostics: state.diagnostics,
  });
  const body = {
    servers,
    catchAll: state.catchAll.server,
    upstreams,
    certificates: certificateRecord,
    defaultCertificate,
    defaultBackend: state.defaultBackend,
    config,
    streams: streams.table,
  };
  const model: Model = { ...body, ...modelFingerprints(body, state.caches.fingerprints) };
  const found = state.diagnostics.list();
  if (config.allowSnippetAnnotations && config.annotationsRiskLevel !== 'Critical') {
    for (const d of found) {
      if (d.code === 'SNIPPET_REFUSED')
        d.message += ` (allow-snippet-annotations is true in the ConfigMap, but as in ingress-nginx a snippet is only read with annotations-risk-level Critical, not ${config.annotationsRiskLevel})`;
    }
  }
  return {
    model,
    diagnostics: found,
    references: {
      services: [...new Set([...resolver.referencedServices(), ...streams.services])],
      secrets: [...lookups.referencedSecrets],
      configMaps: [...lookups.referencedConfigMaps],
    },
  };
}
