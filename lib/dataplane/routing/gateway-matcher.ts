// The path matcher of a server that holds HTTPRoute routes. Several routes may share a path key
// (Exact `/a`, or Prefix `/a`), told apart by conditions: they form a candidate list in the model's
// order, which is the precedence (Gateway API precedence, with the oldest object winning a path
// between an Ingress and an HTTPRoute), and a request takes the
// first candidate whose protocol and conditions hold. When none does, the walk goes on to shorter
// prefixes, then to `rest`: the host's default route. In regex mode the host's Ingress regex routes
// are tried before all of this (RegexFirstMatcher), as the model orders them.
// A candidate with several backends picks one per request by weight (smooth weighted round robin).

import {
  type CompiledConditions,
  type ConditionInput,
  conditionsHold,
  RequestFacts,
} from './gateway-conditions.ts';
import { type PathMatch, type PathMatcher, prefixKey } from './router.ts';

/** One backend of a candidate and its weight (only weights over 0 are given). */
export interface WeightedValue<T> {
  value: T;
  weight: number;
}

/** What a gateway server's matcher is built from: a route, its conditions and its backends. */
export interface GatewayPathRule<T> {
  /** as the request's path is matched: decoded */
  path: string;
  /** as written, when it differs (the route's cookie Path and such) */
  locationPath?: string;
  pathType: 'Exact' | 'Prefix';
  /** which of ingress-ts's ports it is served on */
  protocols: 'http' | 'https' | 'both';
  /** null: the path decides alone */
  conditions: CompiledConditions | null;
  /** at least one */
  values: ReadonlyArray<WeightedValue<T>>;
}

/**
 * nginx's smooth weighted round robin: over every run of sum(weights) picks each value is chosen
 * exactly `weight` times, interleaved. Chosen over a random draw so a share is exact at every request
 * count (the conformance suite accepts ±5% over 500 requests; a test can check it to the request).
 * Each data-plane thread keeps its own sequence.
 */
export class SmoothWeighted<T> {
  readonly #values: T[];
  readonly #weights: number[];
  readonly #current: number[];
  readonly #total: number;

  constructor(values: ReadonlyArray<WeightedValue<T>>) {
    this.#values = values.map((v) => v.value);
    this.#weights = values.map((v) => v.weight);
    this.#current = values.map(() => 0);
    this.#total = this.#weights.reduce((sum, w) => sum + w, 0);
  }

  pick(): T {
    const values = this.#values;
    if (values.length === 1) return values[0] as T;
    const current = this.#current;
    let best = 0;
    for (let i = 0; i < values.length; i++) {
      current[i] = (current[i] as number) + (this.#weights[i] as number);
      if ((current[i] as number) > (current[best] as number)) best = i;
    }
    current[best] = (current[best] as number) - this.#total;
    return values[best] as T;
  }
}

interface Candidate<T> {
  /** false: not served on HTTPS; */
  readonly http: boolean;
  readonly https: boolean;
  readonly conditions: CompiledConditions | null;
  readonly backends: SmoothWeighted<PathMatch<T>>;
}

export class GatewayPathMatcher<T> implements PathMatcher<T> {
  readonly #exact = new Map<string, Candidate<T>[]>();
  readonly #prefix = new Map<string, Candidate<T>[]>();
  readonly #rest: PathMatcher<T>;
  /** whether some candidate has conditions (else a match never looks at the request) */
  #conditional = false;

  constructor(rules: ReadonlyArray<GatewayPathRule<T>>, rest: PathMatcher<T>) {
    this.#rest = rest;
    for (const rule of rules) {
      const exact = rule.pathType === 'Exact';
      const map = exact ? this.#exact : this.#prefix;
      const key = exact ? rule.path : prefixKey(rule.path);
      let list = map.get(key);
      if (list === undefined) {
        list = [];
        map.set(key, list);
      }
      const backends = new SmoothWeighted(
        rule.values.map(({ value, weight }) => ({
          value: { value, locationPath: rule.locationPath ?? rule.path, captures: null },
          weight,
        })),
      );
      if (rule.conditions !== null) this.#conditional = true;
      list.push({
        http: rule.protocols !== 'https',
        https: rule.protocols !== 'http',
        conditions: rule.conditions,
        backends,
      });
    }
  }

  match(path: string, request?: ConditionInput, https = false): PathMatch<T> {
    // read lazily by the conditions, and shared by every candidate list this walk visits
    const facts = request === undefined || !this.#conditional ? null : new RequestFacts(request);
    const exact = this.#exact.get(path);
    if (exact !== undefined) {
      const found = firstHolding(exact, facts, https);
      if (found !== null) return found;
    }
    if (this.#prefix.size !== 0) {
      let candidate = prefixKey(path);
      for (;;) {
        const list = this.#prefix.get(candidate);
        if (list !== undefined) {
          const found = firstHolding(list, facts, https);
          if (found !== null) return found;
        }
        if (candidate === '/') break;
        const slash = candidate.lastIndexOf('/');
        candidate = slash <= 0 ? '/' : candidate.slice(0, slash);
      }
    }
    return this.#rest.match(path, request, https);
  }
}

/**
 * Regex mode: the host's Ingress regex routes first, in ingress-nginx's location order (`null`: none
 * matched), then the HTTPRoute candidates and the default route.
 */
export class RegexFirstMatcher<T> implements PathMatcher<T> {
  readonly #regex: PathMatcher<T | null>;
  readonly #gateway: PathMatcher<T>;

  constructor(regex: PathMatcher<T | null>, gateway: PathMatcher<T>) {
    this.#regex = regex;
    this.#gateway = gateway;
  }

  match(path: string, request?: ConditionInput, https = false): PathMatch<T> {
    const found = this.#regex.match(path, request, https);
    return found.value !== null ? (found as PathMatch<T>) : this.#gateway.match(path, request, https);
  }
}

function firstHolding<T>(
  list: readonly Candidate<T>[],
  request: RequestFacts | null,
  https: boolean,
): PathMatch<T> | null {
  for (const candidate of list) {
    if (!(https ? candidate.https : candidate.http)) continue;
    if (candidate.conditions !== null && !conditionsHold(candidate.conditions, request)) continue;
    return candidate.backends.pick();
  }
  return null;
}
