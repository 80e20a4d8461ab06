// The SDK module (sdk.ts) loaded on demand, once per thread: a compile that makes some path traced
// asks for it, and the data plane waits for it before serving that compile (DataPlane.apply, a
// thread's prepare), so the first request of a traced route already gets its span. A thread whose
// routes are never traced never loads it.

import { dataplaneError } from '../events.ts';
import type * as Sdk from './sdk.ts';

let sdk: typeof Sdk | null = null;
let loading: Promise<void> | null = null;

/** The SDK module once loaded, else null (nothing is traced until it is). */
export function loadedSdk(): typeof Sdk | null {
  return sdk;
}

/** Starts loading the SDK if it is neither loaded nor loading. */
export function requireSdk(): void {
  if (sdk !== null || loading !== null) return;
  loading = import('./sdk.ts').then(
    (module) => {
      sdk = module;
      loading = null;
    },
    (error: unknown) => {
      loading = null;
      dataplaneError.publish({
        message: `OpenTelemetry: the SDK could not be loaded (${error instanceof Error ? error.message : String(error)}); requests are not traced`,
      });
    },
  );
}

/** Resolves once a load under way is done (at once when none is). */
export function sdkLoaded(): Promise<void> {
  return loading ?? Promise.resolve();
}
