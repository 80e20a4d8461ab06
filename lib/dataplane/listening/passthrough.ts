// ssl-passthrough (--enable-ssl-passthrough): the HTTPS listener's connections are peeked at before
// TLS. When the ClientHello's server name is a passthrough host, the raw connection (the ClientHello
// included) is relayed to one of the host's endpoints and TLS is the backend's business; otherwise
// the connection goes to the TLS server with its bytes put back, as if nothing had read them.
//
// ingress-nginx runs a Go TCP proxy on :443 in front of NGINX (moved to :442) for this; here the
// hand-over is in-process, so the TLS server, the connection counters and the connection cap see the
// same socket. The peek is bounded: one ClientHello (MAX_PEEK_BYTES) within client-header-timeout
// (NGINX's timeout for a TLS handshake too); a client that sends neither is closed. While no host
// passes through, connections are not peeked at at all.

import { connect, type Socket } from 'node:net';
import { dataplaneError } from '../events.ts';
import { type LinkSlot, LiveSet, type Slotted } from '../live-set.ts';
import type { HostTable } from '../routing/router.ts';
import type { PassthroughTarget } from '../routing/runtime.ts';
import { type Peer, peerKey } from '../upstream/balancer.ts';
import { peekClientHello } from './client-hello.ts';

export type PassthroughTable = HostTable<PassthroughTarget | null>;

/** A connection whose ClientHello is being read (live-set.ts: not a Set). */
const PEEKING = Symbol('reading a ClientHello');
const PEEKING_SLOT: LinkSlot<Socket> = {
  name: 'reading a ClientHello',
  get: (socket) => (socket as unknown as Slotted)[PEEKING],
  set: (socket, link) => {
    (socket as unknown as Slotted)[PEEKING] = link;
  },
};

/**
 * The most TCP chunks a ClientHello may come in (a 16 KiB one is a dozen segments): each chunk
 * re-reads what came before, so a client dripping a byte per segment would cost quadratic work. Past
 * it the connection goes to the TLS server as it is.
 */
export const MAX_PEEK_CHUNKS = 64;

export interface PassthroughFront {
  /** Takes a new connection of the HTTPS listener: relays it, or gives it to TLS with `handOver`. */
  accept(socket: Socket, handOver: (socket: Socket) => void): void;
  /** Cuts the connections still being peeked at or connected upstream (graceful stop, at the end). */
  destroyPending(): void;
}

export interface PassthroughDeps {
  /** the current runtime's table; null: no host passes through */
  table(): PassthroughTable | null;
  /** client-header-timeout in milliseconds: how long a ClientHello may take */
  helloTimeoutMs(): number;
  /** pipes client and upstream together until either ends (the proxy's tunnel: cut last on stop) */
  tunnel(client: Socket, upstream: Socket): void;
}

export function createPassthroughFront(deps: PassthroughDeps): PassthroughFront {
  /** connections peeked at or waiting for their upstream */
  const pending = new LiveSet<Socket>(PEEKING_SLOT);

  const peek = (socket: Socket, table: PassthroughTable, handOver: (socket: Socket) => void): void => {
    pending.add(socket);
    // a client that resets mid-peek is one closed socket, never an unhandled error
    const onError = (): void => {
      socket.destroy();
    };
    socket.on('error', onError);
    let received: Buffer | null = null;
    let chunks = 0;
    const done = (): void => {
      socket.off('data', onData);
      socket.off('timeout', onTimeout);
      socket.off('end', onEnd);
      socket.setTimeout(0);
      socket.pause();
    };
    const onData = (chunk: Buffer): void => {
      received = received === null ? chunk : Buffer.concat([received, chunk]);
      const answer = peekClientHello(received);
      if (answer.kind === 'more' && ++chunks < MAX_PEEK_CHUNKS) return;
      done();
      const target =
        answer.kind === 'hello' && answer.servername !== null ? table.lookup(answer.servername) : null;
      if (target === null) {
        pending.delete(socket);
        socket.off('error', onError);
        socket.unshift(received);
        handOver(socket);
        return;
      }
      relay(socket, received, target);
    };
    // no ClientHello in time, or the client gave up before sending one: nothing to hand over
    const onTimeout = (): void => {
      socket.destroy();
    };
    const onEnd = (): void => {
      socket.destroy();
    };
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('timeout', onTimeout);
    socket.once('close', () => pending.delete(socket));
    socket.setTimeout(deps.helloTimeoutMs());
    // after a PROXY header the socket is paused with the bytes that followed it put back
    socket.resume();
  };

  /** Connects to the target's endpoints in round-robin order, the next one when a connect fails. */
  const relay = (client: Socket, hello: Buffer, target: PassthroughTarget): void => {
    const peers: readonly Peer[] = target.balancer?.peers ?? [];
    if (peers.length === 0) {
      // ingress-nginx's TCP proxy closes the connection when it cannot dial the backend
      client.destroy();
      return;
    }
    const start = target.next % peers.length;
    target.next = (start + 1) % peers.length;
    let attempt = 0;
    const failed: string[] = [];
    const tryNext = (): void => {
      if (client.destroyed) return;
      if (attempt >= peers.length) {
        dataplaneError.publish({
          message: `ssl-passthrough ${target.hostname}: no endpoint of ${target.upstream} accepted the connection (${failed.join(', ')})`,
        });
        client.destroy();
        return;
      }
      const peer = peers[(start + attempt++) % peers.length] as Peer;
      const upstream = connect({ host: peer.address, port: peer.port });
      const onClientClose = (): void => {
        upstream.destroy();
      };
      const retry = (reason: string): void => {
        client.off('close', onClientClose);
        upstream.destroy();
        failed.push(`${peerKey(peer.address, peer.port)}: ${reason}`);
        tryNext();
      };
      const onError = (error: Error): void => retry((error as NodeJS.ErrnoException).code ?? error.message);
      const onTimeout = (): void => retry('connect timeout');
      client.once('close', onClientClose);
      upstream.once('error', onError);
      upstream.once('timeout', onTimeout);
      upstream.setTimeout(target.connectTimeoutMs);
      upstream.once('connect', () => {
        upstream.off('error', onError);
        upstream.off('timeout', onTimeout);
        upstream.setTimeout(0);
        client.off('close', onClientClose);
        pending.delete(client);
        upstream.setNoDelay(true);
        client.setNoDelay(true);
        upstream.write(hello);
        deps.tunnel(client, upstream);
      });
    };
    tryNext();
  };

  return {
    accept(socket, handOver) {
      const table = deps.table();
      if (table === null) handOver(socket);
      else peek(socket, table, handOver);
    },
    destroyPending() {
      for (const socket of pending) socket.destroy();
      pending.clear();
    },
  };
}
