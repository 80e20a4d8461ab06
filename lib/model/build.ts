// buildModel: Kubernetes objects in, routing model and diagnostics out. Pure and deterministic:
// no I/O, no timers, no clock, no randomness. Steps, each owning one concern:
//   select (class) → order (oldest first) → check (validate, annotations) → servers (hosts, catch-all)
//   → host settings (server annotations, TLS) → routes (oldest wins) → finish (regex mode, aliases, sort)

import { RE2JS } from 're2js';
import {
  catchAllAnnotations,
  customDefaultBackendName,
  DEFAULT_LOCATION_ANNOTATIONS,
  DEFAULT_SERVER_ANNOTATIONS,
  resolveCustomHeaders,
  type ServerAnnotations,
  serverGroupIsSet,
  serverGroupKeys,
  usesRegex,
} from './annotations/index.ts';
import { type AuthLookups, resolveAuthReferences } from './auth-refs.ts';
import { type ServiceBackendRef, UpstreamResolver } from './backends.ts';
import { resolveClientAuth } from './client-auth.ts';
import { type ConfigMapLookup, type GlobalConfig, parseGlobalConfig } from './config.ts';
import { type Diagnostic, DiagnosticsCollector } from './diagnostics.ts';
import { modelHashes } from './hash.ts';
import { type CheckedIngress, checkIngress } from './ingress.ts';
import { isOurIngress, ownedClassNames } from './ingress-class.ts';
import { type ConfigMap, objectKey, type Secret, type Snapshot } from './k8s.ts';
import { DEFAULT_MODEL_OPTIONS, type ModelOptions } from './options.ts';
import { sortIngresses } from './order.ts';
import { compilePathRegex, newPathRegexGeneration } from './path-regex.ts';
import { prefixMatchKey } from './paths.ts';
import { resolveProxySsl } from './proxy-ssl.ts';
import { applySharedAffinity } from './shared-affinity.ts';
import { sortSmall } from './sort.ts';
import { type CertificateResult, certificateCovers, readCertificate, tlsSecretNameFor } from './tls.ts';
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

interface ServerDraft {
  server: Server;
  /** routes by path as written (Prefix) or `=path` (Exact) */
  routeKeys: Map<string, Route>;
  tlsOwner: CheckedIngress | null;
  annotationSource: Partial<Record<keyof ServerAnnotations, ObjectRef>>;
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

export function buildModel(snapshot: Snapshot, overrides: Partial<ModelOptions> = {}): BuildResult {
  newPathRegexGeneration();
  const options: ModelOptions = { ...DEFAULT_MODEL_OPTIONS, ...overrides };
  const diagnostics = new DiagnosticsCollector();
  const resolver = new UpstreamResolver(
    snapshot.services,
    snapshot.endpointSlices,
    options.disableSvcExternalName,
  );
  const referencedSecrets = new Set<string>();

  // Secrets and their certificates, looked up at most once per build.
  const secrets = new Map<string, Secret>();
  for (const secret of snapshot.secrets) {
    const { namespace, name } = secret.metadata ?? {};
    if (typeof namespace === 'string' && typeof name === 'string')
      secrets.set(objectKey(namespace, name), secret);
  }
  const certificateResults = new Map<string, CertificateResult | null>();
  const certificateOf = (namespace: string, name: string): CertificateResult | null => {
    const id = objectKey(namespace, name);
    referencedSecrets.add(id);
    if (certificateResults.has(id)) return certificateResults.get(id) ?? null;
    const secret = secrets.get(id);
    const result = secret === undefined ? null : readCertificate(secret, id);
    certificateResults.set(id, result);
    return result;
  };
  const certificates = new Map<string, Certificate>();

  // The global ConfigMap (--configmap), and the ConfigMaps its keys refer to.
  // (in Kubernetes mode the snapshot holds every watched namespace's ConfigMaps: indexed on first use)
  const referencedConfigMaps = new Set<string>();
  let configMapIndex: Map<string, ConfigMap> | null = null;
  const lookupConfigMap = (namespace: string, name: string) => {
    const key = objectKey(namespace, name);
    referencedConfigMaps.add(key);
    if (configMapIndex === null) {
      configMapIndex = new Map();
      for (const c of snapshot.configMaps) {
        const { namespace: ns, name: n } = c.metadata ?? {};
        if (typeof ns === 'string' && typeof n === 'string') {
          const k = objectKey(ns, n);
          if (!configMapIndex.has(k)) configMapIndex.set(k, c);
        }
      }
    }
    return configMapIndex.get(key);
  };
  let config: GlobalConfig;
  if (options.configMap === null) {
    config = parseGlobalConfig(undefined, { namespace: '', name: '' }, diagnostics);
  } else {
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
    config = parseGlobalConfig(configMap, ref, diagnostics, lookupConfigMap);
  }

  // 1-3. select, order, check
  const owned = ownedClassNames(snapshot.ingressClasses, options);
  const ours = snapshot.ingresses.filter((ingress) => isOurIngress(ingress, owned, options));
  // canaries never create a host, a path or host settings: they attach to main routes (6b)
  const ingresses: CheckedIngress[] = [];
  const canaries: CheckedIngress[] = [];
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
    withCustomHeaders(checked, config, lookupConfigMap, diagnostics);
    if (checked.annotations.ingress.canary.enabled) canaries.push(checked);
    else ingresses.push(checked);
  }
  // auth-secret, auth-proxy-set-headers and proxy-ssl-secret; a canary's location annotations are
  // never used
  const authLookups: AuthLookups = {
    allowCrossNamespace: config.allowCrossNamespaceResources,
    secret: (namespace, name) => {
      referencedSecrets.add(objectKey(namespace, name));
      return secrets.get(objectKey(namespace, name));
    },
    configMap: lookupConfigMap,
    diagnostics,
  };
  for (const ingress of ingresses) {
    const { location } = ingress.annotations;
    const withAuth = resolveAuthReferences(location, ingress.ref, authLookups);
    const resolved = resolveProxySsl(withAuth, ingress.ref, authLookups);
    // Ingresses without annotations share one parsed object: only an Ingress with auth or
    // proxy-ssl-secret gets a new one
    if (resolved !== location) ingress.annotations = { ...ingress.annotations, location: resolved };
  }

  const useUpstream = (ingress: CheckedIngress, ref: ServiceBackendRef): Backend => {
    const { backend, problem } = resolver.resolve(
      ref,
      ingress.annotations.ingress.loadBalance.algorithm ?? config.loadBalance,
      ingress.annotations.ingress.upstreamHash.hashBy,
      ingress.annotations.ingress.serviceUpstream.enabled ?? config.serviceUpstream,
    );
    if (problem !== null) diagnostics.report('Ingress', ingress.ref, problem.code, problem.message);
    return backend;
  };

  // The controller's default backend (--default-backend-service, first port).
  let defaultBackend: string | null = null;
  if (options.defaultBackendService !== null) {
    defaultBackend = resolveDefaultBackend(options.defaultBackendService, resolver, config, diagnostics);
  }

  // 4. servers: the catch-all, then one per host, created by the oldest Ingress naming it.
  const catchAll: ServerDraft = newDraft('_', null, {
    ingress: null,
    backend: { type: 'default' },
    annotations: catchAllAnnotations(DEFAULT_LOCATION_ANNOTATIONS),
    canary: null,
  });
  const drafts = new Map<string, ServerDraft>();
  let catchAllOwner: ObjectRef | null = null;
  for (const ingress of ingresses) {
    let ownDefault: Backend | undefined;
    const defaultBackendOf = (): Backend => {
      if (ownDefault === undefined) {
        ownDefault =
          ingress.defaultBackend === null
            ? { type: 'default' }
            : useUpstream(ingress, ingress.defaultBackend);
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

  // 5. host settings: server-level annotations and TLS, oldest Ingress first.
  for (const ingress of ingresses) {
    for (const rule of ingress.rules) {
      const draft = drafts.get(rule.host);
      if (draft === undefined) continue;
      applyServerAnnotations(draft, ingress, diagnostics);
      applyTLS(draft, ingress, certificateOf, certificates, diagnostics);
    }
  }
  // 5b. client certificate authentication: the Secret of the host's auth-tls-secret
  const secretOf = (namespace: string, name: string): Secret | undefined => {
    const id = objectKey(namespace, name);
    referencedSecrets.add(id);
    return secrets.get(id);
  };
  for (const draft of drafts.values()) {
    const source = draft.annotationSource.authTls;
    if (source === undefined) continue;
    draft.server.clientAuth = resolveClientAuth(
      draft.server.annotations.authTls,
      source,
      draft.server.hostname,
      config.allowCrossNamespaceResources,
      secretOf,
      diagnostics,
    );
  }

  // 6. routes: the first (oldest) Ingress to define host + path + pathType wins.
  for (const ingress of ingresses) {
    for (const rule of ingress.rules) {
      const draft = rule.host === '' ? catchAll : drafts.get(rule.host)!;
      for (const path of rule.paths) {
        const key = path.pathType === 'Prefix' ? path.path : `=${path.path}`;
        const existing = draft.routeKeys.get(key);
        if (existing !== undefined) {
          reportPathConflict(
            diagnostics,
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
          backend: useUpstream(ingress, path.backend),
          annotations: ingress.annotations.location,
          canary: null,
          setsAffinityCookie: ingress.annotations.ingress.affinity.affinity !== null,
        };
        draft.routeKeys.set(key, route);
        draft.server.routes.push(route);
      }
    }
  }

  // 6b. canaries, oldest first: each path joins the main route of the same namespace, host, path
  // and pathType as written; the first canary to claim a route keeps it. A canary's
  // spec.defaultBackend (without rules) joins the catch-all when an Ingress provides it (not the
  // controller's own default backend, as ingress-nginx).
  for (const ingress of canaries) {
    if (ingress.defaultBackend !== null && !ingress.hasRules) {
      const route = catchAll.server.defaultRoute;
      const backend = useUpstream(ingress, ingress.defaultBackend);
      if (route.ingress === null || route.backend.type !== 'upstream') {
        diagnostics.report(
          'Ingress',
          ingress.ref,
          'CANARY_NO_MAIN',
          'canary spec.defaultBackend: no Ingress provides the catch-all defaultBackend, so it gets no traffic',
        );
      } else if (route.canary !== null) {
        diagnostics.report(
          'Ingress',
          ingress.ref,
          'CANARY_CONFLICT',
          `canary spec.defaultBackend: the older canary ${refName(route.canary.ingress)} already shares the catch-all; this one gets no traffic there`,
        );
      } else if (backend.type === 'upstream' && backend.upstream !== route.backend.upstream) {
        route.canary = canaryOf(ingress, backend.upstream, diagnostics);
      }
    }
    for (const rule of ingress.rules) {
      const draft = rule.host === '' ? catchAll : drafts.get(rule.host);
      for (const path of rule.paths) {
        const where = `${path.pathTypeAsWritten} ${path.path} on host ${rule.host === '' ? '(any host)' : rule.host}`;
        const route = draft?.server.routes.find(
          (r) =>
            r.path === path.path &&
            r.pathTypeAsWritten === path.pathTypeAsWritten &&
            r.ingress.namespace === ingress.ref.namespace,
        );
        if (route === undefined) {
          diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_NO_MAIN',
            `canary ${where}: no main Ingress in namespace ${ingress.ref.namespace} serves it, so it gets no traffic`,
          );
          continue;
        }
        if (route.canary !== null) {
          diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_CONFLICT',
            `canary ${where}: the older canary ${refName(route.canary.ingress)} already shares it; this one gets no traffic there`,
          );
          continue;
        }
        const backend = useUpstream(ingress, path.backend);
        // the same Service and port as the main route: nothing to split (ingress-nginx: a no-op)
        if (
          backend.type !== 'upstream' ||
          (route.backend.type === 'upstream' && route.backend.upstream === backend.upstream)
        ) {
          continue;
        }
        route.canary = canaryOf(ingress, backend.upstream, diagnostics);
      }
    }
  }

  // 6c. ssl-passthrough, when some Ingress of the host sets it (ingress-nginx: "any true")
  applyPassthrough(ingresses, drafts, options.enableSslPassthrough, options.annotationsPrefix, diagnostics);

  // 6d. sticky upstreams, combined over the Ingresses sharing each one as ingress-nginx does; a
  // sticky canary (affinity-canary-behavior, default sticky) gets its main upstream's affinity.
  const upstreamsByName = resolver.upstreams();
  applySharedAffinity(ingresses, upstreamsByName, options.annotationsPrefix, diagnostics);
  for (const server of [catchAll.server, ...drafts.values().map((d) => d.server)]) {
    for (const route of server.routes) {
      if (route.canary === null || route.backend.type !== 'upstream') continue;
      const main = upstreamsByName[route.backend.upstream]?.affinity ?? null;
      const canaryUpstream = upstreamsByName[route.canary.upstream];
      const canaryRef = route.canary.ingress;
      const behavior = canaries.find((c) => sameRef(c.ref, canaryRef))?.annotations.ingress.affinity
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

  // 7. finish: regex mode, Prefix paths that match the same requests, order, aliases.
  const servers = [...drafts.values()].map((draft) => draft.server);
  servers.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  for (const server of [catchAll.server, ...servers]) finishServer(server, diagnostics);
  resolveAliases(servers, drafts, diagnostics);
  resolveWwwRedirects(servers, drafts, diagnostics);
  resolveCustomDefaultBackends([catchAll.server, ...servers], resolver, config, diagnostics);

  // The default certificate (--default-ssl-certificate).
  let defaultCertificate: string | null = null;
  if (options.defaultSSLCertificate !== null) {
    defaultCertificate = resolveDefaultCertificate(
      options.defaultSSLCertificate,
      certificateOf,
      certificates,
      diagnostics,
    );
  }

  const certificateRecord: Record<string, Certificate> = {};
  for (const id of [...certificates.keys()].sort()) certificateRecord[id] = certificates.get(id)!;
  const upstreams = resolver.upstreams();
  const body = {
    servers,
    catchAll: catchAll.server,
    upstreams,
    certificates: certificateRecord,
    defaultCertificate,
    defaultBackend,
    config,
  };
  const model: Model = { ...body, ...modelHashes(body) };
  const found = diagnostics.list();
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
      secrets: [...referencedSecrets],
      configMaps: [...referencedConfigMaps],
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

function newDraft(
  hostname: string,
  ingress: ObjectRef | null,
  defaultRoute: Server['defaultRoute'],
): ServerDraft {
  return {
    server: {
      hostname,
      ingress,
      tls: null,
      regex: false,
      annotations: DEFAULT_SERVER_ANNOTATIONS,
      clientAuth: null,
      defaultRoute,
      passthrough: null,
      routes: [],
    },
    routeKeys: new Map(),
    tlsOwner: null,
    annotationSource: {},
  };
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

function finishServer(server: Server, diagnostics: DiagnosticsCollector): void {
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
        compilePathRegex(route.path);
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
