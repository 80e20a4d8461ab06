// ConfigMap keys of the access log: on or off, for the default backend too, URLs never logged,
// where it goes, and the format of its lines.

import { bool, type KeyTable } from './key-parser.ts';
import { parseLogFormat } from './log-format.ts';
import { commaList } from './values.ts';

export const ACCESS_LOG_KEYS: KeyTable = {
  'disable-access-log': bool((config, value) => {
    config.accessLog.disabled = value;
  }),
  'enable-access-log-for-default-backend': bool((config, value) => {
    config.accessLog.forDefaultBackend = value;
  }),
  'skip-access-log-urls': (value, config) => {
    config.accessLog.skipUrls = commaList(value);
    return null;
  },
  'access-log-path': (value, config) => {
    if (!value.startsWith('/')) return 'expected an absolute path';
    config.accessLog.path = value;
    return null;
  },
  'log-format-upstream': (value, config) => {
    const parsed = parseLogFormat(value);
    if ('problem' in parsed) return parsed.problem;
    config.accessLog.format = value;
    return null;
  },
  // both set: escape=none, as nginx.tmpl chooses
  'log-format-escape-json': bool((config, value) => {
    config.accessLog.escapeJson = value;
  }),
  'log-format-escape-none': bool((config, value) => {
    config.accessLog.escapeNone = value;
  }),
};
