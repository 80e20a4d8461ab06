// The certificates of programmed HTTPS listeners on the hosts they serve. A host takes the
// certificate of the most specific listener that claims it: one whose hostname is the host, then a
// wildcard listener a route reached the host through, then a listener without a hostname a route
// reached it through; among equals, the older Gateway's (the graph lists them oldest first).
// A host an Ingress names is only ever claimed by a listener whose own hostname covers it: whoever
// may attach an HTTPRoute to a shared listener without a hostname must not be able to change another
// tenant's certificate. Against the host's Ingress spec.tls the older object wins (the Ingress by
// its creationTimestamp, the Gateway by its own), as between two Ingresses in ingress-nginx. A
// certificate a Gateway put on a host no Ingress spec.tls names does not make the host's Ingress
// paths redirect to HTTPS (ServerTLS.gatewayOnly). The oldest listener without a hostname answers
// the SNI names nothing else claims, unless --default-ssl-certificate is set.

import type { BuildState, ServerDraft } from '../build-state.ts';
import { objectKey } from '../k8s.ts';
import { creationSeconds } from '../order.ts';
import type { ObjectRef } from '../types.ts';
import type { ListenerCertificate } from './types.ts';

/** `gateway namespace/name/listener`: a listener the routes of a host attached through. */
export const listenerKey = (gateway: ObjectRef, listener: string): string =>
  `${gateway.namespace}/${gateway.name}/${listener}`;

/** 3: the listener's hostname is the host; 2: a wildcard listener reached it; 1: one without a hostname. */
function specificity(certificate: ListenerCertificate, host: string, reached: ReadonlySet<string>): number {
  if (certificate.hostname === host) return 3;
  if (!reached.has(listenerKey(certificate.gateway, certificate.listener))) return 0;
  return certificate.hostname === null ? 1 : 2;
}

/**
 * Sets `tls` on the hosts listener certificates claim; `reached`: per host, the HTTPS listeners its
 * HTTPRoute routes attached through. Returns the default certificate's id (the oldest listener
 * without a hostname, when --default-ssl-certificate is not set), or null.
 */
export function applyListenerCertificates(
  state: BuildState,
  certificates: readonly ListenerCertificate[],
  reached: ReadonlyMap<string, ReadonlySet<string>>,
): string | null {
  if (certificates.length === 0) return null;
  const gatewaySeconds = new Map<string, number>();
  for (const gateway of state.snapshot.gateways ?? []) {
    const { namespace, name } = gateway?.metadata ?? {};
    if (typeof namespace === 'string' && typeof name === 'string')
      gatewaySeconds.set(objectKey(namespace, name), creationSeconds(gateway));
  }
  const ingressSeconds = new Map<string, number>();
  const hosts = new Set<string>(reached.keys());
  for (const certificate of certificates) if (certificate.hostname !== null) hosts.add(certificate.hostname);
  const none = new Set<string>();
  for (const host of hosts) {
    const draft = state.drafts.get(host);
    if (draft === undefined) continue;
    const claims = reached.get(host) ?? none;
    let best: ListenerCertificate | null = null;
    let bestScore = 0;
    for (const certificate of certificates) {
      const score = specificity(certificate, host, claims);
      if (score > bestScore) {
        best = certificate;
        bestScore = score;
      }
    }
    if (best === null) continue;
    // a host an Ingress names: only a listener naming the host itself may claim it
    if (bestScore === 1 && draft.server.ingress?.kind === undefined) continue;
    const seconds = gatewaySeconds.get(objectKey(best.gateway.namespace, best.gateway.name)) ?? 0;
    if (draft.tlsOwner !== null) {
      if (ingressSeconds.size === 0) indexIngressSeconds(state, ingressSeconds);
      const owner = draft.tlsOwner.ref;
      if ((ingressSeconds.get(objectKey(owner.namespace, owner.name)) ?? 0) <= seconds) continue;
    }
    useListenerCertificate(state, draft, best);
  }
  if (state.options.defaultSSLCertificate !== null) return null;
  const fallback = certificates.find((certificate) => certificate.hostname === null);
  return fallback === undefined ? null : load(state, fallback);
}

function indexIngressSeconds(state: BuildState, seconds: Map<string, number>): void {
  for (const ingress of state.snapshot.ingresses) {
    const { namespace, name } = ingress.metadata ?? {};
    if (typeof namespace === 'string' && typeof name === 'string')
      seconds.set(objectKey(namespace, name), creationSeconds(ingress));
  }
}

/** The listener's Secret as a model certificate (resolveGateways checked it), or null. */
function load(state: BuildState, certificate: ListenerCertificate): string | null {
  const slash = certificate.secret.indexOf('/');
  const result = state.lookups.certificate(
    certificate.secret.slice(0, slash),
    certificate.secret.slice(slash + 1),
  );
  if (result === null || !('ok' in result)) return null;
  state.certificates.set(result.ok.certificate.id, result.ok.certificate);
  return result.ok.certificate.id;
}

function useListenerCertificate(
  state: BuildState,
  draft: ServerDraft,
  certificate: ListenerCertificate,
): void {
  const id = load(state, certificate);
  if (id === null) return;
  const host = draft.server.hostname;
  const gateway = certificate.gateway;
  if (draft.tlsOwner !== null) {
    state.diagnostics.report(
      'Ingress',
      draft.tlsOwner.ref,
      'TLS_CONFLICT',
      `the certificate of host ${host} is decided by listener ${certificate.listener} of the older Gateway ${objectKey(gateway.namespace, gateway.name)}; this tls entry is ignored`,
      undefined,
      { host },
    );
  }
  draft.server.tls = {
    certificate: id,
    ingress: { namespace: gateway.namespace, name: gateway.name, kind: 'Gateway' },
    ...(draft.tlsOwner === null ? { gatewayOnly: true as const } : {}),
  };
}
