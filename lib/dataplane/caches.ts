// What a data plane remembers across the runtimes it compiles, owned by the DataPlane instance (a
// data-plane worker thread would own its own): compiled regex-mode paths, bcrypt outcomes, the
// client-certificate leaves that verified in a full handshake, and the memory of the rate-limit zones
// (the zones and the leaves can be shared by threads: access/zone-memory.ts, access/verified-leaves.ts).
// Nothing here is module state.

import type { Model } from '../model/index.ts';
import { PathRegexCache } from '../model/path-regex.ts';
import { BcryptResults } from './access/basic-auth.ts';
import { VerifiedLeaves } from './access/verified-leaves.ts';
import { ZoneMemory } from './access/zone-memory.ts';
import type { Runtime } from './routing/runtime.ts';

export interface RuntimeCaches {
  readonly pathRegexes: PathRegexCache;
  readonly bcrypt: BcryptResults;
  readonly verifiedLeaves: VerifiedLeaves;
  /** the rate-limit zones' buffers by zone key (shared with other threads when they were adopted) */
  readonly zones: ZoneMemory;
  /**
   * false when `pathRegexes` is somebody else's (the controller's, on the same thread): its owner
   * rotates it before each build, and the compile that follows finds the build's objects in it
   */
  readonly ownsPathRegexes: boolean;
}

/**
 * Fresh caches; `sharedPathRegexes` is a cache another owner rotates (see ownsPathRegexes), `zones`
 * the zone memory to compile rate limits over, `verifiedLeaves` the buffer of a leaf set other threads
 * share (default for both: a new one, this data plane's alone).
 */
export function createRuntimeCaches(
  sharedPathRegexes?: PathRegexCache,
  zones?: ZoneMemory,
  verifiedLeaves?: SharedArrayBuffer,
): RuntimeCaches {
  return {
    pathRegexes: sharedPathRegexes ?? new PathRegexCache(),
    bcrypt: new BcryptResults(),
    verifiedLeaves: new VerifiedLeaves(verifiedLeaves),
    zones: zones ?? new ZoneMemory(),
    ownsPathRegexes: sharedPathRegexes === undefined,
  };
}

/**
 * Before compiling `model` over `previous`: a full compile starts a new generation of the data
 * plane's own path regexes (an endpoints-only update compiles no path).
 */
export function beforeCompile(caches: RuntimeCaches, previous: Runtime | null, model: Model): void {
  if (!caches.ownsPathRegexes) return;
  if (previous === null || previous.routesHash !== model.routesHash) caches.pathRegexes.rotate();
}
