// The per-request canary decision, as ingress-nginx's balancer.lua route_to_alternative_balancer
// makes it. Made once per request, in the routing step, so retries stay on the backend it chose:
//   header  (canary-by-header): with -value, that exact value → canary, else fall through; with
//           -pattern, a match → canary, no match falls through, a pattern that does not compile →
//           main (and stop); without either, "always" → canary, "never" → main, else fall through;
//   cookie  (canary-by-cookie): "always" → canary, "never" → main, else fall through;
//   weight  a uniform integer in [1, max(100, weight-total)] ≤ weight → canary.
// A canary without endpoints never gets the request (the caller checks before asking).

import type { IncomingMessage } from 'node:http';
import { RE2JS } from 're2js';
import type { Canary } from '../../model/index.ts';
import { cookieValue, headerValue } from '../request-values.ts';
import type { ProxyTarget } from '../upstream/target.ts';

export interface CanaryAction {
  target: ProxyTarget;
  weight: number;
  /** max(100, canary-weight-total) */
  weightTotal: number;
  header: string | null;
  headerValue: string | null;
  /** compiled once; 'invalid' when RE2 refused it */
  headerPattern: RE2JS | 'invalid' | null;
  cookie: string | null;
}

export function compileCanary(canary: Canary, target: ProxyTarget): CanaryAction {
  let headerPattern: CanaryAction['headerPattern'] = null;
  if (canary.header !== null && canary.headerValue === null && canary.headerPattern !== null) {
    try {
      headerPattern = RE2JS.compile(canary.headerPattern);
    } catch {
      headerPattern = 'invalid'; // the model reported it (CANARY_PATTERN_INVALID)
    }
  }
  return {
    target,
    weight: canary.weight,
    weightTotal: Math.max(100, canary.weightTotal),
    header: canary.header,
    headerValue: canary.headerValue,
    headerPattern,
    cookie: canary.cookie,
  };
}

/** Whether this request goes to the canary. `random` is uniform in [0, 1). */
export function routeToCanary(req: IncomingMessage, canary: CanaryAction, random: () => number): boolean {
  if (canary.header !== null) {
    const value = headerValue(req, canary.header);
    if (value !== undefined) {
      if (canary.headerValue !== null) {
        if (value === canary.headerValue) return true;
      } else if (canary.headerPattern !== null) {
        if (canary.headerPattern === 'invalid') return false;
        if (canary.headerPattern.test(value)) return true;
      } else if (value === 'always') {
        return true;
      } else if (value === 'never') {
        return false;
      }
    }
  }
  if (canary.cookie !== null) {
    const value = cookieValue(req, canary.cookie);
    if (value === 'always') return true;
    if (value === 'never') return false;
  }
  return Math.floor(random() * canary.weightTotal) + 1 <= canary.weight;
}
