// ConfigMap keys of the client address: which peers may name the client, in which header, and what
// X-Forwarded-For carries upstream.

import { bool, cidrList, type KeyTable } from './key-parser.ts';
import { isHeaderName } from './values.ts';

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
  // a value that lists nothing keeps the default (every peer)
  'proxy-real-ip-cidr': cidrList((config, cidrs) => {
    if (cidrs.length > 0) config.forwarding.realIpCidrs = cidrs;
  }),
};
