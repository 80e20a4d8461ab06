// Listener and route hostnames. A wildcard `*.example.com` is a suffix match of at least one label
// (`a.example.com`, `a.b.example.com`, never `example.com`), unlike an Ingress host's single-label
// wildcard. A route served on a listener answers the intersection of the two, each name narrowed to
// the more specific of the pair; route hostnames outside the listener's are ignored.

import { hostProblem } from '../hosts.ts';

/** Why a listener or route hostname is not one the Gateway API accepts, or null. Lower-cased input. */
export function hostnameProblem(hostname: string): string | null {
  if (hostname === '') return 'empty';
  return hostProblem(hostname);
}

/** The names both `a` and `b` match, as one name (the more specific), or null when none. */
export function intersectHostname(a: string, b: string): string | null {
  if (a === b) return a;
  const aWild = a.startsWith('*.');
  const bWild = b.startsWith('*.');
  if (aWild && bWild) {
    // `.example.com` and `.a.example.com`: the longer suffix is the narrower set
    if (b.endsWith(a.slice(1))) return b;
    if (a.endsWith(b.slice(1))) return a;
    return null;
  }
  if (aWild) return b.endsWith(a.slice(1)) ? b : null;
  if (bWild) return a.endsWith(b.slice(1)) ? a : null;
  return null;
}

/**
 * The hostnames a route answers on a listener, lower-cased, in the route's order without repeats:
 * [] means every host (neither side names one); null means none (both name some, nothing intersects).
 * `routeHostnames` are the valid ones of the route; `routeNamesSome` says whether the route's spec
 * listed one at all (a route whose every hostname is invalid must not become a catch-all).
 */
export function effectiveHostnames(
  listenerHostname: string | null,
  routeHostnames: readonly string[],
  routeNamesSome: boolean,
): string[] | null {
  if (!routeNamesSome) return listenerHostname === null ? [] : [listenerHostname];
  const out: string[] = [];
  for (const hostname of routeHostnames) {
    const name = listenerHostname === null ? hostname : intersectHostname(listenerHostname, hostname);
    if (name !== null && !out.includes(name)) out.push(name);
  }
  return out.length === 0 ? null : out;
}
