// HTTPRoute → listeners: a parentRef names a Gateway (group and kind default to the Gateway API's,
// namespace to the route's) and optionally a listener (sectionName) and port (the spec port). Of the
// listeners it names, those whose allowedRoutes admit the route's namespace and kind and whose
// hostname intersects the route's accept it. Attachment depends on nothing else: a listener that is
// not served still counts the routes accepted on it.

import { type Check, failed, PASSED } from './conditions.ts';
import { effectiveHostnames } from './hostnames.ts';
import { GATEWAY_GROUP, type Namespace, type ParentReference } from './k8s.ts';
import { selectorMatches } from './labels.ts';
import type { GatewayEntry, ListenerEntry } from './listeners.ts';
import { text } from './read.ts';

export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export interface RouteHostnames {
  /** the route's valid hostnames, lower-cased */
  hostnames: string[];
  /** whether spec.hostnames listed some, valid or not */
  namesSome: boolean;
}

export interface ParentOutcome {
  /** the spec's parentRef with group and kind defaulted */
  parentRef: ParentReference;
  gateway: GatewayEntry;
  accepted: Check;
  /** the listeners that accept the route, with its effective hostnames on each */
  attached: Array<{ listener: ListenerEntry; hostnames: string[] }>;
}

/** Namespace name → labels; a namespace without an object has only its name label. */
export class NamespaceLabels {
  readonly #labels = new Map<string, Record<string, string>>();

  constructor(namespaces: readonly Namespace[]) {
    for (const namespace of namespaces) {
      const name = namespace?.metadata?.name;
      if (typeof name !== 'string') continue;
      this.#labels.set(name, { ...(namespace.metadata?.labels ?? {}), [NAMESPACE_NAME_LABEL]: name });
    }
  }

  of(namespace: string): Record<string, string> {
    return this.#labels.get(namespace) ?? { [NAMESPACE_NAME_LABEL]: namespace };
  }
}

/** The parentRef with the CRD's defaults, when it names a Gateway at all. */
export function defaultedParentRef(ref: ParentReference): ParentReference | null {
  const group = ref.group ?? GATEWAY_GROUP;
  const kind = ref.kind ?? 'Gateway';
  if (group !== GATEWAY_GROUP || kind !== 'Gateway' || typeof ref.name !== 'string') return null;
  // a field of the wrong type (standalone manifests have no schema): the ref names no Gateway of ours
  if (
    !optional(ref.namespace, 'string') ||
    !optional(ref.sectionName, 'string') ||
    !optional(ref.port, 'number')
  )
    return null;
  return { ...ref, group, kind };
}

export function attachParent(
  parentRef: ParentReference,
  gateway: GatewayEntry,
  routeNamespace: string,
  route: RouteHostnames,
  namespaces: NamespaceLabels,
): ParentOutcome {
  const outcome: ParentOutcome = { parentRef, gateway, accepted: PASSED, attached: [] };
  const named = gateway.listeners.filter(
    (l) =>
      (parentRef.sectionName === undefined || parentRef.sectionName === l.name) &&
      (parentRef.port === undefined || parentRef.port === l.specPort),
  );
  if (named.length === 0) {
    outcome.accepted = failed('NoMatchingParent', noMatchingParent(parentRef));
    return outcome;
  }
  const allowing = named.filter((l) => allowsRoute(l, routeNamespace, namespaces));
  if (allowing.length === 0) {
    outcome.accepted = failed(
      'NotAllowedByListeners',
      `the allowedRoutes of listeners ${named.map((l) => l.name).join(', ')} do not admit HTTPRoutes of namespace ${routeNamespace}`,
    );
    return outcome;
  }
  for (const listener of allowing) {
    const hostnames = effectiveHostnames(listener.hostname, route.hostnames, route.namesSome);
    if (hostnames !== null) outcome.attached.push({ listener, hostnames });
  }
  if (outcome.attached.length === 0) {
    outcome.accepted = failed(
      'NoMatchingListenerHostname',
      `no hostname of the route intersects the hostnames of listeners ${allowing.map((l) => l.name).join(', ')}`,
    );
  }
  return outcome;
}

const optional = (value: unknown, type: 'string' | 'number'): boolean =>
  value === undefined || value === null || typeof value === type;

function noMatchingParent(ref: ParentReference): string {
  const wanted = [
    ...(ref.sectionName == null ? [] : [`named ${text(ref.sectionName)}`]),
    ...(ref.port == null ? [] : [`on port ${text(ref.port)}`]),
  ];
  return wanted.length === 0
    ? 'the Gateway has no listeners'
    : `the Gateway has no listener ${wanted.join(' ')}`;
}

function allowsRoute(listener: ListenerEntry, routeNamespace: string, namespaces: NamespaceLabels): boolean {
  if (!listener.supportedKinds.some((k) => k.kind === 'HTTPRoute')) return false;
  const from = listener.allowedRoutes?.namespaces?.from ?? 'Same';
  switch (from) {
    case 'All':
      return true;
    case 'Same':
      return routeNamespace === listener.gateway.ref.namespace;
    case 'Selector': {
      const selector = listener.allowedRoutes?.namespaces?.selector;
      return (
        selector !== undefined &&
        selector !== null &&
        selectorMatches(selector, namespaces.of(routeNamespace))
      );
    }
    default:
      return false;
  }
}
