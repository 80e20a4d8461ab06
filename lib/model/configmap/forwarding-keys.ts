// ConfigMap keys of the client address: which peers may name the client, in which header (or in a
// PROXY protocol header), and what X-Forwarded-For carries upstream.

import { bool, cidrList, type KeyTable } from './key-parser.ts';
import { isHeaderName, parseGoDurationMs } from './values.ts';

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
  'use-proxy-protocol': bool((config, value) => {
    config.forwarding.useProxyProtocol = value;
  }),
  // ingress-nginx reads it with Go's time.ParseDuration and keeps 5s when that fails; a connection
  // needs a positive time to send its header, so 0 is refused too
  'proxy-protocol-header-timeout': (value, config) => {
    const ms = parseGoDurationMs(value);
    if (ms === null || ms < 1) return 'expected a Go duration of at least 1ms such as 5s';
    config.forwarding.proxyProtocolHeaderTimeoutMs = Math.round(ms);
    return null;
  },
};
