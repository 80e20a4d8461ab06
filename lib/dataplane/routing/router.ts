// Host and path matching, compiled once per runtime. Per request: one host lookup (exact map, then
// the wildcard map by parent domain), one path match (exact map, then prefix maps walked by path
// element, or the host's regexes in order). Cost depends on the request, not on the cluster size.
// User regexes run on RE2 (re2js): linear in the path length whatever the pattern, so no request path
// can stall the event loop (a JS RegExp such as `/(a+)+$` backtracks exponentially on `/aaaa…b`).

import type { RE2JS } from 're2js';
import { compilePathRegex, PathRegexCache } from '../../model/path-regex.ts';
import type { ConditionInput } from './gateway-conditions.ts';
import { LayeredMap } from './layered-map.ts';

/** A compiled path rule: `T` is whatever the runtime attaches (the action for the route). */
export interface PathRule<T> {
  path: string;
  pathType: 'Exact' | 'Prefix';
  value: T;
  /** regex mode: the match reports the regex's groups (rewrite-target needs them) */
  captures?: boolean;
}

/** Group 0 (the whole match), then groups 1..n; null for a group that did not participate. */
export type Captures = ReadonlyArray<string | null>;

export interface PathMatch<T> {
  value: T;
  /** the rule path as written (ingress-nginx's $location_path); '/' for the default */
  locationPath: string;
  /** regex mode, rules that ask for them: the groups of the match; null otherwise */
  captures: Captures | null;
}

/**
 * `request` and `https` are read only by a server holding HTTPRoute routes (gateway-matcher.ts):
 * their conditions and protocols. An Ingress-only server matches by path alone.
 */
export interface PathMatcher<T> {
  match(path: string, request?: ConditionInput, https?: boolean): PathMatch<T>;
}

/** Strip trailing slashes except the root: Prefix `/foo/` and `/foo` match the same requests. */
export function prefixKey(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  return end === path.length ? path : path.slice(0, end);
}

/**
 * Exact paths are literal and case-sensitive; Prefix paths match by path element (Kubernetes:
 * `/foo` matches `/foo`, `/foo/`, `/foo/bar`, not `/foobar`); Exact beats Prefix; the longest
 * Prefix wins.
 */
class ElementMatcher<T> implements PathMatcher<T> {
  readonly #exact = new Map<string, PathMatch<T>>();
  readonly #prefix = new Map<string, PathMatch<T>>();
  readonly #fallback: PathMatch<T>;

  constructor(rules: readonly PathRule<T>[], fallback: T) {
    this.#fallback = { value: fallback, locationPath: '/', captures: null };
    for (const rule of rules) {
      const match = { value: rule.value, locationPath: rule.path, captures: null };
      const map = rule.pathType === 'Exact' ? this.#exact : this.#prefix;
      const key = rule.pathType === 'Exact' ? rule.path : prefixKey(rule.path);
      if (!map.has(key)) map.set(key, match); // the model already resolved conflicts; keep the first
    }
  }

  match(path: string): PathMatch<T> {
    const exact = this.#exact.get(path);
    if (exact !== undefined) return exact;
    if (this.#prefix.size === 0) return this.#fallback;
    let candidate = prefixKey(path);
    for (;;) {
      const found = this.#prefix.get(candidate);
      if (found !== undefined) return found;
      if (candidate === '/') return this.#fallback;
      const slash = candidate.lastIndexOf('/');
      candidate = slash <= 0 ? '/' : candidate.slice(0, slash);
    }
  }
}

/** A user path as ingress-nginx renders it in regex mode (uncached; runtimes compile through a PathRegexCache). */
export { compilePathRegex };

const META = new Set(['\\', '.', '[', ']', '(', ')', '{', '}', '*', '+', '?', '^', '$', '|']);

/**
 * The literal text every match of `^<pattern>` starts with, lower-cased ('' when unknown): a cheap
 * test that spares running RE2 (a few µs) on most routes that cannot match. Conservative: a top-level
 * alternation gives '', the scan stops at the first metacharacter or non-ASCII character, and a
 * character made optional by the quantifier after it is left out.
 */
export function literalPrefix(pattern: string): string {
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '[') {
      // skip the class: a leading ^ and a leading ] are part of it
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1;
    } else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth <= 0) return '';
  }
  let end = 0;
  while (end < pattern.length && pattern.charCodeAt(end) < 128 && !META.has(pattern[end] as string)) end++;
  const next = pattern[end];
  if (end > 0 && (next === '*' || next === '?' || next === '{')) end--;
  return pattern.slice(0, end).toLowerCase();
}

/** Whether `path` may start with the lower-cased ASCII `prefix` under RE2's case folding. */
function mayStartWith(path: string, prefix: string): boolean {
  if (path.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    let c = path.charCodeAt(i);
    // non-ASCII may fold onto ASCII (ſ → s, K → k): let RE2 decide
    if (c >= 128) return true;
    if (c >= 65 && c <= 90) c += 32;
    if (c !== prefix.charCodeAt(i)) return false;
  }
  return true;
}

/** The groups of a successful match. */
export function capturesOf(matcher: { groupCount(): number; group(n: number): string | null }): Captures {
  const groups: Array<string | null> = [];
  for (let i = 0; i <= matcher.groupCount(); i++) groups.push(matcher.group(i));
  return groups;
}

/** ingress-nginx regex mode: every path is `~* "^<path>"`, tried in order, first match wins. */
class RegexMatcher<T> implements PathMatcher<T> {
  readonly #rules: Array<{
    regex: RE2JS;
    prefix: string;
    captures: boolean;
    match: Omit<PathMatch<T>, 'captures'>;
  }> = [];
  readonly #fallback: PathMatch<T>;

  constructor(
    rules: readonly PathRule<T>[],
    fallback: T,
    onInvalid: (path: string, error: Error) => void,
    regexes: PathRegexCache,
  ) {
    this.#fallback = { value: fallback, locationPath: '/', captures: null };
    for (const rule of rules) {
      try {
        this.#rules.push({
          regex: regexes.compile(rule.path),
          prefix: literalPrefix(rule.path),
          captures: rule.captures === true,
          match: { value: rule.value, locationPath: rule.path },
        });
      } catch (error) {
        onInvalid(rule.path, error as Error);
      }
    }
  }

  match(path: string): PathMatch<T> {
    for (const rule of this.#rules) {
      if (rule.prefix !== '' && !mayStartWith(path, rule.prefix)) continue;
      // find(), not lookingAt(): `^` binds only to the first alternative of `^/a|/b`, as in NGINX
      // test() skips the Matcher and its capture bookkeeping: ~6 × cheaper when no capture is used
      if (!rule.captures) {
        if (rule.regex.test(path)) return { ...rule.match, captures: null };
        continue;
      }
      const matcher = rule.regex.matcher(path);
      if (matcher.find()) return { ...rule.match, captures: capturesOf(matcher) };
    }
    return this.#fallback;
  }
}

/** `regexes`: where regex-mode paths are compiled (the data plane's cache; default: this matcher's own). */
export function createPathMatcher<T>(
  rules: readonly PathRule<T>[],
  fallback: T,
  regex: boolean,
  onInvalidRegex: (path: string, error: Error) => void,
  regexes: PathRegexCache = new PathRegexCache(),
): PathMatcher<T> {
  return regex
    ? new RegexMatcher(rules, fallback, onInvalidRegex, regexes)
    : new ElementMatcher(rules, fallback);
}

/**
 * Exact host names, then single-label wildcards (`*.example.com` keyed by `example.com`), then
 * any-depth wildcards (an HTTPRoute's `*.example.com` also matches `a.b.example.com`, the longest
 * parent first), then the catch-all. An Ingress wildcard stays single-label, as ingress-nginx renders
 * it (`^[\w-]+\.example\.com$`). A table patched from another (`HostTable.patched`) shares its
 * entries (layered-map.ts), so a one-Ingress change costs the names it touches, not the 20,000 hosts
 * of a large cluster.
 */
export class HostTable<T> {
  readonly #exact: LayeredMap<T>;
  readonly #wildcards: LayeredMap<T>;
  readonly #catchAll: T;
  /** which wildcard entries match any depth; null: none does */
  readonly #anyDepth: ((value: T) => boolean) | null;
  /** some wildcard entry may match any depth (kept once set along patches: a miss only walks more) */
  #deep: boolean;

  constructor(
    catchAll: T,
    exact = new LayeredMap<T>(),
    wildcards = new LayeredMap<T>(),
    anyDepth: ((value: T) => boolean) | null = null,
    deep = false,
  ) {
    this.#catchAll = catchAll;
    this.#exact = exact;
    this.#wildcards = wildcards;
    this.#anyDepth = anyDepth;
    this.#deep = deep;
  }

  /** The first registration of a name wins (hosts before aliases); only while the table is built. */
  add(name: string, value: T): void {
    if (name.startsWith('*.')) {
      this.#wildcards.addIfAbsent(name.slice(2), value);
      if (this.#anyDepth?.(value) === true) this.#deep = true;
    } else this.#exact.addIfAbsent(name, value);
  }

  /**
   * A table holding this one's entries with `changes` made (undefined: the name is removed) and
   * `catchAll` for unknown names. This table is left as it is: it may still be serving.
   */
  patched(catchAll: T, changes: ReadonlyMap<string, T | undefined>): HostTable<T> {
    const exact: Array<[string, T | undefined]> = [];
    const wildcards: Array<[string, T | undefined]> = [];
    let deep = this.#deep;
    for (const [name, value] of changes) {
      if (name.startsWith('*.')) {
        wildcards.push([name.slice(2), value]);
        if (value !== undefined && this.#anyDepth?.(value) === true) deep = true;
      } else exact.push([name, value]);
    }
    return new HostTable(
      catchAll,
      exact.length === 0 ? this.#exact : this.#exact.patched(exact),
      wildcards.length === 0 ? this.#wildcards : this.#wildcards.patched(wildcards),
      this.#anyDepth,
      deep,
    );
  }

  /** Every name the table holds with its entry (wildcards as `*.parent`), for tests and debugging. */
  *entries(): IterableIterator<[string, T]> {
    yield* this.#exact;
    for (const [parent, value] of this.#wildcards) yield [`*.${parent}`, value];
  }

  /** `host` as normalised by normalizeHost. */
  lookup(host: string): T {
    const exact = this.#exact.get(host);
    if (exact !== undefined) return exact;
    let dot = host.indexOf('.');
    if (dot > 0) {
      const wildcard = this.#wildcards.get(host.slice(dot + 1));
      if (wildcard !== undefined) return wildcard;
      if (this.#deep) {
        // only an any-depth wildcard covers more than one label
        for (dot = host.indexOf('.', dot + 1); dot > 0; dot = host.indexOf('.', dot + 1)) {
          const deeper = this.#wildcards.get(host.slice(dot + 1));
          if (deeper !== undefined && this.#anyDepth?.(deeper) === true) return deeper;
        }
      }
    }
    return this.#catchAll;
  }
}

/** The Host header as NGINX matches it (validHost); '' when there is none or NGINX would refuse it. */
export function normalizeHost(header: string | undefined): string {
  if (header === undefined) return '';
  return validHost(header) ?? '';
}

/**
 * A Host header, HTTP/2 :authority or absolute-form authority as NGINX 1.27 (ingress-nginx's) judges
 * it, ngx_http_validate_host: null when it answers 400, else the name it matches server names with:
 * lower-case (ASCII), the port dropped (after `]` for an IP literal), one trailing dot dropped.
 * Refused: `/`, a control character or space, two dots in a row (anywhere, the port part too), an
 * empty name. Not refused by that version (1.29.4 is stricter): `\`, a port that is not a number, an
 * unterminated `[`. One pass, no allocation for a name already in its normal form.
 */
export function validHost(value: string): string | null {
  const length = value.length;
  let end = length;
  let lastDot = -2;
  // 0: the name, 1: inside an IP literal, 2: after the name (its port)
  let state = 0;
  let upper = false;
  for (let i = 0; i < length; i++) {
    const c = value.charCodeAt(i);
    // most bytes of a name are plain: one table read decides
    const kind = c < 128 ? HOST_BYTE[c] : PLAIN;
    if (kind === PLAIN) continue;
    if (kind === DOT) {
      if (lastDot === i - 1) return null;
      lastDot = i;
    } else if (kind === UPPER) {
      upper = true;
    } else if (kind === COLON) {
      if (state === 0) {
        end = i;
        state = 2;
      }
    } else if (kind === OPEN) {
      if (i === 0) state = 1;
    } else if (kind === CLOSE) {
      if (state === 1) {
        end = i + 1;
        state = 2;
      }
    } else {
      return null;
    }
  }
  if (lastDot === end - 1) end--;
  if (end === 0) return null;
  const name = end === length ? value : value.slice(0, end);
  return upper ? name.toLowerCase() : name;
}

const PLAIN = 0;
const DOT = 1;
const UPPER = 2;
const COLON = 3;
const OPEN = 4;
const CLOSE = 5;
const REFUSED = 6;

/** What each ASCII byte is to validHost (a byte over 0x7f is plain). */
const HOST_BYTE = ((): Uint8Array => {
  const table = new Uint8Array(128);
  for (let c = 0; c <= 0x20; c++) table[c] = REFUSED;
  table[0x7f] = REFUSED;
  table[47 /* / */] = REFUSED;
  table[46 /* . */] = DOT;
  table[58 /* : */] = COLON;
  table[91 /* [ */] = OPEN;
  table[93 /* ] */] = CLOSE;
  for (let c = 65; c <= 90; c++) table[c] = UPPER;
  return table;
})();

/**
 * An absolute-form target's authority as NGINX's request-line parser reads it before validating
 * it as a host: letters, digits, `.` and `-` (or an IP literal in brackets), then an optional port of
 * digits. Anything else is a request line it cannot parse (400).
 */
const REQUEST_LINE_AUTHORITY = /^(?:[0-9A-Za-z.-]+|\[[0-9A-Za-z:._~!$&'()*+,;=-]*\])(?::[0-9]*)?$/;

/** Whether NGINX takes this authority of a request line (its grammar, then validHost). */
export function validAuthority(authority: string): boolean {
  return REQUEST_LINE_AUTHORITY.test(authority) && validHost(authority) !== null;
}

const HEX_ESCAPES = /^(?:[^%]|%[0-9A-Fa-f]{2})*$/;
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * Percent-decoding as NGINX does it: a malformed escape is an error (400), but the decoded bytes need
 * not be UTF-8 (NGINX compares bytes): those are decoded with U+FFFD for each invalid sequence, so
 * `/%FF` is routed like any path instead of being refused.
 */
function percentDecode(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    if (!HEX_ESCAPES.test(raw)) return null;
  }
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i);
    if (code === 37) {
      bytes.push(Number.parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (code < 0x80) {
      bytes.push(code);
    } else {
      for (const byte of Buffer.from(raw[i] as string, 'utf8')) bytes.push(byte);
    }
  }
  return lenientUtf8.decode(Uint8Array.from(bytes));
}

/** An http(s) URL as a request target: authority (no userinfo: http(s) URIs may not carry it), then path and query. */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#@\s]+)([/?][^#\s]*)?$/i;

/**
 * An absolute-form request target (`GET http://host:8080/p?q HTTP/1.1`, what a client sends to a proxy) split into
 * its authority and its origin-form target (`/p?q`; `/` when it has no path). null when `target` is
 * not one (origin-form, `*`, or a URL NGINX would refuse too: another scheme, userinfo, a fragment).
 */
export function absoluteForm(target: string): { authority: string; target: string } | null {
  const m = ABSOLUTE_FORM.exec(target);
  if (m === null) return null;
  const rest = m[2] ?? '';
  return {
    authority: m[1] as string,
    target: rest === '' ? '/' : rest.charCodeAt(0) === 63 /* ? */ ? `/${rest}` : rest,
  };
}

/** Where the path of a request target ends: at its query, or at a fragment (`#`), as in NGINX. */
function pathEnd(target: string): number {
  const query = target.indexOf('?');
  const end = query === -1 ? target.length : query;
  const hash = target.indexOf('#');
  return hash !== -1 && hash < end ? hash : end;
}

/**
 * The request path as NGINX matches it ($uri): without the query, ended at a `#` (a fragment is
 * never part of the path: `/admin#x` is `/admin`, as ngx_http_parse_complex_uri ends $uri there, so
 * a route's protections apply to it), percent-decoded, repeated slashes merged, `.` and `..`
 * segments resolved. null when it cannot be decoded, escapes the root or is not a path (`*`, an
 * authority, a bare query) (→ 400). Fast path: most paths need none of this.
 */
export function normalizePath(target: string): string | null {
  const end = pathEnd(target);
  const raw = end === target.length ? target : target.slice(0, end);
  if (raw.charCodeAt(0) !== 47) return null;
  if (!/%|\/\/|\/\.(?:\/|\.|$)/.test(raw)) return raw;
  const decoded = percentDecode(raw);
  if (decoded === null || decoded.includes('\0')) return null;
  const out: string[] = [];
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i] as string;
    if (segment === '' && i < segments.length - 1) continue;
    if (segment === '.') continue;
    if (segment === '..') {
      if (out.length === 0) return null;
      out.pop();
      continue;
    }
    out.push(segment);
  }
  const last = segments[segments.length - 1];
  const trailing = last === '' || last === '.' || last === '..';
  const joined = `/${out.filter((s) => s !== '').join('/')}`;
  return trailing && joined !== '/' ? `${joined}/` : joined;
}
