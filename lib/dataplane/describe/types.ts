// The shapes of the runtime's description (/debug/model): plain JSON a data plane produces from the
// runtime it serves, so it is what requests get. Only strings, numbers, booleans, arrays and plain
// objects: it crosses a thread boundary as it is (structuredClone).

import type { BackendProtocol } from '../../model/annotations/backend-protocol.ts';
import type { CorsAnnotations } from '../../model/annotations/cors.ts';
import type { CacheDuration } from '../../model/annotations/external-auth.ts';
import type { MirrorAnnotations } from '../../model/annotations/mirror.ts';
import type { RateLimitAnnotations } from '../../model/annotations/rate-limit.ts';
import type { Canary, GlobalConfig, UpstreamSettings } from '../../model/index.ts';
import type { StreamPortDescription } from '../streams/stream-listeners.ts';

/** A parsed certificate, or why it could not be parsed. */
export type CertificateInfo =
  | {
      subject: string;
      issuer: string;
      /** ISO 8601 */
      notBefore: string;
      /** ISO 8601 */
      notAfter: string;
      /** DNS names of the subjectAltName extension */
      dnsNames: string[];
      /** sha256 fingerprint of the certificate (colon-separated hex, as openssl prints it) */
      fingerprint256: string;
    }
  | { error: string };

export interface HostTLS {
  /** `namespace/name` of the Secret, or `default`: the default certificate is served */
  secret: string;
  /** the Ingress whose `spec.tls` decided it (the Gateway whose HTTPS listener did, with `kind`) */
  ingress: string;
  /** 'Gateway': `ingress` names the Gateway of the HTTPS listener; absent: an Ingress */
  kind?: 'Gateway';
  certificate: CertificateInfo;
}

export interface RouteDescription extends PathSettingsDescription {
  path: string;
  pathType: string;
  /** when it differs from `pathType` (ImplementationSpecific is matched as Prefix) */
  pathTypeAsWritten?: string;
  /** the Ingress of the path, or the HTTPRoute of the rule (with `kind`) */
  ingress: string;
  /** 'HTTPRoute': a match of an HTTPRoute rule; absent: an Ingress path */
  kind?: 'HTTPRoute';
  /** an upstream name of `backends`, `default-backend`, or `weighted` (an HTTPRoute rule: see `backends`) */
  backend: string;
  /**
   * an HTTPRoute rule's backendRefs, one drawn per request by weight: the upstream (null: a refused
   * ref, its share answers 500), the weight and the share of requests (0 to 1); empty: every request
   * answers 500
   */
  backends?: Array<{ backend: string | null; weight: number; share: number }>;
  /** an HTTPRoute rule's conditions beyond the path and its filters */
  gateway?: GatewayRouteDescription;
  /** backend-protocol: how the proxy talks to the backend (FCGI: the route answers 502) */
  backendProtocol: BackendProtocol;
  /** the canary sharing the route (its Ingress, upstream of `backends` and policy), or null */
  canary: CanaryDescription | null;
  /**
   * the route's upstream behaviour (timeouts in seconds, retries, body size in bytes, vhost,
   * rewrites), present when its annotations make it differ from `upstreamDefaults`
   */
  upstream?: UpstreamSettings;
}

/** What an HTTPRoute rule adds to its routes: where it is served, its conditions, its filters. */
export interface GatewayRouteDescription {
  /** the rule's index in the HTTPRoute's spec.rules */
  rule: number;
  /** served on the HTTP port, the HTTPS port, or both (the protocols of the listeners it attached to) */
  protocols: 'http' | 'https' | 'both';
  /** the listeners' ports as written, by protocol (redirects build their Location from them) */
  listenerPorts: { http: number | null; https: number | null };
  /** the method the request must have; null: every method */
  method: string | null;
  /** header matches (all must hold): names lower-cased, values `***` */
  headers: Array<{ name: string; value: string }>;
  /** query parameter matches (all must hold): values `***` */
  queryParams: Array<{ name: string; value: string }>;
  /** the filters in words, in the order they apply (header edits name headers only) */
  filters: string[];
}

/** Per-path settings, present only when set (annotations); unset ssl-redirect values follow `config`. */
export interface PathSettingsDescription {
  /** rewrite-target, when it rewrites (differs from the path) */
  rewriteTarget?: string;
  /** x-forwarded-prefix, sent only with a rewrite */
  xForwardedPrefix?: string;
  sslRedirect?: boolean;
  forceSslRedirect?: boolean;
  preserveTrailingSlash?: boolean;
  usePortInRedirects?: boolean;
  /** enable-cors and its settings (allowOrigin `*`: every request, Allow-Origin `*`) */
  cors?: CorsAnnotations;
  /** custom-headers: the ConfigMap, its header names (values shown as `***`), and why the location
   * is denied (503), if it is */
  customHeaders?: { configMap: string; headers: Record<string, string>; denied?: string };
  /** configuration-snippet read as data: what it does, header names only (values never shown) */
  snippet?: SnippetDescription;
  /** allowlist-source-range / denylist-source-range as `address/prefix` (unset: the ConfigMap's lists) */
  allowlistSourceRange?: string[];
  denylistSourceRange?: string[];
  /** limit-rps, limit-rpm, limit-connections with the burst multiplier and limit-allowlist, when a limit is on */
  rateLimit?: RateLimitAnnotations;
  /** authentication of the route (never the hashes); the ConfigMap's global-auth-url shows in `config` */
  auth?: AuthDescription;
  /** proxy-ssl-*: TLS to the backend (never the private key) */
  proxySsl?: ProxySslDescription;
  /** mirror-target: where copies of the proxied requests go (variables as written, userinfo and
   * query values as `***`), their Host, and whether they carry the body */
  mirror?: MirrorAnnotations;
}

/** A route's proxy-ssl-* settings as configured, with what its Secret holds. */
export interface ProxySslDescription {
  /** `namespace/name` once resolved, else as written */
  secret: string;
  verify: boolean;
  verifyDepth: number;
  /** null: `upstream_balancer` (NGINX's $proxy_host in ingress-nginx) */
  name: string | null;
  serverName: boolean;
  ciphers: string;
  protocols: string[];
  /** the client certificate presented to the backend (tls.crt), if any */
  clientCertificate?: CertificateInfo;
  /** the CAs of ca.crt, if any (verify, depth, ciphers and protocols apply only with them) */
  caCertificates?: CertificateInfo[];
  /** why the route answers 503 instead */
  denied?: string;
}

/** A route's auth settings as configured: counts and references, never credentials. */
export interface AuthDescription {
  basic?: {
    type: 'basic' | 'digest';
    /** `namespace/name` of the Secret */
    secret: string;
    secretType: 'auth-file' | 'auth-map';
    realm: string;
    /** how many users the Secret holds */
    users: number;
  };
  external?: {
    url: string;
    method: string | null;
    signin: string | null;
    signinRedirectParam: string;
    responseHeaders: string[];
    requestRedirect: string;
    proxySetHeaders: string;
    alwaysSetCookie: boolean;
    /** auth-cache-key ('' for no cache) and auth-cache-duration */
    cacheKey: string;
    cacheDuration: CacheDuration[];
  };
  /** enable-global-auth: "false" */
  globalAuth?: false;
  /** satisfy: "any" (the allowlist or authentication is enough); absent: all */
  satisfy?: 'any';
  /** why the route answers 503 instead */
  denied?: string;
}

/** A route's canary: its policy (`Canary`), with the Ingress as `namespace/name` and its upstream. */
export interface CanaryDescription extends Omit<Canary, 'ingress' | 'upstream'> {
  ingress: string;
  backend: string;
}

export interface HostDescription {
  /** `_` is the catch-all server: hosts no rule names, and rules without a host */
  host: string;
  aliases?: string[];
  /** the oldest Ingress naming the host (the oldest HTTPRoute, with `ingressKind`); null for the catch-all server without one */
  ingress: string | null;
  /** 'HTTPRoute': only HTTPRoutes name the host; absent: an Ingress */
  ingressKind?: 'HTTPRoute';
  /** paths are case-insensitive regexes anchored at the start (use-regex, rewrite-target) */
  regex: boolean;
  /** from-to-www-redirect: this other name redirects to the host */
  wwwRedirectFrom?: string;
  /** null: no `spec.tls` for this host; HTTPS answers with the default certificate */
  tls: HostTLS | null;
  /** auth-tls-*: present only on hosts that set auth-tls-secret */
  clientAuth?: ClientAuthDescription;
  /** ssl-passthrough: present only on hosts whose TLS connections are relayed untouched */
  passthrough?: PassthroughDescription;
  /** server-snippet read as data (names only) */
  serverSnippet?: SnippetDescription;
  routes: RouteDescription[];
  /** where requests matching no route go */
  /** `canary`: the catch-all's canary, when a canary Ingress's spec.defaultBackend shares it */
  defaultRoute: {
    ingress: string | null;
    backend: string;
    canary?: CanaryDescription | null;
    upstream?: UpstreamSettings;
  } & PathSettingsDescription;
}

/** Where an ssl-passthrough host's TLS connections go (its routes serve plain HTTP only). */
export interface PassthroughDescription {
  /** the oldest Ingress of the host that sets ssl-passthrough */
  ingress: string;
  /** the upstream of the host's path / (or default route), `default-backend`, or '' for none */
  backend: string;
  /** `ip:port` tried round-robin; empty: connections are closed */
  endpoints: string[];
  /** proxy-connect-timeout of the ConfigMap, in seconds */
  connectTimeout: number;
}

/** A host's client certificate authentication. */
export interface ClientAuthDescription {
  /** `namespace/name` of the auth-tls-secret */
  secret: string;
  ingress: string;
  /** the Secret cannot be used: every request to the host answers 503 */
  denied: boolean;
  verifyClient: string;
  verifyDepth: number;
  passCertificate: boolean;
  matchCN: string | null;
  errorPage: string | null;
  /** the CAs of ca.crt */
  caCertificates: CertificateInfo[];
}

export interface BackendDescription {
  name: string;
  /** `namespace/name:port` */
  service: string;
  /** the endpoints are DNS names (ExternalName Service) */
  externalName: boolean;
  /** the load-balance setting as configured */
  loadBalance: string;
  /**
   * the kind of balancer serving it (load-balance values without a balancer of their own get
   * round_robin); null: none
   */
  balancer: string | null;
  /** `ip:port`; empty: requests get 503 */
  endpoints: string[];
  /**
   * `ip:port` of the Service's endpoints that are not ready (EndpointSlice `ready: false`), which
   * are not served; absent: none (or an ExternalName Service)
   */
  notReady?: string[];
  /**
   * balancer ewma: each served endpoint's score, in seconds (its connect + header time's moving
   * average decayed to now, what a pick compares; 0: nothing observed). With data-plane threads,
   * the first thread's (each thread balances on its own)
   */
  scores?: Record<string, number>;
}

/** The runtime being served, described; the controller adds the diagnostics of its build. */
export interface RuntimeDescription {
  hash: string;
  routesHash: string;
  hosts: HostDescription[];
  backends: BackendDescription[];
  /** the --default-backend-service upstream; null: the built-in 404 */
  defaultBackend: string | null;
  /** the default certificate: --default-ssl-certificate's Secret, or `generated` */
  defaultCertificate: { secret: string; certificate: CertificateInfo };
  config: GlobalConfig;
  /** the upstream behaviour of every route without its own (`upstream`): the ConfigMap's */
  upstreamDefaults: UpstreamSettings;
  /** with data-plane worker threads: each thread and the model it serves (the rest describes the first) */
  threads?: ThreadDescription[];
  /** the TCP and UDP service ports open (absent: none); with threads, counts summed over them */
  streams?: StreamPortDescription[];
}

/** One data-plane worker thread. */
export interface ThreadDescription {
  /** its worker_threads threadId (a replaced thread gets a new one) */
  threadId: number;
  /** the hash of the model it serves; null before its first */
  hash: string | null;
  /** requests it received and connections it accepted so far */
  requests: number;
  accepted: number;
}

/** A snippet read as data, without any value (docs/snippets.md). */
export interface SnippetDescription {
  /** more_set_headers / more_clear_headers in order: `set Name`, `clear name`, `clear x-*` */
  responseHeaders?: string[];
  /** add_header names, `always` marked */
  addHeaders?: string[];
  hideHeaders?: string[];
  /** proxy_set_header / more_*_input_headers in order: `set Name`, `clear name` */
  requestHeaders?: string[];
  /** the `return` status (its URL or text not shown) */
  return?: number;
}
