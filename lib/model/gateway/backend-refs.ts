// backendRefs (and RequestMirror's backendRef) of an HTTPRoute: a core Service, in the route's
// namespace or one whose ReferenceGrant trusts HTTPRoutes of the route's namespace, that exists and
// has the port. An invalid ref keeps its weight: its share of the traffic answers 500. The Service
// is looked up through the resolver, so it is recorded as a reference and its creation rebuilds.
// An ExternalName Service is refused (InvalidKind, the API's reason for a kind of backend the
// implementation does not support): its DNS name may point into any namespace, which would get
// around ReferenceGrant (CVE-2021-25740), and the API says implementations SHOULD NOT support it.
// Ingresses keep ExternalName backends, as in ingress-nginx.

import type { BuildState } from '../build-state.ts';
import type { GrantIndex } from './grants.ts';
import type { BackendObjectReference, HTTPBackendRef } from './k8s.ts';
import { text } from './read.ts';
import type { ResolvedBackend } from './types.ts';

export interface RefProblem {
  reason: 'InvalidKind' | 'BackendNotFound' | 'RefNotPermitted';
  message: string;
}

export type ResolvedRef =
  | { ok: true; namespace: string; name: string; port: number }
  | { ok: false; problem: RefProblem };

const MAX_WEIGHT = 1_000_000;

/** One ref of an HTTPRoute in `routeNamespace`. */
export function resolveServiceRef(
  state: BuildState,
  grants: GrantIndex,
  routeNamespace: string,
  ref: BackendObjectReference,
): ResolvedRef {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const name = ref.name;
  const shown = `${group === '' ? '' : `${text(group)}/`}${text(kind)} ${text(name)}`;
  if (group !== '' || kind !== 'Service') {
    return invalid('InvalidKind', `backendRef ${shown}: ingress-ts sends traffic to core Services only`);
  }
  if (typeof name !== 'string' || name === '') return invalid('BackendNotFound', 'a backendRef has no name');
  const { namespace, id, permitted } = grants.coreRef(
    'HTTPRoute',
    routeNamespace,
    'Service',
    ref.namespace,
    name,
  );
  if (!permitted) {
    return invalid(
      'RefNotPermitted',
      `Service ${id} is in another namespace and no ReferenceGrant there lets HTTPRoutes of ${routeNamespace} refer to it`,
    );
  }
  const port = ref.port;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    return invalid('BackendNotFound', `backendRef Service ${id} needs a port (1-65535)`);
  }
  const service = state.resolver.findService(namespace, name);
  if (service === undefined) return invalid('BackendNotFound', `Service ${id} does not exist`);
  if (service.spec?.type === 'ExternalName') {
    return invalid(
      'InvalidKind',
      `Service ${id} is of type ExternalName, which HTTPRoutes may not use (its DNS name could point into another namespace without a ReferenceGrant)`,
    );
  }
  const ports: unknown = service.spec?.ports;
  const hasPort = Array.isArray(ports) && ports.some((p: { port?: unknown } | null) => p?.port === port);
  if (!hasPort) return invalid('BackendNotFound', `Service ${id} has no port ${port}`);
  return { ok: true, namespace, name, port };
}

const invalid = (reason: RefProblem['reason'], message: string): ResolvedRef => ({
  ok: false,
  problem: { reason, message },
});

/** A rule's backendRefs (weights already checked); `problems` collects why refs are refused. */
export function resolveBackends(
  state: BuildState,
  grants: GrantIndex,
  routeNamespace: string,
  refs: readonly HTTPBackendRef[],
  problems: RefProblem[],
  rule: number,
): ResolvedBackend[] {
  return refs.map((ref) => {
    const weight = weightOf(ref?.weight);
    const resolved = resolveServiceRef(state, grants, routeNamespace, ref ?? {});
    if (resolved.ok)
      return {
        kind: 'service',
        namespace: resolved.namespace,
        name: resolved.name,
        port: resolved.port,
        weight,
      };
    const { reason, message } = resolved.problem;
    problems.push({ reason, message: `rule ${rule}: ${message}; its share of the traffic answers 500` });
    return { kind: 'invalid', weight, reason: resolved.problem.reason };
  });
}

/** The weight as the CRD allows it (integer 0..1,000,000, default 1); null when out of range. */
export function checkedWeight(weight: unknown): number | null {
  if (weight === undefined || weight === null) return 1;
  return typeof weight === 'number' && Number.isInteger(weight) && weight >= 0 && weight <= MAX_WEIGHT
    ? weight
    : null;
}

const weightOf = (weight: unknown): number => checkedWeight(weight) ?? 0;
