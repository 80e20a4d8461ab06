// permanent-redirect (+ -code) and temporal-redirect (+ -code): the route answers with a redirect to
// the URL as written, before ssl-redirect and without reaching the upstream; temporal wins when both
// are set. The host's default route inherits them from the Ingress that created the host, so its
// unmatched paths redirect too (ingress-nginx renders them in the root location).
// As ingress-nginx's redirect parser: the URL may only hold letters, digits and -._~/:,?&= (no `$`:
// NGINX would expand `$request_uri`, ingress-ts would send it literally, so both refuse it), a code
// must be an integer; either failing skips the whole Ingress. A code out of range falls back to
// 301 / 302. When temporal-redirect is set, permanent-redirect is not read at all.

import { redactUrl } from '../redact.ts';
import type { AnnotationGroup, AnnotationReader } from './group.ts';
import { isGoInt, matches, URL_CHARS } from './validators.ts';

export interface RedirectAnnotations {
  /** null: no redirect */
  redirect: { url: string; code: number } | null;
}

function target(
  read: AnnotationReader,
  name: 'permanent-redirect' | 'temporal-redirect',
  fallback: number,
  max: number,
): { url: string; code: number } | null {
  const url = read.string(name);
  if (url === undefined) return null;
  if (!matches(URL_CHARS, url, false)) {
    read.invalid(
      name,
      redactUrl(url),
      'only letters, digits and -._~/:,?&= are allowed, no NGINX variables',
      'drop',
    );
    return null;
  }
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  // ingress-nginx would send a relative or scheme-less value as written; ingress-ts only redirects
  // to an absolute http(s) URL, so a browser never resolves it against the requested page
  if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    read.invalid(name, redactUrl(url), 'expected an http or https URL', 'drop');
    return null;
  }
  let code = fallback;
  const written = read.string(`${name}-code`);
  if (written !== undefined) {
    if (!isGoInt(written)) {
      read.invalid(`${name}-code`, written, 'expected an integer', 'drop');
      return null;
    }
    const n = Number(written);
    if (n >= 300 && n <= max) code = n;
    else read.invalid(`${name}-code`, written, `expected a code from 300 to ${max}`, 'default');
  }
  return { url, code };
}

/** ingress-nginx reads permanent-redirect-code even without permanent-redirect: a non-integer skips the Ingress. */
function strayCode(read: AnnotationReader, name: string): void {
  const written = read.string(name);
  if (written !== undefined && !isGoInt(written)) read.invalid(name, written, 'expected an integer', 'drop');
}

export const redirect: AnnotationGroup<RedirectAnnotations> = {
  scope: 'location',
  annotations: [
    { name: 'permanent-redirect', default: '', doc: 'Answer with a redirect to this URL (301 by default).' },
    { name: 'permanent-redirect-code', default: '301', doc: 'Status of permanent-redirect, 300-308.' },
    {
      name: 'temporal-redirect',
      default: '',
      doc: 'Answer with a redirect to this URL (302 by default); wins over permanent-redirect.',
    },
    { name: 'temporal-redirect-code', default: '302', doc: 'Status of temporal-redirect, 300-307.' },
  ],
  defaults: { redirect: null },
  parse(read) {
    if (read.string('temporal-redirect') !== undefined) {
      return { redirect: target(read, 'temporal-redirect', 302, 307) };
    }
    const permanent = target(read, 'permanent-redirect', 301, 308);
    if (read.string('permanent-redirect') === undefined) strayCode(read, 'permanent-redirect-code');
    return { redirect: permanent };
  },
};
