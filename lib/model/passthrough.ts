// ssl-passthrough hosts: their TLS connections are not terminated but sent on to one backend.

import type { BuildState, ServerDraft } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { CheckedIngress } from './ingress.ts';

/** ssl-passthrough, when some Ingress of the host sets it (ingress-nginx: "any true"). */
export function markPassthrough(state: BuildState): void {
  const { options } = state;
  applyPassthrough(
    state.ingresses,
    state.drafts,
    options.enableSslPassthrough,
    options.annotationsPrefix,
    state.diagnostics,
  );
}

/**
 * ssl-passthrough: a host is passthrough when any of its Ingresses sets the annotation; its TLS
 * connections go to the backend of its Prefix `/` route, else of its default route (ingress-nginx's
 * root location). Without --enable-ssl-passthrough the annotation has no effect, with a warning.
 */
function applyPassthrough(
  ingresses: readonly CheckedIngress[],
  drafts: Map<string, ServerDraft>,
  enabled: boolean,
  prefix: string,
  diagnostics: DiagnosticsCollector,
): void {
  for (const ingress of ingresses) {
    if (!ingress.annotations.ingress.sslPassthrough.enabled) continue;
    const hosts = [...new Set(ingress.rules.map((rule) => rule.host).filter((host) => host !== ''))];
    if (!enabled) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'SSL_PASSTHROUGH_DISABLED',
        `annotation ${prefix}/ssl-passthrough needs the controller flag --enable-ssl-passthrough, which is off: TLS to ${
          hosts.length === 0 ? 'its hosts' : hosts.join(', ')
        } is terminated and routed as usual`,
      );
      continue;
    }
    for (const host of hosts) {
      const draft = drafts.get(host);
      if (draft === undefined || draft.server.passthrough !== null) continue;
      draft.server.passthrough = { ingress: ingress.ref, backendIngress: null, backend: { type: 'default' } };
    }
  }
  for (const { server } of drafts.values()) {
    if (server.passthrough === null) continue;
    // an Ingress's `/` (an HTTPRoute rule's weighted backends cannot take a TLS stream)
    const root = server.routes.find(
      (route) => route.pathType === 'Prefix' && route.path === '/' && route.backend.type !== 'weighted',
    );
    const from = root ?? server.defaultRoute;
    const backend = from.backend.type === 'weighted' ? server.defaultRoute.backend : from.backend;
    server.passthrough = { ...server.passthrough, backendIngress: from.ingress, backend };
  }
}
