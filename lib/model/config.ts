// The global ConfigMap (--configmap): ingress-nginx's keys with their defaults. One small parser
// per key; an invalid value keeps the default and is reported on the ConfigMap; a key ingress-ts
// does not implement yet is reported once (info), since a ConfigMap often carries NGINX tuning.

import { parseGoBool } from './annotations/group.ts';
import { NEXT_UPSTREAM, type ProxyAnnotations, SIZE } from './annotations/proxy.ts';
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
  /**
   * The upstream behaviour of locations whose Ingress does not set it (`proxy-connect-timeout`,
   * `proxy-send-timeout`, `proxy-read-timeout`, `proxy-next-upstream`, `-tries`, `-timeout`,
   * `proxy-body-size`, `proxy-request-buffering`, `proxy-buffering`, `proxy-http-version`,
   * `proxy-cookie-domain`, `proxy-cookie-path`, `proxy-redirect-from`, `proxy-redirect-to`)
   */
  proxy: { [K in keyof ProxyAnnotations]: NonNullable<ProxyAnnotations[K]> };
  /** `retry-non-idempotent`: POST, LOCK and PATCH may be retried too (adds non_idempotent everywhere) */
  retryNonIdempotent: boolean;
  /** `service-upstream`: upstreams go to the Service's ClusterIP unless the Ingress says otherwise */
  serviceUpstream: boolean;
}

export const DEFAULT_GLOBAL_CONFIG: Readonly<GlobalConfig> = Object.freeze({
  loadBalance: 'round_robin',
  sslRedirect: true,
  forceSslRedirect: false,
  httpRedirectCode: 308,
  noTlsRedirectLocations: ['/.well-known/acme-challenge'],
  hsts: { enabled: true, maxAge: 31536000, includeSubdomains: true, preload: false },
  accessLog: { disabled: false, forDefaultBackend: false, skipUrls: [], path: '/var/log/nginx/access.log' },
  proxy: {
    connectTimeout: 5,
    sendTimeout: 60,
    readTimeout: 60,
    nextUpstream: 'error timeout',
    nextUpstreamTries: 3,
    nextUpstreamTimeout: 0,
    bodySize: '1m',
    requestBuffering: 'on' as const,
    buffering: 'off' as const,
    httpVersion: '1.1' as const,
    cookieDomain: 'off',
    cookiePath: 'off',
    redirectFrom: 'off',
    redirectTo: 'off',
  },
  retryNonIdempotent: false,
  serviceUpstream: false,
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

/** A whole number (seconds or tries) into `config.proxy[field]`. */
const proxyInt =
  (
    field: 'connectTimeout' | 'sendTimeout' | 'readTimeout' | 'nextUpstreamTries' | 'nextUpstreamTimeout',
  ): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value)) return 'expected a whole number';
    config.proxy[field] = Number(value);
    return null;
  };

/** One of a few words into `config.proxy[field]`. */
const proxyOption =
  <F extends 'requestBuffering' | 'buffering' | 'httpVersion'>(
    field: F,
    options: ReadonlyArray<GlobalConfig['proxy'][F]>,
  ): KeyParser =>
  (value, config) => {
    const found = options.find((o) => o === value);
    if (found === undefined) return `expected ${options.join(' or ')}`;
    config.proxy[field] = found;
    return null;
  };

/** A rewrite (`off` or `<from> <to>`, or a redirect prefix) into `config.proxy[field]`. */
const proxyText =
  (field: 'cookieDomain' | 'cookiePath' | 'redirectFrom' | 'redirectTo'): KeyParser =>
  (value, config) => {
    if (/[\r\n]/.test(value)) return 'line breaks are not allowed';
    config.proxy[field] = value;
    return null;
  };

/** Each key: apply the value to the config, or say why it is invalid. */
const KEYS: Record<string, KeyParser> = {
  'proxy-connect-timeout': proxyInt('connectTimeout'),
  'proxy-send-timeout': proxyInt('sendTimeout'),
  'proxy-read-timeout': proxyInt('readTimeout'),
  'proxy-next-upstream': (value, config) => {
    if (!NEXT_UPSTREAM.test(value))
      return 'expected tokens among error timeout invalid_header http_5xx http_4xx non_idempotent off';
    config.proxy.nextUpstream = value;
    return null;
  },
  'proxy-next-upstream-tries': proxyInt('nextUpstreamTries'),
  'proxy-next-upstream-timeout': proxyInt('nextUpstreamTimeout'),
  'retry-non-idempotent': bool((config, value) => {
    config.retryNonIdempotent = value;
  }),
  'proxy-body-size': (value, config) => {
    if (!SIZE.test(value)) return 'expected a size such as 1m, 512k or 0';
    config.proxy.bodySize = value;
    return null;
  },
  'proxy-request-buffering': proxyOption('requestBuffering', ['on', 'off']),
  'proxy-buffering': proxyOption('buffering', ['on', 'off']),
  'proxy-http-version': proxyOption('httpVersion', ['1.0', '1.1']),
  'proxy-cookie-domain': proxyText('cookieDomain'),
  'proxy-cookie-path': proxyText('cookiePath'),
  'proxy-redirect-from': proxyText('redirectFrom'),
  'proxy-redirect-to': proxyText('redirectTo'),
  'service-upstream': bool((config, value) => {
    config.serviceUpstream = value;
  }),
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
