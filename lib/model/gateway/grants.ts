// ReferenceGrant: a grant lives in the namespace of the object referred to and trusts references
// from (group, kind, namespace) to (group, kind, name?) there. Every field must match exactly; a
// `to` without a name trusts every object of that group and kind. Gateway → Secret
// (certificateRefs) and HTTPRoute → Service (backendRefs, mirrors) go through here.

import { objectKey } from '../k8s.ts';
import { GATEWAY_GROUP, type ReferenceGrant } from './k8s.ts';

export interface ReferenceFrom {
  group: string;
  kind: string;
  namespace: string;
}

export interface ReferenceTo {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export class GrantIndex {
  /** namespace → the grants in it */
  readonly #byNamespace = new Map<string, ReferenceGrant[]>();

  constructor(grants: readonly ReferenceGrant[] = []) {
    for (const grant of grants) {
      const namespace = grant?.metadata?.namespace;
      if (typeof namespace !== 'string') continue;
      const list = this.#byNamespace.get(namespace);
      if (list === undefined) this.#byNamespace.set(namespace, [grant]);
      else list.push(grant);
    }
  }

  /**
   * A core object (`toKind`: Secret, Service) a Gateway API object refers to: its namespace (the
   * reference's, else the referrer's), `namespace/name`, and whether the reference is allowed.
   */
  coreRef(
    fromKind: 'Gateway' | 'HTTPRoute',
    fromNamespace: string,
    toKind: 'Secret' | 'Service',
    refNamespace: unknown,
    name: string,
  ): { namespace: string; id: string; permitted: boolean } {
    const namespace = typeof refNamespace === 'string' && refNamespace !== '' ? refNamespace : fromNamespace;
    const permitted = this.permits(
      { group: GATEWAY_GROUP, kind: fromKind, namespace: fromNamespace },
      { group: '', kind: toKind, namespace, name },
    );
    return { namespace, id: objectKey(namespace, name), permitted };
  }

  /** Whether the reference is allowed: same namespace, or a grant in the target's namespace trusts it. */
  permits(from: ReferenceFrom, to: ReferenceTo): boolean {
    if (from.namespace === to.namespace) return true;
    for (const grant of this.#byNamespace.get(to.namespace) ?? []) {
      if (grantPermits(grant, from, to)) return true;
    }
    return false;
  }
}

const listOf = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

function grantPermits(grant: ReferenceGrant, from: ReferenceFrom, to: ReferenceTo): boolean {
  const trusted = listOf<{ group?: string; kind?: string; namespace?: string } | null>(grant.spec?.from).some(
    (entry) =>
      entry !== null &&
      (entry.group ?? '') === from.group &&
      entry.kind === from.kind &&
      entry.namespace === from.namespace,
  );
  if (!trusted) return false;
  return listOf<{ group?: string; kind?: string; name?: string } | null>(grant.spec?.to).some(
    (entry) =>
      entry !== null &&
      (entry.group ?? '') === to.group &&
      entry.kind === to.kind &&
      (entry.name === undefined || entry.name === '' || entry.name === to.name),
  );
}
