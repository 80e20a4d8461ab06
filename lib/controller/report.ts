// Reporting what was applied: Ingress status and Events (the leader, Kubernetes mode), metrics,
// the access-log settings of the new model, and the diagnostics as log lines, each logged once
// while it persists (a diagnostic still there after the next build is not logged again).

import type { Logger } from '../log.ts';
import type { ControllerMetrics } from '../metrics/controller.ts';
import type { Diagnostic } from '../model/index.ts';
import type { Reporting } from '../source/kube/reporting.ts';
import type { AppliedChange } from './apply.ts';
import type { Traffic } from './traffic.ts';

export const levelOf = (d: Diagnostic) =>
  d.severity === 'error' ? 'error' : d.severity === 'warning' ? 'warn' : 'info';

const diagnosticKey = (d: Diagnostic) => `${d.kind}/${d.namespace}/${d.name}/${d.code}/${d.message}`;

export interface ReporterOptions {
  log: Logger;
  metrics: ControllerMetrics | null;
  traffic: Traffic;
  /** Kubernetes mode: status and Events; null in standalone mode */
  reporting: Reporting | null;
}

export interface Reporter {
  applied(change: AppliedChange): void;
  /** a build or swap failed: the previous configuration keeps serving */
  failed(error: unknown): void;
}

/** Logs the diagnostics not logged after the previous build; returns the keys of this build's. */
function logNewDiagnostics(
  log: Logger,
  diagnostics: readonly Diagnostic[],
  reported: Set<string>,
): Set<string> {
  const current = new Set<string>();
  for (const diagnostic of diagnostics) {
    const key = diagnosticKey(diagnostic);
    current.add(key);
    if (reported.has(key)) continue;
    log[levelOf(diagnostic)](
      { object: `${diagnostic.kind} ${diagnostic.namespace}/${diagnostic.name}`, code: diagnostic.code },
      diagnostic.message,
    );
  }
  return current;
}

export function createReporter(options: ReporterOptions): Reporter {
  const { log, metrics, traffic, reporting } = options;
  let reported = new Set<string>();
  return {
    applied({ snapshot, model, diagnostics, gatewayStatus, swap, buildMs, swapMs }) {
      reporting?.afterBuild(snapshot, diagnostics, gatewayStatus);
      metrics?.applied({
        routesHash: model.routesHash,
        kind: swap.kind,
        buildSeconds: buildMs / 1000,
        swapSeconds: swapMs / 1000,
        diagnostics,
        model,
      });
      traffic.configure(model.config.accessLog);
      reported = logNewDiagnostics(log, diagnostics, reported);
      if (swap.kind !== 'unchanged') {
        log.info(
          {
            swap: swap.kind,
            hosts: model.servers.length,
            upstreams: Object.keys(model.upstreams).length,
            buildMs: Math.round(buildMs),
            swapMs: Math.round(swapMs),
          },
          'configuration applied',
        );
      } else {
        // ingress-nginx: "No configuration change detected, skipping backend reload" (at -v=2)
        log.debug({ buildMs: Math.round(buildMs) }, 'no configuration change; nothing swapped');
      }
    },
    failed(error) {
      metrics?.failed();
      log.error({ err: error }, 'building the configuration failed; the previous one keeps serving');
    },
  };
}
