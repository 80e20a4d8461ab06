// buildModel: Kubernetes objects in, routing model and diagnostics out. Pure and deterministic:
// no I/O, no timers, no clock, no randomness. buildModel reads top to bottom as a chain of named
// steps, each owning one concern and sharing one BuildState (build-state.ts); each is exported so
// a test can run it alone on a prepared state.

import { RE2JS } from 're2js';
import {
  catchAllAnnotations,
  customDefaultBackendName,
  resolveCustomHeaders,
  serverGroupIsSet,
  serverGroupKeys,
  usesRegex,
} from './annotations/index.ts';
import { type AuthLookups, resolveAuthReferences } from './auth-refs.ts';
import type { ServiceBackendRef, UpstreamResolver } from './backends.ts';
import { type BuildCaches, createBuildCaches } from './build-caches.ts';
import {
  type BuildState,
  createBuildState,
  createObjectLookups,
  newDraft,
  type ObjectLookups,
  type ServerDraft,
} from './build-state.ts';
import { resolveClientAuth } from './client-auth.ts';
import { type ConfigMapLookup, type GlobalConfig, parseGlobalConfig } from './config.ts';
import { type Diagnostic, DiagnosticsCollector } from './diagnostics.ts';
import { modelHashes } from './hash.ts';
import { type CheckedIngress, checkIngress } from './ingress.ts';
import { isOurIngress, ownedClassNames } from './ingress-class.ts';
import { objectKey, type Snapshot } from './k8s.ts';
import { DEFAULT_MODEL_OPTIONS, type ModelOptions } from './options.ts';
import { sortIngresses } from './order.ts';
import { prefixMatchKey } from './paths.ts';
import { type ProxySslLookups, resolveProxySsl } from './proxy-ssl.ts';
import { applySharedAffinity } from './shared-affinity.ts';
import { sortSmall } from './sort.ts';
import { type CertificateResult, certificateCovers, tlsSecretNameFor } from './tls.ts';
import type { Backend, Canary, Certificate, Model, ObjectRef, Route, Server } from './types.ts';

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
}

const refName = (ref: ObjectRef): string => objectKey(ref.namespace, ref.name);
const sameRef = (a: ObjectRef, b: ObjectRef): boolean => a.namespace === b.namespace && a.name === b.name;

function splitKey(value: string): ObjectRef | null {
  const slash = value.indexOf('/');
  if (slash <= 0 || slash === value.length - 1 || value.indexOf('/', slash + 1) !== -1) return null;
  return { namespace: value.slice(0, slash), name: value.slice(slash + 1) };
}

/** ingress-nginx's location order: longest first, ties by reverse-lexicographic path; the sort is
 * stable, so routes with the same path keep Ingress order (this decides regex-mode matches). */
function compareRoutes(a: Route, b: Route): number {
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  if (a.path === b.path) return 0;
  return a.path > b.path ? -1 : 1;
}

// Each step reads and extends the build state; the order matters, for the model (oldest wins) and
// for the order of the diagnostics and of the upstreams.
// `caches` (default: none kept) lets a caller reuse regexes and certificates from its earlier builds.
export function buildModel(
  snapshot: Snapshot,
  overrides: Partial<ModelOptions> = {},
  caches: BuildCaches = createBuildCaches(),
): BuildResult {
  caches.pathRegexes.rotate();
  const options: ModelOptions = { ...DEFAULT_MODEL_OPTIONS, ...overrides };
  const diagnostics = new DiagnosticsCollector();
  const lookups = createObjectLookups(snapshot, caches.certificates);
  const config = readGlobalConfig(snapshot, options, lookups, diagnostics);
  const state = createBuildState(snapshot, options, diagnostics, lookups, config, caches);
  selectIngresses(state);
  resolveLocationReferences(state);
  resolveDefaultBackendFlag(state);
  createServers(state);
  applyHostSettings(state);
  addClientAuth(state);
  addRoutes(state);
  attachCanaries(state);
  markPassthrough(state);
  combineSharedAffinity(state);
  const servers = finishServers(state);
  const defaultCertificate = resolveDefaultCertificateFlag(state);
  return assembleResult(state, servers, defaultCertificate);
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
  return parseGlobalConfig(configMap, ref, diagnostics, lookups.configMap);
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
  for (const ingress of sortIngresses(ours)) {
    const checked = checkIngress(ingress, options, diagnostics, {
      blocklist: config.annotationValueWordBlocklist,
      riskLevel: config.annotationsRiskLevel,
    });
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

/** The upstream of one backend of an Ingress, with the Ingress's balancing settings. */
function useUpstream(state: BuildState, ingress: CheckedIngress, ref: ServiceBackendRef): Backend {
  const { backend, problem } = state.resolver.resolve(
    ref,
    ingress.annotations.ingress.loadBalance.algorithm ?? state.config.loadBalance,
    ingress.annotations.ingress.upstreamHash.hashBy,
    ingress.annotations.ingress.serviceUpstream.enabled ?? state.config.serviceUpstream,
  );
  if (problem !== null) state.diagnostics.report('Ingress', ingress.ref, problem.code, problem.message);
  return backend;
}

/** The controller's default backend (--default-backend-service, first port). */
export function resolveDefaultBackendFlag(state: BuildState): void {
  const flag = state.options.defaultBackendService;
  if (flag === null) return;
  state.defaultBackend = resolveDefaultBackend(flag, state.resolver, state.config, state.diagnostics);
}

/** Servers: the catch-all (from the oldest Ingress with only a defaultBackend), then one per host,
 * created by the oldest Ingress naming it, whose defaultBackend becomes the host's default route. */
export function createServers(state: BuildState): void {
  const { catchAll, drafts, diagnostics } = state;
  let catchAllOwner: ObjectRef | null = null;
  for (const ingress of state.ingresses) {
    let ownDefault: Backend | undefined;
    // resolved on first use only, so an Ingress that creates nothing does not resolve it
    const defaultBackendOf = (): Backend => {
      if (ownDefault === undefined) {
        ownDefault =
          ingress.defaultBackend === null
            ? { type: 'default' }
            : useUpstream(state, ingress, ingress.defaultBackend);
      }
      return ownDefault;
    };
    if (ingress.defaultBackend !== null && !ingress.hasRules) {
      if (catchAllOwner === null) {
        catchAllOwner = ingress.ref;
        catchAll.server.defaultRoute = {
          ingress: ingress.ref,
          backend: defaultBackendOf(),
          annotations: catchAllAnnotations(ingress.annotations.location),
          canary: null,
        };
      } else {
        diagnostics.report(
          'Ingress',
          ingress.ref,
          'DEFAULT_BACKEND_CONFLICT',
          `the older Ingress ${refName(catchAllOwner)} already provides the catch-all defaultBackend; this one is not used`,
        );
      }
    }
    for (const rule of ingress.rules) {
      if (rule.host === '' || drafts.has(rule.host)) continue;
      drafts.set(
        rule.host,
        newDraft(rule.host, ingress.ref, {
          ingress: ingress.ref,
          backend: defaultBackendOf(),
          annotations: ingress.annotations.location,
          canary: null,
        }),
      );
    }
  }
}

/** Host settings: server-level annotations and TLS, oldest Ingress first. */
export function applyHostSettings(state: BuildState): void {
  for (const ingress of state.ingresses) {
    for (const rule of ingress.rules) {
      const draft = state.drafts.get(rule.host);
      if (draft === undefined) continue;
      applyServerAnnotations(draft, ingress, state.diagnostics);
      applyTLS(draft, ingress, state.lookups.certificate, state.certificates, state.diagnostics);
    }
  }
}

/** Client certificate authentication: the Secret of the host's auth-tls-secret. */
export function addClientAuth(state: BuildState): void {
  for (const draft of state.drafts.values()) {
    const source = draft.annotationSource.authTls;
    if (source === undefined) continue;
    draft.server.clientAuth = resolveClientAuth(
      draft.server.annotations.authTls,
      source,
      draft.server.hostname,
      state.config.allowCrossNamespaceResources,
      state.lookups.secret,
      state.diagnostics,
    );
  }
}

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

/**
 * Canaries, oldest first: each path joins the main route of the same namespace, host, path and
 * pathType as written; the first canary to claim a route keeps it.
 */
export function attachCanaries(state: BuildState): void {
  for (const ingress of state.canaries) {
    if (ingress.defaultBackend !== null && !ingress.hasRules)
      attachCanaryToCatchAll(state, ingress, ingress.defaultBackend);
    for (const rule of ingress.rules) {
      const draft = rule.host === '' ? state.catchAll : state.drafts.get(rule.host);
      for (const path of rule.paths) {
        const where = `${path.pathTypeAsWritten} ${path.path} on host ${rule.host === '' ? '(any host)' : rule.host}`;
        const route = draft?.server.routes.find(
          (r) =>
            r.path === path.path &&
            r.pathTypeAsWritten === path.pathTypeAsWritten &&
            r.ingress.namespace === ingress.ref.namespace,
        );
        if (route === undefined) {
          state.diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_NO_MAIN',
            `canary ${where}: no main Ingress in namespace ${ingress.ref.namespace} serves it, so it gets no traffic`,
          );
          continue;
        }
        if (route.canary !== null) {
          state.diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_CONFLICT',
            `canary ${where}: the older canary ${refName(route.canary.ingress)} already shares it; this one gets no traffic there`,
          );
          continue;
        }
        const backend = useUpstream(state, ingress, path.backend);
        // the same Service and port as the main route: nothing to split (ingress-nginx: a no-op)
        if (
          backend.type !== 'upstream' ||
          (route.backend.type === 'upstream' && route.backend.upstream === backend.upstream)
        ) {
          continue;
        }
        route.canary = canaryOf(ingress, backend.upstream, state.diagnostics);
      }
    }
  }
}

/** A canary's spec.defaultBackend (without rules) joins the catch-all when an Ingress provides it
 * (not the controller's own default backend, as ingress-nginx). */
function attachCanaryToCatchAll(
  state: BuildState,
  ingress: CheckedIngress,
  defaultBackend: ServiceBackendRef,
): void {
  const route = state.catchAll.server.defaultRoute;
  const backend = useUpstream(state, ingress, defaultBackend);
  if (route.ingress === null || route.backend.type !== 'upstream') {
    state.diagnostics.report(
      'Ingress',
      ingress.ref,
      'CANARY_NO_MAIN',
      'canary spec.defaultBackend: no Ingress provides the catch-all defaultBackend, so it gets no traffic',
    );
  } else if (route.canary !== null) {
    state.diagnostics.report(
      'Ingress',
      ingress.ref,
      'CANARY_CONFLICT',
      `canary spec.defaultBackend: the older canary ${refName(route.canary.ingress)} already shares the catch-all; this one gets no traffic there`,
    );
  } else if (backend.type === 'upstream' && backend.upstream !== route.backend.upstream) {
    route.canary = canaryOf(ingress, backend.upstream, state.diagnostics);
  }
}

/** ssl-passthrough, when some Ingress of the host sets it (ingress-nginx: "any true"). */
export function markPassthrough(state: BuildState): void {
  const { options } = state;
  applyPassthrough(
    state.ingresses,
    state.drafts,
    options.enableSslPassthrough,
    options.annotationsPrefix,
    state.diagnostics,
  );
}

/**
 * Sticky upstreams, combined over the Ingresses sharing each one as ingress-nginx does; a sticky
 * canary (affinity-canary-behavior, default sticky) gets its main upstream's affinity.
 */
export function combineSharedAffinity(state: BuildState): void {
  const upstreamsByName = state.resolver.upstreams();
  applySharedAffinity(state.ingresses, upstreamsByName, state.options.annotationsPrefix, state.diagnostics);
  for (const server of [state.catchAll.server, ...state.drafts.values().map((d) => d.server)]) {
    for (const route of server.routes) {
      if (route.canary === null || route.backend.type !== 'upstream') continue;
      const main = upstreamsByName[route.backend.upstream]?.affinity ?? null;
      const canaryUpstream = upstreamsByName[route.canary.upstream];
      const canaryRef = route.canary.ingress;
      const behavior = state.canaries.find((c) => sameRef(c.ref, canaryRef))?.annotations.ingress.affinity
        .canaryBehavior;
      if (
        main !== null &&
        canaryUpstream !== undefined &&
        canaryUpstream.affinity === null &&
        behavior !== 'legacy'
      ) {
        canaryUpstream.affinity = main;
      }
    }
  }
}

/**
 * Finish: hosts in name order; per server regex mode and Prefix paths that match the same requests,
 * then route order; server aliases, www redirects, the default-backend annotation's upstreams.
 * Returns the host servers (the catch-all stays in the state).
 */
export function finishServers(state: BuildState): Server[] {
  const { catchAll, drafts, diagnostics } = state;
  const servers = [...drafts.values()].map((draft) => draft.server);
  servers.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  for (const server of [catchAll.server, ...servers]) finishServer(server, diagnostics, state.caches);
  resolveAliases(servers, drafts, diagnostics);
  resolveWwwRedirects(servers, drafts, diagnostics);
  resolveCustomDefaultBackends([catchAll.server, ...servers], state.resolver, state.config, diagnostics);
  return servers;
}

/** The default certificate (--default-ssl-certificate). */
export function resolveDefaultCertificateFlag(state: BuildState): string | null {
  const flag = state.options.defaultSSLCertificate;
  if (flag === null) return null;
  return resolveDefaultCertificate(flag, state.lookups.certificate, state.certificates, state.diagnostics);
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
  const body = {
    servers,
    catchAll: state.catchAll.server,
    upstreams,
    certificates: certificateRecord,
    defaultCertificate,
    defaultBackend: state.defaultBackend,
    config,
  };
  const model: Model = { ...body, ...modelHashes(body) };
  const found = state.diagnostics.list();
  if (config.allowSnippetAnnotations) {
    for (const d of found) {
      if (d.code === 'SNIPPET_REFUSED')
        d.message +=
          ' (allow-snippet-annotations is true in the ConfigMap, but ingress-ts refuses snippets regardless)';
    }
  }
  return {
    model,
    diagnostics: found,
    references: {
      services: resolver.referencedServices(),
      secrets: [...lookups.referencedSecrets],
      configMaps: [...lookups.referencedConfigMaps],
    },
  };
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

function canaryOf(ingress: CheckedIngress, upstream: string, diagnostics: DiagnosticsCollector): Canary {
  const { weight, weightTotal, header, headerValue, headerPattern, cookie } =
    ingress.annotations.ingress.canary;
  if (headerPattern !== null && header !== null && headerValue === null) {
    try {
      RE2JS.compile(headerPattern);
    } catch (error) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'CANARY_PATTERN_INVALID',
        `canary-by-header-pattern ${JSON.stringify(headerPattern)} is not a valid regular expression (${(error as Error).message}); requests carrying ${header} go to the main backend`,
      );
    }
  }
  return { ingress: ingress.ref, upstream, weight, weightTotal, header, headerValue, headerPattern, cookie };
}

function reportPathConflict(
  diagnostics: DiagnosticsCollector,
  loser: ObjectRef,
  winner: Route,
  hostname: string,
  pathType: string,
  path: string,
): void {
  const host = hostname === '_' ? '(any host)' : hostname;
  const message = sameRef(loser, winner.ingress)
    ? `${pathType} ${path} on host ${host} appears twice in this Ingress; the first one is used`
    : `${pathType} ${path} on host ${host} is already defined by the older Ingress ${refName(winner.ingress)}; this path is ignored`;
  diagnostics.report('Ingress', loser, 'PATH_CONFLICT', message);
}

function applyServerAnnotations(
  draft: ServerDraft,
  ingress: CheckedIngress,
  diagnostics: DiagnosticsCollector,
) {
  for (const key of serverGroupKeys) {
    const value = ingress.annotations.server[key];
    if (!serverGroupIsSet(key, value)) continue;
    const source = draft.annotationSource[key];
    if (source === undefined) {
      draft.annotationSource[key] = ingress.ref;
      draft.server.annotations = { ...draft.server.annotations, [key]: value };
    } else if (!sameRef(source, ingress.ref)) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'SERVER_ANNOTATION_CONFLICT',
        `host ${draft.server.hostname} already takes its ${key} setting from the older Ingress ${refName(source)}; this one is ignored`,
      );
    }
  }
}

/**
 * ssl-passthrough: a host is passthrough when any of its Ingresses sets the annotation; its TLS
 * connections go to the backend of its Prefix `/` route, else of its default route (ingress-nginx's
 * root location). Without --enable-ssl-passthrough the annotation has no effect, with a warning.
 */
function applyPassthrough(
  ingresses: readonly CheckedIngress[],
  drafts: Map<string, ServerDraft>,
  enabled: boolean,
  prefix: string,
  diagnostics: DiagnosticsCollector,
): void {
  for (const ingress of ingresses) {
    if (!ingress.annotations.ingress.sslPassthrough.enabled) continue;
    const hosts = [...new Set(ingress.rules.map((rule) => rule.host).filter((host) => host !== ''))];
    if (!enabled) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'SSL_PASSTHROUGH_DISABLED',
        `annotation ${prefix}/ssl-passthrough needs the controller flag --enable-ssl-passthrough, which is off: TLS to ${
          hosts.length === 0 ? 'its hosts' : hosts.join(', ')
        } is terminated and routed as usual`,
      );
      continue;
    }
    for (const host of hosts) {
      const draft = drafts.get(host);
      if (draft === undefined || draft.server.passthrough !== null) continue;
      draft.server.passthrough = { ingress: ingress.ref, backendIngress: null, backend: { type: 'default' } };
    }
  }
  for (const { server } of drafts.values()) {
    if (server.passthrough === null) continue;
    const root = server.routes.find((route) => route.pathType === 'Prefix' && route.path === '/');
    const from = root ?? server.defaultRoute;
    server.passthrough = { ...server.passthrough, backendIngress: from.ingress, backend: from.backend };
  }
}

/** ingress-nginx: the first Ingress of the host that has a tls section decides the certificate. */
function applyTLS(
  draft: ServerDraft,
  ingress: CheckedIngress,
  certificateOf: (namespace: string, name: string) => CertificateResult | null,
  certificates: Map<string, Certificate>,
  diagnostics: DiagnosticsCollector,
): void {
  if (ingress.tls.length === 0) return;
  const host = draft.server.hostname;
  const { namespace } = ingress.ref;
  if (draft.tlsOwner !== null) {
    if (draft.tlsOwner === ingress) return;
    const listsHost = ingress.tls.some((entry) =>
      (entry.hosts ?? []).some((listed) => typeof listed === 'string' && listed.toLowerCase() === host),
    );
    if (listsHost) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'TLS_CONFLICT',
        `the certificate of host ${host} is already decided by the older Ingress ${refName(draft.tlsOwner.ref)}; this tls entry is ignored`,
      );
    }
    return;
  }
  draft.tlsOwner = ingress;
  const useDefault = (): void => {
    draft.server.tls = { certificate: null, ingress: ingress.ref };
  };
  const secretName = tlsSecretNameFor(host, ingress.tls, (name) => {
    const result = certificateOf(namespace, name);
    return result !== null && 'ok' in result ? result.ok : null;
  });
  if (secretName === '') {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_NO_SECRET_FOR_HOST',
      `no tls entry of this Ingress names a Secret for host ${host}; it is served with the default certificate`,
    );
    useDefault();
    return;
  }
  const id = objectKey(namespace, secretName);
  const result = certificateOf(namespace, secretName);
  if (result === null) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_SECRET_NOT_FOUND',
      `TLS Secret ${id} for host ${host} not found; the host is served with the default certificate`,
    );
    useDefault();
    return;
  }
  if ('problem' in result) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_SECRET_INVALID',
      `TLS Secret ${id} for host ${host} is unusable: ${result.problem}; the host is served with the default certificate`,
    );
    useDefault();
    return;
  }
  if (!certificateCovers(result.ok.x509, host, true)) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_HOST_MISMATCH',
      `the certificate in TLS Secret ${id} does not cover host ${host} (names: ${
        result.ok.certificate.dnsNames.join(', ') || 'none'
      }); the host is served with the default certificate`,
    );
    useDefault();
    return;
  }
  certificates.set(id, result.ok.certificate);
  draft.server.tls = { certificate: id, ingress: ingress.ref };
}

function finishServer(server: Server, diagnostics: DiagnosticsCollector, caches: BuildCaches): void {
  // The default route stands for ingress-nginx's root placeholder location (path /, the creating
  // Ingress's annotations), which counts too unless a Prefix / route replaced it.
  const rootReplaced = server.routes.some((route) => route.pathType === 'Prefix' && route.path === '/');
  server.regex =
    (!rootReplaced && usesRegex(server.defaultRoute.annotations, '/')) ||
    server.routes.some((route) => usesRegex(route.annotations, route.path));
  // In regex mode every path is a regex: one RE2 cannot compile (backreference, lookahead…) is not
  // served, found here rather than by the first request (RE2 keeps matching linear in the path).
  if (server.regex) {
    server.routes = server.routes.filter((route) => {
      try {
        caches.pathRegexes.compile(route.path);
        return true;
      } catch (error) {
        const host = server.hostname === '_' ? '(any host)' : server.hostname;
        diagnostics.report(
          'Ingress',
          route.ingress,
          'PATH_REGEX_INVALID',
          `${route.pathTypeAsWritten} ${route.path} on host ${host} is matched as a regex (the host is in regex mode) but is not valid RE2 syntax (${(error as Error).message}); this path is not served`,
        );
        return false;
      }
    });
  }
  // Prefix /foo and /foo/ match the same requests: keep the oldest (routes are in Ingress order).
  // Identical paths were refused already, so only a trailing slash can make two routes collide.
  const trailingSlash = (route: Route) =>
    route.pathType === 'Prefix' && route.path.length > 1 && route.path.endsWith('/');
  if (!server.regex && server.routes.some(trailingSlash)) {
    const prefixes = new Map<string, Route>();
    server.routes = server.routes.filter((route) => {
      if (route.pathType !== 'Prefix') return true;
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
  sortSmall(server.routes, compareRoutes);
}

function resolveAliases(
  servers: Server[],
  drafts: Map<string, ServerDraft>,
  diagnostics: DiagnosticsCollector,
): void {
  const claimed = new Map<string, string>();
  for (const server of servers) {
    const source = drafts.get(server.hostname)?.annotationSource.alias;
    if (source === undefined) continue;
    const kept: string[] = [];
    for (const alias of server.annotations.alias.aliases) {
      let reason: string | null = null;
      if (alias === server.hostname) reason = 'is the host itself';
      else if (drafts.has(alias)) reason = 'is already a host of its own';
      else if (claimed.has(alias)) reason = `is already an alias of host ${claimed.get(alias)}`;
      if (reason !== null) {
        diagnostics.report(
          'Ingress',
          source,
          'ALIAS_CONFLICT',
          `server-alias ${alias} of host ${server.hostname} ${reason}; the alias is ignored`,
        );
        continue;
      }
      claimed.set(alias, server.hostname);
      kept.push(alias);
    }
    server.annotations = { ...server.annotations, alias: { aliases: kept } };
  }
}

/**
 * from-to-www-redirect: `www.<host>` for a host without `www.`, else the host minus `www.`; skipped
 * when that name is a host of its own (ingress-nginx) or the host is a wildcard.
 */
function resolveWwwRedirects(
  servers: Server[],
  drafts: Map<string, ServerDraft>,
  diagnostics: DiagnosticsCollector,
): void {
  for (const server of servers) {
    const setting = server.annotations.fromToWww;
    const source = drafts.get(server.hostname)?.annotationSource.fromToWww;
    if (!setting.enabled || source === undefined) continue;
    const host = server.hostname;
    const from = host.startsWith('www.') ? host.slice(4) : `www.${host}`;
    let reason: string | null = null;
    if (host.startsWith('*.')) reason = 'the host is a wildcard';
    else if (drafts.has(from)) reason = `${from} is a host of its own`;
    if (reason !== null) {
      diagnostics.report(
        'Ingress',
        source,
        'WWW_REDIRECT_SKIPPED',
        `from-to-www-redirect on host ${host}: ${reason}; no redirect is made`,
      );
      continue;
    }
    server.annotations = { ...server.annotations, fromToWww: { enabled: true, from } };
  }
}

function resolveDefaultBackend(
  flag: string,
  resolver: UpstreamResolver,
  config: GlobalConfig,
  diagnostics: DiagnosticsCollector,
): string | null {
  const ref = splitKey(flag);
  const unusable = (message: string): null => {
    diagnostics.report(
      'Service',
      ref ?? { namespace: '', name: flag },
      'DEFAULT_BACKEND_SERVICE_UNUSABLE',
      `--default-backend-service ${flag} ${message}; the built-in 404 backend answers instead`,
    );
    return null;
  };
  if (ref === null) return unusable('is not of the form namespace/name');
  const service = resolver.service(ref.namespace, ref.name);
  if (service === undefined) return unusable('does not exist');
  const firstPort = service.spec?.ports?.[0];
  if (firstPort === undefined || typeof firstPort.port !== 'number') return unusable('declares no port');
  const { upstream, problem } = resolver.resolveAs(
    { namespace: ref.namespace, service: ref.name, port: String(firstPort.port) },
    'upstream-default-backend',
    config.loadBalance,
  );
  if (problem !== null) unusable(`is unusable for now (${problem.message})`);
  return upstream.name;
}

/**
 * The default-backend annotation's Services (first port), as upstreams named
 * custom-default-backend-<ns>-<svc>: the data plane sends custom errors there, and requests of a
 * route whose Service has no endpoints. A missing Service or port leaves the route without one.
 */
function resolveCustomDefaultBackends(
  servers: readonly Server[],
  resolver: UpstreamResolver,
  config: GlobalConfig,
  diagnostics: DiagnosticsCollector,
): void {
  const done = new Set<string>();
  for (const server of servers) {
    for (const route of [...server.routes, server.defaultRoute]) {
      const service = route.annotations.customErrors.backend;
      const ingress = route.ingress;
      if (service === null || ingress === null) continue;
      const name = customDefaultBackendName(ingress.namespace, service);
      if (done.has(name)) continue;
      done.add(name);
      const found = resolver.service(ingress.namespace, service);
      const firstPort = found?.spec?.ports?.[0];
      if (found === undefined || firstPort === undefined || typeof firstPort.port !== 'number') {
        diagnostics.report(
          'Ingress',
          ingress,
          'ANNOTATION_INVALID',
          `annotation default-backend names Service ${ingress.namespace}/${service}, which ${found === undefined ? 'does not exist' : 'declares no port'}; custom errors use the controller's default backend`,
          'warning',
        );
        continue;
      }
      resolver.resolveAs(
        { namespace: ingress.namespace, service, port: String(firstPort.port) },
        name,
        config.loadBalance,
      );
    }
  }
}

function resolveDefaultCertificate(
  flag: string,
  certificateOf: (namespace: string, name: string) => CertificateResult | null,
  certificates: Map<string, Certificate>,
  diagnostics: DiagnosticsCollector,
): string | null {
  const ref = splitKey(flag);
  const unusable = (message: string): null => {
    diagnostics.report(
      'Secret',
      ref ?? { namespace: '', name: flag },
      'DEFAULT_CERTIFICATE_UNUSABLE',
      `--default-ssl-certificate ${flag} ${message}; a generated self-signed certificate is used instead`,
    );
    return null;
  };
  if (ref === null) return unusable('is not of the form namespace/name');
  const result = certificateOf(ref.namespace, ref.name);
  if (result === null) return unusable('does not exist');
  if ('problem' in result) return unusable(`is unusable: ${result.problem}`);
  certificates.set(result.ok.certificate.id, result.ok.certificate);
  return result.ok.certificate.id;
}
