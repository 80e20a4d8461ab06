// Session affinity of upstreams that several Ingresses share. ingress-nginx keeps one affinity per
// upstream (namespace-service-port) and fills it while it walks every path of every Ingress, oldest
// first: the affinity type and mode are set once, by the first Ingress that has a value for them,
// while the cookie name and attributes are overwritten by every Ingress with `affinity: cookie`, so
// the newest wins. ingress-ts combines them the same way, and says so on each Ingress whose settings
// lose, because the result (a cookie named by another team's Ingress) is otherwise a surprise.

import { upstreamName } from './backends.ts';
import { type BuildState, sameRef } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { CheckedIngress } from './ingress.ts';
import { objectKey } from './k8s.ts';
import type { Affinity, Upstream } from './types.ts';

type CookieField = Exclude<keyof Affinity, 'mode'>;

/** The annotation behind each cookie setting, in the order a message lists them. */
const COOKIE_ANNOTATIONS: ReadonlyArray<readonly [CookieField, string]> = [
  ['cookieName', 'session-cookie-name'],
  ['path', 'session-cookie-path'],
  ['domain', 'session-cookie-domain'],
  ['expires', 'session-cookie-expires'],
  ['maxAge', 'session-cookie-max-age'],
  ['secure', 'session-cookie-secure'],
  ['sameSite', 'session-cookie-samesite'],
  ['conditionalSameSiteNone', 'session-cookie-conditional-samesite-none'],
  ['changeOnFailure', 'session-cookie-change-on-failure'],
];

function shown(value: Affinity[CookieField]): string {
  if (value === null) return 'unset';
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * Sets `affinity` on every upstream that an Ingress with `affinity: cookie` uses (canaries excluded:
 * they inherit their main upstream's affinity later). A path that lost its host+path to an older
 * Ingress still counts, as in ingress-nginx, whose loop does not skip it.
 */
export function applySharedAffinity(
  ingresses: readonly CheckedIngress[],
  upstreams: Readonly<Record<string, Upstream>>,
  prefix: string,
  diagnostics: DiagnosticsCollector,
): void {
  // only Ingresses with affinity or an affinity-mode can change an upstream: the others are skipped,
  // so a cluster without affinity pays one check per Ingress
  const users = new Map<string, CheckedIngress[]>();
  for (const ingress of ingresses) {
    const { affinity, declaredMode } = ingress.annotations.ingress.affinity;
    if (affinity === null && declaredMode === null) continue;
    for (const rule of ingress.rules) {
      for (const path of rule.paths) {
        const name = upstreamName(path.backend);
        if (upstreams[name] === undefined) continue;
        let list = users.get(name);
        if (list === undefined) {
          list = [];
          users.set(name, list);
        }
        if (list.at(-1) !== ingress) list.push(ingress);
      }
    }
  }

  for (const [name, list] of users) {
    const upstream = upstreams[name]!;
    const sticky = list.filter((ingress) => ingress.annotations.ingress.affinity.affinity !== null);
    const cookieOwner = sticky.at(-1);
    if (cookieOwner === undefined) continue;
    const cookie = cookieOwner.annotations.ingress.affinity.affinity!;
    const modeOwner = list.find((ingress) => ingress.annotations.ingress.affinity.declaredMode !== null);
    const mode = modeOwner?.annotations.ingress.affinity.declaredMode ?? 'balanced';
    upstream.affinity = cookie.mode === mode ? cookie : { ...cookie, mode };

    const { namespace, name: service, port } = upstream.service;
    const where = `Service ${objectKey(namespace, service)} port ${port}`;
    for (const ingress of list) {
      const declared = ingress.annotations.ingress.affinity.declaredMode;
      if (modeOwner === undefined || ingress === modeOwner || declared === null || declared === mode)
        continue;
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'AFFINITY_CONFLICT',
        `annotation ${prefix}/affinity-mode=${JSON.stringify(declared)} has no effect on ${where}: the older Ingress ${objectKey(modeOwner.ref.namespace, modeOwner.ref.name)} also uses it and its affinity-mode ${JSON.stringify(mode)} applies (the oldest Ingress that sets one decides)`,
      );
    }
    for (const ingress of sticky) {
      if (ingress === cookieOwner) continue;
      const own = ingress.annotations.ingress.affinity.affinity!;
      const differences = COOKIE_ANNOTATIONS.filter(([field]) => own[field] !== cookie[field]).map(
        ([field, annotation]) => `${annotation} ${shown(cookie[field])} instead of ${shown(own[field])}`,
      );
      if (differences.length === 0) continue;
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'AFFINITY_CONFLICT',
        `the affinity cookie of ${where} follows the newer Ingress ${objectKey(cookieOwner.ref.namespace, cookieOwner.ref.name)}, which also uses it (the newest Ingress with affinity decides the cookie): ${differences.join(', ')}`,
      );
    }
  }
}

/**
 * Sticky upstreams, combined over the Ingresses sharing each one as ingress-nginx does; a sticky
 * canary (affinity-canary-behavior, default sticky) gets its main upstream's affinity.
 */
export function combineSharedAffinity(state: BuildState): void {
  const upstreamsByName = state.resolver.upstreams();
  applySharedAffinity(state.ingresses, upstreamsByName, state.options.annotationsPrefix, state.diagnostics);
  for (const server of [state.catchAll.server, ...state.drafts.values().map((d) => d.server)]) {
    for (const route of server.routes) {
      if (route.canary === null || route.backend.type !== 'upstream') continue;
      const main = upstreamsByName[route.backend.upstream]?.affinity ?? null;
      const canaryUpstream = upstreamsByName[route.canary.upstream];
      const canaryRef = route.canary.ingress;
      const behavior = state.canaries.find((c) => sameRef(c.ref, canaryRef))?.annotations.ingress.affinity
        .canaryBehavior;
      if (
        main !== null &&
        canaryUpstream !== undefined &&
        canaryUpstream.affinity === null &&
        behavior !== 'legacy'
      ) {
        canaryUpstream.affinity = main;
      }
    }
  }
}
