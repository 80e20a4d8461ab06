// The verdict on one Ingress about to be stored: the model decides, nothing is executed. The
// current snapshot with the Ingress in place of its previous version is built (only the Ingresses
// it can interact with: related.ts), and the Ingress is refused when the build drops it or any of
// its paths, or when ingress-nginx's overlap check would refuse it; what the build says about it
// without dropping anything comes back as warnings. Pure: the snapshot, the options and the time
// are given; the clock, when given, only measures.

import { annotationPolicyOf } from '../model/annotation-policy.ts';
import { buildModel } from '../model/build.ts';
import type { BuildCaches } from '../model/build-caches.ts';
import type { GlobalConfig } from '../model/configmap/global-config.ts';
import { type Diagnostic, DiagnosticsCollector } from '../model/diagnostics.ts';
import type { Ingress, ModelOptions, Snapshot } from '../model/index.ts';
import { checkIngress } from '../model/ingress.ts';
import { isOurIngress, ownedClassNames } from '../model/ingress-class.ts';
import { sortIngresses } from '../model/order.ts';
import { admissionFor } from '../model/verdicts.ts';
import { type OverlapEntry, overlapConflicts } from './overlap.ts';
import { createRelatedIndex, type RelatedIndex } from './related.ts';
import { type ScopeIndexes, scopedSnapshot } from './scope.ts';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface ReviewInput {
  operation: Operation;
  /** the Ingress as it would be stored (null for a DELETE) */
  object: Ingress | null;
  /** the Ingress as stored now (UPDATE, DELETE) */
  oldObject: Ingress | null;
  /** the request's namespace, for an object that carries none */
  namespace: string;
}

export interface ReviewContext {
  snapshot: Snapshot;
  options: ModelOptions;
  /** the index of the snapshot's Ingresses (relatedIndexFor); built here when absent */
  index?: RelatedIndex;
  /** the reviewer's own build caches (never the controller's: a build rotates them) */
  caches?: BuildCaches;
  /** the other kinds grouped for the build's scope, kept from review to review (scope.ts) */
  scope?: ScopeIndexes;
  /** ISO time: the creationTimestamp of an Ingress written without one (the API server sets it
   * before validating admission, so only a hand-made review lacks it) */
  now: string;
  /** only measures the phases (performance.now) */
  clock?: () => number;
  /** build every Ingress and object of the snapshot: what the selection is held to in tests */
  fullBuild?: boolean;
  /** --watch-namespace: an Ingress elsewhere is not this controller's (ingress-nginx skips it too) */
  watchNamespace?: string | null;
}

export interface Verdict {
  allowed: boolean;
  /** 'ignored': another class, a deletion or an Ingress being deleted; nothing was built */
  outcome: 'ignored' | 'reviewed';
  /** why it is refused, one entry per reason */
  reasons: string[];
  /** what the build found that drops nothing */
  warnings: string[];
  /** our Ingresses in the snapshot (ingress-nginx: the Ingresses it renders) */
  ingresses: number;
  /** the Ingresses built with it, itself included (ingress-nginx: the Ingresses it tests) */
  tested: number;
  /** milliseconds selecting the Ingresses to build, and building them */
  selectMs: number;
  buildMs: number;
}

const IGNORED = (ingresses: number): Verdict => ({
  allowed: true,
  outcome: 'ignored',
  reasons: [],
  warnings: [],
  ingresses,
  tested: 0,
  selectMs: 0,
  buildMs: 0,
});

/** The index for a snapshot: the previous one while the Ingresses and IngressClasses are the same
 * lists (the store hands out the same arrays until one of them changes), patched when only the
 * Ingresses changed. */
export function relatedIndexFor(
  snapshot: Snapshot,
  options: ModelOptions,
  previous: RelatedIndex | null,
): RelatedIndex {
  if (previous !== null && previous.classes === snapshot.ingressClasses) {
    return previous.ingresses === snapshot.ingresses ? previous : previous.patched(snapshot.ingresses);
  }
  return createRelatedIndex(snapshot.ingresses, snapshot.ingressClasses, options);
}

/** The candidate as the build should see it: its namespace, and a creation time. */
function prepare(input: ReviewInput, object: Ingress, now: string): Ingress {
  const metadata = object.metadata ?? {};
  const created = metadata.creationTimestamp ?? input.oldObject?.metadata?.creationTimestamp ?? now;
  const namespace = metadata.namespace ?? input.namespace;
  if (metadata.namespace === namespace && metadata.creationTimestamp === created) return object;
  return { ...object, metadata: { ...metadata, namespace, creationTimestamp: created } };
}

const describe = (d: Pick<Diagnostic, 'code' | 'message'>): string => `${d.code}: ${d.message}`;

export function reviewIngress(input: ReviewInput, context: ReviewContext): Verdict {
  const { snapshot, options } = context;
  const clock = context.clock ?? (() => 0);
  const index = context.index ?? createRelatedIndex(snapshot.ingresses, snapshot.ingressClasses, options);
  const object = input.object;
  // an Ingress being deleted is skipped as ingress-nginx skips it (finalizers may still update it)
  const deleting = (object?.metadata as { deletionTimestamp?: unknown } | undefined)?.deletionTimestamp;
  if (input.operation === 'DELETE' || object === null || deleting != null) {
    return IGNORED(index.ours);
  }
  const owned = ownedClassNames(snapshot.ingressClasses, options);
  if (!isOurIngress(object, owned, options)) return IGNORED(index.ours);
  const watched = context.watchNamespace ?? null;
  if (watched !== null && (object.metadata?.namespace ?? input.namespace) !== watched) {
    return IGNORED(index.ours);
  }

  const started = clock();
  const candidate = prepare(input, object, context.now);
  const { namespace, name } = candidate.metadata ?? {};
  const isCandidate = (ingress: Ingress) =>
    ingress.metadata?.namespace === namespace && ingress.metadata?.name === name;
  const related = context.fullBuild ? snapshot.ingresses : index.related(candidate);
  const others = related.filter((ingress) => !isCandidate(ingress));
  const ingresses = [...others, candidate];
  const selected = clock();
  const built = context.fullBuild
    ? { ...snapshot, ingresses }
    : scopedSnapshot(snapshot, ingresses, options, context.scope);
  const result = buildModel(built, options, context.caches);
  const done = clock();

  // what is refused and what is only a warning: the model's policy (verdicts.ts)
  const admission = admissionFor(result.diagnostics, { namespace: namespace ?? '', name: name ?? '' });
  const reasons = admission.denials.map(describe);
  const warnings = admission.warnings.map(describe);
  // the related Ingresses are all of our class; the whole snapshot is not
  const ours = context.fullBuild ? ingresses.filter((i) => isOurIngress(i, owned, options)) : ingresses;
  reasons.unshift(...overlapsOf(candidate, ours, options, result.model.config));
  return {
    allowed: reasons.length === 0,
    outcome: 'reviewed',
    reasons,
    warnings,
    // its previous version counted in the snapshot, replaced by this one
    ingresses: index.ours + (others.length === related.length ? 1 : 0),
    tested: ingresses.length,
    selectMs: selected - started,
    buildMs: done - selected,
  };
}

/** ingress-nginx's overlap messages, over the Ingresses the build can use (checked as it checks them). */
function overlapsOf(
  candidate: Ingress,
  ingresses: readonly Ingress[],
  options: ModelOptions,
  config: GlobalConfig,
): string[] {
  const policy = annotationPolicyOf(config);
  const entries: OverlapEntry[] = [];
  let mine: OverlapEntry | null = null;
  for (const ingress of sortIngresses(ingresses)) {
    const checked = checkIngress(ingress, options, new DiagnosticsCollector(), policy);
    if (checked === null) continue;
    const entry = { checked, ingress };
    entries.push(entry);
    if (ingress === candidate) mine = entry;
  }
  return mine === null ? [] : overlapConflicts(mine, entries, options.annotationsPrefix);
}
