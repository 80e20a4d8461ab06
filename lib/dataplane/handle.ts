// Everything the controller (main thread) needs from a data plane, through one interface: apply a
// model and learn when it serves, readiness, a stats snapshot, the runtime's /debug/model description,
// listen, drain and close. `DataPlane` implements it in this thread; a proxy to data-plane worker
// threads can implement it too, since everything that crosses it survives structuredClone: the model
// (plain data) goes in; kinds, hashes, numbers and plain JSON come back. No function, no live object,
// no class instance with behaviour crosses.

import type { AddressInfo } from 'node:net';
import type { Model } from '../model/index.ts';
import type { RuntimeDescription } from './describe/types.ts';
import type { TracingStats } from './tracing/tracing.ts';
import type { MirrorStats } from './upstream/mirror.ts';

/** What a swap did: a new routing table, balancers updated in place, or nothing (same model hash). */
export type SwapKind = 'full' | 'endpoints' | 'unchanged';

/** The acknowledgement of an applied model: requests are now served from it. */
export interface SwapResult {
  kind: SwapKind;
  /** the hash of the model now served */
  hash: string;
}

/** Connection and request counters (plain integers). */
export interface DataPlaneStats {
  /** client connections accepted (HTTP and HTTPS) */
  accepted: number;
  /** client connections open now */
  active: number;
  /** requests and upgrade requests received */
  requests: number;
  /** mirror-target copies by outcome */
  mirror?: Readonly<MirrorStats>;
  /** OpenTelemetry spans by outcome */
  spans?: Readonly<TracingStats>;
  /** data-plane worker threads serving (absent: the data plane runs on the calling thread) */
  threads?: number;
  /** data-plane worker threads replaced after they stopped unexpectedly */
  threadRestarts?: number;
}

export interface ListenAddresses {
  http: AddressInfo;
  https: AddressInfo;
}

export interface DataPlaneHandle {
  /**
   * Compile `model` and serve it. Resolves once new requests and handshakes get it (for several
   * threads: once every one has swapped); rejects when the compile failed, the previous runtime
   * serving on.
   */
  apply(model: Model): Promise<SwapResult>;
  /** Whether a model is served (readiness). */
  ready(): boolean;
  /** The counters now: a copy, not a live object. */
  statsSnapshot(): DataPlaneStats;
  /**
   * Data planes in other threads: resolves once every thread's records and counters so far have
   * reached this thread (published on the events channels, in statsSnapshot). Absent in this thread,
   * where both are live.
   */
  flushed?(): Promise<DataPlaneStats>;
  /** The runtime served now, described as plain JSON; null before the first model. */
  describe(): Promise<RuntimeDescription | null>;
  listen(): Promise<ListenAddresses>;
  /**
   * Graceful stop: stop accepting, let requests in flight finish for up to `drainMs`, then close what
   * is left. Resolves once every listener is closed.
   */
  close(drainMs?: number): Promise<void>;
}

/** A copy of `stats` that shares nothing with it. */
export function copyStats(stats: Readonly<DataPlaneStats>): DataPlaneStats {
  const { accepted, active, requests, mirror, spans, threads, threadRestarts } = stats;
  const copy: DataPlaneStats = { accepted, active, requests };
  if (mirror !== undefined) copy.mirror = { ...mirror };
  if (spans !== undefined) copy.spans = { ...spans };
  if (threads !== undefined) copy.threads = threads;
  if (threadRestarts !== undefined) copy.threadRestarts = threadRestarts;
  return copy;
}
