// What the data plane reports leaves it through node:diagnostics_channel, never through imports of
// logging or metrics code (DESIGN.md: the data plane could run in a worker thread).

import { channel } from 'node:diagnostics_channel';

/** A problem while serving, e.g. an upstream error: `{ message, upstream?, peer?, code? }`. */
export const dataplaneError = channel('ingress-ts:dataplane:error');
/** A runtime swap: `{ kind: 'full' | 'endpoints', hash }`. */
export const runtimeSwapped = channel('ingress-ts:dataplane:swap');
/**
 * A request (or WebSocket session) is over: one `RequestRecord` (request-record.ts). Published only
 * while somebody subscribes (metrics, the access log).
 */
export const requestLogged = channel('ingress-ts:dataplane:request');
