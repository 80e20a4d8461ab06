// The admission webhook's certificate: what a Secret holds, whether it still serves, and a new one.
//
// The Secret (type kubernetes.io/tls, as cert-manager writes it) holds `tls.crt` and `tls.key` (the
// serving pair every replica loads), `ca.crt` (what the leader writes into the webhook
// configuration's caBundle) and, when ingress-ts made it, `ca.key`: with it the leader renews the
// serving certificate under the same CA, so a renewal never touches the caBundle. The CA key is no
// more secret than `tls.key` next to it: that CA is trusted by one webhook configuration only.
//
// Lifetimes are those ingress-nginx's chart gives cert-manager (CA 5 years, serving certificate 1
// year). A certificate is renewed once less than a third of its lifetime remains (cert-manager's
// default `renewBefore`): four months of slack for a serving certificate, during which any replica
// that becomes leader renews it; the rule reads each certificate's own lifetime, so it also fits a
// Secret some other tool wrote.

import { createPrivateKey, X509Certificate } from 'node:crypto';

const DAY_MS = 24 * 3600 * 1000;
export const CA_LIFETIME_MS = 5 * 365 * DAY_MS;
export const SERVING_LIFETIME_MS = 365 * DAY_MS;
/** Generated certificates start this much in the past: a node whose clock lags still accepts them. */
const BACKDATE_MS = 3600 * 1000;

/** The Secret's data as PEM text, keys as stored. */
export type PemData = Partial<Record<'ca.crt' | 'ca.key' | 'tls.crt' | 'tls.key', string>>;

/** Secret.data (base64 values) → PEM text; anything that is not a string is dropped. */
export function decodeSecretData(data: unknown): PemData {
  const out: PemData = {};
  if (typeof data !== 'object' || data === null) return out;
  for (const key of ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'] as const) {
    const value = (data as Record<string, unknown>)[key];
    if (typeof value === 'string') out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return out;
}

export function encodeSecretData(data: PemData): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .map(([key, pem]) => [key, Buffer.from(pem, 'utf8').toString('base64')]),
  );
}

/** The DNS names the API server may call the Service by. */
export function serviceDnsNames(service: { namespace: string; name: string }): string[] {
  const { namespace, name } = service;
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
}

/** Every certificate of a PEM bundle (those that do not parse are skipped). */
export function parseBundle(pem: string | undefined): X509Certificate[] {
  const blocks = pem?.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const parsed: X509Certificate[] = [];
  for (const block of blocks) {
    try {
      parsed.push(new X509Certificate(block));
    } catch {
      // a damaged block: the rest of the bundle may still be usable
    }
  }
  return parsed;
}

export interface ServingPair {
  certPem: string;
  keyPem: string;
  cert: X509Certificate;
}

/** The serving pair of a Secret when the certificate parses and the key is its own; else why not. */
export function servingPair(data: PemData): ServingPair | { problem: string } {
  const certPem = data['tls.crt'];
  const keyPem = data['tls.key'];
  if (!certPem || !keyPem) return { problem: 'tls.crt or tls.key is missing' };
  const [cert] = parseBundle(certPem);
  if (cert === undefined) return { problem: 'tls.crt is not a PEM certificate' };
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem)))
      return { problem: 'tls.key is not the key of tls.crt' };
  } catch {
    return { problem: 'tls.key is not a PEM private key' };
  }
  return { certPem, keyPem, cert };
}

const remainingShare = (cert: X509Certificate, nowMs: number): number => {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return to <= from ? 0 : (to - nowMs) / (to - from);
};
/** Less than a third of its lifetime left (or already expired). */
const renewalDue = (cert: X509Certificate, nowMs: number): boolean => remainingShare(cert, nowMs) < 1 / 3;

/** When a certificate enters its renewal window. */
export function renewalTime(cert: X509Certificate): number {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return to - (to - from) / 3;
}

export interface CaPair {
  certPem: string;
  keyPem: string;
  /** the ca.crt it came from, written back as it was (the caBundle then stays byte for byte) */
  bundlePem?: string;
}

export type Assessment =
  | { renew: false; pair: ServingPair; caPem: string }
  | { renew: true; reason: string; reusableCa: CaPair | null; keepCaPem: string | null };

/**
 * Whether the leader must write a new certificate into the Secret, and why. A CA that signed the
 * serving certificate, is not due for renewal itself and whose key is in the Secret is kept; a CA
 * replaced while still valid stays in ca.crt beside the new one (keepCaPem), so the API server trusts
 * both while replicas move over.
 */
export function assessSecret(data: PemData | null, names: readonly string[], nowMs: number): Assessment {
  if (data === null)
    return { renew: true, reason: 'the Secret does not exist', reusableCa: null, keepCaPem: null };
  const cas = parseBundle(data['ca.crt']);
  const caKey = data['ca.key'];
  const pair = servingPair(data);
  const signer = 'cert' in pair ? cas.find((ca) => pair.cert.verify(ca.publicKey)) : undefined;
  const ownCa = cas[0];
  let reusableCa: CaPair | null = null;
  if (ownCa !== undefined && caKey && !renewalDue(ownCa, nowMs)) {
    try {
      if (ownCa.checkPrivateKey(createPrivateKey(caKey)))
        reusableCa = { certPem: ownCa.toString(), keyPem: caKey, bundlePem: data['ca.crt'] };
    } catch {
      // no usable CA key: a new CA
    }
  }
  const keepCaPem =
    reusableCa === null && ownCa !== undefined && Date.parse(ownCa.validTo) > nowMs ? ownCa.toString() : null;
  const renew = (reason: string): Assessment => ({ renew: true, reason, reusableCa, keepCaPem });
  if ('problem' in pair) return renew(pair.problem);
  if (cas.length === 0) return renew('ca.crt holds no certificate');
  if (signer === undefined) return renew('tls.crt is not signed by ca.crt');
  const missing = names.filter((name) => pair.cert.checkHost(name) === undefined);
  if (missing.length > 0) return renew(`tls.crt does not name ${missing.join(', ')}`);
  if (renewalDue(pair.cert, nowMs)) return renew(`tls.crt expires on ${pair.cert.validTo}`);
  if (renewalDue(signer, nowMs)) return renew(`ca.crt expires on ${signer.validTo}`);
  return { renew: false, pair, caPem: data['ca.crt'] as string };
}

const EC = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;

/**
 * A serving certificate for `names`, signed by `ca` (or by a new CA when null): the Secret's data.
 * ca.crt is the signing CA, followed by `keepCaPem` when given.
 */
export async function issueCertificate(
  names: readonly string[],
  ca: CaPair | null,
  keepCaPem: string | null,
  nowMs: number,
): Promise<PemData> {
  // loaded on first use: only the leader that has to write a certificate needs the X.509 writer
  const { generate } = await import('selfsigned');
  const notBeforeDate = new Date(nowMs - BACKDATE_MS);
  let signer = ca;
  if (signer === null) {
    const made = await generate([{ name: 'commonName', value: 'ingress-ts admission webhook CA' }], {
      ...EC,
      notBeforeDate,
      notAfterDate: new Date(nowMs + CA_LIFETIME_MS),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    signer = { certPem: made.cert, keyPem: made.private };
  }
  const caNotAfter = Date.parse(new X509Certificate(signer.certPem).validTo);
  const serving = await generate([{ name: 'commonName', value: names[names.length - 1] ?? 'webhook' }], {
    ...EC,
    notBeforeDate,
    // never beyond the CA: a chain is only as valid as its shortest link
    notAfterDate: new Date(Math.min(nowMs + SERVING_LIFETIME_MS, caNotAfter)),
    ca: { cert: signer.certPem, key: signer.keyPem },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
    ],
  });
  const caBundle =
    signer.bundlePem ??
    (keepCaPem === null ? signer.certPem : `${signer.certPem.trimEnd()}\n${keepCaPem.trimEnd()}\n`);
  return { 'ca.crt': caBundle, 'ca.key': signer.keyPem, 'tls.crt': serving.cert, 'tls.key': serving.private };
}
