// An HTTPS listener's certificateRefs: core Secrets only, in the Gateway's namespace or in one whose
// ReferenceGrant trusts Gateways of this namespace; the Secret must hold a certificate and its key.
// The Secret is read through the build's lookups, so it is recorded as a reference and a change to it
// rebuilds. A reference that is not permitted is never looked up: whether the Secret exists is
// not ours to tell.

import type { BuildState } from '../build-state.ts';
import { type Check, failed, PASSED } from './conditions.ts';
import type { GrantIndex } from './grants.ts';
import type { Listener, SecretObjectReference } from './k8s.ts';
import { text } from './read.ts';

export interface CertificateCheck {
  check: Check;
  /** `namespace/name` of the Secret served (the first certificateRef), when every ref is usable */
  secret: string | null;
}

export function checkCertificateRefs(
  state: BuildState,
  grants: GrantIndex,
  gatewayNamespace: string,
  tls: Listener['tls'],
): CertificateCheck {
  const refs: unknown = tls?.certificateRefs;
  if (!Array.isArray(refs) || refs.length === 0) {
    return {
      check: failed('InvalidCertificateRef', 'an HTTPS listener needs a certificateRef (a TLS Secret)'),
      secret: null,
    };
  }
  let secret: string | null = null;
  for (const ref of refs as Array<SecretObjectReference | null>) {
    const outcome = checkOne(state, grants, gatewayNamespace, ref ?? {});
    if (typeof outcome !== 'string') return { check: outcome, secret: null };
    secret ??= outcome;
  }
  return { check: PASSED, secret };
}

/** The Secret's `namespace/name`, or the failed check. */
function checkOne(
  state: BuildState,
  grants: GrantIndex,
  gatewayNamespace: string,
  ref: SecretObjectReference,
): string | Check {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Secret';
  const name = ref.name;
  if (group !== '' || kind !== 'Secret') {
    return failed(
      'InvalidCertificateRef',
      `certificateRef ${group === '' ? 'core' : text(group)}/${text(kind)} ${text(name)}: ingress-ts reads certificates from core Secrets only`,
    );
  }
  if (typeof name !== 'string' || name === '') {
    return failed('InvalidCertificateRef', 'a certificateRef has no name');
  }
  const { namespace, id, permitted } = grants.coreRef(
    'Gateway',
    gatewayNamespace,
    'Secret',
    ref.namespace,
    name,
  );
  if (!permitted) {
    return failed(
      'RefNotPermitted',
      `Secret ${id} is in another namespace and no ReferenceGrant there lets Gateways of ${gatewayNamespace} refer to it`,
    );
  }
  const certificate = state.lookups.certificate(namespace, name);
  if (certificate === null) return failed('InvalidCertificateRef', `Secret ${id} does not exist`);
  if ('problem' in certificate)
    return failed('InvalidCertificateRef', `Secret ${id}: ${certificate.problem}`);
  return id;
}
