// The TLS side of the data plane: which certificate a handshake gets. Compiled from the model into
// plain Maps (hostname → SecureContext) so the SNI callback does one or two lookups; SecureContexts
// are keyed by certificate content (sha256) and reused across compiles while a Secret is unchanged.
//
// Lookup follows ingress-nginx's certificate.lua (get_pem_cert_uid): lower-case the SNI name, strip
// one trailing dot, try the exact name, then `*.` + the name minus its first label; else the default
// certificate (--default-ssl-certificate, or a generated self-signed one). Hosts without a usable
// certificate have no entry of their own, exactly like ingress-nginx deleting their mapping (UID -1).

import { createHash, X509Certificate } from 'node:crypto';
import type { SecureContext, SecureVersion } from 'node:tls';
import { createSecureContext } from 'node:tls';
import { DEFAULT_GLOBAL_CONFIG } from '../../model/configmap/global-config.ts';
import type { Certificate, Model } from '../../model/index.ts';
import { type HandshakeSettings, handshakeSettings } from './server-tls.ts';

export { applyDefaultCertificate, httpsServerOptions } from './server-tls.ts';

export interface CertificatePair {
  certPem: string;
  keyPem: string;
}

export interface SniStore {
  /** SecureContext for a ClientHello servername; missing/unknown name → the default context */
  contextFor(servername: string | undefined): SecureContext;
  readonly defaultContext: SecureContext;
  /** the PEMs behind `defaultContext`: handshakes without SNI use the server's own credentials */
  readonly defaultCertificate: CertificatePair;
  /** sha256 of the default certificate's PEMs (changes when the default certificate does) */
  readonly defaultSha256: string;
  /** ssl-protocols and ssl-ciphers, on every context of the store and on the server's own credentials */
  readonly settings: TlsSettings;
  /** what only the server's own context decides: curves, DH, sessions, refusal (server-tls.ts) */
  readonly handshake: HandshakeSettings;
  /**
   * auth-tls-*: for a servername whose host verifies client certificates, the host's context with its
   * CA bundle; undefined for every other name (no certificate is requested there)
   */
  clientAuthFor?(servername: string | undefined): ClientAuthContext | undefined;
}

/** A handshake that asks for a client certificate: the context to use and what it verifies against. */
export interface ClientAuthContext {
  context: SecureContext;
  /** sha256 of the host's CA bundle */
  caSha256: string;
  /** the servername, lower-case, without a trailing dot */
  servername: string;
}

/** The ConfigMap's TLS settings every SecureContext is created with. */
export interface TlsSettings {
  minVersion: SecureVersion;
  maxVersion: SecureVersion;
  /** OpenSSL cipher string (TLS 1.2 and older) */
  ciphers: string;
}

/** ingress-nginx's defaults: `ssl-protocols` TLSv1.2 TLSv1.3, `ssl-ciphers` its ECDHE list. */
export const DEFAULT_TLS_SETTINGS: Readonly<TlsSettings> = Object.freeze({
  minVersion: DEFAULT_GLOBAL_CONFIG.ssl.minVersion,
  maxVersion: DEFAULT_GLOBAL_CONFIG.ssl.maxVersion,
  ciphers: DEFAULT_GLOBAL_CONFIG.ssl.ciphers,
});

const settingsKey = (settings: TlsSettings): string =>
  `${settings.minVersion}|${settings.maxVersion}|${settings.ciphers}`;

export const FAKE_CERTIFICATE_CN = 'Ingress-TS Fake Certificate';
export const FAKE_CERTIFICATE_DNS = 'ingress.local';

/** SecureContexts of a store by certificate sha256; null: the PEMs were refused by OpenSSL. */
type ContextCache = Map<string, SecureContext | null>;

const cacheOf = new WeakMap<SniStore, ContextCache>();
/** mTLS SecureContexts by `<certificate sha256>|<CA sha256>`. */
const clientAuthCacheOf = new WeakMap<SniStore, ContextCache>();
/** Parsed certificates by sha256, only needed to check aliases; small and bounded by the live set. */
const x509Of = new WeakMap<SniStore, Map<string, X509Certificate | null>>();

function sha256Of(pair: CertificatePair): string {
  return createHash('sha256').update(pair.certPem).update('\0').update(pair.keyPem).digest('hex');
}

function tryCreateContext(pair: CertificatePair, settings: TlsSettings): SecureContext | null {
  try {
    return createSecureContext({
      cert: pair.certPem,
      key: pair.keyPem,
      minVersion: settings.minVersion,
      maxVersion: settings.maxVersion,
      ciphers: settings.ciphers,
    });
  } catch {
    return null;
  }
}

/**
 * A host's context that verifies client certificates: its certificate and the CA bundle (the verify
 * store and the CA names of the CertificateRequest). Resumed sessions are checked per request
 * (client-cert.ts): OpenSSL fixes a session's id context before the SNI callback switches contexts.
 */
function tryCreateClientAuthContext(
  pair: CertificatePair,
  caPem: string,
  settings: TlsSettings,
): SecureContext | null {
  try {
    return createSecureContext({
      cert: pair.certPem,
      key: pair.keyPem,
      ca: caPem,
      minVersion: settings.minVersion,
      maxVersion: settings.maxVersion,
      ciphers: settings.ciphers,
    });
  } catch {
    return null;
  }
}

function tryParse(certPem: string): X509Certificate | null {
  try {
    return new X509Certificate(certPem);
  } catch {
    return null;
  }
}

/**
 * Whether a server's certificate may serve one of its aliases (ingress-nginx's ssl.IsValidHostname
 * against the certificate's CN and DNS names: equal, or equal once the first label is `*`).
 */
function coversAlias(x509: X509Certificate, dnsNames: readonly string[], alias: string): boolean {
  try {
    if (alias.startsWith('*.')) {
      // a wildcard alias is only covered by the very same wildcard name
      if (dnsNames.includes(alias)) return true;
      return x509.subject.split('\n').some((line) => line.toLowerCase() === `cn=${alias}`);
    }
    return x509.checkHost(alias, { subject: 'always', partialWildcards: false }) !== undefined;
  } catch {
    return false;
  }
}

/** What of the model the SNI store reads: the TLS settings, the certificates and who serves them. */
export type TlsModel = Pick<Model, 'config' | 'defaultCertificate' | 'certificates' | 'servers'>;

/** The store served before the first model: no hosts, ingress-nginx's TLS defaults, the generated certificate. */
export function initialSniStore(generatedDefault: CertificatePair): SniStore {
  const empty: TlsModel = {
    config: DEFAULT_GLOBAL_CONFIG,
    defaultCertificate: null,
    certificates: {},
    servers: [],
  };
  return compileSniStore(empty, generatedDefault);
}

/** The contexts and parsed certificates of one compile, reusing the previous store's by content. */
class CompileCaches {
  readonly settings: TlsSettings;
  readonly contexts: ContextCache = new Map();
  readonly parsed = new Map<string, X509Certificate | null>();
  readonly clientAuthContexts: ContextCache = new Map();
  readonly #previousContexts: ContextCache | undefined;
  readonly #previousX509: Map<string, X509Certificate | null> | undefined;
  readonly #previousClientAuth: ContextCache | undefined;

  constructor(settings: TlsSettings, previous: SniStore | undefined) {
    this.settings = settings;
    // contexts are reused only while the TLS settings they were made with are unchanged
    const sameSettings = previous !== undefined && settingsKey(previous.settings) === settingsKey(settings);
    this.#previousContexts = sameSettings ? cacheOf.get(previous) : undefined;
    this.#previousClientAuth = sameSettings ? clientAuthCacheOf.get(previous) : undefined;
    this.#previousX509 = previous === undefined ? undefined : x509Of.get(previous);
  }

  contextOf(sha256: string, pair: CertificatePair): SecureContext | null {
    let context = this.contexts.get(sha256);
    if (context !== undefined) return context;
    context = this.#previousContexts?.get(sha256);
    if (context === undefined) context = tryCreateContext(pair, this.settings);
    this.contexts.set(sha256, context);
    return context;
  }

  x509For(certificate: Certificate): X509Certificate | null {
    let x509 = this.parsed.get(certificate.sha256);
    if (x509 !== undefined) return x509;
    x509 = this.#previousX509?.get(certificate.sha256);
    if (x509 === undefined) x509 = tryParse(certificate.certPem);
    this.parsed.set(certificate.sha256, x509);
    return x509;
  }

  /** `key` is `<certificate sha256>|<CA sha256>`. */
  clientAuthContextOf(key: string, pair: CertificatePair, caPem: string): SecureContext | null {
    let context = this.clientAuthContexts.get(key) ?? this.#previousClientAuth?.get(key);
    if (context === undefined) context = tryCreateClientAuthContext(pair, caPem, this.settings);
    this.clientAuthContexts.set(key, context);
    return context;
  }
}

interface DefaultCertificate {
  pair: CertificatePair;
  sha256: string;
  context: SecureContext;
}

/** The default: --default-ssl-certificate when usable, else the generated one. */
function chooseDefault(
  model: TlsModel,
  generated: CertificatePair,
  caches: CompileCaches,
): DefaultCertificate {
  const configured =
    model.defaultCertificate === null ? undefined : model.certificates[model.defaultCertificate];
  if (configured !== undefined) {
    const context = caches.contextOf(configured.sha256, configured);
    if (context !== null) {
      return {
        pair: { certPem: configured.certPem, keyPem: configured.keyPem },
        sha256: configured.sha256,
        context,
      };
    }
  }
  const sha256 = sha256Of(generated);
  const context = caches.contextOf(sha256, generated);
  if (context === null) throw new Error('the generated default certificate is not usable by TLS');
  return { pair: { certPem: generated.certPem, keyPem: generated.keyPem }, sha256, context };
}

/** Each host's context by lower-case name: hostnames first, then aliases (never overriding a hostname). */
function hostContexts(model: TlsModel, caches: CompileCaches): Map<string, SecureContext> {
  const hosts = new Map<string, SecureContext>();
  const aliased: Array<{ alias: string; certificate: Certificate; context: SecureContext }> = [];
  for (const server of model.servers) {
    const id = server.tls?.certificate;
    if (id === undefined || id === null) continue;
    const certificate = model.certificates[id];
    if (certificate === undefined) continue;
    const context = caches.contextOf(certificate.sha256, certificate);
    if (context === null) continue;
    hosts.set(server.hostname.toLowerCase(), context);
    for (const alias of server.annotations.alias.aliases) aliased.push({ alias, certificate, context });
    // from-to-www-redirect: the redirected name gets the host's certificate when it covers it
    const wwwFrom = server.annotations.fromToWww.from;
    if (wwwFrom !== null) aliased.push({ alias: wwwFrom, certificate, context });
  }
  for (const { alias, certificate, context } of aliased) {
    const name = alias.toLowerCase();
    if (hosts.has(name)) continue;
    const x509 = caches.x509For(certificate);
    if (x509 !== null && coversAlias(x509, certificate.dnsNames, name)) hosts.set(name, context);
  }
  return hosts;
}

type ClientAuthHost = { context: SecureContext; caSha256: string };

/** auth-tls: the hosts (and their aliases) that ask for a client certificate, with the context that does. */
function clientAuthContexts(
  model: TlsModel,
  caches: CompileCaches,
  fallback: DefaultCertificate,
): Map<string, ClientAuthHost> {
  const clientAuthHosts = new Map<string, ClientAuthHost>();
  for (const server of model.servers) {
    const auth = server.clientAuth;
    if (auth === null || auth.caPem === null || auth.verifyClient === 'off') continue;
    const id = server.tls?.certificate;
    const certificate = id === undefined || id === null ? undefined : model.certificates[id];
    const usable = certificate !== undefined && caches.contexts.get(certificate.sha256) != null;
    const pair = usable ? certificate : fallback.pair;
    const key = `${usable ? certificate.sha256 : fallback.sha256}|${auth.caSha256}`;
    const context = caches.clientAuthContextOf(key, pair, auth.caPem);
    if (context === null) continue;
    const entry = { context, caSha256: auth.caSha256 };
    clientAuthHosts.set(server.hostname, entry);
    for (const alias of server.annotations.alias.aliases) {
      const name = alias.toLowerCase();
      if (!clientAuthHosts.has(name) && !model.servers.some((other) => other.hostname === name))
        clientAuthHosts.set(name, entry);
    }
  }
  return clientAuthHosts;
}

/** Every name a server answers to (hostnames and aliases, lower-case): wildcards never shadow them. */
function namedHostsOf(model: TlsModel): Set<string> {
  const named = new Set<string>();
  for (const server of model.servers) {
    named.add(server.hostname);
    for (const alias of server.annotations.alias.aliases) named.add(alias.toLowerCase());
  }
  return named;
}

/**
 * ssl-reject-handshake: whether a ClientHello name belongs to a server (its hostname, an alias, the
 * from-to-www name; a wildcard host covers one label, as the router does), as NGINX refuses only the
 * handshakes that land on the catch-all server. A host without a certificate of its own still gets
 * the default one.
 */
function serverNameTest(model: TlsModel, named: Set<string>): (name: string) => boolean {
  const names = new Set(named);
  for (const server of model.servers) {
    const from = server.annotations.fromToWww.from;
    if (from !== null) names.add(from.toLowerCase());
  }
  return (name) => {
    if (names.has(name)) return true;
    const dot = name.indexOf('.');
    return dot > 0 && names.has(`*${name.slice(dot)}`);
  };
}

/** The context of a refused handshake: no certificate, so OpenSSL ends it with a handshake_failure alert. */
const refusalContexts = new Map<string, SecureContext>();
function refusalContext(settings: TlsSettings): SecureContext {
  const key = settingsKey(settings);
  let context = refusalContexts.get(key);
  if (context === undefined) {
    context = createSecureContext({ ...settings });
    refusalContexts.clear();
    refusalContexts.set(key, context);
  }
  return context;
}

/** A ClientHello servername as the lookups key it: lower-case, one trailing dot stripped. */
function sniKey(servername: string): string {
  const name = servername.toLowerCase();
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Build the store for a model. `previous` lets SecureContexts be reused when a certificate's sha256 is unchanged. */
export function compileSniStore(
  model: TlsModel,
  generatedDefault: CertificatePair,
  previous?: SniStore,
): SniStore {
  const settings: TlsSettings = {
    minVersion: model.config.ssl.minVersion,
    maxVersion: model.config.ssl.maxVersion,
    ciphers: model.config.ssl.ciphers,
  };
  const caches = new CompileCaches(settings, previous);
  const chosen = chooseDefault(model, generatedDefault, caches);
  const hosts = hostContexts(model, caches);
  const clientAuthHosts = clientAuthContexts(model, caches, chosen);
  const handshake = handshakeSettings(model.config.sslHandshake);
  const refused = handshake.rejectHandshake ? refusalContext(settings) : null;
  // every name (20,000 at 10,000 Ingresses) only when a wildcard host's client auth or
  // ssl-reject-handshake needs them
  const namedHosts =
    refused !== null || [...clientAuthHosts.keys()].some((name) => name.startsWith('*.'))
      ? namedHostsOf(model)
      : null;
  const isServerName = refused === null || namedHosts === null ? null : serverNameTest(model, namedHosts);
  const fallback = chosen.context;
  const store: SniStore = {
    defaultContext: fallback,
    defaultCertificate: chosen.pair,
    defaultSha256: chosen.sha256,
    settings,
    handshake,
    contextFor(servername: string | undefined): SecureContext {
      if (typeof servername !== 'string' || servername === '') return refused ?? fallback;
      const name = sniKey(servername);
      const exact = hosts.get(name);
      if (exact !== undefined) return exact;
      const dot = name.indexOf('.');
      if (dot > 0) {
        const wildcard = hosts.get(`*${name.slice(dot)}`);
        if (wildcard !== undefined) return wildcard;
      }
      if (refused !== null && isServerName?.(name) !== true) return refused;
      return fallback;
    },
    clientAuthFor(servername: string | undefined): ClientAuthContext | undefined {
      if (clientAuthHosts.size === 0 || typeof servername !== 'string' || servername === '') return undefined;
      const name = sniKey(servername);
      let entry = clientAuthHosts.get(name);
      if (entry === undefined) {
        const dot = name.indexOf('.');
        // a wildcard host applies only when no exact host of that name exists
        if (dot > 0 && namedHosts !== null && !namedHosts.has(name))
          entry = clientAuthHosts.get(`*${name.slice(dot)}`);
      }
      return entry === undefined ? undefined : { ...entry, servername: name };
    },
  };
  cacheOf.set(store, caches.contexts);
  clientAuthCacheOf.set(store, caches.clientAuthContexts);
  x509Of.set(store, caches.parsed);
  return store;
}

/** A self-signed default certificate (sha256, RSA 2048, CN "Ingress-TS Fake Certificate", SAN DNS "ingress.local", valid ~1 year). */
export async function generateDefaultCertificate(): Promise<CertificatePair> {
  const notBeforeDate = new Date();
  const notAfterDate = new Date(notBeforeDate.getTime() + 365 * 24 * 3600 * 1000);
  // loaded here, not with this file: a data-plane thread gets the certificate from the main thread,
  // and the X.509 library (~200 modules, ~11 MiB per thread) would sit unused in every one
  const { generate } = await import('selfsigned');
  const pems = await generate(
    [
      { name: 'organizationName', value: 'Acme Co' },
      { name: 'commonName', value: FAKE_CERTIFICATE_CN },
    ],
    {
      keyType: 'rsa',
      keySize: 2048,
      algorithm: 'sha256',
      notBeforeDate,
      notAfterDate,
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: FAKE_CERTIFICATE_DNS }] },
      ],
    },
  );
  return { certPem: pems.cert, keyPem: pems.private };
}
