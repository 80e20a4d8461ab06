// Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does it (and
// so ingress-nginx): every replica serves traffic; only the leader writes Ingress status and Events.
//
// - One Lease, `--election-id` in the controller's namespace. Timings from `--election-ttl` as
//   ingress-nginx derives them: lease duration = ttl, renew deadline = ttl / 2, retry period = ttl / 4.
// - A candidate takes the Lease when it is missing, released (no holder) or expired. Expiry is judged
//   on the local clock from when this replica last saw the record change (client-go's observedTime),
//   never from the holder's renewTime, so clocks need not agree.
// - The leader renews every retry period; when no renewal succeeded for a renew deadline it steps
//   down (before the lease can expire for the others).
// - Writes carry the resourceVersion read: a 409 means another replica won; nothing is overwritten.
// - stop() releases the Lease if held (holder cleared, duration 1 s), so a successor takes over at once
//   rather than after the TTL.
// - Times are written as MicroTime (6 fractional digits): the API server rejects anything else.

import { CoordinationV1Api, type KubeConfig, type V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** the Lease name (--election-id) */
  name: string;
  /** this replica (POD_NAME, else the host name) */
  identity: string;
  /** --election-ttl in ms */
  ttlMs: number;
  onChange(leader: boolean): void;
  onError?(error: unknown): void;
  /** ms since any origin (tests) */
  now?: () => number;
}

export interface LeaderElection {
  start(): void;
  /** steps down and releases the Lease if held */
  stop(): Promise<void>;
  readonly leader: boolean;
}

interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | Date | null;
  renewTime?: string | Date | null;
  leaseTransitions?: number | null;
}

interface LeaseObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

const statusCode = (error: unknown): number | undefined =>
  (error as { code?: number; statusCode?: number }).code ?? (error as { statusCode?: number }).statusCode;

const microNow = (): V1MicroTime => new V1MicroTime(Date.now());

export function createLeaderElection(options: LeaderElectionOptions): LeaderElection {
  const api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  const now = options.now ?? (() => performance.now());
  const renewDeadlineMs = options.ttlMs / 2;
  const retryPeriodMs = options.ttlMs / 4;
  const durationSeconds = Math.max(1, Math.round(options.ttlMs / 1000));

  let leader = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  /** the record last seen (holder + renewTime + resourceVersion) and when it was first seen so */
  let observed = '';
  let observedAt = 0;
  let lastRenewal = 0;
  let running: Promise<void> | null = null;

  const setLeader = (next: boolean): void => {
    if (next === leader) return;
    leader = next;
    options.onChange(next);
  };

  const observe = (lease: LeaseObject): void => {
    const spec = lease.spec ?? {};
    const record = `${spec.holderIdentity ?? ''}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (record !== observed) {
      observed = record;
      observedAt = now();
    }
  };

  // A MicroTime read back is a string (client-node's serializer does not know the type); written
  // back as read, it keeps its 6 digits.
  const spec = (previous: LeaseSpec | undefined, acquiring: boolean): V1LeaseSpec => ({
    holderIdentity: options.identity,
    leaseDurationSeconds: durationSeconds,
    acquireTime: acquiring || !previous?.acquireTime ? microNow() : (previous.acquireTime as V1MicroTime),
    renewTime: microNow(),
    leaseTransitions: (previous?.leaseTransitions ?? 0) + (acquiring && previous?.holderIdentity ? 1 : 0),
  });

  /** Replaces the Lease as read (its resourceVersion guards the write) with `next`. */
  const replaceLease = (lease: LeaseObject, next: V1LeaseSpec) =>
    api.replaceNamespacedLease({
      name: options.name,
      namespace: options.namespace,
      body: {
        metadata: {
          name: options.name,
          namespace: options.namespace,
          resourceVersion: lease.metadata?.resourceVersion,
        },
        spec: next,
      },
    });

  /** One attempt to acquire or renew; true when this replica holds the Lease afterwards. */
  const tryAcquireOrRenew = async (): Promise<boolean> => {
    let lease: LeaseObject;
    try {
      lease = (await api.readNamespacedLease({
        name: options.name,
        namespace: options.namespace,
      })) as LeaseObject;
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      await api.createNamespacedLease({
        namespace: options.namespace,
        body: { metadata: { name: options.name, namespace: options.namespace }, spec: spec(undefined, true) },
      });
      return true;
    }
    observe(lease);
    const holder = lease.spec?.holderIdentity ?? '';
    const mine = holder === options.identity;
    const duration = (lease.spec?.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!mine && holder !== '' && now() < observedAt + duration) return false; // held by a live leader
    try {
      await replaceLease(lease, spec(lease.spec, !mine));
    } catch (error) {
      if (statusCode(error) === 409) return false; // somebody else wrote first
      throw error;
    }
    return true;
  };

  const tick = async (): Promise<void> => {
    let held: boolean;
    try {
      held = await tryAcquireOrRenew();
      if (held) lastRenewal = now();
    } catch (error) {
      options.onError?.(error);
      // a leader that cannot renew keeps leading only until the renew deadline
      held = leader && now() - lastRenewal < renewDeadlineMs;
    }
    if (stopped) return;
    setLeader(held);
  };

  const loop = (): void => {
    if (stopped) return;
    running = tick().finally(() => {
      running = null;
      if (!stopped) timer = setTimeout(loop, retryPeriodMs);
    });
  };

  return {
    get leader() {
      return leader;
    },
    start() {
      loop();
    },
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      await running;
      if (!leader) return;
      setLeader(false);
      try {
        const lease = (await api.readNamespacedLease({
          name: options.name,
          namespace: options.namespace,
        })) as LeaseObject;
        if (lease.spec?.holderIdentity !== options.identity) return;
        await replaceLease(lease, {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: microNow(),
          acquireTime: (lease.spec?.acquireTime ?? microNow()) as V1MicroTime,
        } as V1LeaseSpec);
      } catch (error) {
        options.onError?.(error); // the Lease then simply expires after the TTL
      }
    },
  };
}
