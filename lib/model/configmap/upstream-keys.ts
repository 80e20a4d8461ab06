// ConfigMap keys of the requests to upstreams, for locations whose Ingress does not say: timeouts,
// retries, body size and buffering, cookie and redirect rewriting, balancing, keep-alive pools, and
// which upstream error statuses the default backend answers.

import { NEXT_UPSTREAM, SIZE } from '../annotations/proxy.ts';
import { type GlobalConfig, LOAD_BALANCE_NAMES } from './global-config.ts';
import { bool, count, type KeyParser, type KeyTable, seconds } from './key-parser.ts';
import { parseStatusList } from './values.ts';

/** A whole number (seconds or tries) into `config.proxy[field]`. */
const proxyInt =
  (
    field: 'connectTimeout' | 'sendTimeout' | 'readTimeout' | 'nextUpstreamTries' | 'nextUpstreamTimeout',
  ): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value)) return 'expected a whole number';
    config.proxy[field] = Number(value);
    return null;
  };

/** One of a few words into `config.proxy[field]`. */
const proxyOption =
  <F extends 'requestBuffering' | 'buffering' | 'httpVersion'>(
    field: F,
    options: ReadonlyArray<GlobalConfig['proxy'][F]>,
  ): KeyParser =>
  (value, config) => {
    const found = options.find((o) => o === value);
    if (found === undefined) return `expected ${options.join(' or ')}`;
    config.proxy[field] = found;
    return null;
  };

/** A rewrite (`off` or `<from> <to>`, or a redirect prefix) into `config.proxy[field]`. */
const proxyText =
  (field: 'cookieDomain' | 'cookiePath' | 'redirectFrom' | 'redirectTo'): KeyParser =>
  (value, config) => {
    if (/[\r\n]/.test(value)) return 'line breaks are not allowed';
    config.proxy[field] = value;
    return null;
  };

export const UPSTREAM_KEYS: KeyTable = {
  'proxy-connect-timeout': proxyInt('connectTimeout'),
  'proxy-send-timeout': proxyInt('sendTimeout'),
  'proxy-read-timeout': proxyInt('readTimeout'),
  'proxy-next-upstream': (value, config) => {
    if (!NEXT_UPSTREAM.test(value))
      return 'expected tokens among error timeout invalid_header http_5xx http_4xx non_idempotent off';
    config.proxy.nextUpstream = value;
    return null;
  },
  'proxy-next-upstream-tries': proxyInt('nextUpstreamTries'),
  'proxy-next-upstream-timeout': proxyInt('nextUpstreamTimeout'),
  'retry-non-idempotent': bool((config, value) => {
    config.retryNonIdempotent = value;
  }),
  'proxy-body-size': (value, config) => {
    if (!SIZE.test(value)) return 'expected a size such as 1m, 512k or 0';
    config.proxy.bodySize = value;
    return null;
  },
  'proxy-buffer-size': (value, config) => {
    if (!SIZE.test(value)) return 'expected a size such as 8k or 1m';
    config.proxy.bufferSize = value;
    return null;
  },
  'proxy-request-buffering': proxyOption('requestBuffering', ['on', 'off']),
  'proxy-buffering': proxyOption('buffering', ['on', 'off']),
  'proxy-http-version': proxyOption('httpVersion', ['1.0', '1.1']),
  'proxy-cookie-domain': proxyText('cookieDomain'),
  'proxy-cookie-path': proxyText('cookiePath'),
  'proxy-redirect-from': proxyText('redirectFrom'),
  'proxy-redirect-to': proxyText('redirectTo'),
  'service-upstream': bool((config, value) => {
    config.serviceUpstream = value;
  }),
  'load-balance': (value, config) => {
    if (!(LOAD_BALANCE_NAMES as readonly string[]).includes(value)) {
      return `expected one of ${LOAD_BALANCE_NAMES.join(', ')}`;
    }
    config.loadBalance = value;
    return null;
  },
  'upstream-keepalive-connections': count((config, value) => {
    config.upstreamKeepalive.connections = value;
  }, 1),
  'upstream-keepalive-timeout': seconds((config, value) => {
    config.upstreamKeepalive.timeout = value;
  }),
  'upstream-keepalive-requests': count((config, value) => {
    config.upstreamKeepalive.requests = value;
  }, 1),
  'custom-http-errors': (value, config) => {
    const codes = parseStatusList(value);
    if (codes === null) return 'expected a comma-separated list of status codes 400-599';
    config.customHttpErrors = codes;
    return null;
  },
};
