// What a build may remember from the builds before it: compiled regex-mode paths, parsed TLS
// certificates, and what a one-Ingress change need not redo (each Ingress checked, each upstream
// resolved, the object index, the orders, the hash's records). Owned by whoever calls buildModel
// (the controller keeps one for the process), never module state, so the model stays a function of
// its inputs plus caches someone chose to pass. The result is the same as without them for any
// snapshot (test/model/build-reuse.test.ts), on one condition: an object handed to a build is never
// changed in place afterwards (the store and both sources replace an object that changes); a caller
// that edits objects must pass fresh caches.

import { BackendIndexCache } from './backend-index.ts';
import { SortedNames } from './build-memo.ts';
import { FingerprintCache } from './hash.ts';
import { IngressCheckCache } from './ingress-checks.ts';
import { IngressOrder } from './order.ts';
import { PathRegexCache } from './path-regex.ts';
import { CertificateParseCache } from './tls.ts';
import { UpstreamCache } from './upstream-cache.ts';

export interface BuildCaches {
  /** rotated by each build; may be shared with a data plane on the same thread */
  readonly pathRegexes: PathRegexCache;
  readonly certificates: CertificateParseCache;
  /** each Ingress object checked (rules, paths, annotations) once, with its diagnostics */
  readonly ingressChecks: IngressCheckCache;
  /** our Ingresses oldest first, kept while they stay */
  readonly ingressOrder: IngressOrder;
  /** the Services and EndpointSlices indexed, patched from build to build */
  readonly backendIndex: BackendIndexCache;
  /** each upstream's endpoints (or problem) while its Service and slices stay; the upstream order */
  readonly upstreams: UpstreamCache;
  /** the hosts in name order (the model's servers), kept while they stay */
  readonly hostOrder: SortedNames;
  /** the model's hash: annotation objects' digests, each server's and upstream's line, reused */
  readonly fingerprints: FingerprintCache;
}

/** Fresh caches; `pathRegexes` lets the caller share one with the data plane's compiles. */
export function createBuildCaches(pathRegexes: PathRegexCache = new PathRegexCache()): BuildCaches {
  return {
    pathRegexes,
    certificates: new CertificateParseCache(),
    ingressChecks: new IngressCheckCache(),
    ingressOrder: new IngressOrder(),
    backendIndex: new BackendIndexCache(),
    upstreams: new UpstreamCache(),
    hostOrder: new SortedNames(),
    fingerprints: new FingerprintCache(),
  };
}
