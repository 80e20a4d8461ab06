// permanent-redirect (+ -code) and temporal-redirect (+ -code): the route answers with a redirect to
// the URL as written, before ssl-redirect and without reaching the upstream; temporal wins when both
// are set. The host's default route inherits them from the Ingress that created the host, so its
// unmatched paths redirect too (ingress-nginx renders them in the root location). The URL must be
// http(s) (else the Ingress is dropped, as ingress-nginx's parser errors); a code out of range falls
// back to 301 / 302.

import type { AnnotationGroup, AnnotationReader } from './group.ts';

export interface RedirectAnnotations {
  /** null: no redirect */
  redirect: { url: string; code: number } | null;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

function target(
  read: AnnotationReader,
  name: 'permanent-redirect' | 'temporal-redirect',
  fallback: number,
  max: number,
): { url: string; code: number } | null {
  const url = read.string(name);
  if (url === undefined) return null;
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  // Go's url.Parse refuses control characters (WHATWG URL drops CR/LF/tab silently, and the URL is
  // sent as written: a CRLF would end up in the Location header)
  if (
    parsed === null ||
    (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
    CONTROL_CHARACTER.test(url)
  ) {
    read.invalid(name, url, 'expected an http or https URL', 'drop');
    return null;
  }
  let code = fallback;
  const written = read.string(`${name}-code`);
  if (written !== undefined) {
    const n = Number(written);
    if (/^\d+$/.test(written) && n >= 300 && n <= max) code = n;
    else read.invalid(`${name}-code`, written, `expected a code from 300 to ${max}`, 'default');
  }
  return { url, code };
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
    const permanent = target(read, 'permanent-redirect', 301, 308);
    const temporal = target(read, 'temporal-redirect', 302, 307);
    return { redirect: temporal ?? permanent };
  },
};
