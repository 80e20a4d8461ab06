// Path validation as the Ingress API does it, and the key under which two paths are "the same".

import type { PathType } from './types.ts';

export type PathTypeAsWritten = 'Exact' | 'Prefix' | 'ImplementationSpecific';

const PATH_TYPES = new Set<string>(['Exact', 'Prefix', 'ImplementationSpecific']);
const INVALID_SEQUENCES = ['//', '/./', '/../', '%2f', '%2F'];
const INVALID_SUFFIXES = ['/..', '/.'];

export function isPathType(value: unknown): value is PathTypeAsWritten {
  return typeof value === 'string' && PATH_TYPES.has(value);
}

/** ImplementationSpecific behaves as Prefix (ingress-nginx folds it the same way). */
export function effectivePathType(pathType: PathTypeAsWritten): PathType {
  return pathType === 'Exact' ? 'Exact' : 'Prefix';
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** Why `path` is not valid for `pathType` (the API server's rules), or null when it is. */
export function pathProblem(path: string, pathType: PathTypeAsWritten): string | null {
  // no request path can hold them (NUL, CR, LF...); in standalone manifests they are an injection attempt
  if (CONTROL_CHARACTER.test(path)) return 'must not contain control characters';
  if (pathType === 'ImplementationSpecific') {
    return path === '' || path.startsWith('/') ? null : 'must be an absolute path (start with "/")';
  }
  if (!path.startsWith('/')) return 'must be an absolute path (start with "/")';
  for (const sequence of INVALID_SEQUENCES) {
    if (path.includes(sequence)) return `must not contain "${sequence}"`;
  }
  for (const suffix of INVALID_SUFFIXES) {
    if (path.endsWith(suffix)) return `must not end with "${suffix}"`;
  }
  return null;
}

/**
 * Prefix matching follows the Kubernetes definition: by path element, a trailing slash in the rule
 * ignored. So Prefix `/foo` and `/foo/` match the same requests and are one route.
 */
export function prefixMatchKey(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47 /* '/' */) end--;
  return path.slice(0, end);
}
