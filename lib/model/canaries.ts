// Canary Ingresses attached to the main routes they shadow: a canary never creates a host, a path
// or host settings; it shares the traffic of a main route by header, cookie or weight.

import { RE2JS } from 're2js';
import type { ServiceBackendRef } from './backends.ts';
import { type BuildState, refName, useUpstream } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { CheckedIngress } from './ingress.ts';
import type { Canary } from './types.ts';

/**
 * Canaries, oldest first: each path joins the main route of the same namespace, host, path and
 * pathType as written; the first canary to claim a route keeps it.
 */
export function attachCanaries(state: BuildState): void {
  for (const ingress of state.canaries) {
    if (ingress.defaultBackend !== null && !ingress.hasRules)
      attachCanaryToCatchAll(state, ingress, ingress.defaultBackend);
    for (const rule of ingress.rules) {
      const draft = rule.host === '' ? state.catchAll : state.drafts.get(rule.host);
      for (const path of rule.paths) {
        const where = `${path.pathTypeAsWritten} ${path.path} on host ${rule.host === '' ? '(any host)' : rule.host}`;
        const place = { host: rule.host, path: path.path };
        const route = draft?.server.routes.find(
          // never an HTTPRoute's route: a canary Ingress shadows Ingress paths only
          (r) =>
            r.gateway === undefined &&
            r.path === path.path &&
            r.pathTypeAsWritten === path.pathTypeAsWritten &&
            r.ingress.namespace === ingress.ref.namespace,
        );
        if (route === undefined) {
          state.diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_NO_MAIN',
            `canary ${where}: no main Ingress in namespace ${ingress.ref.namespace} serves it, so it gets no traffic`,
            undefined,
            place,
          );
          continue;
        }
        if (route.canary !== null) {
          state.diagnostics.report(
            'Ingress',
            ingress.ref,
            'CANARY_CONFLICT',
            `canary ${where}: the older canary ${refName(route.canary.ingress)} already shares it; this one gets no traffic there`,
            undefined,
            place,
          );
          continue;
        }
        const backend = useUpstream(state, ingress, path.backend);
        // the same Service and port as the main route: nothing to split (ingress-nginx: a no-op)
        if (
          backend.type !== 'upstream' ||
          (route.backend.type === 'upstream' && route.backend.upstream === backend.upstream)
        ) {
          continue;
        }
        route.canary = canaryOf(ingress, backend.upstream, state.diagnostics);
      }
    }
  }
}

/** A canary's spec.defaultBackend (without rules) joins the catch-all when an Ingress provides it
 * (not the controller's own default backend, as ingress-nginx). */
function attachCanaryToCatchAll(
  state: BuildState,
  ingress: CheckedIngress,
  defaultBackend: ServiceBackendRef,
): void {
  const route = state.catchAll.server.defaultRoute;
  const backend = useUpstream(state, ingress, defaultBackend);
  if (route.ingress === null || route.backend.type !== 'upstream') {
    state.diagnostics.report(
      'Ingress',
      ingress.ref,
      'CANARY_NO_MAIN',
      'canary spec.defaultBackend: no Ingress provides the catch-all defaultBackend, so it gets no traffic',
    );
  } else if (route.canary !== null) {
    state.diagnostics.report(
      'Ingress',
      ingress.ref,
      'CANARY_CONFLICT',
      `canary spec.defaultBackend: the older canary ${refName(route.canary.ingress)} already shares the catch-all; this one gets no traffic there`,
    );
  } else if (backend.type === 'upstream' && backend.upstream !== route.backend.upstream) {
    route.canary = canaryOf(ingress, backend.upstream, state.diagnostics);
  }
}

function canaryOf(ingress: CheckedIngress, upstream: string, diagnostics: DiagnosticsCollector): Canary {
  const { weight, weightTotal, header, headerValue, headerPattern, cookie } =
    ingress.annotations.ingress.canary;
  if (headerPattern !== null && header !== null && headerValue === null) {
    try {
      RE2JS.compile(headerPattern);
    } catch (error) {
      // the parser's message quotes the pattern, which spells out a shared secret: only what is wrong
      const what = (error as { error?: unknown }).error;
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'CANARY_PATTERN_INVALID',
        `canary-by-header-pattern is not a valid regular expression${typeof what === 'string' ? ` (${what})` : ''}; requests carrying ${header} go to the main backend`,
      );
    }
  }
  return { ingress: ingress.ref, upstream, weight, weightTotal, header, headerValue, headerPattern, cookie };
}
