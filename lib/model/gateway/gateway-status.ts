// A Gateway's status from its checked listeners: each listener's four conditions (always all four),
// and the Gateway's Accepted and Programmed. Accepted is False only when ingress-ts cannot take the
// Gateway at all (parameters) or no listener is acceptable; some invalid listeners make it True with
// the reason ListenersNotValid. Programmed is True while at least one listener is served.

import type { BuildState } from '../build-state.ts';
import { type Check, condition, fromCheck } from './conditions.ts';
import { type GatewayEntry, isProgrammed, type ListenerEntry } from './listeners.ts';
import type { Condition, GatewayStatusReport, ListenerStatusReport } from './types.ts';

export function gatewayStatus(state: BuildState, gateway: GatewayEntry): GatewayStatusReport {
  const generation = gateway.generation;
  const listeners = gateway.listeners.map((listener) => listenerStatus(listener));
  const invalid = gateway.listeners.filter((l) => !l.accepted.ok || !l.resolvedRefs.ok || !l.conflicted.ok);
  for (const listener of invalid) {
    const why = whyNotProgrammed(listener);
    state.diagnostics.report('Gateway', gateway.ref, 'GATEWAY_INVALID', `listener ${listener.name}: ${why}`);
  }
  const programmed = gateway.listeners.filter(isProgrammed).length;
  return {
    namespace: gateway.ref.namespace,
    name: gateway.ref.name,
    generation,
    conditions: [acceptedOf(gateway, invalid), programmedOf(gateway, programmed)],
    listeners,
  };
}

function acceptedOf(gateway: GatewayEntry, invalid: readonly ListenerEntry[]): Condition {
  const generation = gateway.generation;
  if (!gateway.parameters.ok) return fromCheck('Accepted', gateway.parameters, '', '', generation);
  if (invalid.length === 0)
    return condition('Accepted', 'True', 'Accepted', 'accepted by ingress-ts', generation);
  const names = invalid.map((l) => l.name).join(', ');
  const noneAccepted = gateway.listeners.length > 0 && gateway.listeners.every((l) => !l.accepted.ok);
  return noneAccepted
    ? condition('Accepted', 'False', 'ListenersNotValid', `no listener is valid (${names})`, generation)
    : condition('Accepted', 'True', 'ListenersNotValid', `listeners not valid: ${names}`, generation);
}

function programmedOf(gateway: GatewayEntry, programmed: number): Condition {
  const generation = gateway.generation;
  if (programmed > 0) {
    return condition(
      'Programmed',
      'True',
      'Programmed',
      `${programmed} of ${gateway.listeners.length} listeners served`,
      generation,
    );
  }
  const why = gateway.parameters.ok ? 'no listener can be served' : 'the Gateway is not accepted';
  return condition('Programmed', 'False', 'Invalid', why, generation);
}

function listenerStatus(listener: ListenerEntry): ListenerStatusReport {
  const generation = listener.gateway.generation;
  const programmed: Check = isProgrammed(listener)
    ? { ok: true }
    : { ok: false, reason: 'Invalid', message: whyNotProgrammed(listener) };
  return {
    name: listener.name,
    supportedKinds: listener.supportedKinds.map((k) => ({ ...k })),
    attachedRoutes: listener.attachedRoutes,
    conditions: [
      fromCheck('Accepted', listener.accepted, 'Accepted', 'accepted', generation),
      fromCheck('ResolvedRefs', listener.resolvedRefs, 'ResolvedRefs', 'references resolved', generation),
      fromCheck('Programmed', programmed, 'Programmed', 'served', generation),
      listener.conflicted.ok
        ? condition('Conflicted', 'False', 'NoConflicts', 'no conflicts', generation)
        : condition(
            'Conflicted',
            'True',
            listener.conflicted.reason,
            listener.conflicted.message,
            generation,
          ),
    ],
  };
}

function whyNotProgrammed(listener: ListenerEntry): string {
  for (const check of [
    listener.gateway.parameters,
    listener.accepted,
    listener.resolvedRefs,
    listener.conflicted,
  ]) {
    if (!check.ok) return `${check.reason}: ${check.message}`;
  }
  return 'served';
}
