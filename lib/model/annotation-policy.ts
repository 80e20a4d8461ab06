// The ConfigMap's two policies over an Ingress's annotations, applied before they are parsed, as
// ingress-nginx applies them before its parsers: annotation-value-word-blocklist (a blocked word in a
// value) and annotations-risk-level (an annotation riskier than allowed). Either skips the whole
// Ingress with a diagnostic naming the annotation, never showing its value (it may hold a credential).

import { type AnnotationRisk, annotationRisk, riskAbove } from './annotations/risk.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { ObjectRef } from './types.ts';

export interface AnnotationPolicy {
  /** `annotation-value-word-blocklist`, trimmed, without empty words */
  blocklist: readonly string[];
  /** `annotations-risk-level`: annotations of a higher risk are refused */
  riskLevel: AnnotationRisk;
}

export const NO_ANNOTATION_POLICY: AnnotationPolicy = { blocklist: [], riskLevel: 'Critical' };

/** Whether the Ingress passes both policies; when it does not, the reason is reported on it. */
export function passesAnnotationPolicy(
  annotations: Readonly<Record<string, unknown>>,
  prefix: string,
  policy: AnnotationPolicy,
  ref: ObjectRef,
  diagnostics: DiagnosticsCollector,
): boolean {
  if (policy.blocklist.length === 0 && policy.riskLevel === 'Critical') return true;
  const lead = `${prefix}/`;
  const names = Object.keys(annotations)
    .filter((key) => key.startsWith(lead))
    .sort();
  for (const key of names) {
    const raw = annotations[key];
    const value = typeof raw === 'string' ? raw : String(raw);
    const word = policy.blocklist.find((w) => value.includes(w));
    if (word !== undefined) {
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_VALUE_BLOCKED',
        `annotation ${key} contains ${JSON.stringify(word)}, a word of the ConfigMap's annotation-value-word-blocklist; the Ingress is ignored`,
      );
      return false;
    }
  }
  for (const key of names) {
    const name = key.slice(lead.length);
    // snippets are refused on their own account (SNIPPET_REFUSED), whatever the level
    if (name.endsWith('-snippet')) continue;
    const risk = annotationRisk(name);
    if (riskAbove(risk, policy.riskLevel)) {
      diagnostics.report(
        'Ingress',
        ref,
        'ANNOTATION_TOO_RISKY',
        `annotation ${key} has risk ${risk}, above the ConfigMap's annotations-risk-level ${policy.riskLevel}; the Ingress is ignored`,
      );
      return false;
    }
  }
  return true;
}
