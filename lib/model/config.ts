// The global ConfigMap (--configmap): ingress-nginx's keys with their defaults. One small parser
// per key; an invalid value keeps the default and is reported on the ConfigMap; a key ingress-ts
// does not implement yet is reported once (info), since a ConfigMap often carries NGINX tuning.

import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { parseGoBool } from './annotations/group.ts';
import { NEXT_UPSTREAM, type ProxyAnnotations, SIZE } from './annotations/proxy.ts';
import { ANNOTATION_RISKS, type AnnotationRisk } from './annotations/risk.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import { DEFAULT_GLOBAL_AUTH, type GlobalAuthConfig, globalAuthKeys } from './global-auth.ts';
import type { ConfigMap } from './k8s.ts';
import { redactValue } from './redact.ts';

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
  /** the proxy annotations' ConfigMap defaults (connection-proxy-header has no ConfigMap key) */
  proxy: { [K in Exclude<keyof ProxyAnnotations, 'connectionHeader'>]: NonNullable<ProxyAnnotations[K]> };
  /** `retry-non-idempotent`: POST, LOCK and PATCH may be retried too (adds non_idempotent everywhere) */
  retryNonIdempotent: boolean;
  /** `service-upstream`: upstreams go to the Service's ClusterIP unless the Ingress says otherwise */
  serviceUpstream: boolean;
  /** `use-http2`: the HTTPS listener offers h2 by ALPN (else HTTP/1.1 only) */
  useHttp2: boolean;
  /**
   * `ssl-protocols` as the range Node takes (the lowest and highest version listed) and `ssl-ciphers`
   * (OpenSSL cipher string; TLS 1.3 suites are not affected by it)
   */
  ssl: { minVersion: TlsVersion; maxVersion: TlsVersion; ciphers: string };
  // --- client address, request and response headers, connections, custom errors
  /** how the client address and X-Forwarded-* are derived, as ingress-nginx derives them */
  forwarding: ForwardingConfig;
  /** headers added, removed or generated on the way up and down */
  headers: HeadersConfig;
  /** `keep-alive` (s), `keep-alive-requests`, `client-header-timeout` (s), `client-body-timeout` (s) */
  client: { keepAlive: number; keepAliveRequests: number; headerTimeout: number; bodyTimeout: number };
  /** `large-client-header-buffers` ("4 8k"): a request line or header line fits in `size` bytes, the
   * whole request head in `count` × `size` */
  largeClientHeaderBuffers: { count: number; size: number };
  /** `max-worker-connections` (16384): concurrent client connections, HTTP and HTTPS together; 0: no cap */
  maxWorkerConnections: number;
  /** `upstream-keepalive-connections`, `-timeout` (s), `-requests`: the upstream pools */
  upstreamKeepalive: { connections: number; timeout: number; requests: number };
  /** `custom-http-errors`: upstream statuses answered by the default backend (routes may override) */
  customHttpErrors: number[];
  /** `allow-snippet-annotations`: accepted, but snippets are refused whatever it says */
  allowSnippetAnnotations: boolean;
  /** `global-auth-*`, `no-auth-locations`: external authentication for every location (global-auth.ts) */
  globalAuth: GlobalAuthConfig;
  /** `global-allowed-response-headers`: the header names custom-headers ConfigMaps may set */
  globalAllowedResponseHeaders: string[];
  /** `allow-cross-namespace-resources`: annotations may name a ConfigMap or Secret of another namespace */
  allowCrossNamespaceResources: boolean;
  /**
   * `annotation-value-word-blocklist`: an Ingress with one of these words in the value of an annotation
   * under the prefix is skipped whole (trimmed, empty words left out)
   */
  annotationValueWordBlocklist: string[];
  /** `annotations-risk-level`: an Ingress with an annotation of a higher risk is skipped whole */
  annotationsRiskLevel: AnnotationRisk;
  /** client address access control and rate-limit statuses */
  access: AccessConfig;
  /** `worker-shutdown-timeout` in milliseconds: how long in-flight requests may drain at shutdown */
  workerShutdownTimeoutMs: number;
}

export interface AccessConfig {
  /** `whitelist-source-range`: routes without allowlist-source-range allow only these (empty: all) */
  allowlist: string[];
  /** `denylist-source-range`: routes without denylist-source-range deny these */
  denylist: string[];
  /** `block-cidrs`: denied on every request, whatever the route */
  blockCidrs: string[];
  /** `limit-req-status-code`: the answer to a request over limit-rps / limit-rpm */
  limitReqStatus: number;
  /** `limit-conn-status-code`: the answer to a request over limit-connections */
  limitConnStatus: number;
  /** `limit-rate`: KB per second of a response body (0: unlimited), where no annotation says */
  limitRate: number;
  /** `limit-rate-after`: KB of a response body before limit-rate applies */
  limitRateAfter: number;
}

export interface ForwardingConfig {
  /** `use-forwarded-headers`: trust X-Forwarded-Proto/-Host/-Port and the client chain */
  useForwardedHeaders: boolean;
  /** `compute-full-forwarded-for`: X-Forwarded-For is the incoming chain plus the peer address */
  computeFullForwardedFor: boolean;
  /** `forwarded-for-header`: the header holding the client chain, lower-case */
  forwardedForHeader: string;
  /** `enable-real-ip`: take the client address from that header (also on with use-forwarded-headers) */
  enableRealIp: boolean;
  /** `proxy-real-ip-cidr`: peers trusted to name the client, as `address/prefix` */
  realIpCidrs: string[];
}

export interface HeadersConfig {
  /** `generate-request-id`: X-Request-ID generated when the request has none */
  generateRequestId: boolean;
  /** `server-tokens`: responses carry `Server: ingress-ts` */
  serverTokens: boolean;
  /** `proxy-set-headers`: the referenced ConfigMap (`ns/name`, '' for none) and its entries, sent upstream */
  proxySetHeaders: { source: string; headers: Array<[string, string]> };
  /** `add-headers`: the same for every response to the client */
  addHeaders: { source: string; headers: Array<[string, string]> };
  /** `hide-headers`: upstream response headers never passed on, lower-case */
  hideHeaders: string[];
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
  forwarding: {
    useForwardedHeaders: false,
    computeFullForwardedFor: false,
    forwardedForHeader: 'x-forwarded-for',
    enableRealIp: false,
    realIpCidrs: ['0.0.0.0/0'],
  },
  headers: {
    generateRequestId: true,
    serverTokens: false,
    proxySetHeaders: { source: '', headers: [] },
    addHeaders: { source: '', headers: [] },
    hideHeaders: [],
  },
  client: { keepAlive: 75, keepAliveRequests: 1000, headerTimeout: 60, bodyTimeout: 60 },
  largeClientHeaderBuffers: { count: 4, size: 8192 },
  maxWorkerConnections: 16384,
  upstreamKeepalive: { connections: 320, timeout: 60, requests: 10000 },
  customHttpErrors: [],
  allowSnippetAnnotations: false,
  globalAuth: DEFAULT_GLOBAL_AUTH,
  globalAllowedResponseHeaders: [],
  allowCrossNamespaceResources: false,
  annotationValueWordBlocklist: [],
  annotationsRiskLevel: 'High' as AnnotationRisk,
  access: {
    allowlist: [],
    denylist: [],
    blockCidrs: [],
    limitReqStatus: 503,
    limitConnStatus: 503,
    limitRate: 0,
    limitRateAfter: 0,
  },
  workerShutdownTimeoutMs: 240_000,
  useHttp2: true,
  ssl: {
    minVersion: 'TLSv1.2' as TlsVersion,
    maxVersion: 'TLSv1.3' as TlsVersion,
    ciphers: DEFAULT_SSL_CIPHERS,
  },
});

/** Looks a ConfigMap up by namespace and name (and records that the model depends on it). */
export type ConfigMapLookup = (namespace: string, name: string) => ConfigMap | undefined;

type KeyParser = (value: string, config: GlobalConfig, lookup: ConfigMapLookup) => string | null;

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

// --- client address, headers, connections, custom errors -----------------------------------------

/** HTTP field names (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Header values Node writes: visible ASCII, Latin-1, spaces and tabs; no CR/LF. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const seconds =
  (set: (config: GlobalConfig, value: number) => void, allowZero = true): KeyParser =>
  (value, config) => {
    // NGINX time syntax without a unit is seconds; `60s` is accepted too
    const m = /^(\d+)s?$/.exec(value);
    if (m === null || (!allowZero && Number(m[1]) === 0)) return 'expected a number of seconds';
    set(config, Number(m[1]));
    return null;
  };

const count =
  (set: (config: GlobalConfig, value: number) => void, min: number): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value) || Number(value) < min) return `expected an integer >= ${min}`;
    set(config, Number(value));
    return null;
  };

/** An IPv4 or IPv6 CIDR (or a bare address, a /32 or /128), normalised to `address/prefix`. */
export function parseCidr(entry: string): string | null {
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  if (slash === -1) return `${address}/${max}`;
  const prefix = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return null;
  return `${address}/${Number(prefix)}`;
}

/** custom-http-errors (ConfigMap and annotation): comma list of codes 400-599, sorted, unique. */
export function parseStatusList(value: string): number[] | null {
  const codes = new Set<number>();
  for (const entry of value.split(',')) {
    const code = entry.trim();
    if (code === '') continue;
    if (!/^[45]\d\d$/.test(code)) return null;
    codes.add(Number(code));
  }
  return [...codes].sort((a, b) => a - b);
}

/** `ns/name` of a ConfigMap whose entries are headers (proxy-set-headers, add-headers). */
const headerMap =
  (key: 'proxySetHeaders' | 'addHeaders'): KeyParser =>
  (value, config, lookup) => {
    const slash = value.indexOf('/');
    if (slash <= 0 || slash === value.length - 1 || value.indexOf('/', slash + 1) !== -1) {
      return 'expected namespace/name of a ConfigMap';
    }
    const source = lookup(value.slice(0, slash), value.slice(slash + 1));
    const headers: Array<[string, string]> = [];
    const bad: string[] = [];
    const data = source?.data;
    if (data !== undefined && data !== null && typeof data === 'object') {
      for (const name of Object.keys(data).sort()) {
        const raw = data[name];
        const v = typeof raw === 'string' ? raw : String(raw);
        if (HEADER_NAME.test(name) && HEADER_VALUE.test(v)) headers.push([name, v]);
        else bad.push(name);
      }
    }
    if (source === undefined) return `the ConfigMap ${value} does not exist`;
    if (bad.length > 0) return `entries that are not valid headers: ${bad.join(', ')}`;
    config.headers[key] = { source: value, headers };
    return null;
  };

/**
 * Settings NGINX needs and a Node proxy has no use for: accepted, and reported as not applicable (not
 * as "not supported yet"). Prefixes end with `-`.
 */
const NGINX_INTERNAL_KEYS = new Set([
  'worker-processes',
  'worker-cpu-affinity',
  'worker-rlimit-nofile',
  'max-worker-open-files',
  'lua-shared-dicts',
  'reuse-port',
  'enable-aio-write',
  'enable-multi-accept',
  'ssl-buffer-size',
  'ssl-ecdh-curve',
  'ssl-dh-param',
  'use-geoip',
  'use-geoip2',
  'geoip2-autoreload-in-minutes',
  'enable-modsecurity',
  'enable-owasp-modsecurity-crs',
  'modsecurity-snippet',
  'error-log-level',
  'error-log-path',
  'debug-connections',
  'grpc-buffer-size-kb',
  'nginx-status-ipv4-whitelist',
  'nginx-status-ipv6-whitelist',
  'bind-address',
  'http-snippet',
  'main-snippet',
  'server-snippet',
  'location-snippet',
  'stream-snippet',
  // absolute_redirect: see the relative-redirects annotation
  'relative-redirects',
]);
const NGINX_INTERNAL_PREFIXES = ['proxy-stream-', 'jaeger-', 'variables-hash-'];

/** Whether a key only tunes NGINX itself (workers, hash tables, Lua, modules, snippets). */
export function isNginxInternalKey(key: string): boolean {
  return (
    NGINX_INTERNAL_KEYS.has(key) ||
    key.includes('-hash-') ||
    NGINX_INTERNAL_PREFIXES.some((prefix) => key.startsWith(prefix))
  );
}

function clientAndHeaderKeys(): Record<string, KeyParser> {
  return {
    'use-forwarded-headers': bool((config, value) => {
      config.forwarding.useForwardedHeaders = value;
    }),
    'compute-full-forwarded-for': bool((config, value) => {
      config.forwarding.computeFullForwardedFor = value;
    }),
    'forwarded-for-header': (value, config) => {
      if (!HEADER_NAME.test(value)) return 'expected a header name';
      config.forwarding.forwardedForHeader = value.toLowerCase();
      return null;
    },
    'enable-real-ip': bool((config, value) => {
      config.forwarding.enableRealIp = value;
    }),
    'proxy-real-ip-cidr': (value, config) => {
      const cidrs: string[] = [];
      for (const entry of value.split(',')) {
        const trimmed = entry.trim();
        if (trimmed === '') continue;
        const cidr = parseCidr(trimmed);
        if (cidr === null) return `${JSON.stringify(trimmed)} is not an IPv4 or IPv6 address or CIDR`;
        cidrs.push(cidr);
      }
      if (cidrs.length > 0) config.forwarding.realIpCidrs = cidrs;
      return null;
    },
    'generate-request-id': bool((config, value) => {
      config.headers.generateRequestId = value;
    }),
    'server-tokens': bool((config, value) => {
      config.headers.serverTokens = value;
    }),
    'proxy-set-headers': headerMap('proxySetHeaders'),
    'add-headers': headerMap('addHeaders'),
    'hide-headers': (value, config) => {
      const names: string[] = [];
      for (const entry of value.split(',')) {
        const name = entry.trim();
        if (name === '') continue;
        if (!HEADER_NAME.test(name)) return `${JSON.stringify(name)} is not a header name`;
        names.push(name.toLowerCase());
      }
      config.headers.hideHeaders = names;
      return null;
    },
    'keep-alive': seconds((config, value) => {
      config.client.keepAlive = value;
    }),
    'keep-alive-requests': count((config, value) => {
      config.client.keepAliveRequests = value;
    }, 1),
    'client-header-timeout': seconds((config, value) => {
      config.client.headerTimeout = value;
    }, false),
    'client-body-timeout': seconds((config, value) => {
      config.client.bodyTimeout = value;
    }, false),
    'large-client-header-buffers': (value, config) => {
      // NGINX syntax: `<number> <size>`, the size in bytes or with a k / m suffix
      const m = /^\s*(\d+)\s+(\d+)([km]?)\s*$/i.exec(value);
      const unit = m === null ? 0 : m[3]?.toLowerCase() === 'm' ? 1 << 20 : m[3] === '' ? 1 : 1024;
      const count = m === null ? 0 : Number(m[1]);
      const size = m === null ? 0 : Number(m[2]) * unit;
      if (count < 1 || size < 1024 || count * size > 1 << 20) {
        return 'expected "<number> <size>" (like "4 8k"), a size of at least 1k and at most 1m in all';
      }
      config.largeClientHeaderBuffers = { count, size };
      return null;
    },
    'max-worker-connections': count((config, value) => {
      config.maxWorkerConnections = value;
    }, 0),
    'upstream-keepalive-connections': count((config, value) => {
      config.upstreamKeepalive.connections = value;
    }, 1),
    'upstream-keepalive-timeout': seconds((config, value) => {
      config.upstreamKeepalive.timeout = value;
    }),
    'upstream-keepalive-requests': count((config, value) => {
      config.upstreamKeepalive.requests = value;
    }, 1),
    'custom-http-errors': (value, config) => {
      const codes = parseStatusList(value);
      if (codes === null) return 'expected a comma-separated list of status codes 400-599';
      config.customHttpErrors = codes;
      return null;
    },
    'allow-snippet-annotations': (value, config) => {
      config.allowSnippetAnnotations = parseGoBool(value) === true;
      return null;
    },
  };
}

/** Keys of custom-headers. */
function customHeadersKeys(): Record<string, KeyParser> {
  return {
    'global-allowed-response-headers': (value, config) => {
      config.globalAllowedResponseHeaders = value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
      return null;
    },
    'allow-cross-namespace-resources': bool((config, value) => {
      config.allowCrossNamespaceResources = value;
    }),
    // ingress-nginx's store splits on commas without trimming each word, and an empty word (a
    // trailing comma) then matches every value, skipping every annotated Ingress; ingress-ts trims
    // each word (as ingress-nginx's admission webhook does) and leaves empty ones out
    // ingress-nginx reads any other word as Low (refusing nearly every annotation); a misspelling
    // is reported here and the default kept
    'annotations-risk-level': (value, config) => {
      const level = ANNOTATION_RISKS.find((risk) => risk.toLowerCase() === value.toLowerCase());
      if (level === undefined) return `expected ${ANNOTATION_RISKS.join(', ')}`;
      config.annotationsRiskLevel = level;
      return null;
    },
    'annotation-value-word-blocklist': (value, config) => {
      config.annotationValueWordBlocklist = [
        ...new Set(
          value
            .split(',')
            .map((word) => word.trim())
            .filter((word) => word !== ''),
        ),
      ];
      return null;
    },
  };
}

// --- access control and rate limits --------------------------------------------------------------

/** A comma list of addresses/CIDRs, all valid or the key keeps its default. */
const cidrList =
  (set: (config: GlobalConfig, cidrs: string[]) => void): KeyParser =>
  (value, config) => {
    const cidrs: string[] = [];
    for (const entry of value.split(',')) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      const cidr = parseCidr(trimmed);
      if (cidr === null) return `${JSON.stringify(trimmed)} is not an IPv4 or IPv6 address or CIDR`;
      if (!cidrs.includes(cidr)) cidrs.push(cidr);
    }
    set(config, cidrs.sort());
    return null;
  };

/** limit_req_status / limit_conn_status: NGINX accepts 400-599. */
const limitStatus =
  (set: (config: GlobalConfig, status: number) => void): KeyParser =>
  (value, config) => {
    if (!/^[45]\d\d$/.test(value)) return 'expected a status code from 400 to 599';
    set(config, Number(value));
    return null;
  };

function accessControlKeys(): Record<string, KeyParser> {
  return {
    'whitelist-source-range': cidrList((config, cidrs) => {
      config.access.allowlist = cidrs;
    }),
    'denylist-source-range': cidrList((config, cidrs) => {
      config.access.denylist = cidrs;
    }),
    'block-cidrs': cidrList((config, cidrs) => {
      config.access.blockCidrs = cidrs;
    }),
    'limit-req-status-code': limitStatus((config, status) => {
      config.access.limitReqStatus = status;
    }),
    'limit-conn-status-code': limitStatus((config, status) => {
      config.access.limitConnStatus = status;
    }),
    'limit-rate': count((config, value) => {
      config.access.limitRate = value;
    }, 0),
    'limit-rate-after': count((config, value) => {
      config.access.limitRateAfter = value;
    }, 0),
  };
}

// --- graceful shutdown ---------------------------------------------------------------------------

const NGINX_TIME_UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  M: 2_592_000_000,
  y: 31_536_000_000,
};

/** NGINX's time syntax (`240s`, `4m`, `1m30s`, `500ms`; a bare number is seconds) in milliseconds, or null. */
export function parseNginxTimeMs(value: string): number | null {
  if (!/^(?:\d+(?:ms|[smhdwMy])?)+$/.test(value)) return null;
  let total = 0;
  for (const [, digits, unit] of value.matchAll(/(\d+)(ms|[smhdwMy])?/g)) {
    total += Number(digits) * (NGINX_TIME_UNITS_MS[unit ?? 's'] ?? 1000);
  }
  return Number.isSafeInteger(total) ? total : null;
}

function shutdownKeys(): Record<string, KeyParser> {
  return {
    'worker-shutdown-timeout': (value, config) => {
      const ms = parseNginxTimeMs(value);
      if (ms === null) return 'expected an NGINX time such as 240s, 4m or 1m30s';
      config.workerShutdownTimeoutMs = ms;
      return null;
    },
  };
}

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
  ...clientAndHeaderKeys(),
  ...globalAuthKeys(),
  ...customHeadersKeys(),
  ...accessControlKeys(),
  ...shutdownKeys(),
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
  lookup: ConfigMapLookup = () => undefined,
): GlobalConfig {
  const config: GlobalConfig = structuredClone(DEFAULT_GLOBAL_CONFIG) as GlobalConfig;
  const data = configMap?.data;
  if (data === undefined || data === null || typeof data !== 'object') return config;
  for (const key of Object.keys(data).sort()) {
    const raw = data[key];
    const value = typeof raw === 'string' ? raw.trim() : String(raw);
    const parse = KEYS[key];
    if (parse === undefined) {
      if (isNginxInternalKey(key)) {
        diagnostics.report(
          'ConfigMap',
          ref,
          'CONFIG_KEY_NOT_APPLICABLE',
          `ConfigMap key ${key} tunes NGINX itself; it does not apply to ingress-ts and has no effect`,
        );
      } else {
        diagnostics.report(
          'ConfigMap',
          ref,
          'CONFIG_KEY_UNSUPPORTED',
          `ConfigMap key ${key} is not supported by ingress-ts yet and has no effect`,
        );
      }
      continue;
    }
    if (value === '') continue;
    const problem = parse(value, config, lookup);
    if (problem !== null) {
      diagnostics.report(
        'ConfigMap',
        ref,
        'CONFIG_VALUE_INVALID',
        `ConfigMap key ${key}=${JSON.stringify(redactValue(key, value))} is invalid (${problem}); the default is used`,
      );
    }
  }
  return config;
}
