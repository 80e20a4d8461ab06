// The messages between the main thread and a data-plane worker thread. Everything here survives
// structuredClone: the model travels serialised once (v8.serialize) and copied to each thread as
// bytes; descriptions, stats and event payloads are plain data.

import { dataplaneError, requestFailed, requestLogged, requestRefused } from '../events.ts';
import type { DataPlaneStats, ListenAddresses } from '../handle.ts';
import type { CertificatePair } from '../listening/sni.ts';

/** What a thread's DataPlane is made of: the DataPlaneOptions that can cross a thread boundary. */
export interface ThreadDataPlaneOptions {
  httpPort: number;
  httpsPort: number;
  bindAddress: string;
  generatedDefaultCertificate: CertificatePair;
  sslPassthrough?: boolean;
  /** the TLS session-ticket keys every thread encrypts and decrypts tickets with (48 bytes) */
  ticketKeys?: Uint8Array;
  /** the client-certificate leaves verified in full handshakes, one set for every thread */
  verifiedLeaves?: SharedArrayBuffer;
}

/**
 * The channels a thread forwards to the main thread, by index, in batches; the main thread publishes
 * each record again on the same channel, so its subscribers (metrics, access log, error log) do not
 * know which thread served. `runtimeSwapped` is not among them: the pool publishes one swap per
 * applied model, once every thread serves it.
 */
export const FORWARDED_CHANNELS = [requestLogged, requestRefused, dataplaneError, requestFailed] as const;

/**
 * The rate-limit zones of a model, key → buffer: postMessage shares a SharedArrayBuffer (every thread
 * counts in the same memory, as NGINX's workers share a zone), it does not copy it.
 */
export type ZoneBuffers = ReadonlyMap<string, SharedArrayBuffer>;

/** Main thread → worker: a call, answered by a `reply` with the same id. */
export type ThreadCall =
  | { type: 'apply'; id: number; model: Uint8Array; zones: ZoneBuffers }
  | { type: 'listen'; id: number; ports: { http: number; https: number } | null }
  | { type: 'describe'; id: number }
  | { type: 'flush'; id: number }
  | { type: 'drain'; id: number; drainMs: number }
  | { type: 'close'; id: number; drainMs: number };

/** Worker → main thread. */
export type ThreadMessage =
  | { type: 'reply'; id: number; result: unknown }
  | { type: 'reply'; id: number; error: { message: string; stack: string } }
  /** finished records (channel index, payload) and the thread's counters now */
  | { type: 'batch'; events: Array<[number, unknown]>; stats: DataPlaneStats };

export type ListenReply = ListenAddresses;
