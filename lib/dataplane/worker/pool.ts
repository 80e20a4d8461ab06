// N data-plane worker threads behind one DataPlaneHandle. Each thread runs its own DataPlane
// (thread-main.ts): its own listeners on the same ports (SO_REUSEPORT), runtime, SNI store and pools.
// A change is applied in two phases (all or nothing): every thread decodes and compiles it while
// serving the previous model, and only once all have prepared are they told to serve it. A thread is
// sent the changes since the model it serves (model-delta.ts), or the whole model when it serves
// another one (a new thread); apply resolves when all of them serve it.
// Their measures and errors arrive in batches and are published again here on the same channels,
// and their access log lines, encoded in the threads, on `accessLogLines`. A thread
// that stops unexpectedly is replaced with the current model while the others keep serving.
// Per-thread state (round-robin positions, EWMA scores, auth caches) is not shared; the rate-limit
// zones are (zone-memory.ts).

import { randomBytes, randomUUID } from 'node:crypto';
import { serialize } from 'node:v8';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { ErrorCode } from '../../errors.ts';
import type { Model } from '../../model/index.ts';
import { allocateZoneBuffer } from '../access/shared-zone.ts';
import { ZoneMemory } from '../access/zone-memory.ts';
import type { RuntimeDescription, ThreadDescription } from '../describe/types.ts';
import { accessLogLines, dataplaneError, requestMeasured, runtimeSwapped } from '../events.ts';
import type { DataPlaneHandle, DataPlaneStats, ListenAddresses, SwapResult } from '../handle.ts';
import { type MeasuredRequest, unpackMeasures } from '../request-measure.ts';
import { type StreamPortDescription, sumStreamDescriptions } from '../streams/stream-listeners.ts';
import { applyInTwoPhases, type PhaseSlots } from './apply-phases.ts';
import { type ApplyRecord, ModelPayloads } from './model-payloads.ts';
import {
  type CommitReply,
  FORWARDED_CHANNELS,
  type ModelPayload,
  type PrepareReply,
  type ThreadCall,
  type ThreadDataPlaneOptions,
  type ThreadMessage,
  type ZoneBuffers,
} from './protocol.ts';
import { startThread } from './thread-boot.ts';
import { threadResourceLimits } from './thread-heap.ts';

export interface DataPlaneThreadsOptions extends ThreadDataPlaneOptions {
  /** how many threads (at least 2 to be worth it; 1 works) */
  threads: number;
  /** post the whole model on every change instead of deltas (the former protocol: for benchmarks) */
  fullModels?: boolean;
}

/** What a call to a thread that stopped before answering rejects with. */
export class ThreadExitedError extends Error {
  readonly code: ErrorCode = 'DATAPLANE_THREAD_STOPPED';
}

type Call = ThreadCall extends infer C ? (C extends { id: number } ? Omit<C, 'id'> : never) : never;

/** A thread's request, published on the main thread for the metrics. */
const publishMeasured = (measured: MeasuredRequest) => requestMeasured.publish(measured);
const THREAD_ENTRY = new URL('./thread-main.ts', import.meta.url);
/** a thread that stops within this long after it started is replaced after a growing delay */
const QUICK_EXIT_MS = 2000;

/** A warning for the controller's log (the dataplaneError channel). */
function report(code: ErrorCode, message: string): void {
  if (dataplaneError.hasSubscribers) dataplaneError.publish({ message, code });
}

/** One worker thread and its calls waiting for an answer. */
class Thread {
  readonly worker: Worker;
  readonly started = performance.now();
  hash: string | null = null;
  stats: DataPlaneStats = { accepted: 0, active: 0, requests: 0 };
  exited = false;
  /** resolves once the thread serves the current model (and listens, if the pool does) */
  up: Promise<void> = Promise.resolve();
  #next = 0;
  readonly #calls = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  constructor(options: ThreadDataPlaneOptions, resourceLimits: ResourceLimits) {
    this.worker = startThread(THREAD_ENTRY, { workerData: options, resourceLimits });
  }

  call<T>(message: Call): Promise<T> {
    if (this.exited) return Promise.reject(new ThreadExitedError('the data-plane thread has stopped'));
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  answered(message: Extract<ThreadMessage, { type: 'reply' }>): void {
    const waiting = this.#calls.get(message.id);
    if (waiting === undefined) return;
    this.#calls.delete(message.id);
    if ('error' in message) {
      const error: Error & { code?: string } = new Error(message.error.message);
      error.stack = message.error.stack;
      if (message.error.code !== undefined) error.code = message.error.code;
      waiting.reject(error);
    } else {
      waiting.resolve(message.result);
    }
  }

  stopped(): void {
    this.exited = true;
    for (const { reject } of this.#calls.values()) {
      reject(new ThreadExitedError('the data-plane thread stopped before it answered'));
    }
    this.#calls.clear();
  }
}

export class DataPlaneThreads implements DataPlaneHandle {
  readonly #options: ThreadDataPlaneOptions;
  /** read once: a replacement thread starts with the limits of the others */
  readonly #resourceLimits = threadResourceLimits();
  readonly #slots: Thread[] = [];
  /** the model every thread serves or is being given; its bytes once some thread needed them */
  #model: { model: Model; bytes: Uint8Array | null; zones: ZoneBuffers } | null = null;
  readonly #deltas: boolean;
  /** the apply in progress: one at a time, so that each thread's base is the model the last left */
  #applying: Promise<unknown> = Promise.resolve();
  #lastApply: ApplyRecord | null = null;
  /** the slots as the two phases see them (apply-phases.ts) */
  readonly #phaseSlots: PhaseSlots;
  /** the rate-limit zones every thread counts in (access/zone-memory.ts): owned here, posted with each model */
  readonly #zones = new ZoneMemory();
  /** the ports every thread listens on, once the first bound them */
  #ports: { http: number; https: number } | null = null;
  #served = false;
  #closing = false;
  #restarts = 0;
  /** quick exits in a row per slot: a thread that cannot start is not restarted in a tight loop */
  readonly #quickExits: number[] = [];
  /** counters of the threads that were replaced, so the sums never go back */
  readonly #retired = {
    accepted: 0,
    requests: 0,
    answered: 0,
    failed: 0,
    dropped: 0,
    exported: 0,
    spansDropped: 0,
  };

  constructor(options: DataPlaneThreadsOptions) {
    const slots = this.#slots;
    this.#phaseSlots = {
      get count() {
        return slots.length;
      },
      at: (index) => slots[index] as Thread,
      replaced: (error) => error instanceof ThreadExitedError && !this.#closing,
    };
    const { threads, fullModels, ...threadOptions } = options;
    // one set of session-ticket keys for every thread, replacements included: a client resumes its
    // TLS session on whichever thread the kernel hands its next connection to, and that thread finds
    // the client certificate's leaf verified in the shared set; and one channel for the sessions they cache
    this.#options = {
      ...threadOptions,
      ticketKeys: threadOptions.ticketKeys ?? randomBytes(48),
      sessionChannel: threadOptions.sessionChannel ?? `ingress-ts-tls-sessions-${randomUUID()}`,
      verifiedLeaves: threadOptions.verifiedLeaves ?? allocateZoneBuffer(),
    };
    this.#deltas = fullModels !== true;
    for (let index = 0; index < Math.max(1, threads); index++) {
      this.#quickExits.push(0);
      this.#slots.push(this.#spawn(index));
    }
  }

  /** The worker of each thread, for tests (stop one to see it replaced). */
  get workers(): readonly Worker[] {
    return this.#slots.map((thread) => thread.worker);
  }

  apply(model: Model): Promise<SwapResult> {
    const run = this.#applying.then(() => this.#applyToAll(model));
    this.#applying = run.catch(() => null);
    return run;
  }

  /** What the last apply that reached every thread cost (payload sizes, phases, per thread). */
  get lastApply(): ApplyRecord | null {
    return this.#lastApply;
  }

  /** Tests only: the model each thread serves, as it holds it (rebuilt from deltas). */
  async servingModels(): Promise<Array<Model | null>> {
    await this.settled();
    return Promise.all(this.#slots.map((thread) => thread.call<Model | null>({ type: 'serving-model' })));
  }

  /** Tests only: the next prepare of the thread in slot `index` throws `message`, as a failing compile would. */
  async failNextPrepare(index: number, message: string): Promise<void> {
    const thread = this.#slots[index] as Thread;
    await thread.up;
    await thread.call({ type: 'fail-next-prepare', message });
  }

  ready(): boolean {
    return this.#served;
  }

  statsSnapshot(): DataPlaneStats {
    const sum = { ...this.#retired };
    let active = 0;
    for (const { stats } of this.#slots) {
      sum.accepted += stats.accepted;
      sum.requests += stats.requests;
      active += stats.active;
      sum.answered += stats.mirror?.answered ?? 0;
      sum.failed += stats.mirror?.failed ?? 0;
      sum.dropped += stats.mirror?.dropped ?? 0;
      sum.exported += stats.spans?.exported ?? 0;
      sum.spansDropped += stats.spans?.dropped ?? 0;
    }
    return {
      accepted: sum.accepted,
      active,
      requests: sum.requests,
      mirror: { answered: sum.answered, failed: sum.failed, dropped: sum.dropped },
      spans: { exported: sum.exported, dropped: sum.spansDropped },
      threads: this.#slots.length,
      threadRestarts: this.#restarts,
    };
  }

  /** The counters once every thread has posted what it counted so far (a scrape reads the last batches). */
  async flushed(): Promise<DataPlaneStats> {
    await Promise.all(this.#slots.map((thread) => thread.call({ type: 'flush' }).catch(() => null)));
    return this.statsSnapshot();
  }

  /** Resolves once every thread, replacements included, serves the current model. */
  async settled(): Promise<void> {
    await Promise.all(this.#slots.map((thread) => thread.up));
  }

  /** Each thread and the model it serves, as known now (its acknowledgements and last batch). */
  get threads(): ThreadDescription[] {
    return this.#slots.map((thread) => ({
      threadId: thread.worker.threadId,
      hash: thread.hash,
      requests: thread.stats.requests,
      accepted: thread.stats.accepted,
    }));
  }

  async describe(): Promise<RuntimeDescription | null> {
    await this.settled();
    const first = this.#slots[0];
    const runtime =
      first === undefined ? null : await first.call<RuntimeDescription | null>({ type: 'describe' });
    if (runtime === null) return null;
    if (runtime.streams === undefined) return { ...runtime, threads: this.threads };
    // every thread has its own streams on the TCP ports: the counts shown are the sums
    const others = await Promise.all(
      this.#slots
        .slice(1)
        .map((thread) => thread.call<StreamPortDescription[]>({ type: 'describe-streams' }).catch(() => [])),
    );
    return {
      ...runtime,
      threads: this.threads,
      streams: sumStreamDescriptions([runtime.streams, ...others]),
    };
  }

  async listen(): Promise<ListenAddresses> {
    const [first, ...others] = this.#slots;
    if (first === undefined) throw new Error('no data-plane thread');
    const addresses = await first.call<ListenAddresses>({ type: 'listen', ports: null });
    this.#ports = { http: addresses.http.port, https: addresses.https.port };
    await Promise.all(others.map((thread) => thread.call({ type: 'listen', ports: this.#ports })));
    return addresses;
  }

  async close(drainMs = 0): Promise<void> {
    this.#closing = true;
    // every thread drains its requests before any cuts its tunnels: a tunnel on one thread outlives
    // the requests of all, as it does with one thread
    await Promise.all(
      this.#slots.map(async (thread) => {
        if (!thread.exited) await thread.up;
        await thread.call({ type: 'drain', drainMs }).catch(() => null);
      }),
    );
    await Promise.all(
      this.#slots.map(async (thread) => {
        await thread.call({ type: 'close', drainMs: 0 }).catch(() => null);
        if (!thread.exited) await thread.worker.terminate();
      }),
    );
  }

  /** Prepare in every thread; commit when all prepared, else discard everywhere and reject. */
  async #applyToAll(model: Model): Promise<SwapResult> {
    const zones = this.#zones.buffersFor(model);
    const payloads = new ModelPayloads(this.#model?.model ?? null, model, this.#deltas);
    const { results, record } = await applyInTwoPhases(this.#phaseSlots, model, payloads, zones, () => {
      // from here a replacement thread starts on the new model
      this.#model = { model, bytes: payloads.fullBytes, zones };
    });
    this.#lastApply = record;
    this.#zones.retain(zones.keys());
    const first = results[0] as CommitReply;
    const differing = results.filter((result) => result.kind !== first.kind || result.hash !== first.hash);
    if (differing.length > 0) {
      report(
        'DATAPLANE_THREADS_DIFFER',
        `data-plane threads applied model ${model.hash} differently: ${results.map((r) => r.kind).join(', ')}`,
      );
    }
    this.#served = true;
    if (runtimeSwapped.hasSubscribers) runtimeSwapped.publish({ kind: first.kind, hash: first.hash });
    return { kind: first.kind, hash: first.hash };
  }

  #spawn(index: number): Thread {
    // UDP sessions are per client address: the first thread alone opens the UDP service ports
    const thread = new Thread({ ...this.#options, udpServices: index === 0 }, this.#resourceLimits);
    thread.worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'reply') thread.answered(message);
      else this.#received(thread, message);
    });
    thread.worker.on('error', (error) => {
      report(
        'DATAPLANE_THREAD_STOPPED',
        `data-plane thread ${thread.worker.threadId} failed: ${error.message}`,
      );
    });
    thread.worker.on('exit', (code) => this.#exited(index, thread, code));
    return thread;
  }

  /** A batch of records: published on the main thread's channels, in the order the thread saw them. */
  #received(thread: Thread, batch: Extract<ThreadMessage, { type: 'batch' }>): void {
    thread.stats = batch.stats;
    for (const [channelIndex, payload] of batch.events) {
      const channel = FORWARDED_CHANNELS[channelIndex];
      if (channel?.hasSubscribers) channel.publish(payload);
    }
    if (accessLogLines.hasSubscribers) for (const lines of batch.lines) accessLogLines.publish(lines);
    if (batch.measures !== null && requestMeasured.hasSubscribers)
      unpackMeasures(batch.measures, publishMeasured);
  }

  #exited(index: number, thread: Thread, code: number): void {
    thread.stopped();
    if (this.#closing || this.#slots[index] !== thread) return;
    this.#restarts++;
    this.#retired.accepted += thread.stats.accepted;
    this.#retired.requests += thread.stats.requests;
    this.#retired.answered += thread.stats.mirror?.answered ?? 0;
    this.#retired.failed += thread.stats.mirror?.failed ?? 0;
    this.#retired.dropped += thread.stats.mirror?.dropped ?? 0;
    this.#retired.exported += thread.stats.spans?.exported ?? 0;
    this.#retired.spansDropped += thread.stats.spans?.dropped ?? 0;
    const quick = performance.now() - thread.started < QUICK_EXIT_MS;
    const quickExits = quick ? (this.#quickExits[index] ?? 0) + 1 : 0;
    this.#quickExits[index] = quickExits;
    // the first replacement at once; a thread that keeps stopping as it starts, after 0.25 s, 0.5 s, … 30 s
    const delayMs = quickExits < 2 ? 0 : Math.min(30_000, 250 * 2 ** (quickExits - 2));
    report(
      'DATAPLANE_THREAD_STOPPED',
      `data-plane thread ${thread.worker.threadId} stopped (exit code ${code}); replacing it${delayMs > 0 ? ` in ${delayMs} ms` : ''}`,
    );
    thread.stats = { accepted: 0, active: 0, requests: 0 };
    // whoever waits for the stopped thread waits for its replacement, then finds it in the slot
    thread.up = this.#replace(index, delayMs);
  }

  async #replace(index: number, delayMs: number): Promise<void> {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
    if (this.#closing) return;
    const next = this.#spawn(index);
    this.#slots[index] = next;
    next.up = this.#bringUp(next);
    await next.up;
  }

  /** A replacement thread: the current model, then the shared ports. */
  async #bringUp(thread: Thread): Promise<void> {
    try {
      const current = this.#model;
      if (current !== null) {
        current.bytes ??= serialize(current.model);
        const model: ModelPayload = { kind: 'full', bytes: current.bytes };
        const { hash } = current.model;
        await thread.call<PrepareReply>({ type: 'prepare', model, zones: current.zones });
        thread.hash = (await thread.call<CommitReply>({ type: 'commit', hash })).hash;
      }
      if (this.#ports !== null) await thread.call({ type: 'listen', ports: this.#ports });
    } catch (error) {
      // a replacement that stopped is replaced in turn (#exited); any other failure is reported
      if (!(error instanceof ThreadExitedError)) {
        report(
          'DATAPLANE_THREAD_START_FAILED',
          `a replacement data-plane thread did not start: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }
}
