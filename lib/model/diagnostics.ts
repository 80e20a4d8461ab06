// Findings about the objects the model was built from. Each one names the object a user has to fix,
// carries a stable code (documented in docs/diagnostics.md; a test keeps the two in step) and says
// what ingress-ts did about it.

import { redactText } from './redact.ts';

export type Severity = 'error' | 'warning' | 'info';

/**
 * The part of an object a finding is about, where the code alone does not say it (INGRESS_INVALID is
 * about the whole Ingress unless it names a rule or a tls entry). verdicts.ts reads it; messages stay
 * as they are.
 */
export type DiagnosticScope = 'rule' | 'tls';

/** Where a finding applies, when it applies to one host or path of the object. */
export interface DiagnosticPlace {
  scope?: DiagnosticScope;
  /** the rule's host as written ('' for a rule without one) */
  host?: string;
  /** the path as written */
  path?: string;
}

export interface Diagnostic {
  kind: string;
  namespace: string;
  name: string;
  severity: Severity;
  code: DiagnosticCode;
  message: string;
  /** standalone mode, findings of the manifest source: the file and line the object is written at */
  file?: string;
  line?: number | null;
  scope?: DiagnosticScope;
  host?: string;
  path?: string;
}

/** Every code with its severity and a one-line meaning. Severity is part of the contract. */
export const DIAGNOSTIC_CODES = {
  INGRESS_INVALID: [
    'error',
    'The Ingress is malformed (no name, a name that is not a DNS name, spec of the wrong type, two Ingresses with one namespace/name); it is ignored (a malformed rule or tls entry: that part is ignored).',
  ],
  INGRESS_EMPTY: ['warning', 'The Ingress has neither rules nor a defaultBackend; it routes nothing.'],
  HOST_INVALID: ['error', 'A rule host is not a DNS name or a single-label wildcard; that rule is ignored.'],
  PATH_INVALID: [
    'error',
    'A path is not valid for its pathType (or holds control characters); that path is ignored.',
  ],
  PATH_TYPE_INVALID: ['error', 'A pathType is missing or unknown; that path is ignored.'],
  BACKEND_INVALID: [
    'error',
    'A backend names no Service, or a resource instead of a Service, or a bad port; it is ignored.',
  ],
  PATH_CONFLICT: [
    'warning',
    'An older Ingress already defines this host, path and pathType; this one is ignored.',
  ],
  DEFAULT_BACKEND_CONFLICT: [
    'warning',
    'An older Ingress already provides the catch-all defaultBackend; this one is ignored.',
  ],
  CATCH_ALL_DISABLED: [
    'warning',
    '--disable-catch-all is set and the Ingress has a defaultBackend; it is ignored.',
  ],
  SERVER_ANNOTATION_CONFLICT: [
    'warning',
    'An older Ingress already set this host-level annotation for the host; this value is ignored.',
  ],
  ALIAS_CONFLICT: [
    'warning',
    'A server-alias names an existing host or another alias; that alias is ignored.',
  ],
  TLS_CONFLICT: [
    'warning',
    "An older Ingress (or an older Gateway's HTTPS listener) already decided the certificate of this host; this tls entry is ignored.",
  ],
  TLS_SECRET_NOT_FOUND: [
    'warning',
    'The TLS Secret does not exist; the host is served with the default certificate.',
  ],
  TLS_SECRET_INVALID: [
    'warning',
    'The TLS Secret lacks tls.crt/tls.key, or they do not parse or match; the host gets the default certificate.',
  ],
  TLS_HOST_MISMATCH: [
    'warning',
    'The certificate does not cover the host; the host is served with the default certificate.',
  ],
  TLS_NO_SECRET_FOR_HOST: [
    'info',
    'The Ingress has a tls section but none of it applies to this host; the host gets the default certificate.',
  ],
  SERVICE_NOT_FOUND: ['warning', 'The backend Service does not exist; requests to it get 503.'],
  SERVICE_PORT_NOT_FOUND: [
    'warning',
    'The Service has no port matching the backend port; requests to it get 503.',
  ],
  ENDPOINTS_NONE: ['warning', 'The backend Service has no ready endpoints; requests to it get 503.'],
  EXTERNAL_NAME_INVALID: [
    'warning',
    'The ExternalName Service names localhost or an invalid DNS name; requests to it get 503.',
  ],
  EXTERNAL_NAME_DISABLED: [
    'warning',
    'ExternalName Services are disabled (--disable-svc-external-name); requests to it get 503.',
  ],
  SERVICE_UPSTREAM_NO_CLUSTER_IP: [
    'warning',
    'service-upstream is on but the Service has no ClusterIP (headless or ExternalName); its endpoints are used.',
  ],
  DEFAULT_BACKEND_SERVICE_UNUSABLE: [
    'warning',
    'The --default-backend-service is missing or has no port; the built-in 404 backend is used.',
  ],
  DEFAULT_CERTIFICATE_UNUSABLE: [
    'warning',
    'The --default-ssl-certificate Secret is missing or invalid; a generated certificate is used.',
  ],
  ANNOTATION_INVALID: [
    'warning',
    'An annotation value fails its validator: the default is used (warning) or the Ingress is dropped (error).',
  ],
  ANNOTATION_UNSUPPORTED: [
    'warning',
    'ingress-nginx has this annotation but ingress-ts does not implement it yet; it has no effect.',
  ],
  ANNOTATION_UNKNOWN: [
    'warning',
    'The name is not an ingress-nginx annotation (a ConfigMap key, a removed annotation, a typo): ingress-nginx ignores it and so does ingress-ts.',
  ],
  ANNOTATION_NOT_APPLICABLE: [
    'info',
    'The annotation tunes NGINX itself (buffers, temp files, its logs); it means nothing here and is ignored.',
  ],
  ANNOTATION_VALUE_BLOCKED: [
    'error',
    "An annotation value holds a word of the ConfigMap's annotation-value-word-blocklist; the Ingress is ignored.",
  ],
  ANNOTATION_TOO_RISKY: [
    'error',
    "An annotation's risk (as ingress-nginx rates it) is above the ConfigMap's annotations-risk-level; the Ingress is ignored.",
  ],
  BACKEND_PROTOCOL_UNSUPPORTED: [
    'warning',
    'backend-protocol FCGI: ingress-ts does not speak FastCGI; the paths of the Ingress answer 502.',
  ],
  SNIPPET_REFUSED: [
    'error',
    'Snippet annotations are configuration code and are never executed; the Ingress is dropped. The message names the annotations or ConfigMap keys that do the job of its directives, where it can tell.',
  ],
  SNIPPET_READ: [
    'info',
    'A configuration-snippet or server-snippet was read as data (allow-snippet-annotations true, annotations-risk-level Critical): every statement is one of the header or return directives ingress-ts carries out. The message counts what it does, never a value.',
  ],
  CONFIGMAP_NOT_FOUND: [
    'warning',
    'The --configmap ConfigMap does not exist; ingress-nginx defaults are used.',
  ],
  CONFIG_KEY_UNSUPPORTED: [
    'warning',
    'ingress-nginx has this ConfigMap key but ingress-ts does not implement it yet; it has no effect.',
  ],
  CONFIG_KEY_UNKNOWN: [
    'warning',
    'The ConfigMap key is not one of ingress-nginx either (a typo, an NGINX directive, an annotation name): both ignore it. The message says what it probably is.',
  ],
  CONFIG_KEY_IGNORED: [
    'warning',
    'The ConfigMap key is NGINX configuration code (*-snippet) or turns on ModSecurity; ingress-ts has neither, so what it did is not done.',
  ],
  CONFIG_KEY_NOT_APPLICABLE: [
    'info',
    "The ConfigMap key tunes NGINX itself (workers, hash sizes, Lua dictionaries...) or asks for what Node's TLS cannot do (ssl-early-data; the message says why); it means nothing here and is ignored.",
  ],
  CONFIG_VALUE_INVALID: [
    'warning',
    'A ConfigMap value fails its validator; the default is used (of a block list, only the failing entry is left out).',
  ],
  CANARY_NOT_ENABLED: [
    'warning',
    'canary-* annotations without canary: "true"; they are ignored and the Ingress is an ordinary one.',
  ],
  CANARY_NO_MAIN: [
    'warning',
    'A canary path matches no main route (same namespace, host, path and pathType); it gets no traffic.',
  ],
  AUTH_UNAVAILABLE: [
    'error',
    'The authentication of an Ingress cannot be used (missing Secret or key, another namespace, digest, bad auth-url); its paths answer 503.',
  ],
  CANARY_CONFLICT: [
    'warning',
    'An older canary already shares this route; this canary gets no traffic there (one canary per route).',
  ],
  CANARY_PATTERN_INVALID: [
    'warning',
    'canary-by-header-pattern does not compile; requests carrying the header go to the main backend.',
  ],
  PATH_REGEX_INVALID: [
    'error',
    'On a host in regex mode, a path is not a regex RE2 accepts (e.g. a backreference or lookahead); that path is not served.',
  ],
  AUTH_TLS_SECRET_NOT_FOUND: [
    'error',
    'auth-tls-secret names a Secret that does not exist; every request to the host answers 503 (never an open host).',
  ],
  AUTH_TLS_SECRET_INVALID: [
    'error',
    'The auth-tls-secret Secret has no ca.crt with a PEM certificate; every request to the host answers 503.',
  ],
  AUTH_TLS_CROSS_NAMESPACE: [
    'error',
    'auth-tls-secret names a Secret in another namespace and allow-cross-namespace-resources is false; every request to the host answers 503.',
  ],
  PROXY_SSL_UNAVAILABLE: [
    'error',
    'proxy-ssl-secret cannot be used (not a name or namespace/name, another namespace without allow-cross-namespace-resources, missing, or neither a tls.crt/tls.key pair nor a ca.crt that parses); the paths of the Ingress answer 503.',
  ],
  PROXY_SSL_NOT_VERIFIED: [
    'warning',
    'proxy-ssl-verify is on but the proxy-ssl-secret has no ca.crt; the backend certificate is not verified (as ingress-nginx).',
  ],
  CUSTOM_HEADERS_DENIED: [
    'error',
    'custom-headers names a ConfigMap that is missing, in another namespace without allow-cross-namespace-resources, or has a key not listed in global-allowed-response-headers (or not a valid header); the paths of the Ingress answer 503.',
  ],
  STREAM_ENTRY_INVALID: [
    'error',
    'An entry of --tcp-services-configmap / --udp-services-configmap is not `"<port>": "<namespace>/<service>:<port>[:PROXY][:PROXY]"` (a key that is no port 1-65535, a value without a namespace, service or port); that port is not opened.',
  ],
  STREAM_PORT_CONFLICT: [
    'error',
    'A TCP or UDP service entry takes a port the controller listens on (--http-port, --https-port, --healthz-port), or a port an earlier entry of the same protocol took ("080" and "80"); it is not opened for this entry.',
  ],
  STREAM_SERVICE_UNUSABLE: [
    'warning',
    'The Service of a TCP or UDP service entry does not exist, has no port of that number or name and protocol, or has no ready endpoints; the port is not opened (ingress-nginx leaves it out) until it has some.',
  ],
  SSL_PASSTHROUGH_DISABLED: [
    'warning',
    'ssl-passthrough is set but the controller runs without --enable-ssl-passthrough; TLS to the host is terminated and routed as usual.',
  ],
  AFFINITY_CONFLICT: [
    'warning',
    "Ingresses sharing a Service port disagree on session affinity: the affinity-mode of the oldest that sets one and the cookie of the newest with affinity apply; this Ingress's differing settings have no effect there.",
  ],
  WWW_REDIRECT_SKIPPED: [
    'info',
    'from-to-www-redirect: the other name is a host of its own (or the host is a wildcard); no redirect is made.',
  ],
  MANIFEST_INVALID: [
    'error',
    'Standalone mode: a document of a manifest file does not parse (a duplicate key, a bad indent) or is not a Kubernetes object (no kind, no metadata.name); that document is ignored, the others are read.',
  ],
  MANIFEST_UNREADABLE: [
    'error',
    'Standalone mode: a manifest file or the --manifests directory cannot be read; what it held before is kept.',
  ],
  MANIFEST_API_VERSION_IGNORED: [
    'warning',
    'Standalone mode: an object of a kind ingress-ts reads has an apiVersion it does not read (an extensions/v1beta1 or networking.k8s.io/v1beta1 Ingress); it is ignored.',
  ],
  MANIFEST_DUPLICATE: [
    'warning',
    'Standalone mode: the same kind, namespace and name is defined twice; the first in path order (then document order) wins, this one is ignored.',
  ],
  GATEWAY_INVALID: [
    'warning',
    'Gateway API: a GatewayClass or Gateway with parametersRef (ingress-ts takes none), or a listener that is not served (unsupported protocol or port, bad hostname, route kinds, certificateRef, conflict); the status conditions say the same.',
  ],
  HTTPROUTE_INVALID: [
    'warning',
    'Gateway API: an HTTPRoute rule ingress-ts cannot serve as written (RegularExpression match, unsupported filter, RequestRedirect with URLRewrite) is left out, or a hostname is invalid and ignored.',
  ],
  HTTPROUTE_BACKEND_INVALID: [
    'warning',
    'Gateway API: a backendRef is not a core Service, does not exist (or lacks the port), or is in another namespace without a ReferenceGrant; its share of the traffic answers 500.',
  ],
  HTTPROUTE_PATH_TAKEN: [
    'warning',
    'Gateway API: an HTTPRoute match has the path and path type of an older Ingress path on the same host; the oldest object wins a path, so the match is not served on that host (the route stays Accepted).',
  ],
} as const satisfies Record<string, readonly [Severity, string]>;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;

/** Collects diagnostics during one build; identical findings are reported once. */
export class DiagnosticsCollector {
  readonly #items: Diagnostic[] = [];
  readonly #seen = new Set<string>();

  report(
    kind: string,
    ref: { namespace: string; name: string },
    code: DiagnosticCode,
    written: string,
    severity: Severity = DIAGNOSTIC_CODES[code][0],
    place?: DiagnosticPlace,
  ): void {
    // Messages quote values: whatever a parser interpolated, no credential leaves the build.
    const message = redactText(written);
    const key = `${kind}\u0000${ref.namespace}\u0000${ref.name}\u0000${code}\u0000${message}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    const item: Diagnostic = { kind, namespace: ref.namespace, name: ref.name, severity, code, message };
    // only the fields that are set: diagnostics are compared, logged and posted as they are
    if (place?.scope !== undefined) item.scope = place.scope;
    if (place?.host !== undefined) item.host = place.host;
    if (place?.path !== undefined) item.path = place.path;
    this.#items.push(item);
  }

  /** In the order they were found, which follows the Ingress order and is therefore deterministic. */
  list(): Diagnostic[] {
    return this.#items;
  }

  /** A diagnostic an earlier build found (redacted then), in its place in this build's order:
   * kept unless report's key (the same) was seen; a copy, as the build may extend its message. */
  replay(found: Diagnostic): void {
    const key = `${found.kind}\u0000${found.namespace}\u0000${found.name}\u0000${found.code}\u0000${found.message}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.#items.push({ ...found });
  }
}
