// ConfigMap keys of the TCP and UDP services (--tcp-services-configmap, --udp-services-configmap):
// the proxy_* directives ingress-nginx writes into every server of its stream block.

import type { StreamConfig } from './global-config.ts';
import { bool, type KeyParser, type KeyTable } from './key-parser.ts';
import { parseNginxTimeMs } from './values.ts';

const time =
  (field: 'timeoutMs' | 'nextUpstreamTimeoutMs'): KeyParser =>
  (value, config) => {
    const ms = parseNginxTimeMs(value);
    if (ms === null) return 'expected an NGINX time such as 600s, 10m or 500ms';
    config.stream[field] = ms;
    return null;
  };

const whole =
  (field: keyof Pick<StreamConfig, 'nextUpstreamTries' | 'responses'>): KeyParser =>
  (value, config) => {
    if (!/^\d+$/.test(value)) return 'expected a whole number';
    config.stream[field] = Number(value);
    return null;
  };

export const STREAM_KEYS: KeyTable = {
  'proxy-stream-timeout': time('timeoutMs'),
  'proxy-stream-next-upstream': bool((config, value) => {
    config.stream.nextUpstream = value;
  }),
  'proxy-stream-next-upstream-timeout': time('nextUpstreamTimeoutMs'),
  'proxy-stream-next-upstream-tries': whole('nextUpstreamTries'),
  'proxy-stream-responses': whole('responses'),
};
