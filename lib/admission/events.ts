// What the webhook reports, on node:diagnostics_channel: the metrics subscribe, the server does
// not import them.

import { channel } from 'node:diagnostics_channel';
import type { Verdict } from './review.ts';

export interface AdmissionReviewed {
  /** allowed, denied, ignored (another class, a deletion), invalid (not a review: 400), error (500) */
  result: 'allowed' | 'denied' | 'ignored' | 'invalid' | 'error';
  namespace: string;
  name: string;
  /** from the end of the request head to the verdict, the body read included */
  seconds: number;
  /** the review's own figures (allowed, denied and ignored) */
  verdict?: Verdict;
}

export const admissionReviewed = channel('ingress-ts:admission:reviewed');
