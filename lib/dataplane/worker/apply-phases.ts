// The pool's side of the two-phase apply: every thread prepares the model (decodes and compiles it,
// still serving the previous one); only once all have prepared are they told to commit (serve it).
// If any thread fails to prepare, every thread discards what it prepared and the apply rejects with
// that thread's error, so the threads serve the new model all or none of them. A thread that stops
// meanwhile is replaced by the pool; the phases wait for the replacement and go on with it.

import type { Model } from '../../model/index.ts';
import type { ApplyRecord, ModelPayloads } from './model-payloads.ts';
import type { CommitReply, ModelPayload, PrepareReply, ZoneBuffers } from './protocol.ts';

type PhaseCall =
  | { type: 'prepare'; model: ModelPayload; zones: ZoneBuffers }
  | { type: 'commit'; hash: string }
  | { type: 'discard'; hash: string };

/** What the phases need of a thread. */
export interface PhaseThread {
  /** the hash of the model it serves, as its last commit said (null: unknown) */
  hash: string | null;
  /** resolves once it serves the current model (a replacement: once started) */
  readonly up: Promise<void>;
  call<T>(message: PhaseCall): Promise<T>;
}

/** The pool's threads as the phases see them. */
export interface PhaseSlots {
  readonly count: number;
  /** the thread in slot `index` now: a replacement once the one before stopped */
  at(index: number): PhaseThread;
  /** whether a failed call means that the thread stopped and a replacement takes its place */
  replaced(error: unknown): boolean;
}

interface Prepared {
  payload: ModelPayload['kind'];
  reply: PrepareReply;
}

/**
 * Applies `model` to every thread in two phases; `onPrepared` runs once all have prepared, before
 * any commits (from then on a replacement thread must start on the new model). Resolves with each
 * thread's commit and what the apply cost.
 */
export async function applyInTwoPhases(
  slots: PhaseSlots,
  model: Model,
  payloads: ModelPayloads,
  zones: ZoneBuffers,
  onPrepared: () => void,
): Promise<{ results: CommitReply[]; record: ApplyRecord }> {
  const started = performance.now();
  const indexes = Array.from({ length: slots.count }, (_, index) => index);
  const prepared = await Promise.allSettled(indexes.map((index) => prepareOn(slots, index, payloads, zones)));
  const failed = prepared.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    // every thread keeps serving the previous model; the next apply starts from it
    await Promise.all(
      indexes.map((index) =>
        slots
          .at(index)
          .call({ type: 'discard', hash: model.hash })
          .catch(() => null),
      ),
    );
    throw failed.reason;
  }
  const preparedAt = performance.now();
  onPrepared();
  const results = await Promise.all(indexes.map((index) => commitOn(slots, index, model.hash)));
  const record: ApplyRecord = {
    hash: model.hash,
    fullBytes: payloads.fullBytes?.byteLength ?? null,
    deltaBytes: payloads.deltaBytes,
    posted: payloads.posted,
    prepareMs: preparedAt - started,
    commitMs: performance.now() - preparedAt,
    threads: prepared.map((result, index) => {
      const { payload, reply } = (result as PromiseFulfilledResult<Prepared>).value;
      const { decodeMs, compileMs, cpuMs } = reply;
      return { payload, decodeMs, compileMs, cpuMs, commitMs: results[index]?.commitMs ?? 0 };
    }),
  };
  return { results, record };
}

/**
 * Has the thread in `index` prepare the model: its delta, or the whole model when the thread serves
 * another one. A thread that stops first is replaced (on the model served so far) and asked again.
 */
async function prepareOn(
  slots: PhaseSlots,
  index: number,
  payloads: ModelPayloads,
  zones: ZoneBuffers,
): Promise<Prepared> {
  for (;;) {
    const thread = slots.at(index);
    try {
      await thread.up;
      const model = payloads.for(thread.hash);
      return {
        payload: model.kind,
        reply: await thread.call<PrepareReply>({ type: 'prepare', model, zones }),
      };
    } catch (error) {
      if ((error as { code?: unknown }).code === 'DATAPLANE_DELTA_BASE_MISMATCH') {
        thread.hash = null;
        continue;
      }
      if (!slots.replaced(error)) throw error;
    }
  }
}

/** Has the thread in `index` serve the prepared model; a replacement started since serves it already. */
async function commitOn(slots: PhaseSlots, index: number, hash: string): Promise<CommitReply> {
  const thread = slots.at(index);
  try {
    const reply = await thread.call<CommitReply>({ type: 'commit', hash });
    thread.hash = reply.hash;
    return reply;
  } catch (error) {
    if (!slots.replaced(error)) throw error;
    await thread.up;
    return { kind: 'full', hash, commitMs: 0 };
  }
}
