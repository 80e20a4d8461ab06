// The one error the configuration readers throw: its message is fit to show the user as it is.

import type { ErrorCode } from '../errors.ts';

export class ConfigError extends Error {
  readonly code = 'ERR_INGRESS_TS_CONFIG' satisfies ErrorCode;
}
