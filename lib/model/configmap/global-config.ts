// The global ConfigMap (--configmap) as the model holds it: its types and ingress-nginx's defaults.
// The keys that fill it are parsed in the *-keys.ts files of this folder, one file per topic.

import { type CacheDuration, DEFAULT_CACHE_DURATION } from '../annotations/external-auth.ts';
import type { ProxyAnnotations } from '../annotations/proxy.ts';
import type { AnnotationRisk } from '../annotations/risk.ts';
import { type CompressionConfig, DEFAULT_COMPRESSION } from './compression-keys.ts';
import { DEFAULT_LOG_FORMAT_UPSTREAM } from './log-format.ts';
import { DEFAULT_SSL_HANDSHAKE, type SslHandshakeConfig } from './tls-session-keys.ts';
import { DEFAULT_TRACING, type TracingConfig } from './tracing-keys.ts';

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
   * URIs never logged), `access-log-path` ('' or /dev/stdout: standard output); `log-format-upstream`
   * (a format log-format.ts accepts) and its escaping (`log-format-escape-json`, `-none`)
   */
  accessLog: {
    disabled: boolean;
    forDefaultBackend: boolean;
    skipUrls: string[];
    path: string;
    format: string;
    escapeJson: boolean;
    escapeNone: boolean;
  };
  /**
   * The upstream behaviour of locations whose Ingress does not set it (`proxy-connect-timeout`,
   * `proxy-send-timeout`, `proxy-read-timeout`, `proxy-next-upstream`, `-tries`, `-timeout`,
   * `proxy-body-size`, `proxy-buffer-size`, `proxy-request-buffering`, `proxy-buffering`, `proxy-http-version`,
   * `proxy-cookie-domain`, `proxy-cookie-path`, `proxy-redirect-from`, `proxy-redirect-to`): the
   * proxy annotations' ConfigMap defaults (connection-proxy-header has no ConfigMap key)
   */
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
  /** `ssl-session-*`, `ssl-ecdh-curve`, `ssl-dh-param`, `ssl-reject-handshake` (tls-session-keys.ts) */
  sslHandshake: SslHandshakeConfig;
  /** `use-gzip`, `gzip-*`, `enable-brotli`, `brotli-*` (compression-keys.ts) */
  compression: CompressionConfig;
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
  /**
   * `client-header-buffer-size` ("1k") in bytes: the buffer a request head is read into first; what
   * fits in it is not bound by the large buffers' line size (NGINX's client_header_buffer_size)
   */
  clientHeaderBufferSize: number;
  /** `http2-max-concurrent-streams` (128): SETTINGS_MAX_CONCURRENT_STREAMS of HTTP/2 sessions */
  http2MaxConcurrentStreams: number;
  /**
   * `enable-underscores-in-headers` (false), `ignore-invalid-headers` (true): which request header
   * names NGINX takes (letters, digits, `-`, and `_` when enabled), and whether a header with any
   * other name is ignored (dropped before anything reads it) or kept
   */
  headerNames: { underscores: boolean; ignoreInvalid: boolean };
  /** `max-worker-connections` (16384): concurrent client connections, HTTP and HTTPS together; 0: no cap */
  maxWorkerConnections: number;
  /** `upstream-keepalive-connections`, `-timeout` (s), `-requests`: the upstream pools */
  upstreamKeepalive: { connections: number; timeout: number; requests: number };
  /** `proxy-stream-*`: the TCP and UDP services (--tcp-services-configmap, --udp-services-configmap) */
  stream: StreamConfig;
  /** `custom-http-errors`: upstream statuses answered by the default backend (routes may override) */
  customHttpErrors: number[];
  /** `allow-snippet-annotations`: accepted, but snippets are refused whatever it says */
  allowSnippetAnnotations: boolean;
  /** `global-auth-*`, `no-auth-locations`: external authentication for every location (global-auth-keys.ts) */
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
  /**
   * `worker-processes`: how many data-plane threads serve traffic, or `auto` (the container's CPU
   * quota, else the available parallelism; resolved outside the model, which reads no machine).
   * Read once at start: a change takes effect at the next restart.
   */
  workerProcesses: WorkerProcesses;
  /** OpenTelemetry: spans of proxied requests and their exporter (tracing-keys.ts) */
  tracing: TracingConfig;
}

/** `auto` or a thread count of at least 1. */
export type WorkerProcesses = 'auto' | number;

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
  /** `block-user-agents`: a request whose User-Agent matches one entry gets 403 before routing */
  blockUserAgents: HeaderBlock[];
  /** `block-referers`: the same for the Referer header */
  blockReferers: HeaderBlock[];
}

/**
 * One entry of block-user-agents / block-referers as NGINX's `map` reads it: an exact string
 * (compared case-insensitively, as map's hash lower-cases its keys), `~regex` or `~*regex`
 * (case-insensitive); the regexes are RE2 syntax that RE2 accepted.
 */
export interface HeaderBlock {
  kind: 'exact' | 'regex' | 'iregex';
  /** the exact string lower-cased, or the regex as written after its `~` / `~*` */
  value: string;
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
  /** `use-proxy-protocol`: every HTTP/HTTPS connection starts with a PROXY header (v1 or v2), which names the client */
  useProxyProtocol: boolean;
  /** `proxy-protocol-header-timeout` (5s), in ms: the most time a connection's PROXY header may take */
  proxyProtocolHeaderTimeoutMs: number;
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
  /**
   * `allow-backend-server-header`: the upstream's `Server` is passed on (NGINX proxy_pass_header
   * Server); as in ingress-nginx it only shows with server-tokens on, whose `more_clear_headers Server`
   * otherwise removes every Server header
   */
  allowBackendServerHeader: boolean;
  /** `proxy-add-original-uri-header`: X-Original-URI (the client's request URI) sent upstream */
  proxyAddOriginalUriHeader: boolean;
  /** `default-type`: the Content-Type of the proxy's own text answers that name no type (NGINX default_type) */
  defaultType: string;
}

/** The ConfigMap's global external authentication (global-auth-keys.ts). */
export interface GlobalAuthConfig {
  /** `global-auth-url`; '' for none */
  url: string;
  /** `global-auth-method`; null: the request's own method */
  method: string | null;
  /** `global-auth-signin`; null for none */
  signin: string | null;
  /** `global-auth-signin-redirect-param` */
  signinRedirectParam: string;
  /** `global-auth-response-headers` */
  responseHeaders: string[];
  /** `global-auth-request-redirect`; '' for the request URI */
  requestRedirect: string;
  /** `global-auth-always-set-cookie` */
  alwaysSetCookie: boolean;
  /** `global-auth-cache-key`; '' for no cache */
  cacheKey: string;
  /** `global-auth-cache-duration` */
  cacheDuration: CacheDuration[];
  /** `no-auth-locations`: rule paths (prefixes) global auth never applies to */
  noAuthLocations: string[];
}

export const DEFAULT_GLOBAL_AUTH: GlobalAuthConfig = {
  url: '',
  method: null,
  signin: null,
  signinRedirectParam: 'rd',
  responseHeaders: [],
  requestRedirect: '',
  alwaysSetCookie: false,
  cacheKey: '',
  cacheDuration: DEFAULT_CACHE_DURATION,
  noAuthLocations: ['/.well-known/acme-challenge'],
};

/** The settings of every TCP and UDP service, as NGINX's stream proxy_* directives. */
export interface StreamConfig {
  /** `proxy-stream-timeout` (600s): a TCP stream or UDP session idle this long (both ways) is closed */
  timeoutMs: number;
  /** `proxy-stream-next-upstream` (true): a TCP connect that fails goes to the next endpoint */
  nextUpstream: boolean;
  /** `proxy-stream-next-upstream-timeout` (600s; 0: none): the time all connect tries may take */
  nextUpstreamTimeoutMs: number;
  /** `proxy-stream-next-upstream-tries` (3; 0: every endpoint): connect tries per stream */
  nextUpstreamTries: number;
  /** `proxy-stream-responses` (1; 0: none): UDP datagrams back from the upstream that end a session */
  responses: number;
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
  accessLog: {
    disabled: false,
    forDefaultBackend: false,
    skipUrls: [],
    path: '/var/log/nginx/access.log',
    format: DEFAULT_LOG_FORMAT_UPSTREAM,
    escapeJson: false,
    escapeNone: false,
  },
  proxy: {
    connectTimeout: 5,
    sendTimeout: 60,
    readTimeout: 60,
    nextUpstream: 'error timeout',
    nextUpstreamTries: 3,
    nextUpstreamTimeout: 0,
    bodySize: '1m',
    bufferSize: '4k',
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
    useProxyProtocol: false,
    proxyProtocolHeaderTimeoutMs: 5000,
  },
  headers: {
    generateRequestId: true,
    serverTokens: false,
    proxySetHeaders: { source: '', headers: [] },
    addHeaders: { source: '', headers: [] },
    hideHeaders: [],
    allowBackendServerHeader: false,
    proxyAddOriginalUriHeader: false,
    defaultType: 'text/html',
  },
  client: { keepAlive: 75, keepAliveRequests: 1000, headerTimeout: 60, bodyTimeout: 60 },
  largeClientHeaderBuffers: { count: 4, size: 8192 },
  clientHeaderBufferSize: 1024,
  http2MaxConcurrentStreams: 128,
  headerNames: { underscores: false, ignoreInvalid: true },
  maxWorkerConnections: 16384,
  upstreamKeepalive: { connections: 320, timeout: 60, requests: 10000 },
  stream: {
    timeoutMs: 600_000,
    nextUpstream: true,
    nextUpstreamTimeoutMs: 600_000,
    nextUpstreamTries: 3,
    responses: 1,
  },
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
    blockUserAgents: [],
    blockReferers: [],
  },
  workerShutdownTimeoutMs: 240_000,
  // ingress-nginx's default: one worker per CPU of the container's quota, else of the machine
  workerProcesses: 'auto' as WorkerProcesses,
  useHttp2: true,
  ssl: {
    minVersion: 'TLSv1.2' as TlsVersion,
    maxVersion: 'TLSv1.3' as TlsVersion,
    ciphers: DEFAULT_SSL_CIPHERS,
  },
  sslHandshake: DEFAULT_SSL_HANDSHAKE,
  compression: DEFAULT_COMPRESSION,
  tracing: DEFAULT_TRACING,
});
