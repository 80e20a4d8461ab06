// Listener conflicts. Inside one Gateway, listeners with the same port, protocol and hostname are all
// Conflicted: the spec forbids picking a winner. Across Gateways (their listeners share ingress-ts's
// one HTTPS port), two HTTPS listeners with the same hostname and different Secrets cannot both answer
// that SNI name: the older Gateway's keeps it, the newer is Conflicted. Listeners without a hostname
// never conflict: the oldest one's certificate answers the names nobody claims.

import { failed } from './conditions.ts';
import { type GatewayEntry, isProgrammed, type ListenerEntry } from './listeners.ts';

export function markConflicts(gateways: readonly GatewayEntry[]): void {
  for (const gateway of gateways) markWithinGateway(gateway);
  markAcrossGateways(gateways);
}

function markWithinGateway(gateway: GatewayEntry): void {
  const byKey = new Map<string, ListenerEntry[]>();
  for (const listener of gateway.listeners) {
    if (listener.protocol === null) continue;
    const key = `${listener.specPort}/${listener.protocol}/${listener.hostname ?? ''}`;
    const same = byKey.get(key);
    if (same === undefined) byKey.set(key, [listener]);
    else same.push(listener);
  }
  for (const same of byKey.values()) {
    if (same.length < 2) continue;
    const names = same.map((l) => l.name).join(', ');
    for (const listener of same) {
      listener.conflicted = failed(
        'HostnameConflict',
        `listeners ${names} of this Gateway have the same port, protocol and hostname; none of them is served`,
      );
    }
  }
}

function markAcrossGateways(gateways: readonly GatewayEntry[]): void {
  const owners = new Map<string, ListenerEntry>();
  for (const gateway of gateways) {
    for (const listener of gateway.listeners) {
      if (listener.protocol !== 'HTTPS' || listener.hostname === null || !isProgrammed(listener)) continue;
      const owner = owners.get(listener.hostname);
      if (owner === undefined) {
        owners.set(listener.hostname, listener);
      } else if (owner.gateway !== gateway && owner.certificate !== listener.certificate) {
        const { namespace, name } = owner.gateway.ref;
        listener.conflicted = failed(
          'HostnameConflict',
          `the older Gateway ${namespace}/${name} (listener ${owner.name}) serves ${listener.hostname} with Secret ${owner.certificate}; this listener's Secret ${listener.certificate} cannot answer the same name`,
        );
      }
    }
  }
}
