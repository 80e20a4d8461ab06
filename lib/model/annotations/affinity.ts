// affinity: cookie and the session-cookie-* annotations (ingress-nginx's sessionaffinity parser).
// Ingresses sharing an upstream combine as in ingress-nginx (shared-affinity.ts): a single one with affinity makes
// it sticky, the oldest that names an affinity-mode picks the mode, the newest with affinity gives
// the cookie; the cookie is set only on the paths of Ingresses that carry affinity. Invalid values fall back to defaults
// (ingress-nginx logs and carries on): an `affinity` other than exactly "cookie" means no affinity.

import type { Affinity } from '../types.ts';
import type { AnnotationGroup, AnnotationReader } from './group.ts';
import { BASIC_CHARS, matches, URL_CHARS } from './validators.ts';

export interface AffinityAnnotations {
  affinity: Affinity | null;
  /**
   * affinity-mode as written (when valid), with or without `affinity: cookie`: ingress-nginx takes an
   * upstream's mode from the oldest Ingress using it that names one, whatever its affinity
   */
  declaredMode: Affinity['mode'] | null;
  /** affinity-canary-behavior of this Ingress (read when it is a canary) */
  canaryBehavior: 'sticky' | 'legacy';
}

/** `affinity: cookie` with nothing else set: ingress-nginx's defaults */
export const DEFAULT_AFFINITY: Readonly<Affinity> = Object.freeze({
  mode: 'balanced',
  cookieName: 'INGRESSCOOKIE',
  path: null,
  domain: null,
  expires: null,
  maxAge: null,
  secure: false,
  sameSite: null,
  conditionalSameSiteNone: false,
  changeOnFailure: false,
});

const SECONDS = /^(0|-?[1-9]\d*)$/;
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const SAME_SITE: Record<string, 'Strict' | 'Lax' | 'None'> = { strict: 'Strict', lax: 'Lax', none: 'None' };

/** A cookie attribute within ingress-nginx's validator (nothing that could end the attribute), or null. */
function cookieAttribute(read: AnnotationReader, name: string, allowed: RegExp): string | null {
  const value = read.string(name);
  if (value === undefined) return null;
  if (matches(allowed, value, true)) return value.trim();
  read.invalid(name, value, 'only letters, digits and -._~/: (and ,?&= in a path) are allowed', 'default');
  return null;
}

export const affinity: AnnotationGroup<AffinityAnnotations> = {
  scope: 'ingress',
  annotations: [
    { name: 'affinity', default: '', doc: 'cookie: sticky sessions, the endpoint kept in a cookie.' },
    {
      name: 'affinity-mode',
      default: 'balanced',
      doc: 'balanced: sessions rebalance when endpoints scale; persistent: pinned until the endpoint leaves.',
    },
    {
      name: 'affinity-canary-behavior',
      default: 'sticky',
      doc: 'On a canary: sticky (users served by the canary stay on it) or legacy (no stickiness).',
    },
    { name: 'session-cookie-name', default: 'INGRESSCOOKIE', doc: 'Name of the affinity cookie.' },
    { name: 'session-cookie-path', default: '', doc: 'Path of the cookie (default: the Ingress path).' },
    { name: 'session-cookie-domain', default: '', doc: 'Domain of the cookie.' },
    { name: 'session-cookie-expires', default: '', doc: 'Expires attribute, in seconds from now.' },
    { name: 'session-cookie-max-age', default: '', doc: 'Max-Age attribute, in seconds.' },
    {
      name: 'session-cookie-secure',
      default: 'false',
      doc: 'Always mark the cookie Secure (else only on HTTPS requests).',
    },
    { name: 'session-cookie-samesite', default: '', doc: 'SameSite attribute: Strict, Lax or None.' },
    {
      name: 'session-cookie-conditional-samesite-none',
      default: 'false',
      doc: 'Omit SameSite=None for browsers known to mishandle it.',
    },
    {
      name: 'session-cookie-change-on-failure',
      default: 'false',
      doc: "Pick a new endpoint (and cookie) when the request to the cookie's endpoint failed.",
    },
  ],
  defaults: { affinity: null, declaredMode: null, canaryBehavior: 'sticky' },
  parse(read) {
    const behavior = read.string('affinity-canary-behavior');
    let canaryBehavior: 'sticky' | 'legacy' = 'sticky';
    if (behavior === 'legacy') canaryBehavior = 'legacy';
    else if (behavior !== undefined && behavior !== 'sticky') {
      read.invalid('affinity-canary-behavior', behavior, 'expected sticky or legacy', 'default');
    }
    const modeValue = read.string('affinity-mode');
    let declaredMode: Affinity['mode'] | null = null;
    if (modeValue === 'persistent' || modeValue === 'balanced') declaredMode = modeValue;
    else if (modeValue !== undefined) {
      read.invalid('affinity-mode', modeValue, 'expected balanced or persistent', 'default');
    }
    const type = read.string('affinity');
    if (type === undefined) return { affinity: null, declaredMode, canaryBehavior };
    if (type !== 'cookie') {
      read.invalid('affinity', type, 'only "cookie" is supported', 'default');
      return { affinity: null, declaredMode, canaryBehavior };
    }
    let name = read.string('session-cookie-name') ?? DEFAULT_AFFINITY.cookieName;
    if (!COOKIE_NAME.test(name) || !matches(BASIC_CHARS, name, true)) {
      read.invalid('session-cookie-name', name, 'not a cookie name', 'default');
      name = DEFAULT_AFFINITY.cookieName;
    }
    const seconds = (annotation: string): number | null => {
      const value = read.string(annotation);
      if (value === undefined) return null;
      if (SECONDS.test(value)) return Number(value);
      read.invalid(annotation, value, 'expected a whole number of seconds', 'default');
      return null;
    };
    const sameSiteValue = read.string('session-cookie-samesite');
    let sameSite: Affinity['sameSite'] = null;
    if (sameSiteValue !== undefined) {
      sameSite = SAME_SITE[sameSiteValue.toLowerCase()] ?? null;
      if (sameSite === null)
        read.invalid('session-cookie-samesite', sameSiteValue, 'expected Strict, Lax or None', 'default');
    }
    return {
      canaryBehavior,
      declaredMode,
      affinity: {
        mode: declaredMode ?? 'balanced',
        cookieName: name,
        path: cookieAttribute(read, 'session-cookie-path', URL_CHARS),
        domain: cookieAttribute(read, 'session-cookie-domain', BASIC_CHARS),
        expires: seconds('session-cookie-expires'),
        maxAge: seconds('session-cookie-max-age'),
        secure: read.bool('session-cookie-secure', false, 'default'),
        sameSite,
        conditionalSameSiteNone: read.bool('session-cookie-conditional-samesite-none', false, 'default'),
        changeOnFailure: read.bool('session-cookie-change-on-failure', false, 'default'),
      },
    };
  },
};
