// An Ingress checked once while it stays the same object: its rules, paths and parsed annotations,
// and what the check reported, replayed in its place in each later build's diagnostics. The check
// depends on the Ingress, the options and the ConfigMap's annotation policy alone; the memo's context
// names the last two, so a change to either checks every Ingress again.
//
// Keyed by the object: the store replaces an Ingress object when it changes and never edits one in
// place (nor does the manifests source), so the same object is the same input. A snapshot that
// differs from the last one in any way (a trial build with one Ingress replaced) finds the other
// objects and checks the new one.

import type { AnnotationPolicy } from './annotation-policy.ts';
import { BuildMemo } from './build-memo.ts';
import { type Diagnostic, DiagnosticsCollector } from './diagnostics.ts';
import { type CheckedIngress, checkIngress } from './ingress.ts';
import type { Ingress } from './k8s.ts';
import type { ModelOptions } from './options.ts';

interface CheckRecord {
  checked: CheckedIngress | null;
  diagnostics: readonly Diagnostic[];
}

export class IngressCheckCache extends BuildMemo<Ingress, CheckRecord> {}

/** What the check depends on besides the Ingress. */
export function checkContext(options: ModelOptions, policy: AnnotationPolicy): string {
  return JSON.stringify([options, policy]);
}

/**
 * checkIngress, or what it returned for this object in the build before. The caller gets its own
 * shallow copy: the build replaces `annotations` on it (custom headers, auth references) and must
 * not change the record.
 */
export function checkIngressOnce(
  ingress: Ingress,
  options: ModelOptions,
  diagnostics: DiagnosticsCollector,
  policy: AnnotationPolicy,
  cache: IngressCheckCache,
): CheckedIngress | null {
  let record = cache.get(ingress);
  if (record === undefined) {
    const found = new DiagnosticsCollector();
    record = { checked: checkIngress(ingress, options, found, policy), diagnostics: found.list() };
    cache.set(ingress, record);
  }
  for (const diagnostic of record.diagnostics) diagnostics.replay(diagnostic);
  return record.checked === null ? null : { ...record.checked };
}
