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
  /** upper-case, or null: every method */
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
 * The request's value of a header: every line of that name (whatever its case) joined with `,`, the
 * one value HTTP gives repeated lines; undefined when the request has none. `host` falls back to
 * HTTP/2's `:authority`, which stands in for Host there, so a `host` match means the same over both
 * protocols.
 */
export function joinedHeader(rawHeaders: readonly string[], lowerName: string): string | undefined {
  let joined: string | undefined;
  let authority: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name === ':authority') authority ??= rawHeaders[i + 1] as string;
    // HTTP/2 names are lower-case already: most comparisons need no lower-cased copy
    if (name.length !== lowerName.length || (name !== lowerName && name.toLowerCase() !== lowerName))
      continue;
    const value = rawHeaders[i + 1] as string;
    joined = joined === undefined ? value : `${joined},${value}`;
  }
  return joined === undefined && lowerName === 'host' ? authority : joined;
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

/**
 * How many `name=value` pairs of a query a condition looks at: a parameter after them is absent.
 * Go's url.ParseQuery reads them all, NGINX's `$arg_` scans the query linearly per lookup; a bound
 * keeps one request's decoding work small whatever its target holds, and real matches name one of
 * the first few parameters.
 */
export const QUERY_PARAMS_LOOKED_AT = 100;

/** A request target's query parameters: each decoded name with the raw value of its first pair. */
function parseQuery(url: string): Map<string, string> {
  const params = new Map<string, string>();
  const start = url.indexOf('?');
  if (start === -1) return params;
  const hash = url.indexOf('#', start);
  const end = hash === -1 ? url.length : hash;
  let seen = 0;
  for (let at = start + 1; at < end && seen < QUERY_PARAMS_LOOKED_AT; ) {
    let amp = url.indexOf('&', at);
    if (amp === -1 || amp > end) amp = end;
    if (amp > at) {
      seen++;
      const pair = url.slice(at, amp);
      const eq = pair.indexOf('=');
      const key = decodeQueryPart(eq === -1 ? pair : pair.slice(0, eq));
      if (!params.has(key)) params.set(key, eq === -1 ? '' : pair.slice(eq + 1));
    }
    at = amp + 1;
  }
  return params;
}

/** The first value of the query parameter `name` in a request target, decoded; undefined when absent. */
export function queryValue(url: string, name: string): string | undefined {
  const raw = parseQuery(url).get(name);
  return raw === undefined ? undefined : decodeQueryPart(raw);
}

/**
 * One request as its conditions read it, for the length of one match: the query is parsed on the
 * first query condition and a header joined on the first condition naming it, so many candidates
 * with conditions cost one pass over the request, not one per condition.
 */
export class RequestFacts {
  readonly method: string | undefined;
  readonly #request: ConditionInput;
  #headers: Map<string, string | undefined> | null = null;
  #query: Map<string, string> | null = null;

  constructor(request: ConditionInput) {
    this.#request = request;
    this.method = request.method;
  }

  header(lowerName: string): string | undefined {
    this.#headers ??= new Map();
    if (this.#headers.has(lowerName)) return this.#headers.get(lowerName);
    const value = joinedHeader(this.#request.rawHeaders, lowerName);
    this.#headers.set(lowerName, value);
    return value;
  }

  query(name: string): string | undefined {
    this.#query ??= parseQuery(this.#request.url ?? '/');
    const raw = this.#query.get(name);
    return raw === undefined ? undefined : decodeQueryPart(raw);
  }
}

/** Whether every condition holds for the request (a request without a head never meets one). */
export function conditionsHold(conditions: CompiledConditions, request: RequestFacts | null): boolean {
  if (request === null) return false;
  if (conditions.method !== null && request.method !== conditions.method) return false;
  for (const { name, value } of conditions.headers) {
    if (request.header(name) !== value) return false;
  }
  for (const { name, value } of conditions.query) if (request.query(name) !== value) return false;
  return true;
}
