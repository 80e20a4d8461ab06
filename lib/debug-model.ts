// /debug/model on the healthz port: the live configuration as plain JSON — hosts → routes →
// backends with their endpoints and balancer, the certificate each host is served with, and the
// diagnostics of the last build grouped per object (what `kubectl ingress-nginx backends` shows,
// for everything). The runtime's part comes from the data plane (DataPlaneHandle.describe, produced
// where the runtime lives: lib/dataplane/describe/); the controller adds what only it knows, the
// diagnostics of its build and of its source. Never includes private keys or credentials: the status
// port is reachable from the cluster network, so URLs lose their userinfo and query values and
// ConfigMap header values are hidden (model/redact.ts).

import type { Applied, Applier } from './controller/apply.ts';
import type { BackendDescription, RuntimeDescription } from './dataplane/describe/types.ts';
import type { DataPlaneHandle } from './dataplane/handle.ts';
import { describeIngresses, type IngressDescription, notReadyEndpoints } from './debug-objects.ts';
import type { DebugModelSource } from './debug-routes.ts';
import {
  type Diagnostic,
  type Model,
  type ModelOptions,
  redactText,
  type Severity,
  type Snapshot,
} from './model/index.ts';

export type * from './dataplane/describe/types.ts';
export type { IngressDescription } from './debug-objects.ts';

export interface DiagnosticDescription {
  severity: Severity;
  code: string;
  message: string;
  file?: string;
  line?: number | null;
}

/** The whole /debug/model answer: the runtime's description with the controller's diagnostics. */
export interface ModelDescription extends RuntimeDescription {
  /**
   * diagnostics of the last build by `Kind namespace/name`, and in standalone mode those of the
   * manifest files (`file` and `line` say where; a document naming no object is `Manifest <file>`)
   */
  diagnostics: Record<string, DiagnosticDescription[]>;
  /**
   * every Ingress of this controller's classes in the objects of the last build, keyed
   * `namespace/name`: the annotations of --annotations-prefix (values that may carry a credential
   * redacted), creationTimestamp and class
   */
  ingresses?: Record<string, IngressDescription>;
}

/** The objects the last build read, for what the runtime does not hold (debug-objects.ts). */
export interface BuiltFrom {
  snapshot: Snapshot;
  model: Model;
  options: ModelOptions;
}

function groupDiagnostics(diagnostics: readonly Diagnostic[]): ModelDescription['diagnostics'] {
  const grouped: ModelDescription['diagnostics'] = {};
  for (const d of diagnostics) {
    const key = `${d.kind} ${d.namespace === '' ? d.name : `${d.namespace}/${d.name}`}`;
    const entry: DiagnosticDescription = {
      severity: d.severity,
      code: d.code,
      message: redactText(d.message),
    };
    if (d.file !== undefined) {
      entry.file = d.file;
      entry.line = d.line ?? null;
    }
    const list = grouped[key];
    if (list === undefined) grouped[key] = [entry];
    else list.push(entry);
  }
  return grouped;
}

/** `backends` with the not-ready endpoints of each one's Service. */
function withNotReady(backends: BackendDescription[], builtFrom: BuiltFrom): BackendDescription[] {
  const notReady = notReadyEndpoints(builtFrom.snapshot, builtFrom.model);
  if (notReady.size === 0) return backends;
  return backends.map((backend) => {
    const keys = notReady.get(backend.name);
    return keys === undefined ? backend : { ...backend, notReady: keys };
  });
}

/**
 * The /debug/model answer: `runtime` as the data plane described it, with `diagnostics` grouped per
 * object and, given the objects of the build (`builtFrom`), the not-ready endpoints and the Ingresses.
 */
export function describeModel(
  runtime: RuntimeDescription,
  diagnostics: readonly Diagnostic[],
  builtFrom: BuiltFrom | null = null,
): ModelDescription {
  const { config, upstreamDefaults, ...served } = runtime;
  // the order readers know: what is served, then the findings, then the settings
  return {
    ...served,
    backends: builtFrom === null ? served.backends : withNotReady(served.backends, builtFrom),
    diagnostics: groupDiagnostics(diagnostics),
    ...(builtFrom === null ? {} : { ingresses: describeIngresses(builtFrom.snapshot, builtFrom.options) }),
    config,
    upstreamDefaults,
  };
}

/**
 * /debug/model's source: the runtime's description plus the diagnostics and the objects of the last
 * build (`problems`: the source's findings, shown first: no build sees them). Its version is the
 * model's hash and a count of the builds applied and of the findings seen, so a build that changes
 * only what the runtime does not hold (a not-ready endpoint, an annotation, a diagnostic) is a new
 * version too.
 */
export function debugModelSource(
  handle: Pick<DataPlaneHandle, 'describe'>,
  applier: Pick<Applier, 'latest'>,
  problems: () => readonly Diagnostic[] | null,
  options: ModelOptions,
): DebugModelSource {
  let seenApplied: Applied | null = null;
  let seenProblems: readonly Diagnostic[] | null = null;
  let count = 0;
  return {
    version() {
      const applied = applier.latest();
      if (applied.model === null) return null;
      const found = problems();
      if (applied !== seenApplied || found !== seenProblems) {
        seenApplied = applied;
        seenProblems = found;
        count++;
      }
      return `${applied.model.hash.slice(0, 16)}.${count}`;
    },
    async describe() {
      const runtime = await handle.describe();
      if (runtime === null) return null;
      const found = problems() ?? [];
      const applied = applier.latest();
      const diagnostics = found.length === 0 ? applied.diagnostics : [...found, ...applied.diagnostics];
      const builtFrom =
        applied.model === null ? null : { snapshot: applied.snapshot, model: applied.model, options };
      return describeModel(runtime, diagnostics, builtFrom);
    },
  };
}
