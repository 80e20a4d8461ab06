// The NGINX tuning annotations (NOT_APPLICABLE_ANNOTATIONS) have no effect here, but their values
// still go through ingress-nginx's validators: where its parser propagates the error it skips the
// whole Ingress, and a migrated Ingress must not start serving here when it was refused there.

import type { AnnotationReader, InvalidOutcome } from './group.ts';
import { parseGoBool } from './group.ts';
import { isGoInt, matches, NGINX_SIZE } from './validators.ts';

type Check = readonly [valid: (value: string) => boolean, expected: string, onInvalid: InvalidOutcome];

const bool = (value: string): boolean => parseGoBool(value) !== undefined;
const size = (value: string): boolean => matches(NGINX_SIZE, value, true);

const CHECKS: Readonly<Record<string, Check>> = {
  // the redirect, client-body-buffer-size and http2-push-preload parsers return the error
  'relative-redirects': [bool, 'expected "true" or "false"', 'drop'],
  'client-body-buffer-size': [size, 'expected a size such as 8k or 1m', 'drop'],
  'http2-push-preload': [bool, 'expected "true" or "false"', 'drop'],
  // the proxy, log and auth-url parsers fall back to their defaults
  'proxy-busy-buffers-size': [size, 'expected a size such as 8k or 1m', 'default'],
  'proxy-max-temp-file-size': [size, 'expected a size such as 8k or 1m', 'default'],
  'proxy-buffers-number': [isGoInt, 'expected an integer', 'default'],
  'enable-rewrite-log': [bool, 'expected "true" or "false"', 'default'],
  'auth-keepalive': [isGoInt, 'expected an integer', 'default'],
  'auth-keepalive-requests': [isGoInt, 'expected an integer', 'default'],
  'auth-keepalive-timeout': [isGoInt, 'expected an integer', 'default'],
  'auth-keepalive-share-vars': [bool, 'expected "true" or "false"', 'default'],
};

const ENTRIES = Object.entries(CHECKS);

/** Reports invalid values of the annotations that have no effect; a `drop` one skips the Ingress. */
export function checkNotApplicable(read: AnnotationReader): void {
  for (const [name, [valid, expected, onInvalid]] of ENTRIES) {
    const value = read.string(name);
    if (value !== undefined && !valid(value)) read.invalid(name, value, expected, onInvalid);
  }
}
