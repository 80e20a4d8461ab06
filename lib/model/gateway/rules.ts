// An HTTPRoute rule's matches and filters with the CRD's defaults applied (the fake API server and
// standalone manifests apply none), checked for what ingress-ts serves. A rule ingress-ts cannot
// serve as written (a RegularExpression match, an unknown filter, RequestRedirect with URLRewrite) is
// dropped: requests fall through to the other rules, and the route reports PartiallyInvalid, or is
// not accepted when no rule is left.

import { hostnameProblem } from './hostnames.ts';
import type {
  HTTPHeader,
  HTTPHeaderFilter,
  HTTPHeaderMatch,
  HTTPPathModifier,
  HTTPRouteFilter,
  HTTPRouteMatch,
  HTTPRouteRule,
} from './k8s.ts';
import { text } from './read.ts';
import type { ResolvedRule } from './types.ts';

export type RuleMatch = ResolvedRule['matches'][number];

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);
/** served by the data plane; RequestMirror may repeat, the others at most once per rule */
const FILTER_TYPES = new Set([
  'RequestHeaderModifier',
  'ResponseHeaderModifier',
  'RequestRedirect',
  'URLRewrite',
  'RequestMirror',
]);

export class RuleProblem extends Error {}

const listOf = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

/** The rule's matches with defaults; throws RuleProblem when one cannot be served. */
export function normalizeMatches(rule: HTTPRouteRule): RuleMatch[] {
  const matches = listOf<HTTPRouteMatch | null>(rule.matches);
  if (matches.length === 0) return [defaultMatch()];
  return matches.map((match) => normalizeMatch(match ?? {}));
}

const defaultMatch = (): RuleMatch => ({
  path: { type: 'PathPrefix', value: '/' },
  headers: [],
  queryParams: [],
  method: null,
});

function normalizeMatch(match: HTTPRouteMatch): RuleMatch {
  const type = match.path?.type ?? 'PathPrefix';
  const value = match.path?.value ?? '/';
  if (type !== 'Exact' && type !== 'PathPrefix') {
    throw new RuleProblem(`path match type ${text(type)} is not supported (Exact and PathPrefix are)`);
  }
  if (typeof value !== 'string' || !value.startsWith('/') || value.includes('//') || /[\s#?]/.test(value)) {
    throw new RuleProblem(`path ${JSON.stringify(value)} must start with / and hold no //, ?, # or spaces`);
  }
  let method: string | null = null;
  if (match.method !== undefined && match.method !== null) {
    method = typeof match.method === 'string' ? match.method.toUpperCase() : '';
    if (!METHODS.has(method)) throw new RuleProblem(`method ${text(match.method)} is not an HTTP method`);
  }
  return {
    path: { type, value },
    headers: exactMatches(match.headers, 'header', true),
    queryParams: exactMatches(match.queryParams, 'query parameter', false),
    method,
  };
}

/** Exact matches, first of a repeated name only (header names compared lower-cased). */
function exactMatches(
  list: unknown,
  what: string,
  lowerCase: boolean,
): Array<{ name: string; value: string }> {
  const out: Array<{ name: string; value: string }> = [];
  for (const match of listOf<HTTPHeaderMatch | null>(list)) {
    const type = match?.type ?? 'Exact';
    if (type !== 'Exact')
      throw new RuleProblem(`${what} match type ${text(type)} is not supported (Exact is)`);
    if (typeof match?.name !== 'string' || match.name === '' || typeof match.value !== 'string') {
      throw new RuleProblem(`a ${what} match needs a name and a value`);
    }
    const name = lowerCase ? match.name.toLowerCase() : match.name;
    if (!out.some((m) => m.name === name)) out.push({ name, value: match.value });
  }
  return out;
}

/**
 * The rule's filters with defaults (redirect statusCode 302); throws RuleProblem for one the data
 * plane does not carry out. ExtensionRef filters are not here: the caller makes their rule answer 500.
 */
export function normalizeFilters(
  filters: readonly HTTPRouteFilter[],
  matches: readonly RuleMatch[],
): HTTPRouteFilter[] {
  const seen = new Set<string>();
  const out: HTTPRouteFilter[] = [];
  for (const filter of filters) {
    const type = text(filter?.type);
    if (!FILTER_TYPES.has(type)) throw new RuleProblem(`filter type ${type} is not supported`);
    if (type !== 'RequestMirror' && seen.has(type)) throw new RuleProblem(`filter ${type} appears twice`);
    seen.add(type);
    out.push(checkFilter(filter, matches));
  }
  if (seen.has('RequestRedirect') && seen.has('URLRewrite')) {
    throw new RuleProblem('RequestRedirect and URLRewrite cannot be combined in one rule');
  }
  return out;
}

function checkFilter(filter: HTTPRouteFilter, matches: readonly RuleMatch[]): HTTPRouteFilter {
  switch (filter.type) {
    case 'RequestHeaderModifier':
    case 'ResponseHeaderModifier': {
      const edits =
        filter.type === 'RequestHeaderModifier'
          ? filter.requestHeaderModifier
          : filter.responseHeaderModifier;
      if (edits === undefined || edits === null)
        throw new RuleProblem(`filter ${filter.type} has no settings`);
      checkHeaderEdits(filter.type, edits);
      return filter;
    }
    case 'RequestRedirect': {
      const redirect = filter.requestRedirect;
      if (redirect === undefined || redirect === null)
        throw new RuleProblem('filter RequestRedirect has no settings');
      const statusCode = redirect.statusCode ?? 302;
      if (!REDIRECT_CODES.has(statusCode))
        throw new RuleProblem(`redirect statusCode ${text(statusCode)} is not 301, 302, 303, 307 or 308`);
      if (redirect.scheme !== undefined && redirect.scheme !== 'http' && redirect.scheme !== 'https') {
        throw new RuleProblem(`redirect scheme ${text(redirect.scheme)} is not http or https`);
      }
      checkHostname('redirect', redirect.hostname);
      const port = redirect.port;
      if (
        port !== undefined &&
        (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
      ) {
        throw new RuleProblem(`redirect port ${text(port)} is not 1-65535`);
      }
      checkPathModifier(redirect.path, matches);
      return { ...filter, requestRedirect: { ...redirect, statusCode } };
    }
    case 'URLRewrite':
      if (filter.urlRewrite === undefined || filter.urlRewrite === null)
        throw new RuleProblem('filter URLRewrite has no settings');
      checkHostname('URLRewrite', filter.urlRewrite.hostname);
      checkPathModifier(filter.urlRewrite.path, matches);
      return filter;
    default:
      if (filter.requestMirror?.backendRef === undefined)
        throw new RuleProblem('filter RequestMirror has no backendRef');
      return filter;
  }
}

// What a header filter writes goes onto the wire as is: a name that is no HTTP token or a value Node
// refuses (its checkInvalidHeaderChar: anything but tab, 0x20-0x7E and 0x80-0xFF, so also a line
// break or a character above U+00FF) would fail every request of the rule, or split a header, while
// the route reported Programmed, so the rule is not served.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NOT_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function checkHeaderEdits(type: string, edits: HTTPHeaderFilter): void {
  for (const header of [...listOf<HTTPHeader | null>(edits.set), ...listOf<HTTPHeader | null>(edits.add)]) {
    const name = header?.name;
    if (typeof name !== 'string' || !TOKEN.test(name)) {
      throw new RuleProblem(`${type}: ${JSON.stringify(name)} is not a header name`);
    }
    // the value itself is never quoted: it may be a credential
    if (typeof header?.value !== 'string' || NOT_FIELD_VALUE.test(header.value)) {
      throw new RuleProblem(
        `${type}: the value of ${name} must be an HTTP field value (tab, printable ASCII or 0x80-0xFF; no control characters, nothing above U+00FF)`,
      );
    }
  }
  for (const name of listOf<unknown>(edits.remove)) {
    if (typeof name !== 'string' || !TOKEN.test(name)) {
      throw new RuleProblem(`${type}: remove ${JSON.stringify(name)} is not a header name`);
    }
  }
}

/** A redirect or rewrite hostname: a DNS name, no wildcard (it becomes a Location or Host). */
function checkHostname(what: string, hostname: unknown): void {
  if (hostname === undefined || hostname === null) return;
  const problem =
    typeof hostname !== 'string'
      ? 'not a string'
      : hostname.startsWith('*')
        ? 'a wildcard is no host'
        : hostnameProblem(hostname.toLowerCase());
  if (problem !== null) throw new RuleProblem(`${what} hostname ${JSON.stringify(hostname)}: ${problem}`);
}

function checkPathModifier(path: HTTPPathModifier | undefined, matches: readonly RuleMatch[]): void {
  if (path === undefined || path === null) return;
  if (path.type === 'ReplaceFullPath') {
    if (!isPathText(path.replaceFullPath)) throw new RuleProblem('ReplaceFullPath needs a path');
  } else if (path.type === 'ReplacePrefixMatch') {
    if (!isPathText(path.replacePrefixMatch)) throw new RuleProblem('ReplacePrefixMatch needs a path');
    if (matches.some((m) => m.path.type !== 'PathPrefix')) {
      throw new RuleProblem('ReplacePrefixMatch needs every match of the rule to be a PathPrefix');
    }
  } else {
    throw new RuleProblem(`path modifier type ${text(path.type)} is not supported`);
  }
}

const isPathText = (value: unknown): boolean =>
  typeof value === 'string' && (value === '' || value.startsWith('/')) && !/[\s\0]/.test(value);
