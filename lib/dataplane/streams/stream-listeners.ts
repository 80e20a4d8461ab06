// The listeners of the TCP and UDP services, opened and closed by the swap: each new table is compared
// with the ports open now. A port that stays keeps its listener (new streams get the new entry and
// settings, open ones keep theirs), a new port is opened, a removed one stops accepting: its TCP
// streams go on until they end, for at most worker-shutdown-timeout, as an NGINX worker left by a
// reload keeps them; its UDP sessions end at once. Opening a port can fail (in use, not permitted):
// that is reported and the other ports serve.

import type { ErrorCode } from '../../errors.ts';
import type { GlobalConfig } from '../../model/configmap/global-config.ts';
import { DEFAULT_GLOBAL_CONFIG } from '../../model/configmap/global-config.ts';
import type { StreamService, StreamTable } from '../../model/index.ts';
import { dataplaneError } from '../events.ts';
import { type ProxyHeaderReader, readClientProxyHeader } from './proxy-header.ts';
import { TcpStreamPort } from './tcp-relay.ts';
import { UdpStreamPort } from './udp-relay.ts';

export interface StreamListenersOptions {
  /** '' → every interface */
  bindAddress: string;
  /** TCP ports shared with other data-plane threads (SO_REUSEPORT) */
  reusePort: boolean;
  /** whether this data plane serves the UDP services (one thread does: sessions are per client) */
  udp: boolean;
  /** reads a PROXY header from a client (the first PROXY flag) */
  readHeader?: ProxyHeaderReader;
}

/** What /debug/model shows of one port. */
export interface StreamPortDescription {
  protocol: 'TCP' | 'UDP';
  port: number;
  upstream: string;
  service: string;
  proxyProtocol: { decode: boolean; encode: boolean };
  endpoints: string[];
  /** TCP streams or UDP sessions open now, and since the port opened */
  active: number;
  accepted: number;
}

/**
 * One list of ports from the lists of several data-plane threads: each TCP port is open in every
 * thread (reusePort), so its counts are the sums; a UDP port is open in the first thread only.
 */
export function sumStreamDescriptions(lists: readonly StreamPortDescription[][]): StreamPortDescription[] {
  const byPort = new Map<string, StreamPortDescription>();
  for (const list of lists) {
    for (const port of list) {
      const key = `${port.protocol}/${port.port}`;
      const seen = byPort.get(key);
      if (seen === undefined) byPort.set(key, { ...port });
      else {
        seen.active += port.active;
        seen.accepted += port.accepted;
      }
    }
  }
  return [...byPort.values()];
}

const EMPTY: StreamTable = { tcp: [], udp: [] };
const LISTEN_FAILED: ErrorCode = 'STREAM_LISTEN_FAILED';

export class StreamListeners {
  readonly #options: StreamListenersOptions;
  readonly #tcp = new Map<number, TcpStreamPort>();
  readonly #udp = new Map<number, UdpStreamPort>();
  /** removed TCP ports whose streams are still open */
  readonly #retired = new Set<TcpStreamPort>();
  #table: StreamTable = EMPTY;
  #config: GlobalConfig = DEFAULT_GLOBAL_CONFIG;
  #listening = false;
  #stopped = false;
  #work: Promise<void> = Promise.resolve();

  constructor(options: StreamListenersOptions) {
    this.#options = options;
  }

  /** The table of a new model; the ports follow once listening. */
  update(table: StreamTable | undefined, config: GlobalConfig): void {
    this.#table = table ?? EMPTY;
    this.#config = config;
    if (this.#listening) this.#queue();
  }

  /** Opens the ports of the table; later updates open and close them. */
  listen(): Promise<void> {
    this.#listening = true;
    this.#queue();
    return this.#work;
  }

  /** Resolves once the ports follow the last table. */
  settled(): Promise<void> {
    return this.#work;
  }

  /** Stops accepting on every port and ends the UDP sessions; resolves once the TCP streams ended. */
  async drain(): Promise<void> {
    this.#stopped = true;
    await this.#work;
    for (const port of this.#udp.values()) port.close();
    this.#udp.clear();
    // every TCP port is a retired one now: cut() reaches the streams they still have
    for (const port of this.#tcp.values()) this.#retired.add(port);
    this.#tcp.clear();
    await Promise.all([...this.#retired].map((port) => port.close()));
  }

  /** Cuts the TCP streams left; resolves once they have closed (their ends reported). */
  async cut(): Promise<void> {
    await Promise.all([...this.#retired, ...this.#tcp.values()].map((port) => port.cut()));
  }

  describe(): StreamPortDescription[] {
    const out: StreamPortDescription[] = [];
    const entry = (port: TcpStreamPort | UdpStreamPort, active: number): StreamPortDescription => {
      const service: StreamService = port.service;
      return {
        protocol: service.protocol,
        port: port.port,
        upstream: service.name,
        service: `${service.service.namespace}/${service.service.name}:${service.service.port}`,
        proxyProtocol: { decode: service.decodeProxyProtocol, encode: service.encodeProxyProtocol },
        endpoints: service.endpoints.map((e) => `${e.address}:${e.port}`),
        active,
        accepted: port.accepted,
      };
    };
    for (const port of this.#tcp.values()) out.push(entry(port, port.streams.size));
    for (const port of this.#udp.values()) out.push(entry(port, port.sessions.size));
    return out;
  }

  #queue(): void {
    this.#work = this.#work.then(() => this.#reconcile());
  }

  async #reconcile(): Promise<void> {
    if (this.#stopped) return;
    const table = this.#table;
    const settings = this.#config.stream;
    const host = this.#options.bindAddress === '' ? undefined : this.#options.bindAddress;
    const opening: Array<Promise<void>> = [];
    const wantedTcp = new Map(table.tcp.map((s) => [s.port, s]));
    for (const [number, port] of this.#tcp) {
      if (wantedTcp.has(number)) continue;
      this.#tcp.delete(number);
      this.#retire(port);
    }
    for (const service of table.tcp) {
      const open = this.#tcp.get(service.port);
      if (open !== undefined) {
        open.service = service;
        open.settings = settings;
        continue;
      }
      const port = new TcpStreamPort(service, settings, {
        port: service.port,
        host,
        reusePort: this.#options.reusePort,
        readHeader: this.#options.readHeader ?? readClientProxyHeader,
      });
      this.#tcp.set(service.port, port);
      opening.push(
        port.listen().catch((error: unknown) => {
          this.#tcp.delete(service.port);
          this.#failed('TCP', service, error);
        }),
      );
    }
    const udp = this.#options.udp ? table.udp : [];
    const wantedUdp = new Set(udp.map((s) => s.port));
    for (const [number, port] of this.#udp) {
      if (wantedUdp.has(number)) continue;
      this.#udp.delete(number);
      port.close();
    }
    const maxSessions = this.#config.maxWorkerConnections;
    for (const service of udp) {
      const open = this.#udp.get(service.port);
      if (open !== undefined) {
        open.service = service;
        open.settings = settings;
        open.maxSessions = maxSessions;
        continue;
      }
      const port = new UdpStreamPort(service, settings, maxSessions, { port: service.port, host });
      this.#udp.set(service.port, port);
      opening.push(
        port.listen().catch((error: unknown) => {
          this.#udp.delete(service.port);
          this.#failed('UDP', service, error);
        }),
      );
    }
    await Promise.all(opening);
  }

  /** A removed TCP port: no new streams; the open ones get worker-shutdown-timeout to end. */
  #retire(port: TcpStreamPort): void {
    this.#retired.add(port);
    const timer = setTimeout(() => void port.cut(), this.#config.workerShutdownTimeoutMs);
    timer.unref();
    port.close().then(() => {
      clearTimeout(timer);
      this.#retired.delete(port);
    });
  }

  #failed(protocol: string, service: StreamService, error: unknown): void {
    if (!dataplaneError.hasSubscribers) return;
    const reason = error instanceof Error ? error.message : String(error);
    dataplaneError.publish({
      message: `${protocol} service port ${service.port} (${service.name}) could not be opened: ${reason}`,
      upstream: service.name,
      code: LISTEN_FAILED,
    });
  }
}
