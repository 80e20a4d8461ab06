// What the steps of buildModel share: the inputs, what earlier steps decided, and the lookups that
// record which Secrets and ConfigMaps the model depends on. Lives for one build only.

import type { ServerAnnotations } from './annotations/index.ts';
import {
  catchAllAnnotations,
  DEFAULT_LOCATION_ANNOTATIONS,
  DEFAULT_SERVER_ANNOTATIONS,
} from './annotations/index.ts';
import { type ServiceBackendRef, UpstreamResolver } from './backends.ts';
import { type BuildCaches, createBuildCaches } from './build-caches.ts';
import type { GlobalConfig } from './configmap/global-config.ts';
import type { ConfigMapLookup } from './configmap/key-parser.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { RoutePrecedence } from './gateway/precedence.ts';
import type { CheckedIngress } from './ingress.ts';
import { type ConfigMap, objectKey, type Secret, type Snapshot } from './k8s.ts';
import type { ModelOptions } from './options.ts';
import { type CertificateParseCache, type CertificateResult, readCertificate } from './tls.ts';
import type { Certificate, ObjectRef, Route, Server, TargetBackend } from './types.ts';

/** A server while the build fills it, with what the later steps need to know about how. */
export interface ServerDraft {
  server: Server;
  /** routes by path as written (Prefix) or `=path` (Exact) */
  routeKeys: Map<string, Route>;
  tlsOwner: CheckedIngress | null;
  annotationSource: Partial<Record<keyof ServerAnnotations, ObjectRef>>;
}

/** The snapshot's Secrets and ConfigMaps by `namespace/name`; every lookup is recorded as a reference. */
export interface ObjectLookups {
  secret: (namespace: string, name: string) => Secret | undefined;
  /** a Secret read as a certificate, at most once per build */
  certificate: (namespace: string, name: string) => CertificateResult | null;
  configMap: ConfigMapLookup;
  /** `namespace/name`, in first-lookup order */
  readonly referencedSecrets: Set<string>;
  readonly referencedConfigMaps: Set<string>;
}

export interface BuildState {
  readonly snapshot: Snapshot;
  readonly options: ModelOptions;
  readonly diagnostics: DiagnosticsCollector;
  readonly lookups: ObjectLookups;
  readonly config: GlobalConfig;
  /** what the caller keeps from build to build (compiled path regexes, parsed certificates) */
  readonly caches: BuildCaches;
  /** Services and EndpointSlices to upstreams; the upstreams it resolved are the model's */
  readonly resolver: UpstreamResolver;
  /** our Ingresses that passed their checks, oldest first, canaries apart */
  readonly ingresses: CheckedIngress[];
  readonly canaries: CheckedIngress[];
  /** upstream of --default-backend-service, when it is usable */
  defaultBackend: string | null;
  /** the server of requests whose host no rule names */
  readonly catchAll: ServerDraft;
  /** one per host, in the order the hosts were first named */
  readonly drafts: Map<string, ServerDraft>;
  /** the certificates the model serves, by Secret `namespace/name` */
  readonly certificates: Map<string, Certificate>;
  /** Ingresses and HTTPRoutes on one time line, once HTTPRoute routes were added (else null) */
  routePrecedence: RoutePrecedence | null;
}

export function createBuildState(
  snapshot: Snapshot,
  options: ModelOptions,
  diagnostics: DiagnosticsCollector,
  lookups: ObjectLookups,
  config: GlobalConfig,
  caches: BuildCaches = createBuildCaches(),
): BuildState {
  return {
    snapshot,
    options,
    diagnostics,
    lookups,
    config,
    caches,
    resolver: new UpstreamResolver(
      caches.backendIndex.index(snapshot.services, snapshot.endpointSlices),
      options.disableSvcExternalName,
      caches.upstreams,
    ),
    ingresses: [],
    canaries: [],
    defaultBackend: null,
    catchAll: newDraft('_', null, {
      ingress: null,
      backend: { type: 'default' },
      annotations: catchAllAnnotations(DEFAULT_LOCATION_ANNOTATIONS),
      canary: null,
    }),
    drafts: new Map(),
    certificates: new Map(),
    routePrecedence: null,
  };
}

export function createObjectLookups(snapshot: Snapshot, parsed?: CertificateParseCache): ObjectLookups {
  const referencedSecrets = new Set<string>();
  const referencedConfigMaps = new Set<string>();
  const secrets = new Map<string, Secret>();
  for (const secret of snapshot.secrets) {
    const { namespace, name } = secret.metadata ?? {};
    if (typeof namespace === 'string' && typeof name === 'string')
      secrets.set(objectKey(namespace, name), secret);
  }
  const certificates = new Map<string, CertificateResult | null>();
  // in Kubernetes mode the snapshot holds every watched namespace's ConfigMaps: indexed on first use
  let configMapIndex: Map<string, ConfigMap> | null = null;
  return {
    referencedSecrets,
    referencedConfigMaps,
    secret: (namespace, name) => {
      const id = objectKey(namespace, name);
      referencedSecrets.add(id);
      return secrets.get(id);
    },
    certificate: (namespace, name) => {
      const id = objectKey(namespace, name);
      referencedSecrets.add(id);
      if (certificates.has(id)) return certificates.get(id) ?? null;
      const secret = secrets.get(id);
      const result = secret === undefined ? null : readCertificate(secret, id, parsed);
      certificates.set(id, result);
      return result;
    },
    configMap: (namespace, name) => {
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
    },
  };
}

export function newDraft(
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

// --- what several steps use

export const refName = (ref: ObjectRef): string => objectKey(ref.namespace, ref.name);
export const sameRef = (a: ObjectRef, b: ObjectRef): boolean =>
  a.namespace === b.namespace && a.name === b.name;

/** `namespace/name` as an ObjectRef, or null when it is not of that form. */
export function splitKey(value: string): ObjectRef | null {
  const slash = value.indexOf('/');
  if (slash <= 0 || slash === value.length - 1 || value.indexOf('/', slash + 1) !== -1) return null;
  return { namespace: value.slice(0, slash), name: value.slice(slash + 1) };
}

/** The upstream of one backend of an Ingress, with the Ingress's balancing settings. */
export function useUpstream(
  state: BuildState,
  ingress: CheckedIngress,
  ref: ServiceBackendRef,
): TargetBackend {
  const { backend, problem } = state.resolver.resolve(
    ref,
    ingress.annotations.ingress.loadBalance.algorithm ?? state.config.loadBalance,
    ingress.annotations.ingress.upstreamHash.hashBy,
    ingress.annotations.ingress.serviceUpstream.enabled ?? state.config.serviceUpstream,
  );
  if (problem !== null) state.diagnostics.report('Ingress', ingress.ref, problem.code, problem.message);
  return backend;
}
