// Which certificate each server serves: the first Ingress of the host with a tls section decides,
// as in ingress-nginx; a missing, unusable or mismatched Secret leaves the host on the default
// certificate (--default-ssl-certificate, else a generated one).

import { type BuildState, refName, type ServerDraft, splitKey } from './build-state.ts';
import type { DiagnosticsCollector } from './diagnostics.ts';
import type { CheckedIngress } from './ingress.ts';
import { objectKey } from './k8s.ts';
import { type CertificateResult, certificateCovers, tlsSecretNameFor } from './tls.ts';
import type { Certificate } from './types.ts';

/** ingress-nginx: the first Ingress of the host that has a tls section decides the certificate. */
export function applyTLS(
  draft: ServerDraft,
  ingress: CheckedIngress,
  certificateOf: (namespace: string, name: string) => CertificateResult | null,
  certificates: Map<string, Certificate>,
  diagnostics: DiagnosticsCollector,
): void {
  if (ingress.tls.length === 0) return;
  const host = draft.server.hostname;
  const { namespace } = ingress.ref;
  if (draft.tlsOwner !== null) {
    if (draft.tlsOwner === ingress) return;
    const listsHost = ingress.tls.some((entry) =>
      (entry.hosts ?? []).some((listed) => typeof listed === 'string' && listed.toLowerCase() === host),
    );
    if (listsHost) {
      diagnostics.report(
        'Ingress',
        ingress.ref,
        'TLS_CONFLICT',
        `the certificate of host ${host} is already decided by the older Ingress ${refName(draft.tlsOwner.ref)}; this tls entry is ignored`,
        undefined,
        { host },
      );
    }
    return;
  }
  draft.tlsOwner = ingress;
  const useDefault = (): void => {
    draft.server.tls = { certificate: null, ingress: ingress.ref };
  };
  const secretName = tlsSecretNameFor(host, ingress.tls, (name) => {
    const result = certificateOf(namespace, name);
    return result !== null && 'ok' in result ? result.ok : null;
  });
  if (secretName === '') {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_NO_SECRET_FOR_HOST',
      `no tls entry of this Ingress names a Secret for host ${host}; it is served with the default certificate`,
      undefined,
      { host },
    );
    useDefault();
    return;
  }
  const id = objectKey(namespace, secretName);
  const result = certificateOf(namespace, secretName);
  if (result === null) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_SECRET_NOT_FOUND',
      `TLS Secret ${id} for host ${host} not found; the host is served with the default certificate`,
      undefined,
      { host },
    );
    useDefault();
    return;
  }
  if ('problem' in result) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_SECRET_INVALID',
      `TLS Secret ${id} for host ${host} is unusable: ${result.problem}; the host is served with the default certificate`,
      undefined,
      { host },
    );
    useDefault();
    return;
  }
  if (!certificateCovers(result.ok.x509, host, true)) {
    diagnostics.report(
      'Ingress',
      ingress.ref,
      'TLS_HOST_MISMATCH',
      `the certificate in TLS Secret ${id} does not cover host ${host} (names: ${
        result.ok.certificate.dnsNames.join(', ') || 'none'
      }); the host is served with the default certificate`,
      undefined,
      { host },
    );
    useDefault();
    return;
  }
  certificates.set(id, result.ok.certificate);
  draft.server.tls = { certificate: id, ingress: ingress.ref };
}

/** The default certificate (--default-ssl-certificate). */
export function resolveDefaultCertificateFlag(state: BuildState): string | null {
  const flag = state.options.defaultSSLCertificate;
  if (flag === null) return null;
  return resolveDefaultCertificate(flag, state.lookups.certificate, state.certificates, state.diagnostics);
}

function resolveDefaultCertificate(
  flag: string,
  certificateOf: (namespace: string, name: string) => CertificateResult | null,
  certificates: Map<string, Certificate>,
  diagnostics: DiagnosticsCollector,
): string | null {
  const ref = splitKey(flag);
  const unusable = (message: string): null => {
    diagnostics.report(
      'Secret',
      ref ?? { namespace: '', name: flag },
      'DEFAULT_CERTIFICATE_UNUSABLE',
      `--default-ssl-certificate ${flag} ${message}; a generated self-signed certificate is used instead`,
    );
    return null;
  };
  if (ref === null) return unusable('is not of the form namespace/name');
  const result = certificateOf(ref.namespace, ref.name);
  if (result === null) return unusable('does not exist');
  if ('problem' in result) return unusable(`is unusable: ${result.problem}`);
  certificates.set(result.ok.certificate.id, result.ok.certificate);
  return result.ok.certificate.id;
}
