// ingress-nginx's overlap check (checkOverlap in its controller): a host and path of the Ingress
// under review that an NGINX location of another Ingress already serves is refused, unless exactly
// one of the two is a canary. Its location of a host, path and pathType belongs to the oldest
// Ingress that names it, canaries included (a canary older than its main owns the location), and
// the check compares paths whatever their pathType. The `canary` annotation is read as its
// parser reads it: missing, true, or anything else; two Ingresses conflict when both are true or
// both lack it (so `canary: "false"` on one of them passes, as in ingress-nginx).

import { parseGoBool } from '../model/annotations/group.ts';
import type { Ingress } from '../model/index.ts';
import type { CheckedIngress } from '../model/ingress.ts';

type CanaryMark = 'missing' | 'true' | 'other';

export interface OverlapEntry {
  checked: CheckedIngress;
  /** the Ingress as written, for its canary annotation */
  ingress: Ingress;
}

function canaryMark(ingress: Ingress, prefix: string): CanaryMark {
  const value = ingress.metadata?.annotations?.[`${prefix}/canary`];
  if (value === undefined) return 'missing';
  return parseGoBool(value) === true ? 'true' : 'other';
}

/**
 * The ingress-nginx messages for the candidate's host+path pairs already served by another
 * Ingress. `entries` are the Ingresses usable in the build (the candidate among them), oldest first.
 */
export function overlapConflicts(
  candidate: OverlapEntry,
  entries: readonly OverlapEntry[],
  prefix: string,
): string[] {
  /** host → path → owners (one per pathType: the oldest naming it) */
  const owners = new Map<string, Map<string, Map<string, OverlapEntry>>>();
  for (const entry of entries) {
    for (const rule of entry.checked.rules) {
      const host = rule.host === '' ? '_' : rule.host;
      let paths = owners.get(host);
      if (paths === undefined) {
        paths = new Map();
        owners.set(host, paths);
      }
      for (const { path, pathTypeAsWritten } of rule.paths) {
        let types = paths.get(path);
        if (types === undefined) {
          types = new Map();
          paths.set(path, types);
        }
        if (!types.has(pathTypeAsWritten)) types.set(pathTypeAsWritten, entry);
      }
    }
  }
  const { namespace, name } = candidate.checked.ref;
  const mine = canaryMark(candidate.ingress, prefix);
  const messages: string[] = [];
  for (const rule of candidate.checked.rules) {
    const host = rule.host === '' ? '_' : rule.host;
    for (const { path } of rule.paths) {
      for (const existing of owners.get(host)?.get(path)?.values() ?? []) {
        const ref = existing.checked.ref;
        if (ref.namespace === namespace && ref.name === name) continue;
        const theirs = canaryMark(existing.ingress, prefix);
        if ((mine === 'true' && theirs === 'true') || (mine === 'missing' && theirs === 'missing')) {
          const message = `host "${host}" and path "${path}" is already defined in ingress ${ref.namespace}/${ref.name}`;
          if (!messages.includes(message)) messages.push(message);
          // ingress-nginx stops at the first; every pair is listed here, once
          break;
        }
      }
    }
  }
  return messages;
}
