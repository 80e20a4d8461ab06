// What `ingress-ts check` prints: per Ingress its verdict and findings, then the findings on the
// ConfigMaps (--configmap, --tcp/udp-services-configmap) and on anything else (the flags' Service
// and Secret, manifest files). A table for people, JSON for scripts. Messages are the diagnostics'
// own, which the build and the manifest source redact; they go through redactText once more here,
// so nothing printed carries a URL's credentials whatever produced it.

import { styleText } from 'node:util';
import {
  countVerdicts,
  type Diagnostic,
  type Finding,
  type IngressVerdict,
  redactText,
  type Verdict,
} from '../model/index.ts';

/** A finding as printed: `path` only where it names one. */
export interface PrintedFinding {
  code: string;
  severity: string;
  message: string;
  path?: string;
}

/** A finding on something other than an Ingress or a ConfigMap, said of which object. */
export interface OtherFinding extends PrintedFinding {
  kind: string;
  namespace: string;
  name: string;
  file?: string;
  line?: number | null;
}

/** The JSON output. `other` appears only when some finding is on neither an Ingress nor a ConfigMap. */
export interface CheckReport {
  ingresses: Array<{ namespace: string; name: string; verdict: Verdict; findings: PrintedFinding[] }>;
  configMap: { findings: Array<PrintedFinding & { namespace: string; name: string }> };
  other?: { findings: OtherFinding[] };
}

/** Exit status: 1 when an Ingress of the class is not served in full (differences are allowed). */
export function exitCodeOf(verdicts: readonly IngressVerdict[]): 0 | 1 {
  return verdicts.some((v) => v.verdict === 'partly-served' || v.verdict === 'not-served') ? 1 : 0;
}

function printed(finding: Pick<Finding, 'code' | 'severity' | 'message' | 'path'>): PrintedFinding {
  const out: PrintedFinding = {
    code: finding.code,
    severity: finding.severity,
    message: redactText(finding.message),
  };
  if (finding.path !== undefined) out.path = finding.path;
  return out;
}

export function checkReport(
  verdicts: readonly IngressVerdict[],
  diagnostics: readonly Diagnostic[],
): CheckReport {
  const report: CheckReport = {
    ingresses: verdicts.map(({ namespace, name, verdict, findings }) => ({
      namespace,
      name,
      verdict,
      findings: findings.map(printed),
    })),
    configMap: { findings: [] },
  };
  const other: OtherFinding[] = [];
  for (const d of diagnostics) {
    if (d.kind === 'Ingress') continue;
    if (d.kind === 'ConfigMap') {
      report.configMap.findings.push({ namespace: d.namespace, name: d.name, ...printed(d) });
      continue;
    }
    const finding: OtherFinding = { kind: d.kind, namespace: d.namespace, name: d.name, ...printed(d) };
    if (d.file !== undefined) {
      finding.file = d.file;
      finding.line = d.line ?? null;
    }
    other.push(finding);
  }
  if (other.length > 0) report.other = { findings: other };
  return report;
}

const VERDICT_STYLE: Record<Verdict, Parameters<typeof styleText>[0]> = {
  served: 'green',
  'served-with-differences': 'yellow',
  'partly-served': 'red',
  'not-served': ['red', 'bold'],
  ignored: 'gray',
};

const SEVERITY_STYLE: Record<string, Parameters<typeof styleText>[0]> = {
  error: 'red',
  warning: 'yellow',
  info: 'gray',
};

/** Colours only where `colour` says so (a terminal that did not ask for NO_COLOR). */
export function formatTable(report: CheckReport, from: string, colour: boolean): string {
  const paint = (style: Parameters<typeof styleText>[0], text: string) =>
    colour ? styleText(style, text, { validateStream: false }) : text;
  const lines: string[] = [`Checked ${from}.`, ''];
  const width = Math.max(20, ...report.ingresses.map((i) => `${i.namespace}/${i.name}`.length));
  const finding = (f: PrintedFinding, subject?: string) => {
    const where = [subject, f.path].filter((part) => part !== undefined && part !== '').join(' ');
    return `    ${paint(SEVERITY_STYLE[f.severity] ?? 'reset', f.severity.padEnd(7))} ${f.code}${where === '' ? '' : ` (${where})`}: ${f.message}`;
  };
  if (report.ingresses.length === 0) lines.push('No Ingresses found.');
  else lines.push(`${'INGRESS'.padEnd(width)}  VERDICT`);
  for (const ingress of report.ingresses) {
    lines.push(
      `${`${ingress.namespace}/${ingress.name}`.padEnd(width)}  ${paint(VERDICT_STYLE[ingress.verdict], ingress.verdict)}`,
    );
    for (const f of ingress.findings) lines.push(finding(f));
  }
  const maps = new Map<string, PrintedFinding[]>();
  for (const f of report.configMap.findings) {
    const key = `${f.namespace}/${f.name}`;
    maps.set(key, [...(maps.get(key) ?? []), f]);
  }
  for (const [name, findings] of maps) {
    lines.push('', `ConfigMap ${name}`);
    for (const f of findings) lines.push(finding(f));
  }
  if (report.other !== undefined) {
    lines.push('', 'Other objects');
    for (const f of report.other.findings) {
      const object = `${f.kind} ${f.namespace === '' ? f.name : `${f.namespace}/${f.name}`}`;
      const at = f.file === undefined ? '' : ` at ${f.file}${f.line == null ? '' : `:${f.line}`}`;
      lines.push(finding(f, f.kind === 'Manifest' ? at.slice(4) : `${object}${at}`));
    }
  }
  lines.push('', summaryLine(report));
  return `${lines.join('\n')}\n`;
}

function summaryLine(report: CheckReport): string {
  const counts = countVerdicts(report.ingresses);
  const total = report.ingresses.length;
  const parts = (Object.keys(counts) as Verdict[]).map((verdict) => `${counts[verdict]} ${verdict}`);
  return `${total} Ingress${total === 1 ? '' : 'es'}: ${parts.join(', ')}`;
}
