// Our Gateways and their listeners, checked in the order the spec and the conformance tests need:
// protocol (HTTP, HTTPS) before port (one listener set: 80 or --http-port, 443 or --https-port),
// then hostname, route kinds and TLS. What the checks find becomes the listener's conditions; whether
// a listener is served (Programmed) also depends on its Gateway and on conflicts (conflicts.ts).

import type { BuildState } from '../build-state.ts';
import { objectKey } from '../k8s.ts';
import { creationSeconds } from '../order.ts';
import type { ObjectRef } from '../types.ts';
import { compareNames } from './classes.ts';
import { type Check, failed, generationOf, PASSED } from './conditions.ts';
import type { GrantIndex } from './grants.ts';
import { hostnameProblem } from './hostnames.ts';
import { GATEWAY_GROUP, type Gateway, type Listener } from './k8s.ts';
import { selectorProblem } from './labels.ts';
import { checkCertificateRefs } from './listener-tls.ts';
import { text } from './read.ts';

export const HTTPROUTE_KIND = Object.freeze({ group: GATEWAY_GROUP, kind: 'HTTPRoute' });

export interface ListenerEntry {
  gateway: GatewayEntry;
  name: string;
  specPort: number;
  /** null: a protocol ingress-ts does not serve */
  protocol: 'HTTP' | 'HTTPS' | null;
  /** lower-cased; null: every host */
  hostname: string | null;
  allowedRoutes: Listener['allowedRoutes'];
  supportedKinds: Array<{ group: string; kind: string }>;
  accepted: Check;
  resolvedRefs: Check;
  /** ok: no conflict */
  conflicted: Check;
  /** the HTTPS listener's Secret, `namespace/name` */
  certificate: string | null;
  /** routes accepted on this listener (counted by attachment) */
  attachedRoutes: number;
}

export interface GatewayEntry {
  gateway: Gateway;
  ref: ObjectRef;
  generation: number;
  /** ok unless spec.infrastructure.parametersRef is set: ingress-ts takes no parameters */
  parameters: Check;
  /** spec order; a listener without a name, or with the name of an earlier one, is left out */
  listeners: ListenerEntry[];
}

/** Served: the Gateway is accepted and the listener passed every check and conflicts with nothing. */
export function isProgrammed(listener: ListenerEntry): boolean {
  return (
    listener.gateway.parameters.ok &&
    listener.accepted.ok &&
    listener.resolvedRefs.ok &&
    listener.conflicted.ok
  );
}

/** Our Gateways (their class is one of our accepted classes), oldest first, then namespace/name. */
export function selectGateways(
  state: BuildState,
  classes: ReadonlySet<string>,
  grants: GrantIndex,
): GatewayEntry[] {
  const ours = (state.snapshot.gateways ?? []).filter(
    (g) =>
      typeof g?.metadata?.namespace === 'string' &&
      typeof g.metadata.name === 'string' &&
      typeof g.spec?.gatewayClassName === 'string' &&
      classes.has(g.spec.gatewayClassName),
  );
  const sorted = ours
    .map((gateway) => ({
      gateway,
      seconds: creationSeconds(gateway),
      key: objectKey(gateway.metadata?.namespace as string, gateway.metadata?.name as string),
    }))
    .sort((a, b) => a.seconds - b.seconds || compareNames(a.key, b.key));
  return sorted.map(({ gateway }) => checkGateway(state, gateway, grants));
}

function checkGateway(state: BuildState, gateway: Gateway, grants: GrantIndex): GatewayEntry {
  const ref: ObjectRef = {
    namespace: gateway.metadata?.namespace as string,
    name: gateway.metadata?.name as string,
    kind: 'Gateway',
  };
  const entry: GatewayEntry = {
    gateway,
    ref,
    generation: generationOf(gateway),
    parameters: PASSED,
    listeners: [],
  };
  const parameters = gateway.spec?.infrastructure?.parametersRef;
  if (parameters !== undefined && parameters !== null) {
    const message = `ingress-ts takes no infrastructure parameters (parametersRef ${text(parameters.group ?? '')}/${text(parameters.kind ?? '')} ${text(parameters.name ?? '')}); the Gateway serves nothing`;
    entry.parameters = failed('InvalidParameters', message);
    state.diagnostics.report('Gateway', ref, 'GATEWAY_INVALID', message);
  }
  const listeners: unknown = gateway.spec?.listeners;
  for (const [index, listener] of (Array.isArray(listeners)
    ? (listeners as Array<Listener | null>)
    : []
  ).entries()) {
    const name = listener?.name;
    if (typeof name !== 'string' || name === '' || entry.listeners.some((l) => l.name === name)) {
      state.diagnostics.report(
        'Gateway',
        ref,
        'GATEWAY_INVALID',
        `listener #${index} ${typeof name === 'string' && name !== '' ? `repeats the name ${name}` : 'has no name'}; it is ignored`,
      );
      continue;
    }
    entry.listeners.push(checkListener(state, entry, listener as Listener, name, grants));
  }
  return entry;
}

function checkListener(
  state: BuildState,
  gateway: GatewayEntry,
  listener: Listener,
  name: string,
  grants: GrantIndex,
): ListenerEntry {
  const protocol = listener.protocol === 'HTTP' || listener.protocol === 'HTTPS' ? listener.protocol : null;
  const rawHostname = typeof listener.hostname === 'string' ? listener.hostname.toLowerCase() : null;
  const entry: ListenerEntry = {
    gateway,
    name,
    specPort: typeof listener.port === 'number' ? listener.port : 0,
    protocol,
    hostname: rawHostname === '' ? null : rawHostname,
    allowedRoutes: listener.allowedRoutes,
    supportedKinds: [],
    accepted: PASSED,
    resolvedRefs: PASSED,
    conflicted: PASSED,
    certificate: null,
    attachedRoutes: 0,
  };
  if (protocol === null) {
    entry.accepted = failed(
      'UnsupportedProtocol',
      `protocol ${text(listener.protocol)}: ingress-ts serves HTTP and HTTPS listeners only`,
    );
    return entry;
  }
  entry.accepted = checkPort(state, protocol, entry.specPort);
  if (entry.accepted.ok && entry.hostname !== null) {
    const problem = hostnameProblem(entry.hostname);
    if (problem !== null)
      entry.accepted = failed('UnsupportedValue', `hostname ${entry.hostname}: ${problem}`);
  }
  const kinds = routeKinds(listener);
  entry.supportedKinds = kinds.supported;
  if (kinds.invalid.length > 0) {
    entry.resolvedRefs = failed(
      'InvalidRouteKinds',
      `route kinds ${kinds.invalid.join(', ')} are not supported: ingress-ts serves HTTPRoute only`,
    );
  }
  if (protocol === 'HTTPS') checkTls(state, entry, listener, grants);
  const admits = namespacesProblem(listener);
  if (admits !== null) {
    state.diagnostics.report(
      'Gateway',
      gateway.ref,
      'GATEWAY_INVALID',
      `listener ${name}: ${admits}; it admits no routes`,
    );
  }
  return entry;
}

/** Why allowedRoutes.namespaces admits no namespace at all (the spec has no condition for it), or null. */
function namespacesProblem(listener: Listener): string | null {
  const namespaces = listener.allowedRoutes?.namespaces;
  const from = namespaces?.from ?? 'Same';
  if (from === 'Same' || from === 'All') return null;
  if (from !== 'Selector') return `allowedRoutes.namespaces.from ${text(from)} is not All, Same or Selector`;
  if (namespaces?.selector === undefined || namespaces.selector === null)
    return 'allowedRoutes.namespaces.from Selector has no selector';
  const problem = selectorProblem(namespaces.selector);
  return problem === null ? null : `allowedRoutes.namespaces.selector: ${problem}`;
}

function checkPort(state: BuildState, protocol: 'HTTP' | 'HTTPS', port: number): Check {
  const own = protocol === 'HTTP' ? (state.options.httpPort ?? 80) : (state.options.httpsPort ?? 443);
  const standard = protocol === 'HTTP' ? 80 : 443;
  if (port === standard || port === own) return PASSED;
  const serves = (p: number, flagPort: number | undefined, flag: string): string =>
    flagPort === undefined || flagPort === p ? `${p}` : `${p} or ${flagPort} (${flag})`;
  return failed(
    'PortUnavailable',
    `port ${port}: ingress-ts serves HTTP listeners on port ${serves(80, state.options.httpPort, '--http-port')} and HTTPS listeners on port ${serves(443, state.options.httpsPort, '--https-port')}`,
  );
}

/** allowedRoutes.kinds ∩ {HTTPRoute}; no kinds: what the protocol carries (HTTPRoute). */
function routeKinds(listener: Listener): {
  supported: Array<{ group: string; kind: string }>;
  invalid: string[];
} {
  const kinds: unknown = listener.allowedRoutes?.kinds;
  if (!Array.isArray(kinds) || kinds.length === 0) return { supported: [{ ...HTTPROUTE_KIND }], invalid: [] };
  const supported: Array<{ group: string; kind: string }> = [];
  const invalid: string[] = [];
  for (const kind of kinds as Array<{ group?: string; kind?: string } | null>) {
    const group = kind?.group ?? GATEWAY_GROUP;
    if (group === GATEWAY_GROUP && kind?.kind === 'HTTPRoute') {
      if (supported.length === 0) supported.push({ ...HTTPROUTE_KIND });
    } else {
      invalid.push(`${group === '' ? 'core' : group}/${text(kind?.kind)}`);
    }
  }
  return { supported, invalid };
}

function checkTls(state: BuildState, entry: ListenerEntry, listener: Listener, grants: GrantIndex): void {
  const mode = listener.tls?.mode ?? 'Terminate';
  if (mode !== 'Terminate') {
    if (entry.accepted.ok) {
      entry.accepted = failed(
        'UnsupportedValue',
        `tls.mode ${text(mode)}: an HTTPS listener terminates TLS (mode Terminate)`,
      );
    }
    return;
  }
  const certificates = checkCertificateRefs(state, grants, entry.gateway.ref.namespace, listener.tls);
  entry.certificate = certificates.secret;
  if (entry.resolvedRefs.ok) entry.resolvedRefs = certificates.check;
}
