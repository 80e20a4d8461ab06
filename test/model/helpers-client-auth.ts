// A Secret holding a CA bundle (ca.crt), as auth-tls-secret names it.
import type { Secret } from '../../lib/model/index.ts';

export function caSecret(name: string, caPem: string | null, namespace = 'default'): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name, namespace },
    data: caPem === null ? {} : { 'ca.crt': Buffer.from(caPem).toString('base64') },
  };
}
