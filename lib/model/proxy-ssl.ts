// The build step of proxy-ssl-secret: the Secret is looked up in the snapshot (and recorded as a
// reference, so a change to it rebuilds) and read as ingress-nginx's store reads it
// (getPemCertificate): tls.crt with tls.key is the client certificate, ca.crt (alone or with them)
// the CAs; a Secret with neither is unusable. Whatever makes it unusable (a reference that is not
// `name` or `namespace/name`, another namespace without allow-cross-namespace-resources, a missing
// Secret, a PEM that does not parse) is ingress-nginx's LocationDenied: the paths of the Ingress
// answer 503, never a connection to the backend without the TLS settings it asked for.

import { createHash } from 'node:crypto';
import type { LocationAnnotations } from './annotations/index.ts';
import type { ProxySslAnnotations, ProxySslMaterial } from './annotations/proxy-ssl.ts';
import { readCaBundle } from './client-auth.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import { type Secret, secretValue } from './k8s.ts';
import { type CertificateParseCache, readCertificate } from './tls.ts';
import type { ObjectRef } from './types.ts';

export interface ProxySslLookups {
  allowCrossNamespace: boolean;
  /** looks a Secret up and records the reference */
  secret(namespace: string, name: string): Secret | undefined;
  diagnostics: DiagnosticsCollector;
  /** the build's parsed certificates, reused across builds */
  certificates?: CertificateParseCache;
}

const present = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';

/** The material of a proxy-ssl-secret Secret, or why it is unusable. */
export function readProxySslSecret(
  secret: Secret,
  id: string,
  certificates?: CertificateParseCache,
): ProxySslMaterial | { problem: string } {
  let certPem: string | null = null;
  let keyPem: string | null = null;
  let caPem: string | null = null;
  const hasPair = present(secretValue(secret, 'tls.crt')) && present(secretValue(secret, 'tls.key'));
  const hasCa = present(secretValue(secret, 'ca.crt'));
  if (!hasPair && !hasCa) return { problem: 'it has neither tls.crt with tls.key nor ca.crt' };
  if (hasPair) {
    const pair = readCertificate(secret, id, certificates);
    if ('problem' in pair) return { problem: pair.problem };
    certPem = pair.ok.certificate.certPem;
    keyPem = pair.ok.certificate.keyPem;
  }
  if (hasCa) {
    const bundle = readCaBundle(secret);
    if ('problem' in bundle) return { problem: bundle.problem };
    caPem = bundle.pem;
  }
  const sha256 = createHash('sha256')
    .update(certPem ?? '')
    .update('\0')
    .update(keyPem ?? '')
    .update('\0')
    .update(caPem ?? '')
    .digest('hex');
  return { secret: id, certPem, keyPem, caPem, sha256 };
}

function resolve(
  value: ProxySslAnnotations,
  ingress: ObjectRef,
  lookups: ProxySslLookups,
): ProxySslAnnotations {
  const written = value.secret;
  if (written === null) return value;
  const parts = written.split('/');
  // k8s.ParseNameNS: `name` or `namespace/name`, nothing else
  if (parts.length > 2 || parts.some((part) => part === '')) {
    return {
      ...value,
      denied: `proxy-ssl-secret ${JSON.stringify(written)} is not a name or namespace/name`,
    };
  }
  const namespace = parts.length === 2 ? (parts[0] as string) : ingress.namespace;
  const name = parts.length === 2 ? (parts[1] as string) : (parts[0] as string);
  const id = `${namespace}/${name}`;
  if (namespace !== ingress.namespace && !lookups.allowCrossNamespace) {
    return {
      ...value,
      denied: `proxy-ssl-secret ${id} is in another namespace and allow-cross-namespace-resources is false`,
    };
  }
  const secret = lookups.secret(namespace, name);
  if (secret === undefined) return { ...value, denied: `proxy-ssl-secret ${id} does not exist` };
  const material = readProxySslSecret(secret, id, lookups.certificates);
  if ('problem' in material)
    return { ...value, denied: `proxy-ssl-secret ${id} is unusable: ${material.problem}` };
  return { ...value, material };
}

/**
 * The location annotations of one Ingress with their proxy-ssl-secret resolved (the same object
 * when it has none). A denial is reported on the Ingress (PROXY_SSL_UNAVAILABLE).
 */
export function resolveProxySsl(
  annotations: LocationAnnotations,
  ingress: ObjectRef,
  lookups: ProxySslLookups,
): LocationAnnotations {
  const value = annotations.proxySsl;
  if (value.secret === null) return annotations;
  const resolved = resolve(value, ingress, lookups);
  if (resolved.denied !== null) {
    lookups.diagnostics.report(
      'Ingress',
      ingress,
      'PROXY_SSL_UNAVAILABLE',
      `${resolved.denied}; the paths of this Ingress answer 503`,
    );
  } else if (resolved.verify && resolved.material?.caPem === null) {
    lookups.diagnostics.report(
      'Ingress',
      ingress,
      'PROXY_SSL_NOT_VERIFIED',
      `proxy-ssl-verify is on but proxy-ssl-secret ${resolved.material.secret} has no ca.crt: the backend's certificate is not verified (as ingress-nginx, which renders proxy_ssl_verify only with a ca.crt)`,
    );
  }
  return { ...annotations, proxySsl: resolved };
}
