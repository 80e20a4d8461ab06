// What a build did to each Ingress, read from its diagnostics: the findings on the Ingress, each with
// its effect, and one verdict. `ingress-ts check` prints these; the admission webhook denies an
// Ingress whose findings drop anything and warns about the rest. Pure, like the rest of the model.
//
// A verdict is decided by the worst effect among the findings:
//   drops-ingress           the Ingress is not used at all                → not-served
//   denies-paths            its paths answer 503/502 by configuration
//                           (an auth, a client-certificate CA, a backend
//                           certificate or custom headers it cannot use)  → not-served; partly-served when
//                                                                           only some of its hosts
//   drops-part              a rule, path, tls entry, alias or canary
//                           route is left out                             → partly-served; not-served when
//                                                                           nothing of it is left in the model
//   differs                 served, but not all as written, or not as
//                           ingress-nginx would (an annotation not
//                           supported yet, the default certificate, a
//                           missing Service answering 503 as there)       → served-with-differences
//   none                    nothing changes (infos; what ingress-nginx
//                           ignores too)                                  → served

import type { BuildResult } from './build.ts';
import type { Diagnostic, DiagnosticCode, Severity } from './diagnostics.ts';
import { isOurIngress, ownedClassNames } from './ingress-class.ts';
import type { Ingress, IngressClass } from './k8s.ts';
import type { ModelOptions } from './options.ts';
import type { Model, ObjectRef } from './types.ts';

export type Effect = 'drops-ingress' | 'denies-paths' | 'drops-part' | 'differs' | 'none';

export type Verdict = 'served' | 'served-with-differences' | 'partly-served' | 'not-served' | 'ignored';

/** What the build said about one Ingress, with what it does to it. */
export interface Finding {
  code: DiagnosticCode;
  severity: Severity;
  message: string;
  effect: Effect;
  /** the rule's host, where the finding is about one host ('' for a rule without one) */
  host?: string;
  /** the path as written, where the finding is about one path */
  path?: string;
}

export interface IngressVerdict {
  namespace: string;
  name: string;
  verdict: Verdict;
  findings: Finding[];
}

type EffectRule = Effect | ((d: Pick<Diagnostic, 'severity' | 'scope'>) => Effect);

/**
 * The effect of every code. The codes that never land on an Ingress (ConfigMap keys, the default
 * backend and certificate flags, TCP/UDP entries, manifest files) have one too, for the findings
 * `ingress-ts check` shows apart.
 */
export const EFFECTS = {
  // a malformed rule or tls entry is left out; anything else malformed drops the Ingress
  INGRESS_INVALID: (d) => (d.scope === undefined ? 'drops-ingress' : 'drops-part'),
  INGRESS_EMPTY: 'none',
  HOST_INVALID: 'drops-part',
  PATH_INVALID: 'drops-part',
  PATH_TYPE_INVALID: 'drops-part',
  BACKEND_INVALID: 'drops-part',
  PATH_CONFLICT: 'drops-part',
  DEFAULT_BACKEND_CONFLICT: 'drops-part',
  CATCH_ALL_DISABLED: 'drops-ingress',
  SERVER_ANNOTATION_CONFLICT: 'differs',
  ALIAS_CONFLICT: 'drops-part',
  TLS_CONFLICT: 'drops-part',
  TLS_SECRET_NOT_FOUND: 'differs',
  TLS_SECRET_INVALID: 'differs',
  TLS_HOST_MISMATCH: 'differs',
  TLS_NO_SECRET_FOR_HOST: 'none',
  SERVICE_NOT_FOUND: 'differs',
  SERVICE_PORT_NOT_FOUND: 'differs',
  ENDPOINTS_NONE: 'differs',
  EXTERNAL_NAME_INVALID: 'differs',
  EXTERNAL_NAME_DISABLED: 'differs',
  SERVICE_UPSTREAM_NO_CLUSTER_IP: 'differs',
  DEFAULT_BACKEND_SERVICE_UNUSABLE: 'differs',
  DEFAULT_CERTIFICATE_UNUSABLE: 'differs',
  // error: the Ingress is dropped; warning: the default is used
  ANNOTATION_INVALID: (d) => (d.severity === 'error' ? 'drops-ingress' : 'differs'),
  ANNOTATION_UNSUPPORTED: 'differs',
  ANNOTATION_UNKNOWN: 'none',
  ANNOTATION_NOT_APPLICABLE: 'none',
  ANNOTATION_VALUE_BLOCKED: 'drops-ingress',
  ANNOTATION_TOO_RISKY: 'drops-ingress',
  BACKEND_PROTOCOL_UNSUPPORTED: 'denies-paths',
  SNIPPET_REFUSED: 'drops-ingress',
  SNIPPET_READ: 'none',
  CONFIGMAP_NOT_FOUND: 'differs',
  CONFIG_KEY_UNSUPPORTED: 'differs',
  CONFIG_KEY_UNKNOWN: 'none',
  CONFIG_KEY_IGNORED: 'differs',
  CONFIG_KEY_NOT_APPLICABLE: 'none',
  CONFIG_VALUE_INVALID: 'differs',
  CANARY_NOT_ENABLED: 'differs',
  CANARY_NO_MAIN: 'drops-part',
  AUTH_UNAVAILABLE: 'denies-paths',
  CANARY_CONFLICT: 'drops-part',
  CANARY_PATTERN_INVALID: 'differs',
  PATH_REGEX_INVALID: 'drops-part',
  AUTH_TLS_SECRET_NOT_FOUND: 'denies-paths',
  AUTH_TLS_SECRET_INVALID: 'denies-paths',
  AUTH_TLS_CROSS_NAMESPACE: 'denies-paths',
  PROXY_SSL_UNAVAILABLE: 'denies-paths',
  PROXY_SSL_NOT_VERIFIED: 'differs',
  CUSTOM_HEADERS_DENIED: 'denies-paths',
  STREAM_ENTRY_INVALID: 'drops-part',
  STREAM_PORT_CONFLICT: 'drops-part',
  STREAM_SERVICE_UNUSABLE: 'differs',
  SSL_PASSTHROUGH_DISABLED: 'differs',
  AFFINITY_CONFLICT: 'differs',
  WWW_REDIRECT_SKIPPED: 'none',
  MANIFEST_INVALID: 'drops-ingress',
  MANIFEST_UNREADABLE: 'drops-part',
  // an extensions/v1beta1 Ingress in a file: it is not read at all
  MANIFEST_API_VERSION_IGNORED: 'drops-ingress',
  // a second definition of a name: the first is used
  MANIFEST_DUPLICATE: 'differs',
  // Gateway API objects: their status says what happened
  GATEWAY_INVALID: 'drops-part',
  HTTPROUTE_INVALID: 'drops-part',
  HTTPROUTE_BACKEND_INVALID: 'denies-paths',
  HTTPROUTE_PATH_TAKEN: 'drops-part',
} as const satisfies Record<DiagnosticCode, EffectRule>;

export function effectOf(d: Pick<Diagnostic, 'code' | 'severity' | 'scope'>): Effect {
  const rule: EffectRule = EFFECTS[d.code];
  return typeof rule === 'function' ? rule(d) : rule;
}

export function findingOf(d: Diagnostic): Finding {
  const finding: Finding = { code: d.code, severity: d.severity, message: d.message, effect: effectOf(d) };
  if (d.host !== undefined) finding.host = d.host;
  if (d.path !== undefined) finding.path = d.path;
  return finding;
}

/** The findings on one Ingress, in the order the build found them. */
export function findingsFor(diagnostics: readonly Diagnostic[], ref: ObjectRef): Finding[] {
  const found: Finding[] = [];
  for (const d of diagnostics) {
    if (d.kind === 'Ingress' && d.namespace === ref.namespace && d.name === ref.name)
      found.push(findingOf(d));
  }
  return found;
}

/**
 * The verdict of an Ingress of the class from its findings. `hosts` (the hosts of its rules) tells a
 * denial on some of its hosts from one on all of them; without it, a host's denial counts as partial.
 */
export function verdictOf(
  findings: readonly Finding[],
  hosts?: readonly string[],
): Exclude<Verdict, 'ignored'> {
  let verdict: Exclude<Verdict, 'ignored'> = 'served';
  const deniedHosts = new Set<string>();
  for (const finding of findings) {
    switch (finding.effect) {
      case 'drops-ingress':
        return 'not-served';
      case 'denies-paths':
        if (finding.host === undefined) return 'not-served';
        deniedHosts.add(finding.host);
        verdict = 'partly-served';
        break;
      case 'drops-part':
        verdict = 'partly-served';
        break;
      case 'differs':
        if (verdict === 'served') verdict = 'served-with-differences';
        break;
      case 'none':
        break;
    }
  }
  if (hosts !== undefined && hosts.length > 0 && hosts.every((host) => deniedHosts.has(host))) {
    return 'not-served';
  }
  return verdict;
}

/** What an admission webhook answers for these findings: denied when anything is dropped or denied. */
export interface Admission {
  allowed: boolean;
  /** the reasons for a denial: the findings that drop the Ingress or a part, or deny its paths */
  denials: Finding[];
  /** findings that drop nothing but are worth a warning (differences, and warnings with no effect
   * such as an annotation name ingress-nginx does not know) */
  warnings: Finding[];
}

/**
 * Findings an admission webhook warns about instead of refusing, though they drop a part or deny paths:
 * - they depend on objects that may be applied after the Ingress (its auth, client-CA, backend-TLS
 *   Secret or custom-headers ConfigMap; the main Ingress of a canary), so refusing them would make
 *   `kubectl apply -f dir/` depend on file order;
 * - ingress-nginx's webhook admits them too: a location it denies (503) is built and admitted, and an
 *   alias or tls entry an older Ingress holds is not one of the overlaps it checks.
 * A path left out, a route two canaries claim, an Ingress or a value that cannot be used is refused.
 */
export const ADMITTED_WITH_WARNING: ReadonlySet<DiagnosticCode> = new Set<DiagnosticCode>([
  'AUTH_UNAVAILABLE',
  'AUTH_TLS_SECRET_NOT_FOUND',
  'AUTH_TLS_SECRET_INVALID',
  'AUTH_TLS_CROSS_NAMESPACE',
  'PROXY_SSL_UNAVAILABLE',
  'CUSTOM_HEADERS_DENIED',
  'CANARY_NO_MAIN',
  'ALIAS_CONFLICT',
  'TLS_CONFLICT',
]);

export function admissionOf(findings: readonly Finding[]): Admission {
  const denials: Finding[] = [];
  const warnings: Finding[] = [];
  for (const finding of findings) {
    const { effect } = finding;
    if (effect === 'none') {
      if (finding.severity !== 'info') warnings.push(finding);
    } else if (effect === 'differs' || ADMITTED_WITH_WARNING.has(finding.code)) {
      warnings.push(finding);
    } else {
      denials.push(finding);
    }
  }
  return { allowed: denials.length === 0, denials, warnings };
}

/** The admission answer for one Ingress of a build: one call for the webhook. */
export function admissionFor(diagnostics: readonly Diagnostic[], ref: ObjectRef): Admission {
  return admissionOf(findingsFor(diagnostics, ref));
}

type ClassOptions = Pick<
  ModelOptions,
  'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass'
>;

export interface VerdictInput {
  /** every Ingress read, of any class */
  ingresses: readonly Ingress[];
  ingressClasses: readonly IngressClass[];
  /** the build's result on those objects */
  result: Pick<BuildResult, 'diagnostics' | 'model'>;
  options: ClassOptions;
  /** findings of the source (a manifest file's Ingress it did not read), before the build's */
  sourceDiagnostics?: readonly Diagnostic[];
}

/**
 * Every Ingress with its verdict, sorted by namespace and name: `ignored` for another class (no
 * findings: the build did not look at it), else from its findings. An Ingress only the source's
 * findings name (one it did not read) is listed too.
 */
export function ingressVerdicts(input: VerdictInput): IngressVerdict[] {
  const { result } = input;
  const diagnostics =
    input.sourceDiagnostics === undefined || input.sourceDiagnostics.length === 0
      ? result.diagnostics
      : [...input.sourceDiagnostics, ...result.diagnostics];
  const byIngress = groupByIngress(diagnostics);
  const owned = ownedClassNames(input.ingressClasses, input.options);
  const served = ingressesInModel(result.model);
  const verdicts = new Map<string, IngressVerdict>();
  for (const ingress of input.ingresses) {
    const namespace = stringOr(ingress.metadata?.namespace);
    const name = stringOr(ingress.metadata?.name);
    const key = `${namespace}/${name}`;
    if (verdicts.has(key)) continue;
    if (!isOurIngress(ingress, owned, input.options)) {
      verdicts.set(key, { namespace, name, verdict: 'ignored', findings: [] });
      continue;
    }
    const findings = (byIngress.get(key) ?? []).map(findingOf);
    let verdict = verdictOf(findings, hostsOf(ingress));
    // every part that was not dropped was left out some other way: nothing of it is served
    if (verdict === 'partly-served' && !served.has(key)) verdict = 'not-served';
    verdicts.set(key, { namespace, name, verdict, findings });
  }
  for (const [key, found] of byIngress) {
    if (verdicts.has(key)) continue;
    const first = found[0] as Diagnostic;
    const findings = found.map(findingOf);
    verdicts.set(key, {
      namespace: first.namespace,
      name: first.name,
      verdict: verdictOf(findings),
      findings,
    });
  }
  return [...verdicts.values()].sort((a, b) =>
    a.namespace === b.namespace ? compare(a.name, b.name) : compare(a.namespace, b.namespace),
  );
}

/** How many Ingresses have each verdict. */
export function countVerdicts(verdicts: ReadonlyArray<{ verdict: Verdict }>): Record<Verdict, number> {
  const counts: Record<Verdict, number> = {
    served: 0,
    'served-with-differences': 0,
    'partly-served': 0,
    'not-served': 0,
    ignored: 0,
  };
  for (const { verdict } of verdicts) counts[verdict]++;
  return counts;
}

function groupByIngress(diagnostics: readonly Diagnostic[]): Map<string, Diagnostic[]> {
  const grouped = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) {
    if (d.kind !== 'Ingress') continue;
    const key = `${d.namespace}/${d.name}`;
    const list = grouped.get(key);
    if (list === undefined) grouped.set(key, [d]);
    else list.push(d);
  }
  return grouped;
}

/** `namespace/name` of every Ingress some route, default route, canary or passthrough comes from. */
function ingressesInModel(model: Model): Set<string> {
  const found = new Set<string>();
  // an HTTPRoute's route names the HTTPRoute (kind set), never an Ingress of the same name
  const add = (ref: ObjectRef | null | undefined) => {
    if (ref != null && ref.kind === undefined) found.add(`${ref.namespace}/${ref.name}`);
  };
  for (const server of [model.catchAll, ...model.servers]) {
    add(server.defaultRoute.ingress);
    add(server.defaultRoute.canary?.ingress);
    add(server.passthrough?.ingress);
    for (const route of server.routes) {
      add(route.ingress);
      add(route.canary?.ingress);
    }
  }
  return found;
}

function hostsOf(ingress: Ingress): string[] {
  const rules = ingress.spec?.rules;
  if (!Array.isArray(rules)) return [];
  const hosts = new Set<string>();
  for (const rule of rules) {
    const host: unknown = rule?.host;
    hosts.add(typeof host === 'string' ? host.toLowerCase() : '');
  }
  return [...hosts];
}

function stringOr(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
