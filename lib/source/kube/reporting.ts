// What a replica tells the cluster in Kubernetes mode: which replica leads (leader.ts), and, from the
// leader only, the Ingress status (status.ts), the Gateway API status (gateway-status.ts) and the
// build's diagnostics as Events (events.ts). --update-status=false turns off both status writers.
// Without leader election (--disable-leader-election) this replica leads from the start.

import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeFlags } from '../../config/flags.ts';
import type { Logger } from '../../log.ts';
import type { GatewayApiStatus } from '../../model/gateway/types.ts';
import {
  DEFAULT_MODEL_OPTIONS,
  type Diagnostic,
  type ModelOptions,
  type Snapshot,
} from '../../model/index.ts';
import { createEventRecorder } from './events.ts';
import { createGatewayStatusWriter } from './gateway-status.ts';
import { createLeaderElection } from './leader.ts';
import { createStatusWriter, publishedAddresses } from './status.ts';

export interface ReportingOptions {
  kubeConfig: KubeConfig;
  flags: KubeFlags;
  classes: Pick<
    ModelOptions,
    | 'controllerClass'
    | 'ingressClass'
    | 'ingressClassByName'
    | 'watchIngressWithoutClass'
    | 'gatewayControllerName'
  >;
  /** this replica (POD_NAME, else the host name) and its namespace (POD_NAMESPACE), for the Lease */
  identity: string;
  namespace: string;
  log: Logger;
  /** leadership changed (metrics) */
  onLeader?(leader: boolean): void;
  /** the objects and the diagnostics of the last build: what a new leader reports at once */
  latest(): { snapshot: Snapshot; diagnostics: readonly Diagnostic[]; gatewayStatus?: GatewayApiStatus };
}

export interface Reporting {
  /** After every build (also one that changed nothing: the published address may have moved). */
  afterBuild(snapshot: Snapshot, diagnostics: readonly Diagnostic[], gatewayStatus?: GatewayApiStatus): void;
  /** Starts the election (call once the first build is served). */
  start(): void;
  /** Steps down, releasing the Lease so that a successor need not wait for the TTL. */
  stop(): Promise<void>;
  readonly leader: boolean;
}

/** uid of kind/namespace/name in a snapshot, indexed once per snapshot when first asked. */
function uidLookup(
  snapshot: () => Snapshot,
): (kind: string, namespace: string, name: string) => string | undefined {
  let indexed: { of: Snapshot; uids: Map<string, string> } | null = null;
  return (kind, namespace, name) => {
    const current = snapshot();
    if (indexed?.of !== current) {
      const uids = new Map<string, string>();
      const lists = {
        Ingress: current.ingresses,
        IngressClass: current.ingressClasses,
        Service: current.services,
        Secret: current.secrets,
        ConfigMap: current.configMaps,
        GatewayClass: current.gatewayClasses ?? [],
        Gateway: current.gateways ?? [],
        HTTPRoute: current.httpRoutes ?? [],
        ReferenceGrant: current.referenceGrants ?? [],
      };
      for (const [listKind, objects] of Object.entries(lists)) {
        for (const { metadata } of objects) {
          if (metadata?.uid)
            uids.set(`${listKind}/${metadata.namespace ?? ''}/${metadata.name}`, metadata.uid);
        }
      }
      indexed = { of: current, uids };
    }
    return indexed.uids.get(`${kind}/${namespace}/${name}`);
  };
}

export function createReporting(options: ReportingOptions): Reporting {
  const { flags, log, kubeConfig, identity } = options;
  const status = flags.updateStatus
    ? createStatusWriter({
        kubeConfig,
        publishService: flags.publishService,
        publishStatusAddress: flags.publishStatusAddress,
        classes: options.classes,
        onError: (ingress, error) => log.warn({ ingress, err: error }, 'writing the Ingress status failed'),
        onWritten: (ingress, loadBalancer) => log.info({ ingress, loadBalancer }, 'Ingress status updated'),
      })
    : null;
  if (status !== null && flags.publishService === null && flags.publishStatusAddress === null) {
    log.warn(
      'neither --publish-service nor --publish-status-address: Ingress status is not written, Gateway status has no addresses',
    );
  }
  const events = createEventRecorder({
    kubeConfig,
    identity,
    uidOf: uidLookup(() => options.latest().snapshot),
    onError: (error) => log.warn({ err: error }, 'writing a Kubernetes Event failed'),
  });
  let leader = !flags.leaderElection;
  const gateways = flags.updateStatus
    ? createGatewayStatusWriter({
        kubeConfig,
        controllerName:
          options.classes.gatewayControllerName ?? DEFAULT_MODEL_OPTIONS.gatewayControllerName ?? '',
        addresses: (snapshot) => publishedAddresses(snapshot, flags),
        isLeader: () => leader,
        onError: (object, error) => log.warn({ object, err: error }, 'writing the Gateway API status failed'),
        onWritten: (object) => log.debug({ object }, 'Gateway API status updated'),
      })
    : null;

  const report = (
    snapshot: Snapshot,
    diagnostics: readonly Diagnostic[],
    gatewayStatus: GatewayApiStatus | undefined,
  ): void => {
    void status?.update(snapshot);
    if (gatewayStatus !== undefined) void gateways?.update(snapshot, gatewayStatus);
    events.report(diagnostics);
  };

  const election = flags.leaderElection
    ? createLeaderElection({
        kubeConfig,
        namespace: options.namespace,
        name: flags.electionId,
        identity,
        ttlMs: flags.electionTtlMs,
        onChange: (next) => {
          leader = next;
          options.onLeader?.(next);
          log.info({ identity, lease: flags.electionId }, next ? 'elected leader' : 'no longer the leader');
          if (next) {
            const { snapshot, diagnostics, gatewayStatus } = options.latest();
            report(snapshot, diagnostics, gatewayStatus);
          }
        },
        onError: (error) =>
          log.warn({ err: error }, 'leader election: the Lease could not be read or written'),
      })
    : null;

  return {
    get leader() {
      return leader;
    },
    afterBuild(snapshot, diagnostics, gatewayStatus) {
      if (leader) report(snapshot, diagnostics, gatewayStatus);
    },
    start() {
      election?.start();
    },
    async stop() {
      await election?.stop();
    },
  };
}
