// Why a try failed, in proxy-next-upstream's classes (error, timeout, invalid_header), and the error
// codes the proxy itself raises: what decides between another try, 502, 504 and 413.

import type { ErrorCode, ProxyErrorCode } from '../../errors.ts';

export const ERROR = 0; // connect refused/reset, upstream closed before a full head: proxy_next_upstream error
export const TIMEOUT = 1; // connect timeout, read timeout before the head, send timeout: proxy_next_upstream timeout
export const FATAL = 2; // bad request for undici, client gone: 502, never retried
export const INVALID = 3; // unparsable response head: proxy_next_upstream invalid_header, else 502
export const TOO_LARGE = 4; // the request body grew past proxy-body-size: 413, never retried
export type FailureKind = typeof ERROR | typeof TIMEOUT | typeof FATAL | typeof INVALID | typeof TOO_LARGE;

export class ProxyError extends Error {
  readonly code: ProxyErrorCode;
  constructor(code: ProxyErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

export const SEND_TIMEOUT = 'PROXY_SEND_TIMEOUT';
export const CLIENT_ABORTED = 'PROXY_CLIENT_ABORTED';
export const BODY_TOO_LARGE = 'PROXY_BODY_TOO_LARGE';
/** the try's response status is one of proxy-next-upstream's http_xxx: discarded, next try */
export const NEXT_STATUS = 'PROXY_NEXT_UPSTREAM_STATUS';

export function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // llhttp's errors without a code (a response that is not HTTP at all)
  return (err.name === 'HTTPParserError' ? 'HPE_INVALID' : 'UNKNOWN') satisfies ErrorCode;
}

export function classify(code: string): FailureKind {
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case SEND_TIMEOUT:
    case 'ETIMEDOUT':
      return TIMEOUT;
    case 'UND_ERR_HEADERS_OVERFLOW':
      return INVALID;
    case BODY_TOO_LARGE:
      return TOO_LARGE;
    case 'UND_ERR_INVALID_ARG':
    case 'UND_ERR_NOT_SUPPORTED':
    case 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'UND_ERR_ABORTED':
    case CLIENT_ABORTED:
      return FATAL;
    default:
      return code.startsWith('HPE_') ? INVALID : ERROR;
  }
}

/** An error listener for an error that is handled elsewhere (an emitter without one would throw). */
export function noop(): void {}
