// The messages between the main thread and a data-plane worker thread. Everything here survives
// structuredClone: the model travels serialised once (v8.serialize) and copied to each thread as
// bytes; descriptions, stats and event payloads are plain data.

import { dataplaneError, requestFailed, streamClosed } from '../events.ts';
import type { DataPlaneStats, ListenAddresses, SwapKind } from '../handle.ts';
import type { CertificatePair } from '../listening/sni.ts';
import type { MeasureBatch } from '../request-measure.ts';

/** What a thread's DataPlane is made of: the DataPlaneOptions that can cross a thread boundary. */
export interface ThreadDataPlaneOptions {
  httpPort: number;
  httpsPort: number;
  bindAddress: string;
  generatedDefaultCertificate: CertificatePair;
  sslPassthrough?: boolean;
  /** whether the main thread reads request measures (metrics on): without, none is sent [true] */
  measures?: boolean;
  /** how often a thread posts what it collected (records' measures, log lines, counters) [50 ms] */
  batchIntervalMs?: number;
  /** the TLS session-ticket keys every thread encrypts and decrypts tickets with (48 bytes) */
  ticketKeys?: Uint8Array;
  /** the BroadcastChannel over which the threads share the TLS sessions they cache */
  sessionChannel?: string;
  /** the client-certificate leaves verified in full handshakes, one set for every thread */
  verifiedLeaves?: SharedArrayBuffer;
  /** whether this thread opens the UDP service ports (one thread does) */
  udpServices?: boolean;
}

/**
 * The channels a thread forwards to the main thread, by index, in batches; the main thread publishes
 * each message again on the same channel, so its subscribers (metrics, error log) do not know which
 * thread served. Request records stay in their thread, which writes their access log lines and
 * packs their measures (thread-records.ts); the main thread publishes those on `requestMeasured`.
 * `runtimeSwapped` is not among them: the pool publishes one swap per applied model, once every
 * thread serves it.
 */
export const FORWARDED_CHANNELS = [dataplaneError, requestFailed, streamClosed] as const;

/**
 * The rate-limit zones of a model, key → buffer: postMessage shares a SharedArrayBuffer (every thread
 * counts in the same memory, as NGINX's workers share a zone), it does not copy it.
 */
export type ZoneBuffers = ReadonlyMap<string, SharedArrayBuffer>;

/**
 * A model for a thread, serialised once (v8.serialize) and copied to each thread that needs it: the
 * whole model, or the changes since the model the thread serves (model-delta.ts's ModelDelta).
 */
export interface ModelPayload {
  kind: 'full' | 'delta';
  bytes: Uint8Array;
}

/** A thread's answer to `prepare`: the model is compiled, not served yet; how long its event loop was held. */
export interface PrepareReply {
  kind: SwapKind;
  hash: string;
  /** deserialising the payload and rebuilding the model from a delta */
  decodeMs: number;
  compileMs: number;
  /** the thread's CPU time over both (wall time on a busy machine also counts other threads' turns) */
  cpuMs: number;
}

/** A thread's answer to `commit`: it serves the model. */
export interface CommitReply {
  kind: SwapKind;
  hash: string;
  commitMs: number;
}

/**
 * Main thread → worker: a call, answered by a `reply` with the same id. A model is applied in two
 * phases: `prepare` (decode and compile, keep serving the previous runtime), then `commit` once
 * every thread prepared, or `discard` when one of them failed.
 */
export type ThreadCall =
  | { type: 'prepare'; id: number; model: ModelPayload; zones: ZoneBuffers }
  | { type: 'commit'; id: number; hash: string }
  | { type: 'discard'; id: number; hash: string }
  /** tests only (DataPlaneThreads.failNextPrepare): the thread's next prepare throws `message` */
  | { type: 'fail-next-prepare'; id: number; message: string }
  /** tests only (DataPlaneThreads.servingModels): the model the thread serves, or null */
  | { type: 'serving-model'; id: number }
  | { type: 'listen'; id: number; ports: { http: number; https: number } | null }
  | { type: 'describe'; id: number }
  /** the thread's TCP and UDP service ports with its own counts, for /debug/model's sums */
  | { type: 'describe-streams'; id: number }
  | { type: 'flush'; id: number }
  | { type: 'drain'; id: number; drainMs: number }
  | { type: 'close'; id: number; drainMs: number };

/** Worker → main thread. */
export type ThreadMessage =
  | { type: 'reply'; id: number; result: unknown }
  | { type: 'reply'; id: number; error: { message: string; stack: string; code?: string } }
  /** forwarded messages (channel index, payload), the thread's counters now, the access log lines
   * encoded since its last batch (buffers of whole lines, in order) and the measures of the
   * requests finished since (null: none) */
  | {
      type: 'batch';
      events: Array<[number, unknown]>;
      stats: DataPlaneStats;
      lines: Uint8Array[];
      measures: MeasureBatch | null;
    };

export type ListenReply = ListenAddresses;
