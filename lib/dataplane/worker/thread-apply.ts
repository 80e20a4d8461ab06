// A data-plane thread's side of the two-phase apply: `prepare` decodes the model (whole, or a delta
// over the model this thread serves) and compiles it while the previous runtime keeps serving;
// `commit` serves it, `discard` drops it. The pool commits only once every thread has prepared, so
// the threads serve the new model all or none of them.

import { deserialize } from 'node:v8';
import type { ErrorCode } from '../../errors.ts';
import type { Model } from '../../model/index.ts';
import type { ZoneMemory } from '../access/zone-memory.ts';
import type { DataPlane, PreparedSwap } from '../dataplane.ts';
import { type ModelDelta, patchModel } from './model-delta.ts';
import { shareStrings } from './model-strings.ts';
import type { CommitReply, ModelPayload, PrepareReply, ZoneBuffers } from './protocol.ts';

/** A commit for a model this thread has not prepared (or has dropped). */
export class NothingPreparedError extends Error {
  readonly code: ErrorCode = 'DATAPLANE_APPLY_ABORTED';
}

export interface ThreadApply {
  prepare(payload: ModelPayload, zones: ZoneBuffers): PrepareReply;
  commit(hash: string): CommitReply;
  discard(hash: string): void;
  /** tests only: the next prepare throws `message` (a compile failing in this thread alone) */
  failNextPrepare(message: string): void;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.threadCpuUsage(start);
  return (user + system) / 1000;
}

export function createThreadApply(dataPlane: DataPlane, zoneMemory: ZoneMemory): ThreadApply {
  let pending: PreparedSwap | null = null;
  let failure: string | null = null;
  return {
    prepare(payload, zones) {
      pending = null;
      const cpu = process.threadCpuUsage();
      const started = performance.now();
      const decoded = deserialize(payload.bytes) as unknown;
      const model =
        payload.kind === 'full'
          ? shareStrings(decoded as Model)
          : patchModel(dataPlane.current?.model ?? null, decoded as ModelDelta);
      const decodedAt = performance.now();
      if (failure !== null) {
        const message = failure;
        failure = null;
        throw new Error(message);
      }
      zoneMemory.adopt(zones);
      pending = dataPlane.prepare(model);
      return {
        kind: pending.kind,
        hash: model.hash,
        decodeMs: decodedAt - started,
        compileMs: performance.now() - decodedAt,
        cpuMs: cpuMsSince(cpu),
      };
    },
    commit(hash) {
      const prepared = pending;
      if (prepared === null || prepared.model.hash !== hash) {
        throw new NothingPreparedError(`model ${hash} is not prepared in this thread`);
      }
      pending = null;
      const started = performance.now();
      const kind = dataPlane.commit(prepared);
      return { kind, hash, commitMs: performance.now() - started };
    },
    discard(hash) {
      if (pending?.model.hash === hash) pending = null;
    },
    failNextPrepare(message) {
      failure = message;
    },
  };
}
