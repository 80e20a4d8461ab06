// The global ConfigMap (--configmap): ingress-nginx's keys with their defaults. One small parser
// per key; an invalid value keeps the default and is reported on the ConfigMap; a key ingress-ts
// does not implement yet is reported once (info), since a ConfigMap often carries NGINX tuning.

import { createSecureContext } from 'node:tls';
import { parseGoBool } from './annotations/group.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { ConfigMap } from './k8s.ts';

/** Load-balancing algorithms ingress-nginx's validator accepts (load-balance annotation and key). */
export const LOAD_BALANCE_NAMES = [
  'round_robin',
  'chash',
  'chashsubset',
  'sticky_balanced',
  'sticky_persistent',
  'ewma',
] as const;

export interface GlobalConfig {
  /** `load-balance`: the algorithm of upstreams whose Ingress does not choose one */
  loadBalance: string;
  /** `ssl-redirect`: HTTP requests to hosts with TLS are redirected to HTTPS */
  sslRedirect: boolean;
  /** `force-ssl-redirect`: redirect even hosts without TLS (TLS terminated in front) */
  forceSslRedirect: boolean;
  /** `http-redirect-code`: 301, 302, 307 or 308 */
  httpRedirectCode: number;
  /** `no-tls-redirect-locations`: rule paths (prefixes) never redirected */
  noTlsRedirectLocations: string[];
  /** `hsts`, `hsts-max-age`, `hsts-include-subdomains`, `hsts-preload` */
  hsts: { enabled: boolean; maxAge: number; includeSubdomains: boolean; preload: boolean };
  /**
   * `disable-access-log`, `enable-access-log-for-default-backend`, `skip-access-log-urls` (request
   * URIs never logged), `access-log-path` ('' or /dev/stdout: standard output)
   */
  accessLog: { disabled: boolean; forDefaultBackend: boolean; skipUrls: string[]; path: string };
  /** `use-http2`: the HTTPS listener offers h2 by ALPN (else HTTP/1.1 only) */
  useHttp2: boolean;
  /**
   * `ssl-protocols` as the range Node takes (the lowest and highest version listed) and `ssl-ciphers`
   * (OpenSSL cipher string; TLS 1.3 suites are not affected by it)
   */
  ssl: { minVersion: TlsVersion; maxVersion: TlsVersion; ciphers: string };
}

/** The protocol versions `ssl-protocols` may list, oldest first. */
export const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];

/** ingress-nginx's default `ssl-ciphers`. */
export const DEFAULT_SSL_CIPHERS =
  'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256';

export const DEFAULT_GLOBAL_CONFIG: Readonly<GlobalConfig> = Object.freeze({
  loadBalance: 'round_robin',
  sslRedirect: true,
  forceSslRedirect: false,
  httpRedirectCode: 308,
  noTlsRedirectLocations: ['/.well-known/acme-challenge'],
  hsts: { enabled: true, maxAge: 31536000, includeSubdomains: true, preload: false },
  accessLog: { disabled: false, forDefaultBackend: false, skipUrls: [], path: '/var/log/nginx/access.log' },
  useHttp2: true,
  ssl: {
    minVersion: 'TLSv1.2' as TlsVersion,
    maxVersion: 'TLSv1.3' as TlsVersion,
    ciphers: DEFAULT_SSL_CIPHERS,
  },
});

type KeyParser = (value: string, config: GlobalConfig) => string | null;

const bool =
  (set: (config: GlobalConfig, value: boolean) => void): KeyParser =>
  (value, config) => {
    const parsed = parseGoBool(value);
    if (parsed === undefined) return 'expected "true" or "false"';
    set(config, parsed);
    return null;
  };

/** Each key: apply the value to the config, or say why it is invalid. */
const KEYS: Record<string, KeyParser> = {
  'load-balance': (value, config) => {
    if (!(LOAD_BALANCE_NAMES as readonly string[]).includes(value)) {
      return `expected one of ${LOAD_BALANCE_NAMES.join(', ')}`;
    }
    config.loadBalance = value;
    return null;
  },
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
    config.noTlsRedirectLocations = value
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
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
  'disable-access-log': bool((config, value) => {
    config.accessLog.disabled = value;
  }),
  'enable-access-log-for-default-backend': bool((config, value) => {
    config.accessLog.forDefaultBackend = value;
  }),
  'skip-access-log-urls': (value, config) => {
    config.accessLog.skipUrls = value
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    return null;
  },
  'access-log-path': (value, config) => {
    if (!value.startsWith('/')) return 'expected an absolute path';
    config.accessLog.path = value;
    return null;
  },
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

export const SUPPORTED_CONFIG_KEYS: readonly string[] = Object.keys(KEYS).sort();

export function parseGlobalConfig(
  configMap: ConfigMap | undefined,
  ref: { namespace: string; name: string },
  diagnostics: DiagnosticsCollector,
): GlobalConfig {
  const config: GlobalConfig = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  const data = configMap?.data;
  if (data === undefined || data === null || typeof data !== 'object') return config;
  for (const key of Object.keys(data).sort()) {
    const raw = data[key];
    const value = typeof raw === 'string' ? raw.trim() : String(raw);
    const parse = KEYS[key];
    if (parse === undefined) {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_KEY_UNSUPPORTED',
        `ConfigMap key ${key} is not supported by ingress-ts yet and has no effect`,
      );
      continue;
    }
    if (value === '') continue;
    const problem = parse(value, config);
    if (problem !== null) {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_VALUE_INVALID',
        `ConfigMap key ${key}=${JSON.stringify(value)} is invalid (${problem}); the default is used`,
      );
    }
  }
  return config;
}
