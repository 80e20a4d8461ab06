// limit-connections, limit-rpm, limit-rps, limit-burst-multiplier and limit-allowlist (alias
// limit-whitelist): ingress-nginx's rate limits per client address and replica. One zone per
// Ingress (every path of the Ingress shares it); burst = limit × multiplier; rejected at once
// (`nodelay`). The limits and the allowlist must pass ingress-nginx's validators (ValidateInt,
// ValidateCIDRs) or the Ingress is rejected; an invalid burst multiplier falls back to 5.

import { readCidrList } from './access-control.ts';
import type { AnnotationGroup, AnnotationReader } from './group.ts';

export interface RateLimitAnnotations {
  /** requests per second per address; 0: off */
  rps: number;
  /** requests per minute per address; 0: off */
  rpm: number;
  /** requests in flight per address; 0: off */
  connections: number;
  burstMultiplier: number;
  /** addresses/CIDRs exempt from every limit, as `address/prefix` */
  allowlist: string[];
}

/** Go's strconv.Atoi: an optional sign and decimal digits. */
const GO_INT = /^[+-]?\d+$/;

function int(read: AnnotationReader, name: string, fallback: number, onInvalid: 'drop' | 'default'): number {
  const value = read.string(name);
  if (value === undefined) return fallback;
  if (!GO_INT.test(value) || !Number.isSafeInteger(Number(value))) {
    read.invalid(name, value, 'expected an integer', onInvalid);
    return fallback;
  }
  return Number(value);
}

export const rateLimit: AnnotationGroup<RateLimitAnnotations> = {
  scope: 'location',
  annotations: [
    {
      name: 'limit-rps',
      default: '0',
      doc: 'Requests per second per client address (burst = rps × multiplier).',
    },
    {
      name: 'limit-rpm',
      default: '0',
      doc: 'Requests per minute per client address (burst = rpm × multiplier).',
    },
    { name: 'limit-connections', default: '0', doc: 'Requests in flight per client address.' },
    {
      name: 'limit-burst-multiplier',
      default: '5',
      doc: 'Burst of limit-rps and limit-rpm, as a multiple of the rate.',
    },
    { name: 'limit-allowlist', default: '', doc: 'Client addresses/CIDRs exempt from the rate limits.' },
    {
      name: 'limit-whitelist',
      default: '',
      doc: 'Alias of limit-allowlist (limit-allowlist wins when both are set).',
    },
  ],
  defaults: { rps: 0, rpm: 0, connections: 0, burstMultiplier: 5, allowlist: [] },
  parse(read) {
    return {
      rpm: int(read, 'limit-rpm', 0, 'drop'),
      rps: int(read, 'limit-rps', 0, 'drop'),
      connections: int(read, 'limit-connections', 0, 'drop'),
      burstMultiplier: int(read, 'limit-burst-multiplier', 5, 'default'),
      allowlist: readCidrList(read, ['limit-allowlist', 'limit-whitelist']) ?? [],
    };
  },
};
