// The authentication step of the pipeline (after the decision, before the answer): which decisions go
// through it, the check itself (auth.ts), and its verdict awaited when the check is remote.

import type { IncomingMessage } from 'node:http';
import { peerOf } from '../access/access.ts';
import { type AuthVerdict, authenticate, type RouteAuth } from '../access/auth.ts';
import type { ExternalAuthClient } from '../access/external-auth.ts';
import { dataplaneError } from '../events.ts';
import { normalizePath } from '../routing/router.ts';
import type { Runtime } from '../routing/runtime.ts';
import { generateRequestId } from '../upstream/request-id.ts';
import type { Decision } from './decide.ts';
import { recordedClientAddress } from './records.ts';

/**
 * The authentication a decision goes through first: a proxied request's route, or a route that
 * answers by itself after the access phase (the built-in default backend's 404, FastCGI's 502); never
 * the 503 of a route without endpoints (the rewrite phase, before access), redirects or errors.
 */
export function authOf(decision: Decision): RouteAuth | null {
  const action = decision.match?.value;
  if (action === undefined || action.type === 'redirect' || decision.allowlisted === true) return null;
  if (decision.kind === 'proxy') return action.auth ?? null;
  if (decision.kind === 'error' && action.type === 'status' && action.status === decision.status) {
    return action.auth ?? null;
  }
  return null;
}

/** The access phase's authentication of a routed request (auth.ts). */
export function authenticateRequest(
  req: IncomingMessage,
  decision: Decision,
  auth: RouteAuth,
  https: boolean,
  client: ExternalAuthClient,
  runtime: Runtime | null,
): AuthVerdict | Promise<AuthVerdict> {
  const context = decision.kind === 'proxy' ? decision.context : null;
  const remoteAddress =
    context?.remoteAddress ?? recordedClientAddress(runtime, req, decision) ?? peerOf(req.socket);
  const requestId = context?.requestId || decision.requestId || generateRequestId();
  return authenticate(auth, req, client, {
    req,
    uri: normalizePath(req.url ?? '/') ?? '/',
    host: decision.host,
    https,
    remoteAddress,
    requestId,
  });
}

/**
 * Runs `then` on the verdict, now or when it arrives; a failure of the check itself answers 500.
 * Later, the caller's boundary is gone: an exception in `then` goes to `failed`.
 */
export function settle(
  verdict: AuthVerdict | Promise<AuthVerdict>,
  failed: (error: unknown) => void,
  then: (verdict: AuthVerdict) => void,
): void {
  if (!(verdict instanceof Promise)) {
    then(verdict);
    return;
  }
  verdict
    .then(then, (error: unknown) => {
      dataplaneError.publish({
        message: `authentication: ${error instanceof Error ? error.message : String(error)}`,
      });
      then({ allowed: false, status: 500, headers: [], location: null });
    })
    .then(undefined, failed);
}
