// limit-connections, limit-rpm, limit-rps, limit-burst-multiplier and limit-allowlist (alias
// limit-whitelist): ingress-nginx's rate limits per client address and replica. One zone per
// Ingress (every path of the Ingress shares it); burst = limit × multiplier; rejected at once
// (`nodelay`). The limits and the allowlist must pass ingress-nginx's validators (ValidateInt,
// ValidateCIDRs) or the Ingress is rejected; an invalid burst multiplier falls back to 5.
// limit-rate and limit-rate-after (KB/s and KB of each response body, NGINX's limit_rate and
// limit_rate_after): unset or invalid → the ConfigMap's keys of the same names.

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
  /** `limit-rate`: KB per second of a response body; null: the ConfigMap's */
  rate: number | null;
  /** `limit-rate-after`: KB of a response body sent before limit-rate applies; null: the ConfigMap's */
  rateAfter: number | null;
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

/** A whole number of KB, or null when unset or invalid (then reported: the ConfigMap's value applies). */
function kilobytes(read: AnnotationReader, name: string): number | null {
  const value = read.string(name);
  if (value === undefined) return null;
  if (GO_INT.test(value) && Number.isSafeInteger(Number(value)) && Number(value) >= 0) return Number(value);
  read.invalid(name, value, 'expected a whole number of KB', 'default');
  return null;
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
    {
      name: 'limit-rate',
      default: '0',
      doc: 'KB per second each response body is sent at (0: unlimited); only with proxy-buffering on, as in ingress-nginx.',
    },
    {
      name: 'limit-rate-after',
      default: '0',
      doc: 'KB of a response body sent at full speed before limit-rate applies.',
    },
  ],
  defaults: {
    rps: 0,
    rpm: 0,
    connections: 0,
    burstMultiplier: 5,
    allowlist: [],
    rate: null,
    rateAfter: null,
  },
  parse(read) {
    return {
      rpm: int(read, 'limit-rpm', 0, 'drop'),
      rps: int(read, 'limit-rps', 0, 'drop'),
      connections: int(read, 'limit-connections', 0, 'drop'),
      burstMultiplier: int(read, 'limit-burst-multiplier', 5, 'default'),
      allowlist: readCidrList(read, ['limit-allowlist', 'limit-whitelist']) ?? [],
      rate: kilobytes(read, 'limit-rate'),
      rateAfter: kilobytes(read, 'limit-rate-after'),
    };
  },
};
