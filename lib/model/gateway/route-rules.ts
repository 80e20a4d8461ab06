// An HTTPRoute's rules as the data plane gets them: matches and filters with defaults, backends and
// mirrors resolved. Computed once per route, whatever its parents: what a rule does does not depend
// on the listener it is served on.

import type { BuildState } from '../build-state.ts';
import { checkedWeight, type RefProblem, resolveBackends, resolveServiceRef } from './backend-refs.ts';
import type { GrantIndex } from './grants.ts';
import type { HTTPBackendRef, HTTPRoute, HTTPRouteFilter, HTTPRouteRule } from './k8s.ts';
import { text } from './read.ts';
import { normalizeFilters, normalizeMatches, RuleProblem } from './rules.ts';
import type { ResolvedRule } from './types.ts';

export interface RouteRules {
  /** the rules served, spec order */
  rules: ResolvedRule[];
  /** `rule N: why`, for each rule left out */
  dropped: string[];
  /** why refs were refused (ResolvedRefs=False), first one decides the reason */
  refProblems: RefProblem[];
  /** the spec had rules (or the CRD's default one) */
  total: number;
}

const listOf = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

/** The CRD's default when spec.rules is absent: one rule, PathPrefix `/`, no backends. */
const DEFAULT_RULES: readonly HTTPRouteRule[] = Object.freeze([{}]);

export function resolveRouteRules(state: BuildState, grants: GrantIndex, route: HTTPRoute): RouteRules {
  const namespace = route.metadata?.namespace as string;
  const specRules =
    route.spec?.rules === undefined ? DEFAULT_RULES : listOf<HTTPRouteRule | null>(route.spec.rules);
  const out: RouteRules = { rules: [], dropped: [], refProblems: [], total: specRules.length };
  for (const [index, spec] of specRules.entries()) {
    const rule = spec ?? {};
    try {
      out.rules.push(resolveRule(state, grants, namespace, rule, index, out.refProblems));
    } catch (error) {
      if (!(error instanceof RuleProblem)) throw error;
      out.dropped.push(`rule ${index}: ${error.message}`);
    }
  }
  return out;
}

function resolveRule(
  state: BuildState,
  grants: GrantIndex,
  namespace: string,
  rule: HTTPRouteRule,
  index: number,
  refProblems: RefProblem[],
): ResolvedRule {
  const matches = normalizeMatches(rule);
  const refs = listOf<HTTPBackendRef | null>(rule.backendRefs);
  for (const ref of refs) {
    if (checkedWeight(ref?.weight) === null)
      throw new RuleProblem(`backendRef weight ${text(ref?.weight)} is not an integer 0-1000000`);
    if (listOf(ref?.filters).length > 0) throw new RuleProblem('backendRef filters are not supported');
  }
  const specFilters = listOf<HTTPRouteFilter | null>(rule.filters).map((f) => f ?? {});
  const extensions = specFilters.filter((f) => f.type === 'ExtensionRef');
  if (extensions.length > 0) {
    // an extension filter ingress-ts cannot run must not be skipped: the rule's requests answer 500
    const { group, kind, name } = extensions[0]?.extensionRef ?? {};
    refProblems.push({
      reason: 'InvalidKind',
      message: `rule ${index}: ExtensionRef ${text(group ?? '')}/${text(kind ?? '')} ${text(name ?? '')}: ingress-ts has no extension filters; the rule answers 500`,
    });
    return {
      index,
      matches,
      filters: [],
      backends: [{ kind: 'invalid', weight: 1, reason: 'InvalidKind' }],
      mirrors: [],
    };
  }
  const filters = normalizeFilters(specFilters, matches);
  const mirrors: ResolvedRule['mirrors'] = [];
  for (const filter of filters) {
    if (filter.type !== 'RequestMirror') continue;
    const mirror = filter.requestMirror ?? {};
    const percent = mirrorPercent(mirror);
    const resolved = resolveServiceRef(state, grants, namespace, mirror.backendRef ?? {});
    if (!resolved.ok) {
      refProblems.push({
        reason: resolved.problem.reason,
        message: `rule ${index}: mirror: ${resolved.problem.message}; not mirrored`,
      });
      continue;
    }
    mirrors.push({ namespace: resolved.namespace, name: resolved.name, port: resolved.port, percent });
  }
  const backends = resolveBackends(
    state,
    grants,
    namespace,
    refs.map((r) => r ?? {}),
    refProblems,
    index,
  );
  return { index, matches, filters, backends, mirrors };
}

/** percent, or fraction numerator/denominator (default denominator 100); default 100. */
function mirrorPercent(mirror: NonNullable<HTTPRouteFilter['requestMirror']>): number {
  if (typeof mirror.percent === 'number') return Math.min(100, Math.max(0, mirror.percent));
  const numerator = mirror.fraction?.numerator;
  if (typeof numerator === 'number') {
    const denominator = mirror.fraction?.denominator ?? 100;
    if (typeof denominator !== 'number' || denominator <= 0)
      throw new RuleProblem('mirror fraction denominator must be above 0');
    return Math.min(100, Math.max(0, (numerator / denominator) * 100));
  }
  return 100;
}
