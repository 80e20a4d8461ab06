// An HTTPRoute match's conditions beyond the path (method, header and query Exact matches) and the
// ports it is served on, compiled once per route and checked per request by the gateway path
// matcher. Only routes that carry conditions pay for this: an Ingress path never reaches it.

import type { GatewayRouteMatch } from '../../model/index.ts';

/** What the conditions read of a request: its method, raw header lines and target (an IncomingMessage). */
export interface ConditionInput {
  readonly method?: string | undefined;
  readonly rawHeaders: readonly string[];
  readonly url?: string | undefined;
}

export interface CompiledConditions {
  /** upper-case, or null: any */
  readonly method: string | null;
  /** names lower-case, one entry per name (the first of a repeated name, as the spec says) */
  readonly headers: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /** names as written (case-sensitive), one entry per name */
  readonly query: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

function firstOfEachName(
  list: ReadonlyArray<{ name: string; value: string }>,
  key: (name: string) => string,
): Array<{ name: string; value: string }> {
  const seen = new Set<string>();
  const out: Array<{ name: string; value: string }> = [];
  for (const { name, value } of list) {
    const k = key(name);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ name: k, value });
  }
  return out;
}

/** The conditions of a match, or null when it has none (only its path and protocols decide). */
export function compileConditions(match: GatewayRouteMatch): CompiledConditions | null {
  if (match.method === null && match.headers.length === 0 && match.queryParams.length === 0) return null;
  return {
    method: match.method === null ? null : match.method.toUpperCase(),
    headers: firstOfEachName(match.headers, (name) => name.toLowerCase()),
    query: firstOfEachName(match.queryParams, (name) => name),
  };
}

/**
 * The request's value of a header: every line of that name (any case) joined with `,`, as RFC 7230
 * §3.2.2 combines repeated fields; undefined when the request has none.
 */
export function joinedHeader(rawHeaders: readonly string[], lowerName: string): string | undefined {
  let joined: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    // HTTP/2 names are lower-case already: most comparisons need no lower-cased copy
    if (name.length !== lowerName.length || (name !== lowerName && name.toLowerCase() !== lowerName))
      continue;
    const value = rawHeaders[i + 1] as string;
    joined = joined === undefined ? value : `${joined},${value}`;
  }
  return joined;
}

/** A query component decoded as Go's url.ParseQuery does (`+` is a space); as sent when malformed. */
function decodeQueryPart(part: string): string {
  const spaced = part.includes('+') ? part.replaceAll('+', ' ') : part;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** The first value of the query parameter `name` in a request target, decoded; undefined when absent. */
export function queryValue(url: string, name: string): string | undefined {
  const start = url.indexOf('?');
  if (start === -1) return undefined;
  const hash = url.indexOf('#', start);
  const query = hash === -1 ? url.slice(start + 1) : url.slice(start + 1, hash);
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decodeQueryPart(eq === -1 ? pair : pair.slice(0, eq));
    if (key === name) return eq === -1 ? '' : decodeQueryPart(pair.slice(eq + 1));
  }
  return undefined;
}

/** Whether every condition holds for the request (a request without a head never meets one). */
export function conditionsHold(conditions: CompiledConditions, request: ConditionInput | undefined): boolean {
  if (request === undefined) return false;
  if (conditions.method !== null && request.method !== conditions.method) return false;
  for (const { name, value } of conditions.headers) {
    if (joinedHeader(request.rawHeaders, name) !== value) return false;
  }
  if (conditions.query.length !== 0) {
    const url = request.url ?? '/';
    for (const { name, value } of conditions.query) if (queryValue(url, name) !== value) return false;
  }
  return true;
}
