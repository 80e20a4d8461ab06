// Ingress status.loadBalancer.ingress, written by the leader as ingress-nginx does:
// - the addresses come from --publish-status-address (a comma-separated list), else from the
//   --publish-service Service: its load-balancer ingress entries plus external IPs for type
//   LoadBalancer, the external IPs (else the cluster IP) for NodePort, the cluster IP for ClusterIP,
//   the external name for ExternalName; without either flag nothing is written (ingress-nginx would
//   then publish the controller Pods' node addresses, which needs read access to Pods and Nodes);
// - every Ingress of our class gets the same sorted list; one whose status already says so is left
//   alone (no write, no resourceVersion churn);
// - each write is get → compare → update of the /status subresource, retried on a 409 Conflict.
// Requests run one after the other; an update asked for while one runs is coalesced into one more
// run with the latest objects.

import { isIP } from 'node:net';
import { type KubeConfig, NetworkingV1Api, type V1Ingress } from '@kubernetes/client-node';
import type { Ingress, ModelOptions, Service, Snapshot } from '../../model/index.ts';
import { isOurIngress, ownedClassNames } from '../../model/ingress-class.ts';

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
}

export interface StatusOptions {
  kubeConfig: KubeConfig;
  /** --publish-service namespace/name, or null */
  publishService: string | null;
  /** --publish-status-address entries, or null */
  publishStatusAddress: readonly string[] | null;
  classes: Pick<
    ModelOptions,
    'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass'
  >;
  onError?(ingress: string, error: unknown): void;
  /** an Ingress's status was written */
  onWritten?(ingress: string, addresses: readonly LoadBalancerIngress[]): void;
}

export interface StatusWriter {
  /** Brings every Ingress of ours in `snapshot` to the published addresses; resolves when done. */
  update(snapshot: Snapshot): Promise<void>;
}

const MAX_CONFLICT_RETRIES = 3;

interface ServiceWithStatus extends Service {
  spec?: Service['spec'] & { externalIPs?: string[] };
  status?: { loadBalancer?: { ingress?: Array<{ ip?: string; hostname?: string }> } };
}

/** The addresses to publish, sorted; null when there is nothing to publish (no flag, no Service). */
export function publishedAddresses(
  snapshot: Snapshot,
  options: Pick<StatusOptions, 'publishService' | 'publishStatusAddress'>,
): LoadBalancerIngress[] | null {
  let addresses: string[];
  if (options.publishStatusAddress !== null) {
    addresses = [...options.publishStatusAddress];
  } else if (options.publishService !== null) {
    const [namespace, name] = options.publishService.split('/');
    const service = snapshot.services.find(
      (s) => s.metadata?.namespace === namespace && s.metadata?.name === name,
    ) as ServiceWithStatus | undefined;
    if (service === undefined) return null;
    const spec = service.spec ?? {};
    const external = spec.externalIPs ?? [];
    switch (spec.type) {
      case 'ExternalName':
        addresses = spec.externalName ? [spec.externalName] : [];
        break;
      case 'LoadBalancer':
        addresses = [
          ...(service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip || entry.hostname || ''),
          ...external,
        ];
        break;
      case 'NodePort':
        addresses = external.length > 0 ? external : spec.clusterIP ? [spec.clusterIP] : [];
        break;
      default:
        addresses = spec.clusterIP && spec.clusterIP !== 'None' ? [spec.clusterIP] : [];
    }
  } else {
    return null;
  }
  const unique = [...new Set(addresses.map((a) => a.trim()).filter((a) => a !== ''))].sort();
  return unique.map((address) => (isIP(address) ? { ip: address } : { hostname: address }));
}

const sameAddresses = (current: unknown, wanted: readonly LoadBalancerIngress[]): boolean => {
  const list = Array.isArray(current) ? (current as LoadBalancerIngress[]) : [];
  const key = (entries: readonly LoadBalancerIngress[]) =>
    JSON.stringify(entries.map((e) => [e.ip ?? '', e.hostname ?? '']).sort());
  return key(list) === key(wanted);
};

const statusCode = (error: unknown): number | undefined => (error as { code?: number }).code;

export function createStatusWriter(options: StatusOptions): StatusWriter {
  const api = options.kubeConfig.makeApiClient(NetworkingV1Api);
  let running: Promise<void> | null = null;
  let pending: Snapshot | null = null;

  const writeOne = async (ingress: Ingress, wanted: LoadBalancerIngress[]): Promise<void> => {
    const namespace = ingress.metadata?.namespace ?? '';
    const name = ingress.metadata?.name ?? '';
    for (let attempt = 0; ; attempt++) {
      let current: V1Ingress;
      try {
        current = await api.readNamespacedIngressStatus({ name, namespace });
      } catch (error) {
        if (statusCode(error) === 404) return; // deleted meanwhile
        throw error;
      }
      if (sameAddresses(current.status?.loadBalancer?.ingress, wanted)) return;
      current.status = {
        ...current.status,
        loadBalancer: { ingress: wanted.map((entry) => ({ ...entry })) },
      };
      try {
        await api.replaceNamespacedIngressStatus({ name, namespace, body: current });
        options.onWritten?.(`${namespace}/${name}`, wanted);
        return;
      } catch (error) {
        if (statusCode(error) !== 409 || attempt >= MAX_CONFLICT_RETRIES) throw error;
      }
    }
  };

  const run = async (snapshot: Snapshot): Promise<void> => {
    const wanted = publishedAddresses(snapshot, options);
    if (wanted === null) return;
    const owned = ownedClassNames(snapshot.ingressClasses, options.classes);
    for (const ingress of snapshot.ingresses) {
      if (!isOurIngress(ingress, owned, options.classes)) continue;
      const current = (ingress as { status?: { loadBalancer?: { ingress?: unknown } } }).status;
      if (sameAddresses(current?.loadBalancer?.ingress, wanted)) continue; // as the watch last said
      try {
        await writeOne(ingress, wanted);
      } catch (error) {
        options.onError?.(`${ingress.metadata?.namespace}/${ingress.metadata?.name}`, error);
      }
    }
  };

  const drain = async (): Promise<void> => {
    while (pending !== null) {
      const snapshot = pending;
      pending = null;
      try {
        await run(snapshot);
      } catch (error) {
        options.onError?.('', error); // never a rejection: callers fire and forget
      }
    }
  };

  return {
    update(snapshot) {
      pending = snapshot;
      running ??= drain().finally(() => {
        running = null;
      });
      return running;
    },
  };
}
