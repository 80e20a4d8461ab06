// Applying the cluster's state: the source's snapshot → buildModel → the data plane, through its
// handle, waiting for the acknowledgement that the new runtime serves. One run per scheduler run;
// what it applied goes to the reporter (report.ts). The build's caches live here, one per process.

import type { DataPlaneHandle, SwapResult } from '../dataplane/handle.ts';
import type { GatewayApiStatus } from '../model/gateway/types.ts';
import {
  type BuildCaches,
  buildModel,
  type Diagnostic,
  type Model,
  type ModelOptions,
  type ModelReferences,
  type Snapshot,
} from '../model/index.ts';

/** One model applied, with what reporting needs to know about it. */
export interface AppliedChange {
  snapshot: Snapshot;
  model: Model;
  diagnostics: readonly Diagnostic[];
  /** the Gateway API status to write (the leader); absent without Gateway API objects */
  gatewayStatus?: GatewayApiStatus;
  swap: SwapResult;
  /** milliseconds the build took */
  buildMs: number;
  /** milliseconds from handing the model over to the acknowledgement */
  swapMs: number;
}

export interface ApplierOptions {
  handle: DataPlaneHandle;
  modelOptions: Partial<ModelOptions>;
  caches: BuildCaches;
  /** the objects to build from, read at each run */
  snapshot: () => Snapshot;
  /** what the model depends on, so the source can ignore changes to anything else */
  setReferences?: (references: ModelReferences) => void;
  onApplied: (change: AppliedChange) => void;
}

/** The last model applied (null before the first), the snapshot it was built from and its diagnostics. */
export interface Applied {
  snapshot: Snapshot;
  model: Model | null;
  diagnostics: readonly Diagnostic[];
  gatewayStatus?: GatewayApiStatus;
}

export interface Applier {
  /** Builds and applies the current snapshot; rejects when the build or the swap failed. */
  run(): Promise<void>;
  latest(): Applied;
}

export function createApplier(options: ApplierOptions): Applier {
  const { handle, caches } = options;
  let latest: Applied = { snapshot: options.snapshot(), model: null, diagnostics: [] };
  return {
    async run() {
      const started = performance.now();
      const snapshot = options.snapshot();
      const { model, diagnostics, references, gatewayStatus } = buildModel(
        snapshot,
        options.modelOptions,
        caches,
      );
      options.setReferences?.(references);
      const built = performance.now();
      const swap = await handle.apply(model);
      const swapped = performance.now();
      latest = { snapshot, model, diagnostics, gatewayStatus };
      options.onApplied({
        snapshot,
        model,
        diagnostics,
        gatewayStatus,
        swap,
        buildMs: built - started,
        swapMs: swapped - built,
      });
    },
    latest: () => latest,
  };
}
