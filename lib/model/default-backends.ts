// Default backends as upstreams: the controller's (--default-backend-service) and the Services the
// default-backend annotation names, where custom errors and routes without endpoints go.

import { customDefaultBackendName } from './annotations/index.ts';
import type { UpstreamResolver } from './backends.ts';
import { type BuildState, splitKey } from './build-state.ts';
import type { GlobalConfig } from './configmap/global-config.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { Server } from './types.ts';

/** The controller's default backend (--default-backend-service, first port). */
export function resolveDefaultBackendFlag(state: BuildState): void {
  const flag = state.options.defaultBackendService;
  if (flag === null) return;
  state.defaultBackend = resolveDefaultBackend(flag, state.resolver, state.config, state.diagnostics);
}

function resolveDefaultBackend(
  flag: string,
  resolver: UpstreamResolver,
  config: GlobalConfig,
  diagnostics: DiagnosticsCollector,
): string | null {
  const ref = splitKey(flag);
  const unusable = (message: string): null => {
    diagnostics.report(
      'Service',
      ref ?? { namespace: '', name: flag },
      'DEFAULT_BACKEND_SERVICE_UNUSABLE',
      `--default-backend-service ${flag} ${message}; the built-in 404 backend answers instead`,
    );
    return null;
  };
  if (ref === null) return unusable('is not of the form namespace/name');
  const service = resolver.service(ref.namespace, ref.name);
  if (service === undefined) return unusable('does not exist');
  const firstPort = service.spec?.ports?.[0];
  if (firstPort === undefined || typeof firstPort.port !== 'number') return unusable('declares no port');
  const { upstream, problem } = resolver.resolveAs(
    { namespace: ref.namespace, service: ref.name, port: String(firstPort.port) },
    'upstream-default-backend',
    config.loadBalance,
  );
  if (problem !== null) unusable(`is unusable for now (${problem.message})`);
  return upstream.name;
}

/**
 * The default-backend annotation's Services (first port), as upstreams named
 * custom-default-backend-<ns>-<svc>: the data plane sends custom errors there, and requests of a
 * route whose Service has no endpoints. A missing Service or port leaves the route without one.
 */
export function resolveCustomDefaultBackends(
  servers: readonly Server[],
  resolver: UpstreamResolver,
  config: GlobalConfig,
  diagnostics: DiagnosticsCollector,
): void {
  const done = new Set<string>();
  for (const server of servers) {
    for (const route of [...server.routes, server.defaultRoute]) {
      const service = route.annotations.customErrors.backend;
      const ingress = route.ingress;
      if (service === null || ingress === null) continue;
      const name = customDefaultBackendName(ingress.namespace, service);
      if (done.has(name)) continue;
      done.add(name);
      const found = resolver.service(ingress.namespace, service);
      const firstPort = found?.spec?.ports?.[0];
      if (found === undefined || firstPort === undefined || typeof firstPort.port !== 'number') {
        diagnostics.report(
          'Ingress',
          ingress,
          'ANNOTATION_INVALID',
          `annotation default-backend names Service ${ingress.namespace}/${service}, which ${found === undefined ? 'does not exist' : 'declares no port'}; custom errors use the controller's default backend`,
          'warning',
        );
        continue;
      }
      resolver.resolveAs(
        { namespace: ingress.namespace, service, port: String(firstPort.port) },
        name,
        config.loadBalance,
      );
    }
  }
}
