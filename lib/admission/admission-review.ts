// The AdmissionReview (admission.k8s.io/v1) of an Ingress: the request read from a body, and the
// response written for a verdict. A body that is not such a review is a client error with a short
// reason, never an exception.

import type { Ingress } from '../model/index.ts';
import type { Operation, Verdict } from './review.ts';

export interface AdmissionRequest {
  uid: string;
  operation: Operation;
  namespace: string;
  name: string;
  object: Ingress | null;
  oldObject: Ingress | null;
}

const OPERATIONS: ReadonlySet<string> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function objectOrNull(value: unknown): Ingress | null | undefined {
  if (value === undefined || value === null) return null;
  return isRecord(value) ? (value as Ingress) : undefined;
}

/** The request of an AdmissionReview of a networking.k8s.io/v1 Ingress, or why the body is not one. */
export function readAdmissionReview(body: string): { request: AdmissionRequest } | { error: string } {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch {
    return { error: 'the body is not JSON' };
  }
  if (!isRecord(review) || review.apiVersion !== 'admission.k8s.io/v1' || review.kind !== 'AdmissionReview') {
    return { error: 'the body is not an admission.k8s.io/v1 AdmissionReview' };
  }
  const request = review.request;
  if (!isRecord(request) || typeof request.uid !== 'string' || request.uid === '') {
    return { error: 'the AdmissionReview has no request with a uid' };
  }
  const kind = request.kind;
  if (
    !isRecord(kind) ||
    kind.group !== 'networking.k8s.io' ||
    kind.version !== 'v1' ||
    kind.kind !== 'Ingress'
  ) {
    return { error: 'the AdmissionReview is not about a networking.k8s.io/v1 Ingress' };
  }
  if (typeof request.operation !== 'string' || !OPERATIONS.has(request.operation)) {
    return { error: 'the AdmissionReview has no known operation' };
  }
  const object = objectOrNull(request.object);
  const oldObject = objectOrNull(request.oldObject);
  if (object === undefined || oldObject === undefined) {
    return { error: 'the object of the AdmissionReview is not an object' };
  }
  if (object === null && request.operation !== 'DELETE') {
    return { error: `the AdmissionReview of a ${request.operation} has no object` };
  }
  return {
    request: {
      uid: request.uid,
      operation: request.operation as Operation,
      namespace: typeof request.namespace === 'string' ? request.namespace : '',
      // a name made from generateName is in the object only
      name:
        typeof request.name === 'string' && request.name !== ''
          ? request.name
          : (object?.metadata?.name ?? ''),
      object,
      oldObject,
    },
  };
}

/** The AdmissionReview answered: ingress-nginx's status for a refusal (400, BadRequest). */
export function admissionResponse(uid: string, verdict: Pick<Verdict, 'allowed' | 'reasons' | 'warnings'>) {
  const response: Record<string, unknown> = { uid, allowed: verdict.allowed };
  if (!verdict.allowed) {
    response.status = {
      status: 'Failure',
      code: 400,
      reason: 'BadRequest',
      message: verdict.reasons.join('; '),
    };
  }
  if (verdict.warnings.length > 0) response.warnings = verdict.warnings;
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}
