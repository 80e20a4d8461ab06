// A host's client certificate authentication (auth-tls-*): its annotations plus the CA bundle of
// the Secret they name. ingress-nginx denies the locations of an Ingress whose auth-tls-secret cannot
// be used (missing Secret, no ca.crt, another namespace without allow-cross-namespace-resources):
// they answer 503. Here the whole host answers 503 in those cases, so a host meant to require a
// client certificate is never served without one.

import { createHash, X509Certificate } from 'node:crypto';
import type { AuthTlsAnnotations } from './annotations/auth-tls.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import { type Secret, secretValue } from './k8s.ts';
import type { ClientAuth, ObjectRef } from './types.ts';

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The PEM certificates of a ca.crt, or why it is unusable. */
export function readCaBundle(secret: Secret): { pem: string } | { problem: string } {
  const raw = secretValue(secret, 'ca.crt');
  if (raw === undefined || raw.trim() === '') return { problem: 'it has no ca.crt' };
  const blocks = raw.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) return { problem: 'ca.crt holds no PEM certificate' };
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch (error) {
      return { problem: `ca.crt has a certificate that does not parse (${(error as Error).message})` };
    }
  }
  return { pem: `${blocks.join('\n')}\n` };
}

/**
 * Resolve a host's auth-tls settings. `secretOf` looks a Secret up (and records the reference);
 * diagnostics go on `ingress`, the Ingress the settings come from.
 */
export function resolveClientAuth(
  settings: AuthTlsAnnotations,
  ingress: ObjectRef,
  hostname: string,
  allowCrossNamespace: boolean,
  secretOf: (namespace: string, name: string) => Secret | undefined,
  diagnostics: DiagnosticsCollector,
): ClientAuth | null {
  if (settings.secret === null) return null;
  const parts = settings.secret.split('/');
  const base = {
    ingress,
    verifyClient: settings.verifyClient,
    verifyDepth: settings.verifyDepth,
    passCertificate: settings.passCertificate,
    matchCN: settings.matchCN,
    errorPage: settings.errorPage,
  };
  const denied = (secret: string, code: Parameters<DiagnosticsCollector['report']>[2], why: string) => {
    diagnostics.report(
      'Ingress',
      ingress,
      code,
      `${why}; every request to host ${hostname} answers 503`,
      undefined,
      {
        host: hostname,
      },
    );
    return { ...base, secret, caPem: null, caSha256: '' };
  };
  // k8s.ParseNameNS: `name` or `namespace/name`, nothing else
  if (parts.length > 2 || parts.some((part) => part === '')) {
    return denied(
      settings.secret,
      'AUTH_TLS_SECRET_INVALID',
      `auth-tls-secret ${JSON.stringify(settings.secret)} is not a name or namespace/name`,
    );
  }
  const namespace = parts.length === 2 ? (parts[0] as string) : ingress.namespace;
  const name = parts.length === 2 ? (parts[1] as string) : (parts[0] as string);
  const id = `${namespace}/${name}`;
  if (namespace !== ingress.namespace && !allowCrossNamespace) {
    return denied(
      id,
      'AUTH_TLS_CROSS_NAMESPACE',
      `auth-tls-secret ${id} is in another namespace and the ConfigMap's allow-cross-namespace-resources is false`,
    );
  }
  const secret = secretOf(namespace, name);
  if (secret === undefined) {
    return denied(id, 'AUTH_TLS_SECRET_NOT_FOUND', `auth-tls-secret ${id} not found`);
  }
  const bundle = readCaBundle(secret);
  if ('problem' in bundle) {
    return denied(id, 'AUTH_TLS_SECRET_INVALID', `auth-tls-secret ${id} is unusable: ${bundle.problem}`);
  }
  const caSha256 = createHash('sha256').update(bundle.pem).digest('hex');
  return { ...base, secret: id, caPem: bundle.pem, caSha256 };
}
