// What an HTTPRoute rule adds to the routes it becomes, apart from the path: the location settings
// every HTTPRoute route shares, and the rule's filters in the model's terms (header edits with
// lower-cased names, the redirect with its default status, the rewrite).

import { DEFAULT_LOCATION_ANNOTATIONS, type LocationAnnotations } from '../annotations/index.ts';
import type { GatewayRouteMatch, HeaderEdits, PathModifier } from '../types.ts';
import type { HTTPHeaderFilter, HTTPPathModifier, HTTPRouteFilter } from './k8s.ts';

/**
 * The location settings of every HTTPRoute route and of a host only HTTPRoutes name: the ConfigMap's
 * defaults (the data plane reads them from `Model.config`), except that a Gateway listener never
 * redirects HTTP to HTTPS on its own: ssl-redirect and force-ssl-redirect are off whatever the
 * ConfigMap says. One object, so the content hash serialises it once.
 */
export const GATEWAY_LOCATION_ANNOTATIONS: LocationAnnotations = {
  ...DEFAULT_LOCATION_ANNOTATIONS,
  sslRedirect: { ...DEFAULT_LOCATION_ANNOTATIONS.sslRedirect, sslRedirect: false, forceSslRedirect: false },
};

/** The filter part of a GatewayRouteMatch: the same for every host and match of one rule. */
export type RuleFilters = Pick<
  GatewayRouteMatch,
  'requestHeaders' | 'responseHeaders' | 'redirect' | 'rewrite'
>;

const NO_FILTERS: RuleFilters = {
  requestHeaders: null,
  responseHeaders: null,
  redirect: null,
  rewrite: null,
};

const listOf = <T>(value: T[] | undefined): T[] => (Array.isArray(value) ? value : []);

function headerEditsOf(filter: HTTPHeaderFilter | undefined): HeaderEdits | null {
  if (filter === undefined || filter === null) return null;
  const pairs = (list: HTTPHeaderFilter['set']) =>
    listOf(list).flatMap((header) =>
      typeof header?.name === 'string'
        ? [{ name: header.name.toLowerCase(), value: typeof header.value === 'string' ? header.value : '' }]
        : [],
    );
  return {
    set: pairs(filter.set),
    add: pairs(filter.add),
    remove: listOf(filter.remove).flatMap((name) => (typeof name === 'string' ? [name.toLowerCase()] : [])),
  };
}

function pathModifierOf(modifier: HTTPPathModifier | undefined): PathModifier | null {
  if (modifier === undefined || modifier === null) return null;
  if (modifier.type === 'ReplaceFullPath' && typeof modifier.replaceFullPath === 'string') {
    return { type: 'ReplaceFullPath', value: modifier.replaceFullPath };
  }
  if (modifier.type === 'ReplacePrefixMatch' && typeof modifier.replacePrefixMatch === 'string') {
    return { type: 'ReplacePrefixMatch', value: modifier.replacePrefixMatch };
  }
  return null;
}

const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * A rule's filters (resolveGateways kept only supported ones, at most one of each type). RequestMirror
 * is not here: its backends are resolved with the rule's (ResolvedRule.mirrors).
 */
export function ruleFiltersOf(filters: readonly HTTPRouteFilter[]): RuleFilters {
  if (filters.length === 0) return NO_FILTERS;
  const out: RuleFilters = { ...NO_FILTERS };
  for (const filter of filters) {
    switch (filter?.type) {
      case 'RequestHeaderModifier':
        out.requestHeaders = headerEditsOf(filter.requestHeaderModifier);
        break;
      case 'ResponseHeaderModifier':
        out.responseHeaders = headerEditsOf(filter.responseHeaderModifier);
        break;
      case 'RequestRedirect': {
        const redirect = filter.requestRedirect ?? {};
        out.redirect = {
          scheme: stringOrNull(redirect.scheme),
          hostname: stringOrNull(redirect.hostname),
          port: typeof redirect.port === 'number' ? redirect.port : null,
          path: pathModifierOf(redirect.path),
          // the CRD's default, which neither the fake API server nor a manifest applies
          statusCode: typeof redirect.statusCode === 'number' ? redirect.statusCode : 302,
        };
        break;
      }
      case 'URLRewrite': {
        const rewrite = filter.urlRewrite ?? {};
        out.rewrite = { hostname: stringOrNull(rewrite.hostname), path: pathModifierOf(rewrite.path) };
        break;
      }
      default:
        break;
    }
  }
  return out;
}

type Pairs = ReadonlyArray<{ name: string; value: string }>;
const samePairs = (a: Pairs, b: Pairs): boolean =>
  a === b || (a.length === b.length && a.every((x, i) => x.name === b[i]?.name && x.value === b[i]?.value));
const sameStrings = (a: readonly string[], b: readonly string[]): boolean =>
  a === b || (a.length === b.length && a.every((x, i) => x === b[i]));
const sameEdits = (a: HeaderEdits | null, b: HeaderEdits | null): boolean =>
  a === b ||
  (a !== null &&
    b !== null &&
    samePairs(a.set, b.set) &&
    samePairs(a.add, b.add) &&
    sameStrings(a.remove, b.remove));
const samePath = (a: PathModifier | null, b: PathModifier | null): boolean =>
  a === b || (a !== null && b !== null && a.type === b.type && a.value === b.value);

/**
 * Whether two Gateway matches are equal, field by field: the content hash compares a route with the
 * last build's on every build (each build makes new match objects), so without serialising them.
 */
export function sameGatewayMatch(
  a: GatewayRouteMatch | undefined,
  b: GatewayRouteMatch | undefined,
): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const { redirect: x, rewrite: r } = a;
  const { redirect: y, rewrite: s } = b;
  return (
    a.rule === b.rule &&
    a.protocols === b.protocols &&
    a.listenerPorts.http === b.listenerPorts.http &&
    a.listenerPorts.https === b.listenerPorts.https &&
    a.method === b.method &&
    samePairs(a.headers, b.headers) &&
    samePairs(a.queryParams, b.queryParams) &&
    sameEdits(a.requestHeaders, b.requestHeaders) &&
    sameEdits(a.responseHeaders, b.responseHeaders) &&
    (x === y ||
      (x !== null &&
        y !== null &&
        x.scheme === y.scheme &&
        x.hostname === y.hostname &&
        x.port === y.port &&
        x.statusCode === y.statusCode &&
        samePath(x.path, y.path))) &&
    (r === s || (r !== null && s !== null && r.hostname === s.hostname && samePath(r.path, s.path))) &&
    (a.mirrors === b.mirrors ||
      (a.mirrors.length === b.mirrors.length &&
        a.mirrors.every(
          (m, i) => m.upstream === b.mirrors[i]?.upstream && m.percent === b.mirrors[i]?.percent,
        )))
  );
}
