// ConfigMap keys of the client connections: keep-alive, how long a request head and body may take,
// how large a request head may be, how many HTTP/2 streams at once, how many connections at once, how
// long they may drain at shutdown, and how many threads serve them.

import { SIZE } from '../annotations/proxy.ts';
import { parseSize } from '../upstream-settings.ts';
import { bool, count, type KeyTable, seconds } from './key-parser.ts';
import { parseNginxTimeMs } from './values.ts';

/** A bound on `worker-processes`: far above any core count, low enough that a typo cannot start thousands of threads. */
export const MAX_WORKER_PROCESSES = 1024;

export const CLIENT_KEYS: KeyTable = {
  'keep-alive': seconds((config, value) => {
    config.client.keepAlive = value;
  }),
  'keep-alive-requests': count((config, value) => {
    config.client.keepAliveRequests = value;
  }, 1),
  'client-header-timeout': seconds((config, value) => {
    config.client.headerTimeout = value;
  }, false),
  'client-body-timeout': seconds((config, value) => {
    config.client.bodyTimeout = value;
  }, false),
  'large-client-header-buffers': (value, config) => {
    // NGINX syntax: `<number> <size>`, the size in bytes or with a k / m suffix
    const m = /^\s*(\d+)\s+(\d+)([km]?)\s*$/i.exec(value);
    const unit = m === null ? 0 : m[3]?.toLowerCase() === 'm' ? 1 << 20 : m[3] === '' ? 1 : 1024;
    const count = m === null ? 0 : Number(m[1]);
    const size = m === null ? 0 : Number(m[2]) * unit;
    if (count < 1 || size < 1024 || count * size > 1 << 20) {
      return 'expected "<number> <size>" (like "4 8k"), a size of at least 1k and at most 1m in all';
    }
    config.largeClientHeaderBuffers = { count, size };
    return null;
  },
  'client-header-buffer-size': (value, config) => {
    const size = SIZE.test(value) ? parseSize(value) : 0;
    if (size < 1 || size > 1 << 20) return 'expected a size such as 1k or 4k, at most 1m';
    config.clientHeaderBufferSize = size;
    return null;
  },
  // SETTINGS_MAX_CONCURRENT_STREAMS is a 32-bit value
  'http2-max-concurrent-streams': (value, config) => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 2 ** 32 - 1)
      return 'expected an integer from 1 to 4294967295';
    config.http2MaxConcurrentStreams = Number(value);
    return null;
  },
  'enable-underscores-in-headers': bool((config, value) => {
    config.headerNames.underscores = value;
  }),
  'ignore-invalid-headers': bool((config, value) => {
    config.headerNames.ignoreInvalid = value;
  }),
  'max-worker-connections': count((config, value) => {
    config.maxWorkerConnections = value;
  }, 0),
  'worker-shutdown-timeout': (value, config) => {
    const ms = parseNginxTimeMs(value);
    if (ms === null) return 'expected an NGINX time such as 240s, 4m or 1m30s';
    config.workerShutdownTimeoutMs = ms;
    return null;
  },
  // NGINX takes `auto` or a count; ingress-nginx passes the value through (auto → its CPU count)
  'worker-processes': (value, config) => {
    if (value === 'auto') config.workerProcesses = 'auto';
    else if (/^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= MAX_WORKER_PROCESSES)
      config.workerProcesses = Number(value);
    else return `expected "auto" or an integer from 1 to ${MAX_WORKER_PROCESSES}`;
    return null;
  },
};
