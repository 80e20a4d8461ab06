// Reading TLS Secrets into certificates, and choosing the Secret for a host
// (ingress-nginx's extractTLSSecretName). Pure computation; parsed certificates are memoised by
// content in a cache the build's caller owns (one per controller), so a build over unchanged Secrets
// does not parse them again.

import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { type IngressTLS, type Secret, secretValue } from './k8s.ts';
import type { Certificate } from './types.ts';

export interface ParsedCertificate {
  certificate: Certificate;
  x509: X509Certificate;
}

export type CertificateResult = { ok: ParsedCertificate } | { problem: string };

/** Parsed certificates (or why they did not parse) by Secret id and content; the least recently used go first. */
export class CertificateParseCache {
  readonly #parsed = new LRUCache<string, CertificateResult>({ max: 4096 });

  get(key: string): CertificateResult | undefined {
    return this.#parsed.get(key);
  }

  set(key: string, result: CertificateResult): void {
    this.#parsed.set(key, result);
  }

  get size(): number {
    return this.#parsed.size;
  }
}

/**
 * The certificate of a `kubernetes.io/tls`-style Secret (keys tls.crt and tls.key), or why not.
 * Without a cache the PEMs are parsed on every call.
 */
export function readCertificate(
  secret: Secret,
  id: string,
  cache?: CertificateParseCache,
): CertificateResult {
  const certPem = secretValue(secret, 'tls.crt');
  const keyPem = secretValue(secret, 'tls.key');
  if (certPem === undefined || certPem.trim() === '') return { problem: 'it has no tls.crt' };
  if (keyPem === undefined || keyPem.trim() === '') return { problem: 'it has no tls.key' };
  const sha256 = createHash('sha256').update(certPem).update('\0').update(keyPem).digest('hex');
  const cacheKey = `${id}\0${sha256}`;
  const cached = cache?.get(cacheKey);
  if (cached !== undefined) return cached;
  const result = parseCertificate(id, certPem, keyPem, sha256);
  cache?.set(cacheKey, result);
  return result;
}

function parseCertificate(id: string, certPem: string, keyPem: string, sha256: string): CertificateResult {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certPem);
  } catch (error) {
    return { problem: `tls.crt is not a PEM certificate (${(error as Error).message})` };
  }
  try {
    const key = createPrivateKey(keyPem);
    if (!x509.checkPrivateKey(key))
      return { problem: 'tls.key does not belong to the certificate in tls.crt' };
  } catch (error) {
    return { problem: `tls.key is not a PEM private key (${(error as Error).message})` };
  }
  const dnsNames = (x509.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4).toLowerCase());
  const notAfter = Math.floor(Date.parse(x509.validTo) / 1000);
  return { ok: { certificate: { id, certPem, keyPem, sha256, dnsNames, notAfter }, x509 } };
}

/**
 * Whether the certificate is valid for `host`: Go's VerifyHostname (subjectAltName DNS names only),
 * or with `legacyCommonName` also the subject Common Name, the fallback ingress-nginx applies when it
 * checks the Secret it picked for a host.
 */
export function certificateCovers(x509: X509Certificate, host: string, legacyCommonName: boolean): boolean {
  const subject = legacyCommonName ? 'always' : 'never';
  return x509.checkHost(host, { subject, partialWildcards: false }) !== undefined;
}

/**
 * The Secret name an Ingress's tls section gives `host`: the first entry listing the host
 * (case-insensitive), else the first entry whose certificate's DNS names cover it; '' when none does.
 */
export function tlsSecretNameFor(
  host: string,
  tls: readonly IngressTLS[],
  certificateOf: (secretName: string) => ParsedCertificate | null,
): string {
  for (const entry of tls) {
    for (const listed of entry.hosts ?? []) {
      if (typeof listed === 'string' && listed.toLowerCase() === host) return entry.secretName ?? '';
    }
  }
  for (const entry of tls) {
    if (typeof entry.secretName !== 'string' || entry.secretName === '') continue;
    const cert = certificateOf(entry.secretName);
    if (cert !== null && certificateCovers(cert.x509, host, false)) return entry.secretName;
  }
  return '';
}
