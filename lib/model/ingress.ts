// One Ingress, checked: hosts, paths and backends validated as the API server would, annotations
// parsed. What is wrong is reported on the Ingress; what is left is safe for the build to use.

import { type AnnotationPolicy, NO_ANNOTATION_POLICY, passesAnnotationPolicy } from './annotation-policy.ts';
import { type ParsedAnnotations, parseAnnotations } from './annotations/index.ts';
import type { ServiceBackendRef } from './backends.ts';
import type { DiagnosticPlace, DiagnosticsCollector } from './diagnostics.ts';
import { hostProblem, isDNS1123Subdomain } from './hosts.ts';
import type { Ingress, IngressBackend, IngressTLS } from './k8s.ts';
import type { ModelOptions } from './options.ts';
import { effectivePathType, isPathType, type PathTypeAsWritten, pathProblem } from './paths.ts';
import type { ObjectRef, PathType } from './types.ts';

export interface CheckedPath {
  path: string;
  pathType: PathType;
  pathTypeAsWritten: PathTypeAsWritten;
  backend: ServiceBackendRef;
}

export interface CheckedRule {
  /** lower-cased; '' for a rule without host (the catch-all server) */
  host: string;
  paths: CheckedPath[];
}

export interface CheckedIngress {
  ref: ObjectRef;
  annotations: ParsedAnnotations;
  defaultBackend: ServiceBackendRef | null;
  rules: CheckedRule[];
  /** spec.rules is not empty (even if no rule survived the checks): such an Ingress is never the catch-all */
  hasRules: boolean;
  /** spec.tls as written (entries that are not objects removed) */
  tls: IngressTLS[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(ruleIndex: number, pathIndex?: number): string {
  return pathIndex === undefined
    ? `spec.rules[${ruleIndex}]`
    : `spec.rules[${ruleIndex}].http.paths[${pathIndex}]`;
}

/**
 * The checked Ingress, or null when it is unusable as a whole (reported). `policy`: the ConfigMap's
 * annotation-value-word-blocklist and annotations-risk-level. Each step reports what it finds, so
 * the order of the steps is the order of the diagnostics.
 */
export function checkIngress(
  ingress: Ingress,
  options: ModelOptions,
  diagnostics: DiagnosticsCollector,
  policy: AnnotationPolicy = NO_ANNOTATION_POLICY,
): CheckedIngress | null {
  const ref = checkMetadata(ingress, diagnostics);
  if (ref === null) return null;
  const spec = checkShape(ingress, ref, diagnostics);
  if (spec === null) return null;
  if (options.disableCatchAll && spec.defaultBackend != null) {
    diagnostics.report(
      'Ingress',
      ref,
      'CATCH_ALL_DISABLED',
      'the Ingress has a spec.defaultBackend and --disable-catch-all is set; the whole Ingress is ignored',
    );
    return null;
  }
  const annotations = checkAnnotations(ingress, options, policy, ref, diagnostics);
  if (annotations === null) return null;
  const defaultBackend =
    spec.defaultBackend == null
      ? null
      : checkBackend(spec.defaultBackend, 'spec.defaultBackend', ref, diagnostics);
  const rawRules: unknown[] = (spec.rules as unknown[] | undefined) ?? [];
  const rules = checkRules(rawRules, ref, diagnostics);
  if (rawRules.length === 0 && spec.defaultBackend == null) {
    diagnostics.report(
      'Ingress',
      ref,
      'INGRESS_EMPTY',
      'the Ingress has no rules and no defaultBackend, so it routes nothing',
    );
  }
  const tls = checkTls((spec.tls as unknown[] | undefined) ?? [], ref, diagnostics);
  return { ref, annotations, defaultBackend, rules, hasRules: rawRules.length > 0, tls };
}

/** The Ingress's namespace and name, or null (reported) when either is missing or malformed. */
function checkMetadata(ingress: Ingress, diagnostics: DiagnosticsCollector): ObjectRef | null {
  const namespace = ingress.metadata?.namespace;
  const name = ingress.metadata?.name;
  if (typeof name !== 'string' || name === '' || typeof namespace !== 'string' || namespace === '') {
    diagnostics.report(
      'Ingress',
      {
        namespace: typeof namespace === 'string' ? namespace : '',
        name: typeof name === 'string' ? name : '',
      },
      'INGRESS_INVALID',
      'metadata.name and metadata.namespace are required',
    );
    return null;
  }
  // the API server would refuse these; in standalone manifests they would carry control characters
  // into upstream names, logs and metric labels
  if (
    !isDNS1123Subdomain(name) ||
    namespace.length > 63 ||
    !isDNS1123Subdomain(namespace) ||
    namespace.includes('.')
  ) {
    diagnostics.report(
      'Ingress',
      { namespace, name },
      'INGRESS_INVALID',
      'metadata.name must be a DNS-1123 subdomain and metadata.namespace a DNS-1123 label',
    );
    return null;
  }
  return { namespace, name };
}

/**
 * The spec, when it and the annotations have the shapes the later steps read (lists where lists
 * are expected), else null (reported).
 */
function checkShape(
  ingress: Ingress,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): Record<string, unknown> | null {
  const invalid = (message: string): null => {
    diagnostics.report('Ingress', ref, 'INGRESS_INVALID', message);
    return null;
  };
  const spec: unknown = ingress.spec ?? {};
  if (!isObject(spec)) return invalid('spec must be an object');
  if (spec.rules !== undefined && spec.rules !== null && !Array.isArray(spec.rules)) {
    return invalid('spec.rules must be a list');
  }
  if (spec.tls !== undefined && spec.tls !== null && !Array.isArray(spec.tls)) {
    return invalid('spec.tls must be a list');
  }
  const annotations = ingress.metadata?.annotations;
  if (annotations !== undefined && annotations !== null && !isObject(annotations)) {
    return invalid('metadata.annotations must be a map of strings');
  }
  return spec;
}

/**
 * The parsed annotations, or null when the annotation policy (blocklist, risk level) or an
 * annotation's own validation drops the Ingress.
 */
function checkAnnotations(
  ingress: Ingress,
  options: ModelOptions,
  policy: AnnotationPolicy,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): ParsedAnnotations | null {
  const annotations = ingress.metadata?.annotations;
  if (
    annotations != null &&
    !passesAnnotationPolicy(annotations, options.annotationsPrefix, policy, ref, diagnostics)
  ) {
    return null;
  }
  const parsed = parseAnnotations(
    annotations ?? undefined,
    options.annotationsPrefix,
    ref,
    diagnostics,
    policy.allowSnippets,
  );
  if (parsed.dropped) return null;
  if (parsed.ingress.canary.configuredButNotEnabled) {
    diagnostics.report(
      'Ingress',
      ref,
      'CANARY_NOT_ENABLED',
      `canary-* annotations are set but ${options.annotationsPrefix}/canary is not "true": they are ignored and this is an ordinary Ingress`,
    );
  }
  return parsed;
}

/** The rules whose host is valid, each with its valid paths; the others are reported and left out. */
function checkRules(rawRules: unknown[], ref: ObjectRef, diagnostics: DiagnosticsCollector): CheckedRule[] {
  const rules: CheckedRule[] = [];
  rawRules.forEach((rawRule, ruleIndex) => {
    if (!isObject(rawRule)) {
      diagnostics.report(
        'Ingress',
        ref,
        'INGRESS_INVALID',
        `${describe(ruleIndex)} must be an object; it is ignored`,
        undefined,
        { scope: 'rule' },
      );
      return;
    }
    const rawHost = rawRule.host ?? '';
    const host = typeof rawHost === 'string' ? rawHost.toLowerCase() : '';
    if (typeof rawHost !== 'string') {
      diagnostics.report(
        'Ingress',
        ref,
        'HOST_INVALID',
        `${describe(ruleIndex)}.host must be a string`,
        undefined,
        {
          scope: 'rule',
        },
      );
      return;
    }
    if (host !== '') {
      const problem = hostProblem(host);
      if (problem !== null) {
        diagnostics.report(
          'Ingress',
          ref,
          'HOST_INVALID',
          `${describe(ruleIndex)}.host "${rawHost}" ${problem}; the rule is ignored`,
          undefined,
          { scope: 'rule', host: rawHost },
        );
        return;
      }
    }
    rules.push({ host, paths: checkPaths(rawRule.http, ruleIndex, host, ref, diagnostics) });
  });
  return rules;
}

/** The valid paths of a rule's `http`; the others are reported and left out. */
function checkPaths(
  http: unknown,
  ruleIndex: number,
  host: string,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): CheckedPath[] {
  if (
    http !== undefined &&
    http !== null &&
    (!isObject(http) || (http.paths !== undefined && http.paths !== null && !Array.isArray(http.paths)))
  ) {
    diagnostics.report(
      'Ingress',
      ref,
      'INGRESS_INVALID',
      `${describe(ruleIndex)}.http must be an object whose paths is a list; the rule has no paths`,
      undefined,
      { scope: 'rule', host },
    );
  }
  const rawPaths = isObject(http) && Array.isArray(http.paths) ? (http.paths as unknown[]) : [];
  const paths: CheckedPath[] = [];
  rawPaths.forEach((rawPath, pathIndex) => {
    const path = checkPath(rawPath, describe(ruleIndex, pathIndex), host, ref, diagnostics);
    if (path !== null) paths.push(path);
  });
  return paths;
}

/** One path: its pathType, its value for that type, its backend; null (reported) when one is wrong. */
function checkPath(
  rawPath: unknown,
  where: string,
  host: string,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): CheckedPath | null {
  if (!isObject(rawPath)) {
    diagnostics.report(
      'Ingress',
      ref,
      'PATH_INVALID',
      `${where} must be an object; it is ignored`,
      undefined,
      {
        host,
      },
    );
    return null;
  }
  const asWritten = typeof rawPath.path === 'string' ? { host, path: rawPath.path } : { host };
  const pathType = rawPath.pathType;
  if (!isPathType(pathType)) {
    diagnostics.report(
      'Ingress',
      ref,
      'PATH_TYPE_INVALID',
      `${where}.pathType ${
        pathType === undefined ? 'is required' : `"${String(pathType)}" is not supported`
      } (Exact, Prefix or ImplementationSpecific); the path is ignored`,
      undefined,
      asWritten,
    );
    return null;
  }
  const rawPathValue = rawPath.path ?? '';
  if (typeof rawPathValue !== 'string') {
    diagnostics.report(
      'Ingress',
      ref,
      'PATH_INVALID',
      `${where}.path must be a string; the path is ignored`,
      undefined,
      asWritten,
    );
    return null;
  }
  const problem = pathProblem(rawPathValue, pathType);
  if (problem !== null) {
    diagnostics.report(
      'Ingress',
      ref,
      'PATH_INVALID',
      `${where}.path "${rawPathValue}" ${problem} for pathType ${pathType}; the path is ignored`,
      undefined,
      asWritten,
    );
    return null;
  }
  const backend = checkBackend(rawPath.backend, `${where}.backend`, ref, diagnostics, asWritten);
  if (backend === null) return null;
  return {
    path: rawPathValue === '' ? '/' : rawPathValue,
    pathType: effectivePathType(pathType),
    pathTypeAsWritten: pathType,
    backend,
  };
}

/** spec.tls entries with hosts as a list and secretName as a string; entries that are not objects
 * are left out silently, the others reported. */
function checkTls(entries: unknown[], ref: ObjectRef, diagnostics: DiagnosticsCollector): IngressTLS[] {
  const tls: IngressTLS[] = [];
  entries.forEach((entry, index) => {
    if (!isObject(entry)) return;
    const { hosts, secretName } = entry;
    const hostsOk = hosts === undefined || hosts === null || Array.isArray(hosts);
    const nameOk = secretName === undefined || secretName === null || typeof secretName === 'string';
    if (!hostsOk || !nameOk) {
      diagnostics.report(
        'Ingress',
        ref,
        'INGRESS_INVALID',
        `spec.tls[${index}] needs hosts as a list and secretName as a string; the entry is ignored`,
        undefined,
        { scope: 'tls' },
      );
      return;
    }
    tls.push(entry as IngressTLS);
  });
  return tls;
}

function checkBackend(
  raw: unknown,
  where: string,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
  place?: DiagnosticPlace,
): ServiceBackendRef | null {
  const { namespace } = ref;
  const fail = (message: string): null => {
    diagnostics.report(
      'Ingress',
      ref,
      'BACKEND_INVALID',
      `${where} ${message}; it is ignored`,
      undefined,
      place,
    );
    return null;
  };
  if (!isObject(raw)) return fail('is missing');
  const backend = raw as IngressBackend;
  if (backend.resource != null) return fail('is a resource backend, which ingress-ts does not route');
  const service = backend.service;
  if (!isObject(service) || typeof service.name !== 'string' || service.name === '') {
    return fail('names no service');
  }
  const port = service.port;
  if (isObject(port) && typeof port.number === 'number') {
    if (!Number.isInteger(port.number) || port.number < 1 || port.number > 65535) {
      return fail(`has port number ${port.number}, outside 1-65535`);
    }
    return { namespace, service: service.name, port: String(port.number) };
  }
  if (isObject(port) && typeof port.name === 'string' && port.name !== '') {
    return { namespace, service: service.name, port: port.name };
  }
  return fail('needs service.port.number or service.port.name');
}
