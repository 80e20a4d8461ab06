// rewrite-target and x-forwarded-prefix, compiled once per route. ingress-nginx renders
// `rewrite "(?i)<path>" <target> break;`: when the unanchored path regex matches $uri (the decoded,
// normalised path), the whole URI becomes the target with `$1..$9` replaced by the captures (groups
// that did not participate are empty); NGINX then escapes the new URI (space, #, %, ?, controls,
// non-ASCII) and appends the original query string. A target starting with `http://`, `https://` or
// `$scheme` makes NGINX answer 302 with that URL (and the query string) instead of proxying.

import { RE2JS } from 're2js';
import { argsOf } from '../request-values.ts';
import { type CompiledPathModifier, modifiedPath } from '../routing/gateway-paths.ts';
import { type Captures, capturesOf } from '../routing/router.ts';

/** Literal text, or the index of a capture group. */
type Part = string | number;

export interface CompiledRewrite {
  /** the target, split into literals and `$n` references */
  target: readonly Part[];
  /** X-Forwarded-Prefix's value, split likewise; null: not sent */
  prefix: readonly Part[] | null;
  /** the unanchored `(?i)<path>` regex; used when the path match did not report captures */
  regex: RE2JS | null;
  /** whether the captures of the location match `^<path>` are those of `(?i)<path>` (no `|` in the path) */
  reuseCaptures: boolean;
  /** the target is a URL: answer 302 (`scheme`: it starts with `$scheme`, left out of `target`) */
  redirect: 'url' | 'scheme' | null;
  /** an HTTPRoute URLRewrite path instead of a target (the other fields are then unused) */
  gateway?: CompiledPathModifier;
}

/** An HTTPRoute URLRewrite path as a route's rewrite. */
export function gatewayRewrite(modifier: CompiledPathModifier): CompiledRewrite {
  return { target: [], prefix: null, regex: null, reuseCaptures: false, redirect: null, gateway: modifier };
}

/** `$0`..`$9` are captures (NGINX reads one digit); any other `$` is literal. */
function parseTemplate(template: string): Part[] {
  const parts: Part[] = [];
  let literal = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i] as string;
    const next = template.charCodeAt(i + 1);
    if (c === '$' && next >= 48 && next <= 57) {
      if (literal !== '') parts.push(literal);
      literal = '';
      parts.push(next - 48);
      i++;
    } else {
      literal += c;
    }
  }
  if (literal !== '') parts.push(literal);
  return parts;
}

/**
 * The rewrite of a route whose path is `path` (the rule path; `/` for a host's default route), or
 * null when there is none: no target, or the target equals the path (ingress-nginx then proxies
 * unchanged and sends no X-Forwarded-Prefix).
 */
export function compileRewrite(
  path: string,
  target: string | null,
  forwardedPrefix: string | null,
): CompiledRewrite | null {
  if (target === null || target === path) return null;
  let regex: RE2JS | null = null;
  try {
    regex = RE2JS.compile(path, RE2JS.CASE_INSENSITIVE);
  } catch {
    regex = null; // the model drops such paths; a route left without a regex proxies unchanged
  }
  const redirect = target.startsWith('$scheme')
    ? 'scheme'
    : target.startsWith('http://') || target.startsWith('https://')
      ? 'url'
      : null;
  return {
    target: parseTemplate(redirect === 'scheme' ? target.slice('$scheme'.length) : target),
    redirect,
    prefix: forwardedPrefix === null ? null : parseTemplate(forwardedPrefix),
    regex,
    reuseCaptures: !path.includes('|'),
  };
}

function expand(parts: readonly Part[], captures: Captures): string {
  let out = '';
  for (const part of parts) out += typeof part === 'string' ? part : (captures[part] ?? '');
  return out;
}

// NGX_ESCAPE_URI: what NGINX escapes in a rewritten URI before proxying it
export function escapeUri(uri: string): string {
  let out = '';
  let plain = 0;
  for (let i = 0; i < uri.length; i++) {
    const code = uri.charCodeAt(i);
    if (code > 0x20 && code < 0x7f && code !== 0x23 && code !== 0x25 && code !== 0x3f) continue;
    out += uri.slice(plain, i);
    if (code < 0x80) {
      out += `%${code.toString(16).toUpperCase().padStart(2, '0')}`;
      plain = i + 1;
    } else {
      // a UTF-8 sequence: encode the whole code point (a surrogate pair is one)
      const point = uri.codePointAt(i) as number;
      const width = point > 0xffff ? 2 : 1;
      for (const byte of Buffer.from(uri.slice(i, i + width), 'utf8')) {
        out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
      }
      i += width - 1;
      plain = i + 1;
    }
  }
  return plain === 0 ? uri : out + uri.slice(plain);
}

export interface RewriteResult {
  /** the new $uri (decoded), as NGINX variables such as upstream-hash-by's `$uri` see it */
  uri: string;
  /** the upstream request target: escaped path and the original query string */
  path: string;
  /** X-Forwarded-Prefix, or undefined */
  forwardedPrefix: string | undefined;
  /** a target that is a URL: the 302's Location; the request is not proxied */
  redirect?: string;
}

/**
 * Apply a route's rewrite to a request. `uri` is the normalised path the route matched, `url` the
 * request target as received (its query string is kept), `captures` the groups of the path match
 * when the matcher reported them. Null when the regex does not match (NGINX leaves the URI alone).
 */
export function applyRewrite(
  rewrite: CompiledRewrite,
  uri: string,
  url: string,
  captures: Captures | null,
  https = false,
): RewriteResult | null {
  if (rewrite.gateway !== undefined) {
    const next = modifiedPath(rewrite.gateway, uri);
    const args = argsOf(url);
    const path = escapeUri(next);
    return { uri: next, path: args === '' ? path : `${path}?${args}`, forwardedPrefix: undefined };
  }
  let groups = rewrite.reuseCaptures ? captures : null;
  if (groups === null) {
    if (rewrite.regex === null) return null;
    const matcher = rewrite.regex.matcher(uri);
    if (!matcher.find()) return null;
    groups = capturesOf(matcher);
  }
  const args = argsOf(url);
  if (rewrite.redirect !== null) {
    const scheme = rewrite.redirect === 'scheme' ? (https ? 'https' : 'http') : '';
    const location = escapeUri(scheme + expand(rewrite.target, groups));
    return {
      uri,
      path: url,
      forwardedPrefix: undefined,
      redirect: args === '' ? location : `${location}?${args}`,
    };
  }
  // a target that expands to no leading slash still makes a valid origin-form request target
  let expanded = expand(rewrite.target, groups);
  if (expanded.charCodeAt(0) !== 47) expanded = `/${expanded}`;
  const path = escapeUri(expanded);
  return {
    uri: expanded,
    path: args === '' ? path : `${path}?${args}`,
    forwardedPrefix: rewrite.prefix === null ? undefined : expand(rewrite.prefix, groups),
  };
}
