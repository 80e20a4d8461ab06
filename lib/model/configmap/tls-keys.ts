// ConfigMap keys of HTTPS: the redirect of HTTP requests to it, HSTS, the TLS protocols and ciphers
// the HTTPS listener offers, and HTTP/2 on it.

import { createSecureContext } from 'node:tls';
import { TLS_VERSIONS, type TlsVersion } from './global-config.ts';
import { bool, type KeyTable } from './key-parser.ts';
import { commaList } from './values.ts';

export const TLS_KEYS: KeyTable = {
  'ssl-redirect': bool((config, value) => {
    config.sslRedirect = value;
  }),
  'force-ssl-redirect': bool((config, value) => {
    config.forceSslRedirect = value;
  }),
  'http-redirect-code': (value, config) => {
    if (!['301', '302', '307', '308'].includes(value)) return 'expected 301, 302, 307 or 308';
    config.httpRedirectCode = Number(value);
    return null;
  },
  'no-tls-redirect-locations': (value, config) => {
    config.noTlsRedirectLocations = commaList(value);
    return null;
  },
  hsts: bool((config, value) => {
    config.hsts.enabled = value;
  }),
  'hsts-max-age': (value, config) => {
    if (!/^\d+$/.test(value)) return 'expected a number of seconds';
    config.hsts.maxAge = Number(value);
    return null;
  },
  'hsts-include-subdomains': bool((config, value) => {
    config.hsts.includeSubdomains = value;
  }),
  'hsts-preload': bool((config, value) => {
    config.hsts.preload = value;
  }),
  'use-http2': bool((config, value) => {
    config.useHttp2 = value;
  }),
  'ssl-protocols': (value, config) => {
    // Node takes a range: a list with gaps (TLSv1 TLSv1.3) enables the versions between too
    let min = -1;
    let max = -1;
    for (const token of value.split(/\s+/)) {
      const index = (TLS_VERSIONS as readonly string[]).indexOf(token);
      if (index === -1) return `expected versions among ${TLS_VERSIONS.join(' ')}, separated by spaces`;
      if (min === -1 || index < min) min = index;
      if (index > max) max = index;
    }
    config.ssl.minVersion = TLS_VERSIONS[min] as TlsVersion;
    config.ssl.maxVersion = TLS_VERSIONS[max] as TlsVersion;
    return null;
  },
  'ssl-ciphers': (value, config) => {
    // OpenSSL is the validator: a string it matches no cipher with is refused here, not at handshake
    try {
      createSecureContext({ ciphers: value });
    } catch {
      return 'OpenSSL matches no cipher with it';
    }
    config.ssl.ciphers = value;
    return null;
  },
};
