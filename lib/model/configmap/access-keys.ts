// ConfigMap keys of access control and limits: the address lists routes without their own use,
// block-cidrs, block-user-agents and block-referers for every request, the statuses of requests
// over a limit, response rate limits.

import type { GlobalConfig } from './global-config.ts';
import { headerBlockList } from './header-blocks.ts';
import { cidrList, count, type KeyParser, type KeyTable } from './key-parser.ts';

/** limit_req_status / limit_conn_status: NGINX accepts 400-599. */
const limitStatus =
  (set: (config: GlobalConfig, status: number) => void): KeyParser =>
  (value, config) => {
    if (!/^[45]\d\d$/.test(value)) return 'expected a status code from 400 to 599';
    set(config, Number(value));
    return null;
  };

export const ACCESS_KEYS: KeyTable = {
  'whitelist-source-range': cidrList((config, cidrs) => {
    config.access.allowlist = cidrs;
  }),
  'denylist-source-range': cidrList((config, cidrs) => {
    config.access.denylist = cidrs;
  }),
  'block-cidrs': cidrList((config, cidrs) => {
    config.access.blockCidrs = cidrs;
  }),
  'block-user-agents': headerBlockList('blockUserAgents'),
  'block-referers': headerBlockList('blockReferers'),
  'limit-req-status-code': limitStatus((config, status) => {
    config.access.limitReqStatus = status;
  }),
  'limit-conn-status-code': limitStatus((config, status) => {
    config.access.limitConnStatus = status;
  }),
  'limit-rate': count((config, value) => {
    config.access.limitRate = value;
  }, 0),
  'limit-rate-after': count((config, value) => {
    config.access.limitRateAfter = value;
  }, 0),
};
