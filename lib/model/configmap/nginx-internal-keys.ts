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
]);
/** Prefixes of whole families of such keys. */
const NGINX_INTERNAL_PREFIXES = ['proxy-stream-', 'jaeger-', 'variables-hash-'];

/** Whether a key only tunes NGINX itself (workers, hash tables, Lua, modules, snippets). */
export function isNginxInternalKey(key: string): boolean {
  return (
    NGINX_INTERNAL_KEYS.has(key) ||
    key.includes('-hash-') ||
    NGINX_INTERNAL_PREFIXES.some((prefix) => key.startsWith(prefix))
  );
}
