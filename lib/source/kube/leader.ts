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

/**
 * The spec this replica writes when it takes or renews the Lease. A MicroTime read back is a string
 * (client-node's serializer does not know the type); written back as read, it keeps its 6 digits.
 */
function heldSpec(
  identity: string,
  durationSeconds: number,
  previous: LeaseSpec | undefined,
  acquiring: boolean,
): V1LeaseSpec {
  return {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    acquireTime: acquiring || !previous?.acquireTime ? microNow() : (previous.acquireTime as V1MicroTime),
    renewTime: microNow(),
    leaseTransitions: (previous?.leaseTransitions ?? 0) + (acquiring && previous?.holderIdentity ? 1 : 0),
  };
}

/** The spec that gives the Lease up: no holder, expiring in a second. */
function releasedSpec(previous: LeaseSpec | undefined): V1LeaseSpec {
  return {
    ...previous,
    holderIdentity: '',
    leaseDurationSeconds: 1,
    renewTime: microNow(),
    acquireTime: (previous?.acquireTime ?? microNow()) as V1MicroTime,
  } as V1LeaseSpec;
}

/** The one Lease this election uses: read, create, and replace guarded by the resourceVersion read. */
function leaseClient(options: LeaderElectionOptions) {
  const api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  const { name, namespace } = options;
  return {
    read: async (): Promise<LeaseObject> =>
      (await api.readNamespacedLease({ name, namespace })) as LeaseObject,
    create: (spec: V1LeaseSpec) =>
      api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } }),
    /** Replaces the Lease as read (its resourceVersion guards the write) with `spec`. */
    replace: (lease: LeaseObject, spec: V1LeaseSpec) =>
      api.replaceNamespacedLease({
        name,
        namespace,
        body: { metadata: { name, namespace, resourceVersion: lease.metadata?.resourceVersion }, spec },
      }),
  };
}

/**
 * When the Lease record (holder + renewTime + resourceVersion) was first seen as it is now, on the
 * local clock: expiry is judged from that, never from the holder's renewTime.
 */
function recordWatch(now: () => number) {
  let observed = '';
  let observedAt = 0;
  return {
    observe(lease: LeaseObject): void {
      const spec = lease.spec ?? {};
      const record = `${spec.holderIdentity ?? ''}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
      if (record !== observed) {
        observed = record;
        observedAt = now();
      }
    },
    /** The record stayed unchanged for longer than `durationMs`. */
    expired: (durationMs: number): boolean => now() >= observedAt + durationMs,
  };
}

export function createLeaderElection(options: LeaderElectionOptions): LeaderElection {
  const lease = leaseClient(options);
  const now = options.now ?? (() => performance.now());
  const renewDeadlineMs = options.ttlMs / 2;
  const retryPeriodMs = options.ttlMs / 4;
  const durationSeconds = Math.max(1, Math.round(options.ttlMs / 1000));
  const record = recordWatch(now);

  let leader = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastRenewal = 0;
  let running: Promise<void> | null = null;

  const setLeader = (next: boolean): void => {
    if (next === leader) return;
    leader = next;
    options.onChange(next);
  };

  /** One attempt to acquire or renew; true when this replica holds the Lease afterwards. */
  const tryAcquireOrRenew = async (): Promise<boolean> => {
    let current: LeaseObject;
    try {
      current = await lease.read();
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      await lease.create(heldSpec(options.identity, durationSeconds, undefined, true));
      return true;
    }
    record.observe(current);
    const holder = current.spec?.holderIdentity ?? '';
    const mine = holder === options.identity;
    const duration = (current.spec?.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!mine && holder !== '' && !record.expired(duration)) return false; // held by a live leader
    try {
      await lease.replace(current, heldSpec(options.identity, durationSeconds, current.spec, !mine));
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
        const current = await lease.read();
        if (current.spec?.holderIdentity !== options.identity) return;
        await lease.replace(current, releasedSpec(current.spec));
      } catch (error) {
        options.onError?.(error); // the Lease then simply expires after the TTL
      }
    },
  };
}
