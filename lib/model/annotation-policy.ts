// The ConfigMap's two policies over an Ingress's annotations, applied before they are parsed, as
// ingress-nginx applies them before its parsers: annotation-value-word-blocklist (a blocked word in a
// value) and annotations-risk-level (an annotation riskier than allowed). Either skips the whole
// Ingress with a diagnostic naming the annotation, never showing its value (it may hold a credential).

import { type AnnotationRisk, annotationRisk, refusedAt } from './annotations/risk.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { ObjectRef } from './types.ts';

export interface AnnotationPolicy {
  /** `annotation-value-word-blocklist`, trimmed, without empty words */
  blocklist: readonly string[];
  /** `annotations-risk-level`: annotations of a higher risk are refused */
  riskLevel: AnnotationRisk;
  /**
   * configuration-snippet and server-snippet are read as data: `allow-snippet-annotations` is true
   * and the risk level is Critical (ingress-nginx 1.12+ needs both to accept a snippet)
   */
  allowSnippets: boolean;
}

export const NO_ANNOTATION_POLICY: AnnotationPolicy = {
  blocklist: [],
  riskLevel: 'Critical',
  allowSnippets: false,
};

/** The policy the global ConfigMap sets. */
export function annotationPolicyOf(config: {
  annotationValueWordBlocklist: readonly string[];
  annotationsRiskLevel: AnnotationRisk;
  allowSnippetAnnotations: boolean;
}): AnnotationPolicy {
  return {
    blocklist: config.annotationValueWordBlocklist,
    riskLevel: config.annotationsRiskLevel,
    allowSnippets: config.allowSnippetAnnotations && config.annotationsRiskLevel === 'Critical',
  };
}

const REFUSED: Record<AnnotationRisk, ReadonlySet<string>> = {
  Low: refusedAt('Low'),
  Medium: refusedAt('Medium'),
  High: refusedAt('High'),
  Critical: refusedAt('Critical'),
};

/** Whether the Ingress passes both policies; when it does not, the reason is reported on it. */
export function passesAnnotationPolicy(
  annotations: Readonly<Record<string, unknown>>,
  prefix: string,
  policy: AnnotationPolicy,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): boolean {
  const refused = REFUSED[policy.riskLevel];
  if (policy.blocklist.length === 0 && refused.size === 0) return true;
  const lead = `${prefix}/`;
  // the first offence in name order, so the report does not depend on the object's key order
  let blocked: { key: string; word: string } | null = null;
  let risky: string | null = null;
  for (const [key, raw] of Object.entries(annotations)) {
    if (!key.startsWith(lead)) continue;
    const value = typeof raw === 'string' ? raw : String(raw);
    const word = policy.blocklist.find((w) => value.includes(w));
    if (word !== undefined && (blocked === null || key < blocked.key)) blocked = { key, word };
    if (refused.has(key.slice(lead.length)) && (risky === null || key < risky)) risky = key;
  }
  if (blocked !== null) {
    diagnostics.report(
      'Ingress',
      ref,
      'ANNOTATION_VALUE_BLOCKED',
      `annotation ${blocked.key} contains ${JSON.stringify(blocked.word)}, a word of the ConfigMap's annotation-value-word-blocklist; the Ingress is ignored`,
    );
    return false;
  }
  if (risky !== null) {
    diagnostics.report(
      'Ingress',
      ref,
      'ANNOTATION_TOO_RISKY',
      `annotation ${risky} has risk ${annotationRisk(risky.slice(lead.length))}, above the ConfigMap's annotations-risk-level ${policy.riskLevel}; the Ingress is ignored`,
    );
    return false;
  }
  return true;
}
