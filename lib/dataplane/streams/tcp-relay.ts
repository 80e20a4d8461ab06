// One TCP service port: a net.Server that relays each connection to an endpoint of its Service,
// round-robin, trying the next endpoint when a connect fails (NGINX's proxy_next_upstream for streams,
// bounded by proxy-stream-next-upstream-tries and -timeout). A stream keeps the service entry and
// settings it was accepted with, so a swap never touches it; proxy-stream-timeout closes a stream idle
// both ways. Closing the port stops accepting; its streams go on until they end or are cut.

import { connect, createServer, type Server, type Socket } from 'node:net';
import type { ErrorCode } from '../../errors.ts';
import type { StreamConfig } from '../../model/configmap/global-config.ts';
import type { Endpoint, StreamService } from '../../model/index.ts';
import { dataplaneError, type StreamClosed, streamClosed } from '../events.ts';
import { encodeProxyV1, type ProxyAddresses, type ProxyHeaderReader } from './proxy-header.ts';

/** NGINX's proxy_connect_timeout default: ingress-nginx sets none in its stream block. */
const CONNECT_TIMEOUT_MS = 60_000;
/**
 * How long a client of a PROXY-decoding port may take to send its header: NGINX's stream
 * `proxy_protocol_timeout` default, which ingress-nginx's stream servers keep.
 */
export const PROXY_HEADER_TIMEOUT_MS = 30_000;

export interface TcpPortOptions {
  port: number;
  /** undefined: every interface */
  host: string | undefined;
  reusePort: boolean;
  readHeader: ProxyHeaderReader;
}

function report(message: string, upstream: string, code: string | undefined, peer?: Endpoint): void {
  if (!dataplaneError.hasSubscribers) return;
  dataplaneError.publish({
    message,
    upstream,
    ...(code === undefined ? {} : { code }),
    ...(peer === undefined ? {} : { peer: `${peer.address}:${peer.port}` }),
  });
}

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const HEADER_INVALID: ErrorCode = 'STREAM_PROXY_HEADER_INVALID';
const UNREACHABLE: ErrorCode = 'STREAM_UPSTREAM_UNREACHABLE';

function connectTo(endpoint: Endpoint, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: endpoint.address, port: endpoint.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export class TcpStreamPort {
  readonly port: number;
  /** the entry and settings new connections get; a swap replaces them */
  service: StreamService;
  settings: StreamConfig;
  readonly #options: TcpPortOptions;
  readonly #server: Server;
  /** the streams open now: client socket → what its end will report */
  readonly streams = new Map<Socket, StreamClosed>();
  #next = 0;
  #closed: Promise<void> | null = null;
  accepted = 0;

  constructor(service: StreamService, settings: StreamConfig, options: TcpPortOptions) {
    this.port = options.port;
    this.service = service;
    this.settings = settings;
    this.#options = options;
    this.#server = createServer((client) => this.#accept(client));
  }

  listen(): Promise<void> {
    const { port, host, reusePort } = this.#options;
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen({ port, host, reusePort }, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  /** Stops accepting; resolves once every stream of this port has ended. */
  close(): Promise<void> {
    this.#closed ??= new Promise((resolve) => {
      if (!this.#server.listening) {
        resolve(this.#whenIdle());
        return;
      }
      this.#server.close(() => resolve());
    });
    return this.#closed;
  }

  /** Cuts every stream left; resolves once each has closed (and reported its end). */
  cut(): Promise<void> {
    const closing = this.#whenIdle();
    for (const [client, outcome] of this.streams) {
      // ended already, its 'close' not emitted yet (the server counts it gone before that)
      if (client.destroyed) continue;
      outcome.reason = 'cut';
      client.destroy();
    }
    return closing;
  }

  #whenIdle(): Promise<void> {
    if (this.streams.size === 0) return Promise.resolve();
    return Promise.all(
      [...this.streams.keys()].map((s) => new Promise<void>((resolve) => s.once('close', () => resolve()))),
    ).then(() => undefined);
  }

  #accept(client: Socket): void {
    this.accepted++;
    const service = this.service;
    const settings = this.settings;
    const outcome: StreamClosed = { protocol: 'TCP', port: this.port, reason: 'done', received: 0, sent: 0 };
    this.streams.set(client, outcome);
    client.once('close', () => {
      this.streams.delete(client);
      outcome.received = client.bytesRead;
      outcome.sent = client.bytesWritten;
      if (streamClosed.hasSubscribers) streamClosed.publish(outcome);
    });
    client.on('error', () => client.destroy());
    client.pause();
    if (settings.timeoutMs > 0) {
      client.setTimeout(settings.timeoutMs, () => {
        outcome.reason = 'idle';
        client.destroy();
      });
    }
    this.#relay(client, service, settings, outcome).catch((error: unknown) => {
      outcome.reason = 'refused';
      report(`TCP service port ${this.port}: ${messageOf(error)}`, service.name, HEADER_INVALID);
      client.destroy();
    });
  }

  async #relay(client: Socket, service: StreamService, settings: StreamConfig, outcome: StreamClosed) {
    let addresses: ProxyAddresses = {
      sourceAddress: client.remoteAddress ?? '',
      sourcePort: client.remotePort ?? 0,
      destinationAddress: client.localAddress ?? '',
      destinationPort: client.localPort ?? 0,
    };
    let head: Buffer | null = null;
    if (service.decodeProxyProtocol) {
      const read = await this.#options.readHeader(client, PROXY_HEADER_TIMEOUT_MS);
      if (read.addresses !== null) addresses = read.addresses;
      if (read.rest.length > 0) head = read.rest;
    }
    const upstream = await this.#connect(service, settings);
    if (upstream === null) {
      outcome.reason = 'unreachable';
      report(`TCP service port ${this.port}: no endpoint could be reached`, service.name, UNREACHABLE);
      client.destroy();
      return;
    }
    if (client.destroyed) {
      upstream.destroy();
      return;
    }
    upstream.on('error', () => upstream.destroy());
    // either side gone: the other is finished (NGINX's proxy_half_close off)
    upstream.once('close', () => client.end());
    client.once('close', () => upstream.destroy());
    if (service.encodeProxyProtocol) upstream.write(encodeProxyV1(addresses));
    if (head !== null) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
  }

  /** An upstream connection: round-robin, the next endpoint while tries and time are left; null: none. */
  async #connect(service: StreamService, settings: StreamConfig): Promise<Socket | null> {
    const { endpoints } = service;
    const count = endpoints.length;
    const tries = !settings.nextUpstream
      ? 1
      : settings.nextUpstreamTries === 0
        ? count
        : Math.min(count, settings.nextUpstreamTries);
    const deadline =
      settings.nextUpstreamTimeoutMs > 0 ? performance.now() + settings.nextUpstreamTimeoutMs : Infinity;
    const start = this.#next++ % count;
    for (let attempt = 0; attempt < tries; attempt++) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      const endpoint = endpoints[(start + attempt) % count] as Endpoint;
      try {
        return await connectTo(endpoint, Math.min(CONNECT_TIMEOUT_MS, left));
      } catch (error) {
        report(
          `TCP service port ${this.port}: connect failed (${messageOf(error)})`,
          service.name,
          codeOf(error),
          endpoint,
        );
      }
    }
    return null;
  }
}
