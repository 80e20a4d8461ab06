// The affinity cookie as ingress-nginx's sticky.lua bakes it (lua-resty-cookie):
//   name=value[; Expires=<Wdy, DD-Mon-YY HH:MM:SS GMT>][; Max-Age=N][; Domain=D][; Path=P][; Secure]; HttpOnly[; SameSite=S]
// Path: session-cookie-path, else the route's path as written. Secure: session-cookie-secure, else
// only on HTTPS requests. With session-cookie-conditional-samesite-none, SameSite=None is left out for
// the browsers that reject it (Chrome 4x-6x, iOS 12, macOS 10.14 Safari).

import type { Affinity } from '../../model/index.ts';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** NGINX's ngx.cookie_time: `Thu, 31-Dec-37 23:55:55 GMT`. */
export function cookieTime(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${two(d.getUTCFullYear() % 100)} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`;
}

/** Whether a browser handles SameSite=None (sticky.lua same_site_none_compatible). */
export function sameSiteNoneCompatible(userAgent: string): boolean {
  if (/Chrome\/[456]/.test(userAgent)) return false;
  if (userAgent.includes('CPU iPhone OS 12') || userAgent.includes('iPad; CPU OS 12')) return false;
  return !(
    userAgent.includes('Macintosh') &&
    userAgent.includes('Intel Mac OS X 10_14') &&
    userAgent.includes('Safari') &&
    !userAgent.includes('Chrome')
  );
}

export interface CookieRequest {
  https: boolean;
  /** the route's path as written ($location_path) */
  locationPath: string;
  userAgent: string;
  /** ms since the epoch */
  now: number;
}

export function affinityCookie(affinity: Affinity, value: string, request: CookieRequest): string {
  let cookie = `${affinity.cookieName}=${value}`;
  if (affinity.expires !== null) cookie += `; Expires=${cookieTime(request.now + affinity.expires * 1000)}`;
  if (affinity.maxAge !== null) cookie += `; Max-Age=${affinity.maxAge}`;
  if (affinity.domain !== null) cookie += `; Domain=${affinity.domain}`;
  cookie += `; Path=${affinity.path ?? request.locationPath}`;
  if (affinity.secure || request.https) cookie += '; Secure';
  cookie += '; HttpOnly';
  const sameSite = affinity.sameSite;
  if (
    sameSite !== null &&
    !(sameSite === 'None' && affinity.conditionalSameSiteNone && !sameSiteNoneCompatible(request.userAgent))
  ) {
    cookie += `; SameSite=${sameSite}`;
  }
  return cookie;
}
