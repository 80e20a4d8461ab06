// HTTPRoute path modifiers (URLRewrite and RequestRedirect `path`), applied to the decoded request
// path that the route matched.

import type { PathModifier } from '../../model/index.ts';

/** A path modifier with the route path it belongs to (the prefix ReplacePrefixMatch replaces). */
export interface CompiledPathModifier {
  readonly type: PathModifier['type'];
  readonly value: string;
  /** the matched PathPrefix without trailing slashes ('' for `/`): what ReplacePrefixMatch removes */
  readonly prefix: string;
}

const withoutTrailingSlashes = (path: string): string => {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47) end--;
  return path.slice(0, end);
};

/** A value as written is escaped (`/a%20b`); the result is escaped once, after the decoded rest joins it. */
function decodedValue(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** `routePath` is the route's path decoded, as the request path it is cut from. */
export function compilePathModifier(modifier: PathModifier, routePath: string): CompiledPathModifier {
  return {
    type: modifier.type,
    value: decodedValue(modifier.value),
    prefix: withoutTrailingSlashes(routePath),
  };
}

/**
 * The new path. ReplacePrefixMatch works by path element, as the spec's table has it: the matched
 * prefix and the replacement lose their trailing slashes, what followed the prefix is kept, and an
 * empty result is `/` (`/foo/bar` on prefix `/foo` with `/xyz/` → `/xyz/bar`; with `/` → `/bar`;
 * `/foo` with `` → `/`). The matcher guarantees `path` starts with the prefix at an element boundary.
 */
export function modifiedPath(modifier: CompiledPathModifier, path: string): string {
  if (modifier.type === 'ReplaceFullPath') return modifier.value === '' ? '/' : modifier.value;
  // on prefix `/`, the path `/` is the whole match (as `/foo` is on `/foo`), not a trailing slash
  const rest = modifier.prefix === '' && path === '/' ? '' : path.slice(modifier.prefix.length);
  const replaced = withoutTrailingSlashes(modifier.value) + rest;
  if (replaced === '') return '/';
  return replaced.charCodeAt(0) === 47 ? replaced : `/${replaced}`;
}
