// Certificates as /debug/model shows them: subject, issuer, validity, DNS names and fingerprint,
// never the key. Parsing is kept per certificate content while the certificate is served.

import { X509Certificate } from 'node:crypto';
import type { CertificateInfo } from './types.ts';

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

/** The certificates of a PEM bundle (a ca.crt), each parsed. */
export const bundleInfo = (pem: string | null): CertificateInfo[] =>
  (pem?.match(PEM_BLOCK) ?? []).map(parseCertificate);

/**
 * Parsed certificates by sha256, kept by whoever describes runtimes (one per data plane): a
 * description marks what it uses, and only the certificates still served stay.
 */
export class CertificateInfoCache {
  readonly #parsed = new Map<string, CertificateInfo>();
  #used = new Set<string>();

  /** A new description starts: nothing is marked used. */
  begin(): void {
    this.#used = new Set();
  }

  info(sha256: string, certPem: string): CertificateInfo {
    this.#used.add(sha256);
    let info = this.#parsed.get(sha256);
    if (info === undefined) {
      info = parseCertificate(certPem);
      this.#parsed.set(sha256, info);
    }
    return info;
  }

  /** The description is done: certificates it did not use are forgotten. */
  prune(): void {
    for (const sha256 of this.#parsed.keys()) if (!this.#used.has(sha256)) this.#parsed.delete(sha256);
  }

  get size(): number {
    return this.#parsed.size;
  }
}
