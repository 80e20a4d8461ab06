// A route's tracing policy: the ConfigMap's OpenTelemetry keys with the route's annotations over
// them, decided as ingress-nginx's template decides a location's `opentelemetry` directives
// (buildOpentelemetryForLocation): the annotation, when set, turns tracing on or off; trust and the
// operation name come from the annotation when it sets them, else from the ConfigMap.

import type { OpenTelemetryAnnotations } from './annotations/opentelemetry.ts';
import type { TracingConfig } from './configmap/tracing-keys.ts';

export interface RouteTracing {
  /** a valid incoming traceparent becomes the span's parent; else the span starts a new trace */
  trustIncomingSpan: boolean;
  /** the span name with $variables; '' = the location path (NGINX's location name) */
  operationName: string;
}

/** The route's tracing, or null when its requests get no span. */
export function routeTracing(
  config: TracingConfig,
  annotations: OpenTelemetryAnnotations,
): RouteTracing | null {
  const enabled = annotations.set ? annotations.enabled : config.enabled;
  if (!enabled) return null;
  return {
    trustIncomingSpan: annotations.trustSet ? annotations.trust : config.trustIncomingSpan,
    operationName: annotations.operationName !== '' ? annotations.operationName : config.operationName,
  };
}
