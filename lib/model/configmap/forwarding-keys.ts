// ConfigMap keys of the client address: which peers may name the client, in which header, and what
// X-Forwarded-For carries upstream.

import { bool, type KeyTable } from './key-parser.ts';
import { isHeaderName, parseCidr } from './values.ts';

export const FORWARDING_KEYS: KeyTable = {
  'use-forwarded-headers': bool((config, value) => {
    config.forwarding.useForwardedHeaders = value;
  }),
  'compute-full-forwarded-for': bool((config, value) => {
    config.forwarding.computeFullForwardedFor = value;
  }),
  'forwarded-for-header': (value, config) => {
    if (!isHeaderName(value)) return 'expected a header name';
    config.forwarding.forwardedForHeader = value.toLowerCase();
    return null;
  },
  'enable-real-ip': bool((config, value) => {
    config.forwarding.enableRealIp = value;
  }),
  'proxy-real-ip-cidr': (value, config) => {
    const cidrs: string[] = [];
    for (const entry of value.split(',')) {
      const trimmed = entry.trim();
      if (trimmed === '') continue;
      const cidr = parseCidr(trimmed);
      if (cidr === null) return `${JSON.stringify(trimmed)} is not an IPv4 or IPv6 address or CIDR`;
      cidrs.push(cidr);
    }
    if (cidrs.length > 0) config.forwarding.realIpCidrs = cidrs;
    return null;
  },
};
