// /debug/model on the healthz port: the live configuration as plain JSON — hosts → routes →
// backends with their endpoints and balancer, the certificate each host is served with, and the
// diagnostics of the last build grouped per object (what `kubectl ingress-nginx backends` shows,
// for everything). The runtime's part comes from the data plane (DataPlaneHandle.describe, produced
// where the runtime lives: lib/dataplane/describe/); the controller adds what only it knows, the
// diagnostics of its build and of its source. Never includes private keys or credentials: the status
// port is reachable from the cluster network, so URLs lose their userinfo and query values and
// ConfigMap header values are hidden (model/redact.ts).

import type { RuntimeDescription } from './dataplane/describe/types.ts';
import { type Diagnostic, redactText, type Severity } from './model/index.ts';

export type * from './dataplane/describe/types.ts';

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

/** The /debug/model answer: `runtime` as the data plane described it, with `diagnostics` grouped per object. */
export function describeModel(
  runtime: RuntimeDescription,
  diagnostics: readonly Diagnostic[],
): ModelDescription {
  const { config, upstreamDefaults, ...served } = runtime;
  // the order readers know: what is served, then the findings, then the settings
  return { ...served, diagnostics: groupDiagnostics(diagnostics), config, upstreamDefaults };
}
