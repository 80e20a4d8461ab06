// The request pipeline: what the listeners hand over (requests, upgrades, CONNECTs, client errors)
// goes through the same phases in the same order: refused before routing (client limits), the
// target in origin form, the decision (decide.ts), the request record, authentication, then the
// answer or the proxy (respond.ts). Each request has an error boundary; the requests in flight are
// tracked so a drain knows when they are done.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AuthVerdict, RouteAuth } from '../access/auth.ts';
import { sendSocketAuthDenial } from '../access/auth.ts';
import type { ExternalAuthClient } from '../access/external-auth.ts';
import { dataplaneError, type RequestFailure, requestLogged, requestRefused } from '../events.ts';
import {
  answerClientError,
  clientErrorAnswer,
  connectRejectedStatus,
  rejectedStatus,
  upgradeRejectedStatus,
} from '../listening/client-limits.ts';
import { countRequest } from '../listening/connection-settings.ts';
import { dropIgnoredHeaders } from '../listening/header-names.ts';
import { type LinkSlot, LiveMap, type Slotted } from '../live-set.ts';
import {
  byteSourceOf,
  finishOnClose,
  finishResponse,
  type RequestRecord,
  responseHeadLength,
  socketBytes,
  unparsedRecord,
} from '../request-record.ts';
import { answeredStatus, sendErrorPage, sendSocketErrorPage } from '../responses/error-pages.ts';
import { responsePolicy } from '../responses/route-headers.ts';
import type { Runtime } from '../routing/runtime.ts';
import type { RequestSpan, Tracing } from '../tracing/tracing.ts';
import { generateRequestId } from '../upstream/request-id.ts';
import { setOwnResponseHeaders } from '../upstream/response-headers.ts';
import type { UpstreamProxy } from '../upstream/upstream-proxy.ts';
import { authenticateRequest, authOf, settle } from './auth-step.ts';
import { type Arrival, type Decision, decide } from './decide.ts';
import { failRequest, failSocket, publishFailure } from './failures.ts';
import { toOriginForm } from './origin-form.ts';
import { nextPipelined, type Waiting, waitsInPipeline } from './pipelining.ts';
import { recordedClientAddress, recordOf, refusedRecord } from './records.ts';
import { ownHeadLines, respond, respondUpgrade, routeResponseOf, sendRedirect } from './respond.ts';
import { endTrace, traceRequest } from './tracing-step.ts';

/** A response's link in its pipeline's requests in flight (live-set.ts: not a Map). */
const IN_FLIGHT = Symbol('response in flight');
const IN_FLIGHT_SLOT: LinkSlot<ServerResponse> = {
  name: 'response in flight',
  get: (res) => (res as unknown as Slotted)[IN_FLIGHT],
  set: (res, link) => {
    (res as unknown as Slotted)[IN_FLIGHT] = link;
  },
};

/** What authentication answers when it says no. */
type AuthDenial = Extract<AuthVerdict, { allowed: false }>;

/** Who else is told when a response closes: the exchange proxying it (web-exchange.ts). */
export interface ResponseWatcher {
  responseClosed(): void;
  /** the upstream peer of the last try ('' before any), for the request's span */
  readonly peerKey?: string;
}

/**
 * A request whose response has not closed yet: its record and what its bytes are counted on, from
 * its start (request-record.ts), when a record is kept; the exchange proxying it, once there is one.
 * The response's one 'close' listener reads both, so an exchange adds no listener of its own.
 */
class InFlight {
  record: RequestRecord | null = null;
  source: Duplex | null = null;
  watcher: ResponseWatcher | null = null;
  /** the request's OpenTelemetry span, on a traced route */
  span: RequestSpan | null = null;
}

export interface RequestPipelineDeps {
  /** the runtime requests are served from now (read once per request and phase, never kept) */
  runtime(): Runtime | null;
  proxy: UpstreamProxy;
  /** auth-url / global-auth-url requests */
  authClient: ExternalAuthClient;
  /** requests and upgrade requests received, counted here */
  counters: { requests: number };
  /** while draining: idle connections closed (HTTP/1.1) or told GOAWAY (HTTP/2) */
  closeIdle(): void;
  /** the canary weight draw */
  random: () => number;
  /** ConfigMap large-client-header-buffers: how a too-large head is answered */
  headerBufferSize(): number;
  /** OpenTelemetry: the spans of requests on traced routes */
  tracing: Tracing;
}

export class RequestPipeline {
  readonly #deps: RequestPipelineDeps;
  /** where requests arrive: the HTTP listener (its port set once it listens) and the HTTPS one */
  readonly http: Arrival;
  readonly https: Arrival;
  /** requests (not WebSocket tunnels) whose response has not closed yet, with the request's record
   * when one is kept (published when the response closes) */
  readonly #inFlight = new LiveMap<ServerResponse, InFlight>(IN_FLIGHT_SLOT);
  /** a drain has begun: responses say Connection: close, connections are closed as they go idle */
  #draining = false;
  #drained: () => void = () => {};

  constructor(deps: RequestPipelineDeps) {
    this.#deps = deps;
    const random = deps.random;
    this.http = { https: false, port: 0, random };
    this.https = { https: true, port: 443, random };
  }

  /** The upgrade, CONNECT and client-error events of a listener, routed here. */
  listenTo(server: Server, arrival: Arrival): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const before = socketBytes(socket);
      try {
        this.#upgrade(req, socket, head, arrival);
      } catch (error) {
        failSocket(error, 'upgrade', req, socket, socketBytes(socket) === before);
      }
    });
    // without a listener Node closes an HTTP/1 CONNECT's connection with no answer at all
    server.on('connect', (req: IncomingMessage, socket: Duplex | ServerResponse, head?: Buffer) => {
      try {
        this.#connect(req, socket, head, arrival.https);
      } catch (error) {
        if (head === undefined) this.failed(error, 'request', req, socket as ServerResponse);
        else failSocket(error, 'connection', req, socket as Duplex, true);
      }
    });
    server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
      try {
        const status = clientErrorAnswer(error, socket, this.#deps.headerBufferSize());
        if (status !== 0 && requestRefused.hasSubscribers) {
          const record = unparsedRecord(socket, error.rawPacket, arrival.https, generateRequestId());
          finishOnClose(record, socket, socket, () => answeredStatus(status), requestRefused);
        }
        answerClientError(socket, status);
      } catch (failure) {
        failSocket(failure, 'connection', null, socket, false);
      }
    });
  }

  /**
   * The error boundary of a request: an exception while serving it is contained to it (failed).
   * Its asynchronous continuations have their own (settle); the response's close listener too.
   */
  handle(req: IncomingMessage, res: ServerResponse, arrival: Arrival): void {
    try {
      this.#deps.counters.requests++;
      const entry = new InFlight();
      this.#inFlight.set(res, entry);
      res.on('close', this.#onResponseClose);
      if (waitsInPipeline(req, res, arrival)) return;
      this.#serve(req, res, arrival, entry);
    } catch (error) {
      this.failed(error, 'request', req, res);
    }
  }

  /** An unexpected exception while serving `req` (failures.ts), with the request id of its record. */
  failed(error: unknown, where: RequestFailure['where'], req: IncomingMessage, res: ServerResponse): void {
    failRequest(error, where, req, res, this.#inFlight.get(res)?.record?.requestId);
  }

  /**
   * `watcher` hears when `res` closes, from the listener every response has already; false when
   * `res` is not one of this pipeline's responses in flight (the caller then listens itself).
   */
  watch(res: ServerResponse, watcher: ResponseWatcher): boolean {
    const entry = this.#inFlight.get(res);
    if (entry === undefined) return false;
    entry.watcher = watcher;
    return true;
  }

  /**
   * Graceful stop of the requests: responses not begun yet say Connection: close, connections close
   * as they go idle. Resolves once no request is in flight.
   */
  drain(): Promise<void> {
    const drained = new Promise<void>((resolve) => {
      this.#drained = resolve;
    });
    this.#draining = true;
    for (const res of this.#inFlight.keys()) if (!res.headersSent) res.shouldKeepAlive = false;
    this.#deps.closeIdle();
    if (this.#inFlight.size === 0) this.#drained();
    return drained;
  }

  /** The phases of a request, in order. */
  #serve(req: IncomingMessage, res: ServerResponse, arrival: Arrival, entry: InFlight): void {
    if (this.#draining) res.shouldKeepAlive = false;
    const runtime = this.#deps.runtime();
    if (runtime !== null) {
      if (this.#refused(req, res, runtime, arrival.https)) return;
      const { underscores, ignoreInvalid } = runtime.model.config.headerNames;
      dropIgnoredHeaders(req, underscores, ignoreInvalid);
    }
    if (req.url !== undefined && req.url.charCodeAt(0) !== 47 /* / */) toOriginForm(req);
    const decision = decide(runtime, arrival, req);
    let record: RequestRecord | null = null;
    if (requestLogged.hasSubscribers) {
      // published when the response closes (#requestClosed)
      const source = byteSourceOf(req);
      record = recordOf(req, source, decision, arrival.https, recordedClientAddress(runtime, req, decision));
      entry.record = record;
      entry.source = source;
    }
    if (decision.kind === 'proxy' && decision.tracing != null)
      entry.span = traceRequest(this.#deps.tracing, decision, decision.tracing, req, arrival.https, record);
    const auth = authOf(decision);
    if (auth === null) respond(req, res, decision, record, runtime, this.#deps.proxy);
    else this.#authenticated(req, res, decision, auth, arrival.https, record, runtime);
  }

  /**
   * Too long a request line or header, or a body whose framing cannot be trusted: refused before
   * routing, and the connection closed after the answer. Counts the request on its connection.
   */
  #refused(req: IncomingMessage, res: ServerResponse, runtime: Runtime, https: boolean): boolean {
    countRequest(req, res, runtime.model.config);
    const rejected = rejectedStatus(req, runtime.model.config);
    if (rejected === 0) return false;
    res.shouldKeepAlive = false;
    if (requestRefused.hasSubscribers) {
      const source = byteSourceOf(req);
      finishOnClose(
        refusedRecord(req, source, https),
        res,
        source,
        () => answeredStatus(rejected),
        requestRefused,
      );
    }
    sendErrorPage(res, rejected);
    return true;
  }

  /**
   * The decision carried out once authentication allows it, else the denial answered, both with the
   * runtime that routed the request, also when a swap landed while the check ran.
   */
  #authenticated(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Decision,
    auth: RouteAuth,
    https: boolean,
    record: RequestRecord | null,
    runtime: Runtime | null,
  ): void {
    const { authClient, proxy } = this.#deps;
    settle(
      authenticateRequest(req, decision, auth, https, authClient, runtime),
      (error) => this.failed(error, 'auth', req, res),
      (verdict) => {
        // the client left while the check ran: nothing to answer (an exchange started now would
        // find no 'close' to stop it, and hold its upstream request open), the slot given back
        if (!this.#inFlight.has(res)) {
          if (decision.kind === 'proxy') decision.release?.();
          return;
        }
        if (verdict.allowed) {
          if (decision.kind === 'proxy') decision.context.policy = verdict.policy;
          respond(req, res, decision, record, runtime, proxy);
          return;
        }
        this.#denied(req, res, decision, verdict, runtime);
      },
    );
  }

  /** Authentication said no: its status (or redirect), with the route's response headers. */
  #denied(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Decision,
    verdict: AuthDenial,
    runtime: Runtime | null,
  ): void {
    // the limit-connections slot taken in the access phase is given back with the answer
    if (decision.kind === 'proxy' && decision.release) res.once('close', decision.release);
    if (runtime !== null) {
      setOwnResponseHeaders(res, responsePolicy(req, routeResponseOf(decision), runtime.http));
    }
    for (const [name, value] of verdict.headers) res.setHeader(name, value);
    if (verdict.location !== null) sendRedirect(req, res, verdict.status, verdict.location);
    else sendErrorPage(res, verdict.status);
  }

  /**
   * The one listener of every response (no closure per request): `this` is the response. The
   * pipeline's bookkeeping first, then the exchange, each with its own boundary.
   */
  readonly #onResponseClose = ((pipeline: RequestPipeline) =>
    function (this: ServerResponse): void {
      const entry = pipeline.#inFlight.get(this);
      try {
        pipeline.#requestClosed(this, entry);
      } catch (error) {
        pipeline.#inFlight.delete(this);
        publishFailure(error, 'close', this.req);
      }
      const watcher = entry?.watcher;
      if (watcher == null) return;
      try {
        watcher.responseClosed();
      } catch (error) {
        publishFailure(error, 'close', this.req);
      }
    })(this);

  /** A request's response closed (sent or aborted): while draining, its connection may now be idle. */
  #requestClosed(res: ServerResponse, entry: InFlight | undefined): void {
    this.#inFlight.delete(res);
    if (entry !== undefined && entry.record !== null && entry.source !== null) {
      // the source kept from the start: `res.req.socket` is null once the connection was detached
      finishResponse(entry.record, entry.source, res.headersSent, res.statusCode, responseHeadLength(res));
    }
    if (entry?.span != null)
      endTrace(entry.span, res.headersSent ? res.statusCode : 499, entry.watcher?.peerKey ?? '');
    nextPipelined(res, this.#servePipelined, this.#dropPipelined);
    if (!this.#draining) return;
    // the connection goes idle once the response is detached from it (after this event)
    setImmediate(() => this.#deps.closeIdle());
    if (this.#inFlight.size === 0) this.#drained();
  }

  /** A request that waited on a connection that ended: never answered, it counts as closed. */
  readonly #dropPipelined = (res: ServerResponse): void => this.#requestClosed(res, this.#inFlight.get(res));

  /** The next request of a pipelined connection, with its own boundary: this runs in the close
   * listener of the response before it. */
  readonly #servePipelined = (next: Waiting): void => {
    try {
      // in flight since it arrived
      const entry = this.#inFlight.get(next.res) ?? new InFlight();
      this.#serve(next.req, next.res, next.arrival, entry);
    } catch (error) {
      this.failed(error, 'request', next.req, next.res);
    }
  };

  /**
   * A CONNECT: ingress-ts is no forward proxy. NGINX answers 405 (400 for an authority-form target),
   * logged as a refusal, and the connection is closed after it (the bytes after the head are not read
   * as another request). On HTTP/2 the compatibility API hands over a request and its response.
   */
  #connect(
    req: IncomingMessage,
    socket: Duplex | ServerResponse,
    head: Buffer | undefined,
    https: boolean,
  ): void {
    this.#deps.counters.requests++;
    if (head === undefined) {
      const res = socket as ServerResponse;
      if (requestRefused.hasSubscribers) {
        const source = byteSourceOf(req);
        finishOnClose(refusedRecord(req, source, https), res, source, () => 405, requestRefused);
      }
      sendErrorPage(res, 405);
      return;
    }
    const client = socket as Duplex;
    client.on('error', () => {});
    const status = connectRejectedStatus(req, this.#deps.runtime()?.model.config ?? null);
    if (requestRefused.hasSubscribers) {
      finishOnClose(
        refusedRecord(req, client, https),
        client,
        client,
        () => answeredStatus(status),
        requestRefused,
      );
    }
    answerClientError(client, status);
  }

  /** An upgrade request (WebSocket): the same phases as a request, answered on its socket. */
  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, arrival: Arrival): void {
    this.#deps.counters.requests++;
    const https = arrival.https;
    const before = socketBytes(socket);
    socket.on('error', (error) => dataplaneError.publish({ message: `client socket: ${error.message}` }));
    const runtime = this.#deps.runtime();
    const rejected = runtime === null ? 0 : upgradeRejectedStatus(req, runtime.model.config);
    if (runtime !== null) {
      const { underscores, ignoreInvalid } = runtime.model.config.headerNames;
      dropIgnoredHeaders(req, underscores, ignoreInvalid);
    }
    if (rejected !== 0) {
      if (requestRefused.hasSubscribers) {
        finishOnClose(
          refusedRecord(req, socket, https),
          socket,
          socket,
          () => answeredStatus(rejected),
          requestRefused,
        );
      }
      sendSocketErrorPage(socket, rejected);
      return;
    }
    if (req.url !== undefined && req.url.charCodeAt(0) !== 47 /* / */) toOriginForm(req);
    const decision = decide(runtime, arrival, req);
    let record: RequestRecord | null = null;
    if (requestLogged.hasSubscribers) {
      const started = recordOf(req, socket, decision, https, recordedClientAddress(runtime, req, decision));
      // the status is what went out on the socket: set below, or by the exchange
      finishOnClose(started, socket, socket, () => (started.status === 0 ? 499 : started.status));
      record = started;
    }
    const auth = authOf(decision);
    const proxy = this.#deps.proxy;
    if (auth === null) {
      respondUpgrade(req, socket, head, decision, record, runtime, proxy);
      return;
    }
    settle(
      authenticateRequest(req, decision, auth, https, this.#deps.authClient, runtime),
      (error) => failSocket(error, 'auth', req, socket, socketBytes(socket) === before),
      (verdict) => {
        if (socket.destroyed) {
          if (decision.kind === 'proxy') decision.release?.();
          return;
        }
        if (verdict.allowed) {
          if (decision.kind === 'proxy') decision.context.policy = verdict.policy;
          respondUpgrade(req, socket, head, decision, record, runtime, proxy);
        } else {
          if (decision.kind === 'proxy' && decision.release) socket.once('close', decision.release);
          if (record !== null) record.status = verdict.status;
          sendSocketAuthDenial(socket, verdict, ownHeadLines(req, decision, runtime));
        }
      },
    );
  }
}
