// The routing model: plain data (survives structuredClone and JSON), no classes, no functions.
// The data plane compiles it; it never sees a Kubernetes object.

import type { LocationAnnotations, ServerAnnotations } from './annotations/index.ts';
import type { GlobalConfig } from './configmap/global-config.ts';
import type { StreamTable } from './streams.ts';

export type { GlobalConfig } from './configmap/global-config.ts';

export interface ObjectRef {
  namespace: string;
  name: string;
  /** absent: an Ingress; else the Gateway API object (an HTTPRoute's rule, a Gateway listener's certificate) */
  kind?: 'HTTPRoute' | 'Gateway';
}

/** ImplementationSpecific is folded into Prefix (as ingress-nginx does); `pathTypeAsWritten` keeps it. */
export type PathType = 'Exact' | 'Prefix';

/** Where an Ingress sends a request. */
export type TargetBackend =
  /** an upstream of `Model.upstreams` */
  | { type: 'upstream'; upstream: string }
  /** the controller's default backend: `Model.defaultBackend`, else the built-in 404 */
  | { type: 'default' };

/** Where a route sends a request. */
export type Backend =
  | TargetBackend
  /**
   * an HTTPRoute rule's backendRefs: one drawn per request by weight (weight / sum of weights; 0 never
   * drawn); an entry whose upstream is null (invalid ref) answers 500 for its share; no entries, or
   * every weight 0: every request answers 500
   */
  | { type: 'weighted'; backends: WeightedBackend[] };

export interface WeightedBackend {
  /** an upstream of `Model.upstreams`, or null: a refused backendRef (500) */
  upstream: string | null;
  weight: number;
}

/** RequestHeaderModifier / ResponseHeaderModifier; names lower-cased, applied remove, then set, then add */
export interface HeaderEdits {
  set: Array<{ name: string; value: string }>;
  /** appended to an existing value as `a,b` */
  add: Array<{ name: string; value: string }>;
  remove: string[];
}

export type PathModifier =
  | { type: 'ReplaceFullPath'; value: string }
  /** the matched PathPrefix is replaced (element-wise) by `value` */
  | { type: 'ReplacePrefixMatch'; value: string };

/**
 * What an HTTPRoute rule adds to a route: more conditions than the path, and its filters. Routes of
 * one server with the same path and path type are tried in the server's order (Gateway API
 * precedence: method, most header matches, most query matches, oldest object, namespace/name, rule
 * order); the first whose conditions all hold wins; when none does, shorter prefixes are tried.
 */
export interface GatewayRouteMatch {
  /** the HTTPRoute rule's index in spec.rules */
  rule: number;
  /** which of ingress-ts's ports the rule is served on: the protocols of the listeners it attached to */
  protocols: 'http' | 'https' | 'both';
  /** the listener's port as written (80, 443...) by protocol, for redirect Locations */
  listenerPorts: { http: number | null; https: number | null };
  /** upper-case, or null: every method */
  method: string | null;
  /** Exact header matches, names lower-cased: all must hold */
  headers: Array<{ name: string; value: string }>;
  /** Exact query parameter matches (names case-sensitive): all must hold */
  queryParams: Array<{ name: string; value: string }>;
  requestHeaders: HeaderEdits | null;
  responseHeaders: HeaderEdits | null;
  /** RequestRedirect: answered here, never proxied */
  redirect: {
    scheme: string | null;
    hostname: string | null;
    port: number | null;
    path: PathModifier | null;
    statusCode: number;
  } | null;
  /** URLRewrite */
  rewrite: { hostname: string | null; path: PathModifier | null } | null;
  /** RequestMirror: upstreams of `Model.upstreams`, fire and forget */
  mirrors: Array<{ upstream: string; percent: number }>;
}

/**
 * A canary Ingress attached to a route: how the data plane splits the route's traffic (ingress-nginx's
 * TrafficShapingPolicy). Decided once per request: header, then cookie, then weight.
 */
export interface Canary {
  /** the canary Ingress (the oldest, when several name the route) */
  ingress: ObjectRef;
  /** an upstream of `Model.upstreams` */
  upstream: string;
  weight: number;
  /** as written; the draw is in [1, max(100, weightTotal)] */
  weightTotal: number;
  /** lower-cased header name, or null */
  header: string | null;
  headerValue: string | null;
  /** RE2 syntax; a pattern that does not compile sends requests carrying the header to the main backend */
  headerPattern: string | null;
  cookie: string | null;
}

export interface Route {
  /** the path as written in the Ingress ('' becomes '/') */
  path: string;
  pathType: PathType;
  pathTypeAsWritten: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  /** the Ingress this route came from (the oldest one, when several define it) */
  ingress: ObjectRef;
  backend: Backend;
  annotations: LocationAnnotations;
  /** the canary sharing this route's traffic, or null */
  canary: Canary | null;
  /** the route's Ingress has affinity: responses here set the affinity cookie of a new session */
  setsAffinityCookie: boolean;
  /** an HTTPRoute rule's match (`ingress` is then the HTTPRoute, kind 'HTTPRoute'); absent: an Ingress path */
  gateway?: GatewayRouteMatch;
}

/** Where requests for a host go when no route matches. */
export interface DefaultRoute {
  /** null: the controller's own default, no Ingress involved */
  ingress: ObjectRef | null;
  backend: TargetBackend;
  annotations: LocationAnnotations;
  /** the catch-all only: a canary Ingress's spec.defaultBackend sharing an Ingress-provided catch-all */
  canary: Canary | null;
}

export interface ServerTLS {
  /** id of `Model.certificates`; null: serve the default certificate */
  certificate: string | null;
  /** the Ingress whose `spec.tls` decided this, or the Gateway whose HTTPS listener did (kind 'Gateway') */
  ingress: ObjectRef;
  /**
   * true: a Gateway listener set the certificate and no Ingress spec.tls names the host, so the
   * host's Ingress paths do not count it as TLS-configured (no ssl-redirect from a Gateway)
   */
  gatewayOnly?: true;
}

/**
 * Client certificate authentication (mTLS) of a host: auth-tls-* of the oldest Ingress of the host
 * that sets auth-tls-secret, with the Secret's ca.crt.
 */
export interface ClientAuth {
  /** the Ingress the settings come from */
  ingress: ObjectRef;
  /** `namespace/name` of the Secret */
  secret: string;
  /**
   * the PEM CA bundle (ca.crt); null: the Secret is missing, has no usable ca.crt or may not be read
   * (cross-namespace): every request to the host answers 503, never an open host
   */
  caPem: string | null;
  /** sha256 of caPem ('' when null): identifies the CA a connection was verified against */
  caSha256: string;
  verifyClient: 'on' | 'off' | 'optional' | 'optional_no_ca';
  verifyDepth: number;
  passCertificate: boolean;
  /** `CN=<regex>` matched (unanchored, RE2) against the subject DN; null: every CN */
  matchCN: string | null;
  /** 302 to this URL instead of the 400 page on a missing or invalid certificate */
  errorPage: string | null;
}

/**
 * Where an ssl-passthrough host's TLS connections go: the backend of its Prefix path `/`, else its
 * default route's (the creating Ingress's spec.defaultBackend, else the controller's default
 * backend). Only TLS traffic: plain HTTP to the host is routed by its paths as usual.
 */
export interface Passthrough {
  /** the oldest Ingress of the host that sets ssl-passthrough */
  ingress: ObjectRef;
  /** the Ingress of the path (or default route) the backend comes from */
  backendIngress: ObjectRef | null;
  backend: TargetBackend;
}

export interface Server {
  /** lower-cased: `example.com`, `*.example.com`, or `_` for the catch-all server */
  hostname: string;
  /**
   * the oldest Ingress that names this host (null for the catch-all server); a host only HTTPRoutes
   * name: the oldest of them (kind 'HTTPRoute')
   */
  ingress: ObjectRef | null;
  /**
   * null: no Ingress for this host has a `spec.tls` section (HTTPS still answers, with the default
   * certificate, but the host does not count as TLS-configured for redirects).
   */
  tls: ServerTLS | null;
  /**
   * Regex mode: some route of the host uses `use-regex` or a `rewrite-target` that differs from its
   * path, so every path of the host is matched as a case-insensitive regex anchored at the start.
   */
  regex: boolean;
  annotations: ServerAnnotations;
  /** auth-tls-*: client certificate authentication of the host (its Secret resolved), or null */
  clientAuth: ClientAuth | null;
  defaultRoute: DefaultRoute;
  /**
   * ssl-passthrough (with --enable-ssl-passthrough): TLS connections whose ClientHello names this host
   * are relayed to a backend without being terminated; null: TLS is terminated here
   */
  passthrough: Passthrough | null;
  /**
   * A host of Ingress paths only: longest path first, ties by reverse-lexicographic path, equal paths
   * in Ingress order. Outside regex mode the order does not decide anything: an Exact route beats a
   * Prefix one and the longest matching Prefix wins. In regex mode the first route whose regex
   * matches wins, in this order.
   *
   * A host with HTTPRoute routes (`gateway` set): Ingress paths and HTTPRoute matches in one order,
   * by the path they are matched by (Exact: the path; Prefix: the path without trailing slashes),
   * longest first, ties reverse-lexicographic, Exact before Prefix; routes with the same matched
   * path and type are tried in this order and the first whose conditions all hold wins (an Ingress
   * path has none, so it always holds); when none holds, shorter prefixes, then the default route.
   * Among the same matched path and type: (1) between an Ingress path and an HTTPRoute match, the
   * older object (Ingresses and HTTPRoutes by creationTimestamp; on one second namespace/name
   * ascending across kinds, ingress-nginx's order between Ingresses): the oldest object wins a path,
   * so the HTTPRoute matches of objects newer than the Ingress path are left out of the model
   * (HTTPROUTE_PATH_TAKEN); (2) among HTTPRoute matches, a method match first, then the most header
   * matches, then the most query parameter matches, then the older object; (3) the rule's index,
   * then the match's. Two Ingresses with one host, path and type stay a conflict (the older wins).
   * In regex mode the Ingress paths come first, in ingress-nginx's order as regexes, then the
   * HTTPRoute routes in this order, matched as above.
   */
  routes: Route[];
}

export interface Endpoint {
  /** an IP address, or a DNS name for ExternalName services */
  address: string;
  port: number;
}

/** affinity: cookie (sticky sessions) with its cookie's attributes */
export interface Affinity {
  /** balanced: a random session key on the hash ring (rebalances on scale); persistent: pinned */
  mode: 'balanced' | 'persistent';
  cookieName: string;
  /** null: the route's path */
  path: string | null;
  domain: string | null;
  /** seconds from now, for Expires */
  expires: number | null;
  maxAge: number | null;
  /** always Secure; else Secure only on HTTPS requests */
  secure: boolean;
  sameSite: 'Strict' | 'Lax' | 'None' | null;
  conditionalSameSiteNone: boolean;
  changeOnFailure: boolean;
}

/** upstream-hash-by: consistent hashing on an NGINX variable template */
export interface HashBy {
  /** e.g. `$request_uri`, `${host}-x` */
  key: string;
  /** upstream-hash-by-subset: hash to a subset, then a random endpoint of it */
  subset: boolean;
  subsetSize: number;
}

export interface Upstream {
  /** `<namespace>-<service>-<port number or name>` (ingress-nginx's upstream name) */
  name: string;
  service: { namespace: string; name: string; port: string };
  /** the endpoints are DNS names to resolve (ExternalName service) */
  externalName: boolean;
  /** load-balance of the first Ingress that uses the upstream, else the ConfigMap's (round_robin) */
  loadBalance: string;
  /** upstream-hash-by of the first Ingress that uses the upstream (wins over loadBalance), or null */
  hashBy: HashBy | null;
  /**
   * affinity when an Ingress using the upstream has one (wins over hashBy), or null: the cookie of the
   * newest such Ingress, the affinity-mode of the oldest Ingress using it that sets one
   */
  affinity: Affinity | null;
  /** sorted by address then port; empty means requests get 503 */
  endpoints: Endpoint[];
}

export interface Certificate {
  /** `<namespace>/<secret name>` */
  id: string;
  certPem: string;
  keyPem: string;
  /** sha256 of the PEMs: a SecureContext can be reused while it is unchanged */
  sha256: string;
  /** DNS names of the subjectAltName extension */
  dnsNames: string[];
  /** seconds since the epoch */
  notAfter: number;
}

export interface Model {
  /** named servers, sorted by hostname */
  servers: Server[];
  /** the `_` server: hosts no rule names, and rules with no host */
  catchAll: Server;
  /** keyed by upstream name, keys sorted */
  upstreams: Record<string, Upstream>;
  /** keyed by certificate id, keys sorted */
  certificates: Record<string, Certificate>;
  /** `--default-ssl-certificate` when it is usable; null: the data plane generates one */
  defaultCertificate: string | null;
  /** upstream of `--default-backend-service`; null or no endpoints: the built-in 404 */
  defaultBackend: string | null;
  /** the global ConfigMap's settings, ingress-nginx defaults where it says nothing */
  config: GlobalConfig;
  /** the TCP and UDP services (streams.ts); absent (a model made by hand): none */
  streams?: StreamTable;
  /** content hash of everything above; equal hashes mean nothing to swap */
  hash: string;
  /** content hash without endpoint lists: equal while only endpoints changed */
  routesHash: string;
  /**
   * each server's and each upstream's own content hash (endpoints left out), so a compile can keep
   * what it made for an unchanged server; absent (a model made by hand): everything is compiled
   */
  contentHashes?: ContentHashes;
}

/** Content hashes of a model's parts; equal hashes mean equal content. */
export interface ContentHashes {
  /** by index of `Model.servers` */
  servers: string[];
  catchAll: string;
  /** by upstream name: everything but the endpoints */
  upstreams: Record<string, string>;
  /** of `upstreams` as a whole: equal when no upstream was added, removed or changed */
  allUpstreams: string;
  /** every upstream's endpoints */
  endpoints: string;
}
