// Status conditions as the Gateway API writes them: every condition carries the generation of the
// object it was computed from (the conformance suite refuses any other), and the reasons are the
// spec's own words, so tools reading status across implementations understand them.

import type { KubeObject } from '../k8s.ts';
import type { Condition } from './types.ts';

/** metadata.generation, 0 when absent (the fake API server and standalone manifests may not set it). */
export function generationOf(object: KubeObject): number {
  const generation = object.metadata?.generation;
  return typeof generation === 'number' && Number.isInteger(generation) && generation >= 0 ? generation : 0;
}

/** A check's outcome: passed, or the reason and message of the False condition. */
export type Check = { ok: true } | { ok: false; reason: string; message: string };

export const PASSED: Check = Object.freeze({ ok: true });

export const failed = (reason: string, message: string): Check => ({ ok: false, reason, message });

export function condition(
  type: string,
  status: Condition['status'],
  reason: string,
  message: string,
  observedGeneration: number,
): Condition {
  return { type, status, reason, message, observedGeneration };
}

/** True with `reason` when the check passed, else False with the check's reason and message. */
export function fromCheck(
  type: string,
  check: Check,
  reason: string,
  message: string,
  generation: number,
): Condition {
  return check.ok
    ? condition(type, 'True', reason, message, generation)
    : condition(type, 'False', check.reason, check.message, generation);
}
