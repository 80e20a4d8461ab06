// allowlist-source-range (alias whitelist-source-range) and denylist-source-range: comma lists of
// IPv4/IPv6 addresses and CIDRs; a bare address is a /32 or /128. A client the denylist names, or
// one outside a non-empty allowlist, gets 403 (NGINX `deny …;` then `allow …; deny all;`). Unset,
// the ConfigMap's whitelist-source-range / denylist-source-range apply (resolved by the data plane,
// so the model keeps what the Ingress says). An entry that is not an address or CIDR fails
// ingress-nginx's validator (ValidateCIDRs), which rejects the whole Ingress.

import { parseCidr } from '../configmap/values.ts';
import type { AnnotationGroup, AnnotationReader } from './group.ts';

export interface AccessControlAnnotations {
  /** normalised `address/prefix` entries; null: not set, the ConfigMap's list applies */
  allow: string[] | null;
  deny: string[] | null;
}

/** A comma list of addresses and CIDRs as `address/prefix`, or null when an entry is invalid. */
export function parseCidrList(value: string): string[] | null {
  const out: string[] = [];
  for (const entry of value.split(',')) {
    const cidr = parseCidr(entry.trim());
    if (cidr === null) return null;
    if (!out.includes(cidr)) out.push(cidr);
  }
  return out.sort();
}

/** The first name of `names` that is set, with its parsed list; an invalid list drops the Ingress. */
export function readCidrList(read: AnnotationReader, names: readonly string[]): string[] | null {
  for (const name of names) {
    const value = read.string(name);
    if (value === undefined) continue;
    const cidrs = parseCidrList(value);
    if (cidrs === null) {
      read.invalid(name, value, 'expected a comma-separated list of IP addresses or CIDRs', 'drop');
      return null;
    }
    return cidrs;
  }
  return null;
}

export const accessControl: AnnotationGroup<AccessControlAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'allowlist-source-range',
      default: '',
      doc: 'Only these client addresses/CIDRs may use the route (others get 403); overrides the ConfigMap whitelist-source-range.',
    },
    {
      name: 'whitelist-source-range',
      default: '',
      doc: 'Alias of allowlist-source-range (allowlist-source-range wins when both are set).',
    },
    {
      name: 'denylist-source-range',
      default: '',
      doc: 'These client addresses/CIDRs get 403, even when allowlisted; overrides the ConfigMap denylist-source-range.',
    },
  ],
  defaults: { allow: null, deny: null },
  parse(read) {
    return {
      allow: readCidrList(read, ['allowlist-source-range', 'whitelist-source-range']),
      deny: readCidrList(read, ['denylist-source-range']),
    };
  },
};
