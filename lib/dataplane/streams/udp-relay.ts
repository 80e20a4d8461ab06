// One UDP service port: a dgram socket whose datagrams are relayed per client address (a session,
// with its own upstream socket, so replies find their way back). A session picks its endpoint
// round-robin when it starts and ends when idle for proxy-stream-timeout, or once the upstream has
// sent proxy-stream-responses datagrams per client datagram (NGINX's proxy_responses; 0: no limit).
// Sessions are bounded (max-worker-connections): a datagram that would start one more is dropped,
// as NGINX drops it when it has no connection left.

import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { StreamConfig } from '../../model/configmap/global-config.ts';
import type { Endpoint, StreamService } from '../../model/index.ts';
import { dataplaneError, type StreamClosed, streamClosed } from '../events.ts';

export interface UdpPortOptions {
  port: number;
  /** undefined: every interface */
  host: string | undefined;
}

interface Session {
  key: string;
  upstream: Socket;
  timer: NodeJS.Timeout | null;
  requests: number;
  responses: number;
  /** datagrams that arrived while the upstream socket connects; null once connected */
  pending: Buffer[] | null;
  outcome: StreamClosed;
}

export class UdpStreamPort {
  readonly port: number;
  service: StreamService;
  settings: StreamConfig;
  /** sessions at most (0: no bound) */
  maxSessions: number;
  readonly #options: UdpPortOptions;
  #socket: Socket | null = null;
  readonly sessions = new Map<string, Session>();
  #next = 0;
  accepted = 0;
  dropped = 0;

  constructor(service: StreamService, settings: StreamConfig, maxSessions: number, options: UdpPortOptions) {
    this.port = options.port;
    this.service = service;
    this.settings = settings;
    this.maxSessions = maxSessions;
    this.#options = options;
  }

  async listen(): Promise<void> {
    const { host, port } = this.#options;
    // no address: both families through one IPv6 socket, IPv4 alone where IPv6 is off
    const families: Array<'udp4' | 'udp6'> =
      host === undefined ? ['udp6', 'udp4'] : [isIPv6(host) ? 'udp6' : 'udp4'];
    let failure: unknown = null;
    for (const type of families) {
      const socket = createSocket({ type });
      try {
        await new Promise<void>((resolve, reject) => {
          socket.once('error', reject);
          socket.bind({ port, address: host }, () => {
            socket.off('error', reject);
            resolve();
          });
        });
      } catch (error) {
        failure = error;
        socket.close();
        continue;
      }
      socket.on('message', (message, client) => {
        // contained: one datagram's failure never takes the port (or the process) down
        try {
          this.#received(message, client);
        } catch (error) {
          if (dataplaneError.hasSubscribers) {
            const reason = error instanceof Error ? error.message : String(error);
            dataplaneError.publish({
              message: `UDP service port ${this.port}: ${reason}`,
              upstream: this.service.name,
            });
          }
        }
      });
      socket.on('error', () => {});
      this.#socket = socket;
      return;
    }
    throw failure;
  }

  /** Stops receiving and ends every session. */
  close(): void {
    for (const session of this.sessions.values()) this.#end(session, 'cut');
    this.#socket?.close();
    this.#socket = null;
  }

  #received(message: Buffer, client: RemoteInfo): void {
    const key = `${client.address}|${client.port}`;
    let session = this.sessions.get(key);
    if (session === undefined) {
      if (this.maxSessions > 0 && this.sessions.size >= this.maxSessions) {
        this.dropped++;
        return;
      }
      session = this.#open(key, client);
    }
    session.requests++;
    session.outcome.received += message.length;
    session.timer?.refresh();
    if (session.pending !== null) session.pending.push(message);
    else session.upstream.send(message);
  }

  #open(key: string, client: RemoteInfo): Session {
    this.accepted++;
    const { endpoints } = this.service;
    const endpoint = endpoints[this.#next++ % endpoints.length] as Endpoint;
    const upstream = createSocket({ type: isIPv6(endpoint.address) ? 'udp6' : 'udp4' });
    const session: Session = {
      key,
      upstream,
      timer: null,
      requests: 0,
      responses: 0,
      pending: [],
      outcome: { protocol: 'UDP', port: this.port, reason: 'done', received: 0, sent: 0 },
    };
    this.sessions.set(key, session);
    const { timeoutMs, responses } = this.settings;
    if (timeoutMs > 0) session.timer = setTimeout(() => this.#end(session, 'idle'), timeoutMs);
    upstream.on('message', (reply) => {
      session.responses++;
      session.outcome.sent += reply.length;
      session.timer?.refresh();
      this.#socket?.send(reply, client.port, client.address);
      if (responses > 0 && session.responses >= responses * session.requests) this.#end(session, 'responses');
    });
    // an ICMP port unreachable on the connected socket, a failed lookup
    upstream.on('error', () => this.#end(session, 'unreachable'));
    upstream.connect(endpoint.port, endpoint.address, () => {
      const waiting = session.pending ?? [];
      session.pending = null;
      for (const message of waiting) upstream.send(message);
    });
    return session;
  }

  #end(session: Session, reason: StreamClosed['reason']): void {
    if (this.sessions.get(session.key) !== session) return;
    this.sessions.delete(session.key);
    if (session.timer !== null) clearTimeout(session.timer);
    session.upstream.close();
    session.outcome.reason = reason;
    if (streamClosed.hasSubscribers) streamClosed.publish(session.outcome);
  }
}
