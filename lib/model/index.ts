// The routing model: pure functions from Kubernetes objects to routes. Imports nothing else of lib/.

export type { LocationAnnotations } from './annotations/index.ts';
export { SUPPORTED_ANNOTATIONS } from './annotations/index.ts';
// what /debug/model reads of the snapshot besides the model (lib/debug-objects.ts)
export { endpointsFromSlices, findServicePort } from './backends.ts';
export type { BuildResult, ModelReferences } from './build.ts';
export { buildModel, globalConfigOf } from './build.ts';
export { type BuildCaches, createBuildCaches } from './build-caches.ts';
export { DEFAULT_GLOBAL_CONFIG, type WorkerProcesses } from './configmap/global-config.ts';
export { SUPPORTED_CONFIG_KEYS } from './configmap/index.ts';
export {
  DEFAULT_TRACING,
  OPERATION_NAME_VARIABLES,
  type OtelSampler,
  type TracingConfig,
} from './configmap/tracing-keys.ts';
export { parseGoDurationMs } from './configmap/values.ts';
export type {
  Diagnostic,
  DiagnosticCode,
  DiagnosticPlace,
  DiagnosticScope,
  Severity,
} from './diagnostics.ts';
export { DIAGNOSTIC_CODES } from './diagnostics.ts';
export type * from './gateway/k8s.ts';
export type * from './gateway/types.ts';
export { isOurIngress, ownedClassNames } from './ingress-class.ts';
export type * from './k8s.ts';
export { EMPTY_SNAPSHOT, LEGACY_CLASS_ANNOTATION, SERVICE_NAME_LABEL } from './k8s.ts';
export type { ModelOptions } from './options.ts';
export { DEFAULT_MODEL_OPTIONS } from './options.ts';
export { PathRegexCache } from './path-regex.ts';
export { REDACTED, redactConfig, redactHeaders, redactOptionalUrl, redactText, redactUrl } from './redact.ts';
export type { SnippetReturn, SnippetRules } from './snippets/read.ts';
export type { StreamProtocol, StreamService, StreamTable } from './streams.ts';
export { EMPTY_STREAM_TABLE } from './streams.ts';
export { type RouteTracing, routeTracing } from './tracing.ts';
export type * from './types.ts';
export type { Rewrite, UpstreamSettings } from './upstream-settings.ts';
export { upstreamSettings } from './upstream-settings.ts';
export type { Admission, Effect, Finding, IngressVerdict, Verdict, VerdictInput } from './verdicts.ts';
export {
  admissionFor,
  admissionOf,
  countVerdicts,
  EFFECTS,
  effectOf,
  findingOf,
  findingsFor,
  ingressVerdicts,
  verdictOf,
} from './verdicts.ts';
