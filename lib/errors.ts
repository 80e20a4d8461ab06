// ingress-ts's own error codes: the `code` of every error ingress-ts raises itself, each defined once
// with where it shows and what it means. Code that raises one names it through `ErrorCode` (or a
// family of it), so tsc rejects a code that is not here. docs/diagnostics.md lists them
// ("Runtime error codes"); test/architecture/error-codes.test.ts fails when one is missing there, and
// when lib/ holds a code-shaped string that is neither ours nor a known foreign code (Node's,
// undici's, OpenSSL's), which stay as their owners spell them.
//
// The codes of the build's findings sit beside this table, in lib/model/diagnostics.ts
// (DIAGNOSTIC_CODES), instead of being re-exported from here: the model imports nothing outside
// lib/model/, so their table has to live in it, and a re-export would make this module depend on the
// model. As a leaf it stays free to import from anywhere (the command line before anything else is
// loaded, a data plane in a worker thread). The two tables also hold different facts: a diagnostic has
// a severity and names an object to fix; a runtime error has a place where it shows. The test reads
// both.

/** Where a code reaches a person. */
export type ErrorSurface =
  /** the `code` field of the controller log's `data plane` warning (the dataplaneError channel) */
  | 'data-plane log'
  /** the command line: the message on stderr and exit status 2; the `code` of what parseFlags throws */
  | 'command line'
  /** never shown: it steers the proxy, or ends a mirror copy that is already counted */
  | 'internal';

/** Every code with where it shows and a one-line meaning. */
export const ERROR_CODES = {
  PROXY_SEND_TIMEOUT: [
    'data-plane log',
    'The upstream accepted none of the request body for proxy-send-timeout; the try counts as a timeout (proxy-next-upstream timeout, else 504).',
  ],
  PROXY_CLIENT_ABORTED: [
    'data-plane log',
    'The upstream request was stopped because its client is gone, its body timed out (408) or the error backend answers instead; never retried.',
  ],
  PROXY_BODY_TOO_LARGE: [
    'data-plane log',
    'A streamed (chunked) request body grew past proxy-body-size; the client gets 413 (or, once answered, a cut connection); never retried.',
  ],
  PROXY_NEXT_UPSTREAM_STATUS: [
    'internal',
    "The try's response status is one of proxy-next-upstream's http_xxx; its answer is discarded and the next try starts.",
  ],
  HPE_INVALID: [
    'data-plane log',
    "The upstream's response is not HTTP and undici's parser gave no code; named in llhttp's HPE_ family so it counts as an invalid header (proxy-next-upstream invalid_header, else 502).",
  ],
  UNKNOWN: [
    'data-plane log',
    'An upstream error without a code of its own; it counts as an error (proxy-next-upstream error, else 502).',
  ],
  MIRROR_TIMEOUT: [
    'data-plane log',
    'A mirror copy had no complete answer within its timeout; counted as failed.',
  ],
  MIRROR_OVERLOADED: [
    'data-plane log',
    'Too many mirror copies were in flight; this copy was not sent and is counted as dropped.',
  ],
  MIRROR_INVALID_URL: [
    'data-plane log',
    'The mirror-target, once its variables are filled in, is not an http(s) URL; counted as failed.',
  ],
  MIRROR_BACKLOG: [
    'data-plane log',
    "The mirror fell too far behind the streamed request body; the copy is abandoned, counted as dropped, and the client's request goes on.",
  ],
  MIRROR_BODY_INCOMPLETE: [
    'data-plane log',
    "The client's request body did not reach its end (the client went away, or the request failed, e.g. 413); the copy is counted as dropped.",
  ],
  MIRROR_ABANDONED: [
    'internal',
    'The undici request of a mirror copy that already ended (timed out, abandoned) is stopped as it starts.',
  ],
  DATAPLANE_THREAD_STOPPED: [
    'data-plane log',
    'A data-plane worker thread stopped unexpectedly (an uncaught exception, an exit); it is replaced with the current model while the others serve, and counted in ingress_ts_dataplane_thread_restarts_total.',
  ],
  DATAPLANE_THREAD_START_FAILED: [
    'data-plane log',
    'A replacement data-plane worker thread could not take the current model or the shared ports; it serves nothing until it stops and is replaced in turn.',
  ],
  DATAPLANE_THREADS_DIFFER: [
    'data-plane log',
    'The data-plane worker threads acknowledged one model with different swap kinds (one swapped in full, another only its endpoints); each serves the model all the same.',
  ],
  DATAPLANE_DELTA_BASE_MISMATCH: [
    'internal',
    'A data-plane thread was sent the changes since a model it does not serve; the pool sends it the whole model instead.',
  ],
  DATAPLANE_APPLY_ABORTED: [
    'internal',
    "Another data-plane thread failed to compile the model, so this thread drops the one it prepared and serves the previous model on; apply rejects with the failing thread's error.",
  ],
  STREAM_LISTEN_FAILED: [
    'data-plane log',
    'A TCP or UDP service port could not be opened (in use, or below 1024 without the capability); the other ports serve, and the next change that keeps the entry tries again.',
  ],
  STREAM_PROXY_HEADER_INVALID: [
    'data-plane log',
    'A client of a TCP service port with the first PROXY flag sent no valid PROXY protocol header in time; its connection is closed without being relayed.',
  ],
  STREAM_UPSTREAM_UNREACHABLE: [
    'data-plane log',
    'No endpoint of a TCP service accepted the connection within proxy-stream-next-upstream-tries and -timeout; the client connection is closed.',
  ],
  ERR_INGRESS_TS_CONFIG: [
    'command line',
    'A flag is unknown, lacks a value, has an invalid one or contradicts another; ingress-ts does not start.',
  ],
} as const satisfies Record<string, readonly [ErrorSurface, string]>;

export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes of the proxy's own upstream failures. */
export type ProxyErrorCode = Extract<ErrorCode, `PROXY_${string}`>;
/** The codes of failed or dropped mirror copies. */
export type MirrorErrorCode = Extract<ErrorCode, `MIRROR_${string}`>;
