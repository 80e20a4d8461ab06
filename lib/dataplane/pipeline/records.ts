// The request record (request-record.ts) of a decided request, and of one refused before routing.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { peerOf } from '../access/access.ts';
import { clientAddressOf } from '../listening/connection-settings.ts';
import { type RequestRecord, startRecord } from '../request-record.ts';
import { normalizeHost } from '../routing/router.ts';
import type { Runtime } from '../routing/runtime.ts';
import { generateRequestId } from '../upstream/request-id.ts';
import type { Decision } from './decide.ts';

/** The record of a routed request: who it belongs to, and whether the route wants it logged. */
export function recordOf(
  req: IncomingMessage,
  source: Duplex,
  decision: Decision,
  https: boolean,
  clientAddress: string | undefined,
): RequestRecord {
  const match = decision.match;
  const action = match?.value;
  return startRecord(req, source, {
    remoteAddress: clientAddress,
    host: decision.host,
    path: match === null ? '' : match.locationPath,
    route: action?.route ?? null,
    // $proxy_upstream_name is the route's own upstream even when its canary serves the request
    upstream:
      action?.type === 'proxy'
        ? action.target.upstream
        : action?.type === 'status'
          ? (action.upstream ?? '')
          : '',
    canary: decision.kind === 'proxy' ? decision.canary : '',
    requestId: decision.requestId ?? generateRequestId(),
    https,
    // requests nothing routed (not ready, malformed) are logged
    accessLog: action?.accessLog ?? true,
  });
}

/**
 * The record of a request refused before routing (client-limits.ts): its Host, but no route, and the
 * socket's peer as the client (NGINX refuses these before real_ip runs).
 */
export function refusedRecord(req: IncomingMessage, source: Duplex, https: boolean): RequestRecord {
  return startRecord(req, source, {
    host: normalizeHost(req.headers.host ?? (req.headers[':authority'] as string | undefined)),
    path: '',
    route: null,
    upstream: '',
    canary: '',
    requestId: generateRequestId(),
    https,
    accessLog: true,
    refused: true,
  });
}

/** $remote_addr for the request record: the real IP when enabled, else undefined (the socket peer). */
export function recordedClientAddress(
  runtime: Runtime | null,
  req: IncomingMessage,
  decision: Decision,
): string | undefined {
  if (decision.clientAddress !== undefined) return decision.clientAddress;
  const policy = runtime?.http;
  if (policy === undefined || policy.clientAddress === null) return undefined;
  return clientAddressOf(req, policy, peerOf(req.socket));
}
