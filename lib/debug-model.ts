// /debug/model on the healthz port: the live configuration as plain JSON — hosts → routes →
// backends with their endpoints and balancer, the certificate each host is served with, and the
// diagnostics of the last build grouped per object (what `kubectl ingress-nginx backends` shows,
// for everything). Built from the runtime the data plane serves, so it is what requests get.
// Never includes private keys or credentials: the status port is reachable from the cluster network,
// so URLs lose their userinfo and query values and ConfigMap header values are hidden (model/redact.ts).

import { X509Certificate } from 'node:crypto';
import type { Runtime } from './dataplane/routing/runtime.ts';
import { peerKey } from './dataplane/upstream/balancer.ts';
import type { BackendProtocol } from './model/annotations/backend-protocol.ts';
import type { CorsAnnotations } from './model/annotations/cors.ts';
import type { CacheDuration } from './model/annotations/external-auth.ts';
import type { MirrorAnnotations } from './model/annotations/mirror.ts';
import type { ProxySslAnnotations } from './model/annotations/proxy-ssl.ts';
import type { RateLimitAnnotations } from './model/annotations/rate-limit.ts';
import type {
  Backend,
  Canary,
  ClientAuth,
  Diagnostic,
  GlobalConfig,
  LocationAnnotations,
  ObjectRef,
  Server,
  Severity,
  Upstream,
  UpstreamSettings,
} from './model/index.ts';
import {
  REDACTED,
  redactConfig,
  redactOptionalUrl,
  redactText,
  redactUrl,
  upstreamSettings,
} from './model/index.ts';

/** What a route or a default route sends requests to: an upstream name, or the controller's default. */
export const DEFAULT_BACKEND = 'default-backend';

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
  /** the Ingress whose `spec.tls` decided it */
  ingress: string;
  certificate: CertificateInfo;
}

export interface RouteDescription extends PathSettingsDescription {
  path: string;
  pathType: string;
  /** when it differs from `pathType` (ImplementationSpecific is matched as Prefix) */
  pathTypeAsWritten?: string;
  ingress: string;
  /** an upstream name of `backends`, or `default-backend` */
  backend: string;
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

function proxySslOf(value: ProxySslAnnotations): ProxySslDescription | null {
  if (value.secret === null) return null;
  const { verify, verifyDepth, name, serverName, ciphers, protocols, material, denied } = value;
  const out: ProxySslDescription = {
    secret: material?.secret ?? value.secret,
    verify,
    verifyDepth,
    name,
    serverName,
    ciphers,
    protocols: [...protocols],
  };
  if (material?.certPem != null) out.clientCertificate = parseCertificate(material.certPem);
  if (material?.caPem != null)
    out.caCertificates = (material.caPem.match(PEM_BLOCK) ?? []).map(parseCertificate);
  if (denied !== null) out.denied = redactText(denied);
  return out;
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

function authOf(annotations: LocationAnnotations): AuthDescription | null {
  const basic = annotations.basicAuth.auth;
  const external = annotations.externalAuth.auth;
  const out: AuthDescription = {};
  if (basic !== null) {
    const { type, secret, secretType, realm, users } = basic;
    out.basic = { type, secret, secretType, realm, users: users.length };
  }
  if (external !== null) {
    const { url, method, signin, signinRedirectParam, responseHeaders, requestRedirect } = external;
    out.external = {
      url: redactUrl(url),
      method,
      signin: redactOptionalUrl(signin),
      signinRedirectParam,
      responseHeaders: [...responseHeaders],
      requestRedirect: redactUrl(requestRedirect),
      proxySetHeaders: external.proxySetHeaders,
      alwaysSetCookie: external.alwaysSetCookie,
      cacheKey: external.cacheKey,
      cacheDuration: external.cacheDuration,
    };
  }
  if (!annotations.externalAuth.enableGlobalAuth) out.globalAuth = false;
  if (annotations.satisfy.any) out.satisfy = 'any';
  const denied = basic?.denied ?? external?.denied ?? null;
  if (denied !== null) out.denied = redactText(denied);
  return Object.keys(out).length === 0 ? null : out;
}

function pathSettingsOf(annotations: LocationAnnotations, path: string): PathSettingsDescription {
  const out: PathSettingsDescription = {};
  const { target, forwardedPrefix } = annotations.rewrite;
  if (target !== null && target !== path) {
    out.rewriteTarget = target;
    if (forwardedPrefix !== null) out.xForwardedPrefix = forwardedPrefix;
  }
  const { sslRedirect, forceSslRedirect, preserveTrailingSlash, usePortInRedirects } =
    annotations.sslRedirect;
  if (sslRedirect !== null) out.sslRedirect = sslRedirect;
  if (forceSslRedirect !== null) out.forceSslRedirect = forceSslRedirect;
  if (preserveTrailingSlash) out.preserveTrailingSlash = true;
  if (usePortInRedirects) out.usePortInRedirects = true;
  const auth = authOf(annotations);
  if (auth !== null) out.auth = auth;
  if (annotations.cors.enabled) out.cors = annotations.cors;
  const { configMap, headers, denied } = annotations.customHeaders;
  if (configMap !== null) {
    out.customHeaders = {
      configMap,
      headers: Object.fromEntries(headers.map(([name]) => [name, REDACTED])),
      ...(denied === null ? {} : { denied: redactText(denied) }),
    };
  }
  const { allow, deny } = annotations.accessControl;
  if (allow !== null) out.allowlistSourceRange = allow;
  if (deny !== null) out.denylistSourceRange = deny;
  const limits = annotations.rateLimit;
  if (limits.rps > 0 || limits.rpm > 0 || limits.connections > 0) out.rateLimit = limits;
  const proxySsl = proxySslOf(annotations.proxySsl);
  if (proxySsl !== null) out.proxySsl = proxySsl;
  const { mirror } = annotations;
  if (mirror.target !== null) out.mirror = { ...mirror, target: redactUrl(mirror.target) };
  return out;
}

function canaryOf(canary: Canary | null): CanaryDescription | null {
  if (canary === null) return null;
  const { ingress, upstream, weight, weightTotal, header, headerValue, headerPattern, cookie } = canary;
  return {
    ingress: `${ingress.namespace}/${ingress.name}`,
    backend: upstream,
    weight,
    weightTotal,
    header,
    headerValue,
    headerPattern,
    cookie,
  };
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
  /** the oldest Ingress naming the host; null for the catch-all server without one */
  ingress: string | null;
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
}

export interface DiagnosticDescription {
  severity: Severity;
  code: string;
  message: string;
  file?: string;
  line?: number | null;
}

export interface ModelDescription {
  hash: string;
  routesHash: string;
  hosts: HostDescription[];
  backends: BackendDescription[];
  /** the --default-backend-service upstream; null: the built-in 404 */
  defaultBackend: string | null;
  /** the default certificate: --default-ssl-certificate's Secret, or `generated` */
  defaultCertificate: { secret: string; certificate: CertificateInfo };
  /**
   * diagnostics of the last build by `Kind namespace/name`, and in standalone mode those of the
   * manifest files (`file` and `line` say where; a document naming no object is `Manifest <file>`)
   */
  diagnostics: Record<string, DiagnosticDescription[]>;
  config: GlobalConfig;
  /** the upstream behaviour of every route without its own (`upstream`): the ConfigMap's */
  upstreamDefaults: UpstreamSettings;
}

/** proxy-redirect-from / -to are URLs. */
function redactSettings(settings: UpstreamSettings): UpstreamSettings {
  const { redirect } = settings;
  if (redirect === null) return settings;
  return { ...settings, redirect: { from: redactUrl(redirect.from), to: redactUrl(redirect.to) } };
}

/** Parsed certificates by sha256; `describeRuntime` keeps only the ones still in use. */
export type CertificateCache = Map<string, CertificateInfo>;

const refOf = (ref: ObjectRef | null): string | null =>
  ref === null ? null : `${ref.namespace}/${ref.name}`;

const backendOf = (backend: Backend): string =>
  backend.type === 'upstream' ? backend.upstream : DEFAULT_BACKEND;

/** `DNS:a.example.com, DNS:b.example.com, IP Address:…` → the DNS names. */
function dnsNamesOf(x509: X509Certificate): string[] {
  const san = x509.subjectAltName;
  if (san === undefined) return [];
  return san
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
}

export function parseCertificate(certPem: string): CertificateInfo {
  try {
    const x509 = new X509Certificate(certPem);
    return {
      subject: x509.subject.split('\n').join(', '),
      issuer: x509.issuer.split('\n').join(', '),
      notBefore: new Date(x509.validFrom).toISOString(),
      notAfter: new Date(x509.validTo).toISOString(),
      dnsNames: dnsNamesOf(x509),
      fingerprint256: x509.fingerprint256,
    };
  } catch (error) {
    return {
      error: `the certificate does not parse: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function describeClientAuth(auth: ClientAuth): ClientAuthDescription {
  return {
    secret: auth.secret,
    ingress: `${auth.ingress.namespace}/${auth.ingress.name}`,
    denied: auth.caPem === null,
    verifyClient: auth.verifyClient,
    verifyDepth: auth.verifyDepth,
    passCertificate: auth.passCertificate,
    matchCN: auth.matchCN,
    errorPage: auth.errorPage,
    caCertificates: (auth.caPem?.match(PEM_BLOCK) ?? []).map(parseCertificate),
  };
}

function groupDiagnostics(diagnostics: readonly Diagnostic[]): ModelDescription['diagnostics'] {
  const grouped: ModelDescription['diagnostics'] = {};
  for (const d of diagnostics) {
    const key = `${d.kind} ${d.namespace === '' ? d.name : `${d.namespace}/${d.name}`}`;
    const entry: DiagnosticDescription = {
      severity: d.severity,
      code: d.code,
      message: redactText(d.message),
    };
    if (d.file !== undefined) {
      entry.file = d.file;
      entry.line = d.line ?? null;
    }
    const list = grouped[key];
    if (list === undefined) grouped[key] = [entry];
    else list.push(entry);
  }
  return grouped;
}

/**
 * The JSON answer of /debug/model for the runtime being served. `cache` (optional, kept by the
 * caller across calls) saves parsing the same certificates on every request.
 */
export function describeRuntime(
  runtime: Runtime,
  diagnostics: readonly Diagnostic[],
  cache: CertificateCache = new Map(),
): ModelDescription {
  const { model } = runtime;
  const used = new Set<string>();
  const certificateInfo = (sha256: string, certPem: string): CertificateInfo => {
    used.add(sha256);
    let info = cache.get(sha256);
    if (info === undefined) {
      info = parseCertificate(certPem);
      cache.set(sha256, info);
    }
    return info;
  };

  const configuredDefault =
    model.defaultCertificate === null ? undefined : model.certificates[model.defaultCertificate];
  const defaultCertificate = {
    // the data plane falls back to the generated one when the configured one is refused
    secret:
      configuredDefault !== undefined && configuredDefault.sha256 === runtime.sni.defaultSha256
        ? configuredDefault.id
        : 'generated',
    certificate: certificateInfo(runtime.sni.defaultSha256, runtime.sni.defaultCertificate.certPem),
  };

  const upstreamDefaults = redactSettings(upstreamSettings(null, model.config));
  const defaultsJson = JSON.stringify(upstreamDefaults);
  /** `{ upstream }` when the location's settings differ from the ConfigMap's, else nothing */
  const upstreamOf = (annotations: LocationAnnotations): { upstream?: UpstreamSettings } => {
    const settings = redactSettings(upstreamSettings(annotations, model.config));
    return JSON.stringify(settings) === defaultsJson ? {} : { upstream: settings };
  };

  const passthroughOf = (server: Server): { passthrough?: PassthroughDescription } => {
    const target = runtime.passthrough?.lookup(server.hostname);
    if (server.passthrough === null || target === undefined || target === null) return {};
    return {
      passthrough: {
        ingress: refOf(server.passthrough.ingress) ?? '',
        backend: target.upstream,
        endpoints: (target.balancer?.peers ?? []).map((peer) => peer.key),
        connectTimeout: target.connectTimeoutMs / 1000,
      },
    };
  };

  const describeServer = (server: Server): HostDescription => {
    let tls: HostTLS | null = null;
    if (server.tls !== null) {
      const certificate =
        server.tls.certificate === null ? undefined : model.certificates[server.tls.certificate];
      tls = {
        secret: certificate === undefined ? 'default' : certificate.id,
        ingress: refOf(server.tls.ingress) ?? '',
        certificate:
          certificate === undefined
            ? defaultCertificate.certificate
            : certificateInfo(certificate.sha256, certificate.certPem),
      };
    }
    const aliases = server.annotations.alias.aliases;
    return {
      host: server.hostname,
      ...(aliases.length > 0 ? { aliases: [...aliases] } : {}),
      ingress: refOf(server.ingress),
      regex: server.regex,
      ...(server.annotations.fromToWww.from === null
        ? {}
        : { wwwRedirectFrom: server.annotations.fromToWww.from }),
      tls,
      ...(server.clientAuth === null ? {} : { clientAuth: describeClientAuth(server.clientAuth) }),
      ...passthroughOf(server),
      routes: server.routes.map((route) => ({
        path: route.path,
        pathType: route.pathType,
        ...(route.pathTypeAsWritten !== route.pathType ? { pathTypeAsWritten: route.pathTypeAsWritten } : {}),
        ingress: `${route.ingress.namespace}/${route.ingress.name}`,
        backend: backendOf(route.backend),
        backendProtocol: route.annotations.backendProtocol.protocol,
        canary: canaryOf(route.canary),
        ...pathSettingsOf(route.annotations, route.path),
        ...upstreamOf(route.annotations),
      })),
      defaultRoute: {
        ingress: refOf(server.defaultRoute.ingress),
        backend: backendOf(server.defaultRoute.backend),
        ...(server.defaultRoute.canary === null ? {} : { canary: canaryOf(server.defaultRoute.canary) }),
        ...pathSettingsOf(server.defaultRoute.annotations, '/'),
        ...upstreamOf(server.defaultRoute.annotations),
      },
    };
  };

  const describeUpstream = (upstream: Upstream): BackendDescription => ({
    name: upstream.name,
    service: `${upstream.service.namespace}/${upstream.service.name}:${upstream.service.port}`,
    externalName: upstream.externalName,
    loadBalance: upstream.loadBalance,
    balancer: runtime.balancers.get(upstream.name)?.kind ?? null,
    endpoints: upstream.endpoints.map((e) => peerKey(e.address, e.port)),
  });

  const description: ModelDescription = {
    hash: model.hash,
    routesHash: model.routesHash,
    hosts: [...model.servers.map(describeServer), describeServer(model.catchAll)],
    backends: Object.values(model.upstreams)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(describeUpstream),
    defaultBackend: model.defaultBackend,
    defaultCertificate,
    diagnostics: groupDiagnostics(diagnostics),
    config: redactConfig(model.config),
    upstreamDefaults,
  };
  // only the certificates still served stay cached
  for (const sha256 of cache.keys()) if (!used.has(sha256)) cache.delete(sha256);
  return description;
}
