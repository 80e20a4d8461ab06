// The servers of the model, one per host plus the catch-all, and their host-level settings: the
// Ingress that creates each (oldest first), the server-level annotations and certificate the oldest
// Ingress setting them decides, the client-certificate CA.

import { catchAllAnnotations, serverGroupIsSet, serverGroupKeys } from './annotations/index.ts';
import { type BuildState, newDraft, refName, type ServerDraft, sameRef, useUpstream } from './build-state.ts';
import { resolveClientAuth } from './client-auth.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { CheckedIngress } from './ingress.ts';
import { applyTLS } from './server-tls.ts';
import type { ObjectRef, TargetBackend } from './types.ts';

/** Servers: the catch-all (from the oldest Ingress with only a defaultBackend), then one per host,
 * created by the oldest Ingress naming it, whose defaultBackend becomes the host's default route. */
export function createServers(state: BuildState): void {
  const { catchAll, drafts, diagnostics } = state;
  let catchAllOwner: ObjectRef | null = null;
  for (const ingress of state.ingresses) {
    let ownDefault: TargetBackend | undefined;
    // resolved on first use only, so an Ingress that creates nothing does not resolve it
    const defaultBackendOf = (): TargetBackend => {
      if (ownDefault === undefined) {
        ownDefault =
          ingress.defaultBackend === null
            ? { type: 'default' }
            : useUpstream(state, ingress, ingress.defaultBackend);
      }
      return ownDefault;
    };
    if (ingress.defaultBackend !== null && !ingress.hasRules) {
      if (catchAllOwner === null) {
        catchAllOwner = ingress.ref;
        catchAll.server.defaultRoute = {
          ingress: ingress.ref,
          backend: defaultBackendOf(),
          annotations: catchAllAnnotations(ingress.annotations.location),
          canary: null,
        };
      } else {
        diagnostics.report(
          'Ingress',
          ingress.ref,
          'DEFAULT_BACKEND_CONFLICT',
          `the older Ingress ${refName(catchAllOwner)} already provides the catch-all defaultBackend; this one is not used`,
        );
      }
    }
    for (const rule of ingress.rules) {
      if (rule.host === '' || drafts.has(rule.host)) continue;
      drafts.set(
        rule.host,
        newDraft(rule.host, ingress.ref, {
          ingress: ingress.ref,
          backend: defaultBackendOf(),
          annotations: ingress.annotations.location,
          canary: null,
        }),
      );
    }
  }
}

/** Host settings: server-level annotations and TLS, oldest Ingress first. */
export function applyHostSettings(state: BuildState): void {
  for (const ingress of state.ingresses) {
    for (const rule of ingress.rules) {
      const draft = state.drafts.get(rule.host);
      if (draft === undefined) continue;
      applyServerAnnotations(draft, ingress, state.diagnostics);
      applyTLS(draft, ingress, state.lookups.certificate, state.certificates, state.diagnostics);
    }
  }
}

/** Client certificate authentication: the Secret of the host's auth-tls-secret. */
export function addClientAuth(state: BuildState): void {
  for (const draft of state.drafts.values()) {
    const source = draft.annotationSource.authTls;
    if (source === undefined) continue;
    draft.server.clientAuth = resolveClientAuth(
      draft.server.annotations.authTls,
      source,
      draft.server.hostname,
      state.config.allowCrossNamespaceResources,
      state.lookups.secret,
      state.diagnostics,
    );
  }
}

function applyServerAnnotations(
  draft: ServerDraft,
  ingress: CheckedIngress,
  diagnostics: DiagnosticsCollector,
) {
  for (const key of serverGroupKeys) {
    const value = ingress.annotations.server[key];
    if (!serverGroupIsSet(key, value)) continue;
    const source = draft.annotationSource[key];
    if (source === undefined) {
      draft.annotationSource[key] = ingress.ref;
      draft.server.annotations = { ...draft.server.annotations, [key]: value };
    } else if (!sameRef(source, ingress.ref)) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'SERVER_ANNOTATION_CONFLICT',
        `host ${draft.server.hostname} already takes its ${key} setting from the older Ingress ${refName(source)}; this one is ignored`,
      );
    }
  }
}
