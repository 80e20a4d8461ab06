// The stream of one-Ingress changes that swap-stall.ts and swap-stall-threads.ts apply to a
// generated cluster, and the small helpers both report with.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ingress, Secret, Snapshot } from '../../lib/model/index.ts';

const PREFIX = 'nginx.ingress.kubernetes.io';
export const KINDS = ['path added', 'backend changed', 'annotation changed', 'TLS host added'] as const;
export type Kind = (typeof KINDS)[number];

const gc = globalThis.gc;
/** RSS and heap in use, MiB, after two forced GCs. */
export const memoryMiB = async (): Promise<{ rss: number; heap: number }> => {
  gc?.();
  await sleep(50);
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss: rss / 2 ** 20, heap: heapUsed / 2 ** 20 };
};
/** A clock every thread of the process shares. */
export const now = (): number => performance.timeOrigin + performance.now();
export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/** Ingress `index` of the snapshot, changed by `kind` (round `round` makes each change distinct). */
export function changed(ingress: Ingress, kind: Kind, round: number, secret: string): Ingress {
  const next = structuredClone(ingress);
  const rule = next.spec?.rules?.[0];
  const paths = rule?.http?.paths;
  if (paths === undefined || rule === undefined) throw new Error('generated Ingress without paths');
  if (kind === 'path added') {
    paths.push({
      path: `/added-${round}`,
      pathType: 'Prefix',
      backend: structuredClone(paths[0]?.backend) ?? {},
    });
  } else if (kind === 'backend changed') {
    const first = paths[0];
    const other = paths[1];
    if (first !== undefined && other !== undefined) first.backend = structuredClone(other.backend);
  } else if (kind === 'annotation changed') {
    next.metadata = {
      ...next.metadata,
      annotations: { ...next.metadata?.annotations, [`${PREFIX}/proxy-read-timeout`]: String(30 + round) },
    };
  } else {
    next.spec = { ...next.spec, tls: [{ hosts: [rule.host ?? ''], secretName: secret }] };
  }
  return next;
}

export function tlsSecret(
  namespace: string,
  name: string,
  pair: { certPem: string; keyPem: string },
): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace },
    data: {
      'tls.crt': Buffer.from(pair.certPem).toString('base64'),
      'tls.key': Buffer.from(pair.keyPem).toString('base64'),
    },
  };
}

/** The cluster as a stream of changes goes: each change stays, so it drifts as a real one does. */
export class ChangeStream {
  snapshot: Snapshot;
  readonly #byIndex: Map<number, Ingress>;
  readonly #certificate: { certPem: string; keyPem: string };

  constructor(snapshot: Snapshot, certificate: { certPem: string; keyPem: string }) {
    this.snapshot = snapshot;
    this.#byIndex = new Map(snapshot.ingresses.map((ingress, index) => [index, ingress]));
    this.#certificate = certificate;
  }

  /** Change `k` of round `round`: applied to the snapshot; returns the Ingress's name. */
  next(round: number, k: number): string {
    const kind = KINDS[k] as Kind;
    const { snapshot } = this;
    const index = ((round * KINDS.length + k) * 997) % snapshot.ingresses.length;
    const target = this.#byIndex.get(index) as Ingress;
    const secretName = `stall-tls-${round}`;
    const ingresses = [...snapshot.ingresses];
    const next = changed(target, kind, round, secretName);
    ingresses[index] = next;
    this.#byIndex.set(index, next);
    const namespace = target.metadata?.namespace ?? 'default';
    const secrets =
      kind === 'TLS host added'
        ? [...snapshot.secrets, tlsSecret(namespace, secretName, this.#certificate)]
        : snapshot.secrets;
    this.snapshot = { ...snapshot, ingresses, secrets };
    return `${namespace}/${target.metadata?.name}`;
  }
}
