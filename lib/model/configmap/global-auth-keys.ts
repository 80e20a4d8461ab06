// ConfigMap keys of the global external authentication (global-auth-url and its companions,
// no-auth-locations). Invalid values keep the default (as ingress-nginx: an unusable global-auth-url
// turns global auth off) and are reported on the ConfigMap.

import { AUTH_METHODS, authUrl, cacheDurations, headerList } from '../annotations/external-auth.ts';
import type { KeyTable } from './key-parser.ts';
import { commaList } from './values.ts';

export const GLOBAL_AUTH_KEYS: KeyTable = {
  'global-auth-url': (value, config) => {
    if (authUrl(value) === null) return 'expected an http or https URL';
    config.globalAuth.url = value;
    return null;
  },
  'global-auth-method': (value, config) => {
    if (!AUTH_METHODS.includes(value)) return `expected one of ${AUTH_METHODS.join(', ')}`;
    config.globalAuth.method = value;
    return null;
  },
  'global-auth-signin': (value, config) => {
    if (authUrl(value) === null) return 'expected an http or https URL';
    config.globalAuth.signin = value;
    return null;
  },
  'global-auth-signin-redirect-param': (value, config) => {
    if (!/^[A-Za-z0-9_.~-]+$/.test(value)) return 'expected a query parameter name';
    config.globalAuth.signinRedirectParam = value;
    return null;
  },
  'global-auth-response-headers': (value, config) => {
    const list = headerList(value);
    if (list === null) return 'expected a comma list of header names';
    config.globalAuth.responseHeaders = list;
    return null;
  },
  'global-auth-request-redirect': (value, config) => {
    // sent as a header: anything but visible ASCII would fail every request at send time
    if (!/^[\x20-\x7e]*$/.test(value)) return 'only visible ASCII characters are allowed';
    config.globalAuth.requestRedirect = value;
    return null;
  },
  'global-auth-always-set-cookie': (value, config) => {
    if (value !== 'true' && value !== 'false') return 'expected "true" or "false"';
    config.globalAuth.alwaysSetCookie = value === 'true';
    return null;
  },
  'global-auth-cache-key': (value, config) => {
    config.globalAuth.cacheKey = value;
    return null;
  },
  'global-auth-cache-duration': (value, config) => {
    const parsed = cacheDurations(value);
    if (parsed === null) return 'expected "codes time[, codes time]"';
    config.globalAuth.cacheDuration = parsed;
    return null;
  },
  'no-auth-locations': (value, config) => {
    config.globalAuth.noAuthLocations = commaList(value);
    return null;
  },
};
