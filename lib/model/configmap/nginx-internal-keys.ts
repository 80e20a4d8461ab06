// ConfigMap keys that only tune NGINX itself (workers, hash tables, Lua, modules, snippets): a Node
// proxy has no use for them, so they are accepted and reported as not applicable (not as "not
// supported yet").

const NGINX_INTERNAL_KEYS = new Set([
  'worker-cpu-affinity',
  'worker-rlimit-nofile',
  'max-worker-open-files',
  'lua-shared-dicts',
  'reuse-port',
  'enable-aio-write',
  'enable-multi-accept',
  'ssl-buffer-size',
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
  'http2-max-field-size',
  'http2-max-header-size',
  'http2-max-requests',
  'forwarded-for-proxy-protocol-header',
]);
/** Prefixes of whole families of such keys. */
const NGINX_INTERNAL_PREFIXES = ['jaeger-', 'variables-hash-'];

/** Why a key has no effect, where the general reason would mislead. */
const REASONS: Readonly<Record<string, string>> = {
  // NGINX 1.19.7 made these three obsolete: it warns and ignores them, so ingress-nginx's NGINX
  // (1.27) never applied them either
  'http2-max-field-size':
    'NGINX ignores it since 1.19.7 (so ingress-nginx does too); large-client-header-buffers bounds each HTTP/2 header field',
  'http2-max-header-size':
    'NGINX ignores it since 1.19.7 (so ingress-nginx does too); large-client-header-buffers bounds the HTTP/2 header list',
  'http2-max-requests':
    'NGINX ignores it since 1.19.7 (so ingress-nginx does too); keep-alive-requests bounds the requests of an HTTP/2 connection',
  'forwarded-for-proxy-protocol-header':
    "it names the request header NGINX passes the PROXY protocol's client through internally; ingress-ts reads that client from the connection itself",
};

/** The specific reason a not-applicable key has no effect, or undefined for the general one. */
export function notApplicableReason(key: string): string | undefined {
  return REASONS[key];
}

/** Whether a key only tunes NGINX itself (workers, hash tables, Lua, modules, snippets). */
export function isNginxInternalKey(key: string): boolean {
  return (
    NGINX_INTERNAL_KEYS.has(key) ||
    key.includes('-hash-') ||
    NGINX_INTERNAL_PREFIXES.some((prefix) => key.startsWith(prefix))
  );
}
