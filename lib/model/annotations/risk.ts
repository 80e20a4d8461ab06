// The risk ingress-nginx assigns each annotation (the `Risk` of its field in each annotation parser).
// With the ConfigMap's annotations-risk-level below Critical, an Ingress carrying an annotation of a
// higher risk is skipped whole, whatever its value (even empty), as ingress-nginx's Extract does.
// Annotations not listed are Low; names ingress-ts does not implement are listed too, since
// ingress-nginx refuses them all the same.

export const ANNOTATION_RISKS = ['Low', 'Medium', 'High', 'Critical'] as const;
export type AnnotationRisk = (typeof ANNOTATION_RISKS)[number];

const MEDIUM = [
  'affinity-mode',
  'allowlist-source-range',
  'whitelist-source-range',
  'app-root',
  'auth-cache-duration',
  'auth-cache-key',
  'auth-proxy-set-headers',
  'auth-realm',
  'auth-request-redirect',
  'auth-response-headers',
  'auth-secret',
  'auth-signin-redirect-param',
  'auth-tls-secret',
  'auth-tls-verify-client',
  'canary-by-cookie',
  'canary-by-header',
  'canary-by-header-pattern',
  'canary-by-header-value',
  'cors-allow-headers',
  'cors-allow-methods',
  'cors-allow-origin',
  'cors-expose-headers',
  'custom-headers',
  'denylist-source-range',
  'fastcgi-index',
  'fastcgi-params-configmap',
  'force-ssl-redirect',
  'opentelemetry-operation-name',
  'permanent-redirect',
  'preserve-trailing-slash',
  'proxy-body-size',
  'proxy-cookie-domain',
  'proxy-cookie-path',
  'proxy-next-upstream',
  'proxy-redirect-from',
  'proxy-redirect-to',
  'proxy-ssl-ciphers',
  'proxy-ssl-secret',
  'rewrite-target',
  'session-cookie-domain',
  'session-cookie-expires',
  'session-cookie-max-age',
  'session-cookie-name',
  'session-cookie-path',
  'temporal-redirect',
  'x-forwarded-prefix',
];

const HIGH = [
  'auth-signin',
  'auth-tls-error-page',
  'auth-tls-match-cn',
  'auth-url',
  'mirror-host',
  'mirror-target',
  'modsecurity-transaction-id',
  'proxy-ssl-name',
  'server-alias',
  'upstream-hash-by',
];

/** the snippets: refused by ingress-ts whatever the level (SNIPPET_REFUSED) */
const CRITICAL = [
  'auth-snippet',
  'configuration-snippet',
  'modsecurity-snippet',
  'server-snippet',
  'stream-snippet',
];

const RISK = new Map<string, AnnotationRisk>([
  ...MEDIUM.map((name) => [name, 'Medium'] as const),
  ...HIGH.map((name) => [name, 'High'] as const),
  ...CRITICAL.map((name) => [name, 'Critical'] as const),
]);

/** The risk of an annotation (written without the prefix). */
export function annotationRisk(name: string): AnnotationRisk {
  return RISK.get(name) ?? 'Low';
}

/** Whether `risk` is above `level` (ingress-nginx: refused). */
export function riskAbove(risk: AnnotationRisk, level: AnnotationRisk): boolean {
  return ANNOTATION_RISKS.indexOf(risk) > ANNOTATION_RISKS.indexOf(level);
}

/**
 * The names refused at `level`, snippets left out (refused on their own account): empty at High and
 * Critical, so the default level costs nothing per Ingress.
 */
export function refusedAt(level: AnnotationRisk): ReadonlySet<string> {
  return new Set(
    [...RISK]
      .filter(([name, risk]) => !name.endsWith('-snippet') && riskAbove(risk, level))
      .map(([name]) => name),
  );
}
