// Diagnostics become Kubernetes Events on the object concerned, so `kubectl describe ingress x` and
// `kubectl get events` tell users what ingress-ts did with their object. Written by the leader only.
//
// - One core/v1 Event per diagnostic when it first appears (type Warning for errors and warnings,
//   Normal for infos; reason = the diagnostic code, docs/diagnostics.md). A diagnostic that stays is
//   not reported again at every build; one that goes away and comes back is.
// - involvedObject carries the object's uid when the store knows it: `kubectl describe` selects
//   events by kind, namespace, name and uid.
// - Rate limits, so that a flapping object cannot flood the API server: per object a bucket of 25
//   events refilled by one every 5 minutes (client-go's EventSourceObjectSpamFilter defaults), objects
//   tracked in a bounded LRU; at most 1,000 events queued, written one at a time. What a limit drops is
//   counted, not queued.

import { CoreV1Api, type CoreV1Event, type KubeConfig } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { GATEWAY_GROUP } from '../../model/gateway/k8s.ts';
import { type Diagnostic, redactText } from '../../model/index.ts';

export interface EventsOptions {
  kubeConfig: KubeConfig;
  /** reportingInstance / source.host: this replica */
  identity: string;
  /** the uid of an object, when known */
  uidOf(kind: string, namespace: string, name: string): string | undefined;
  onError?(error: unknown): void;
  /** ms clock (tests) */
  now?: () => number;
  /** per-object burst [25] and refill interval [300,000 ms] */
  burst?: number;
  refillMs?: number;
  maxQueued?: number;
}

export interface EventRecorder {
  /** The diagnostics of the latest build (reported only if new). */
  report(diagnostics: readonly Diagnostic[]): void;
  /** resolves when the queue is empty */
  idle(): Promise<void>;
  /** events not written because of a limit */
  readonly dropped: number;
}

const API_VERSIONS: Record<string, string> = {
  Ingress: 'networking.k8s.io/v1',
  IngressClass: 'networking.k8s.io/v1',
  Service: 'v1',
  Secret: 'v1',
  ConfigMap: 'v1',
  EndpointSlice: 'discovery.k8s.io/v1',
  // ingress-ts watches the Gateway API in v1 only (discovery requires all four kinds there)
  GatewayClass: `${GATEWAY_GROUP}/v1`,
  Gateway: `${GATEWAY_GROUP}/v1`,
  HTTPRoute: `${GATEWAY_GROUP}/v1`,
  ReferenceGrant: `${GATEWAY_GROUP}/v1`,
};

const keyOf = (d: Diagnostic) =>
  `${d.kind}\u0000${d.namespace}\u0000${d.name}\u0000${d.code}\u0000${d.message}`;

export function createEventRecorder(options: EventsOptions): EventRecorder {
  const api = options.kubeConfig.makeApiClient(CoreV1Api);
  const now = options.now ?? Date.now;
  const burst = options.burst ?? 25;
  const refillMs = options.refillMs ?? 300_000;
  const maxQueued = options.maxQueued ?? 1000;
  const buckets = new LRUCache<string, { tokens: number; at: number }>({ max: 10_000 });
  let reported = new Set<string>();
  const queue: CoreV1Event[] = [];
  let dropped = 0;
  let draining: Promise<void> | null = null;

  const allow = (object: string): boolean => {
    const t = now();
    const bucket = buckets.get(object) ?? { tokens: burst, at: t };
    const refilled = Math.floor((t - bucket.at) / refillMs);
    if (refilled > 0) {
      bucket.tokens = Math.min(burst, bucket.tokens + refilled);
      bucket.at += refilled * refillMs;
    }
    buckets.set(object, bucket);
    if (bucket.tokens <= 0) return false;
    bucket.tokens--;
    return true;
  };

  const event = (d: Diagnostic): CoreV1Event => {
    // cluster-scoped objects (IngressClass) get their events in "default", as kubectl looks there
    const namespace = d.namespace || 'default';
    const time = new Date(now());
    return {
      metadata: { generateName: `${d.name}.`, namespace },
      involvedObject: {
        apiVersion: API_VERSIONS[d.kind],
        kind: d.kind,
        name: d.name,
        namespace: d.namespace || undefined,
        uid: options.uidOf(d.kind, d.namespace, d.name),
      },
      reason: d.code,
      // Events are readable by anyone allowed to list them in the namespace: whatever made this
      // diagnostic, its message goes out redacted (the model's are already; redacting is idempotent)
      message: redactText(d.message).slice(0, 1024),
      type: d.severity === 'info' ? 'Normal' : 'Warning',
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      source: { component: 'ingress-ts', host: options.identity },
      reportingComponent: 'ingress-ts',
      reportingInstance: options.identity,
    };
  };

  const drain = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      try {
        await api.createNamespacedEvent({ namespace: next.metadata?.namespace ?? 'default', body: next });
      } catch (error) {
        options.onError?.(error);
      }
    }
  };

  return {
    report(diagnostics) {
      const current = new Set<string>();
      for (const d of diagnostics) {
        const key = keyOf(d);
        current.add(key);
        if (reported.has(key)) continue;
        if (queue.length >= maxQueued || !allow(`${d.kind}/${d.namespace}/${d.name}`)) {
          dropped++;
          continue;
        }
        queue.push(event(d));
      }
      reported = current;
      if (queue.length > 0) {
        draining ??= drain().finally(() => {
          draining = null;
        });
      }
    },
    async idle() {
      while (draining !== null) await draining;
    },
    get dropped() {
      return dropped;
    },
  };
}
