// TLS session resumption on the HTTPS listener: the session-ticket keys (ssl-session-ticket-key, else
// keys generated once per data plane or pool) and the session cache (ssl-session-cache, -size,
// -timeout), applied at every swap. Whether tickets are issued at all (ssl-session-tickets) and how
// long a session lives are the server context's (server-tls.ts).
//
// Node has no server-side session cache of its own: it asks the 'newSession' and 'resumeSession'
// listeners, and only with the session ID a ClientHello carries. So the cache here holds TLS 1.2
// sessions. A TLS 1.3 ClientHello carries a random legacy ID and resumes by ticket (a PSK) alone;
// OpenSSL's stateful TLS 1.3 tickets, which NGINX serves from its cache when tickets are off, reach no
// Node callback. TLS 1.3 sessions are therefore not cached, and without ssl-session-tickets a TLS 1.3
// client does not resume.
//
// The cache is bounded by bytes (the session and its ID, as NGINX's zone is by its size) and by the
// timeout, least recently used first. Data planes given a SessionShare (the threads of one pool:
// worker/session-share.ts) send each new session to the others, so a client resumes on whichever
// thread the kernel hands its next connection to, as NGINX's workers share their cache; each thread
// holds the whole set, so memory is the size per thread. A session that arrives after the client
// already came back costs that client one full handshake.

import type { Server as TlsServer } from 'node:tls';
import { LRUCache } from 'lru-cache';
import type { SslHandshakeConfig } from '../../model/configmap/tls-session-keys.ts';

/** Bytes counted per cached session besides its ID and data (the entry, the key string). */
const ENTRY_OVERHEAD = 64;

/** TLS 1.3's version number in a serialised SSL_SESSION (its second INTEGER). */
const TLS1_3 = 0x0304;

/** The protocol version of a DER SSL_SESSION (`SEQUENCE { INTEGER 1, INTEGER version, ... }`), or -1. */
export function sessionVersion(der: Uint8Array): number {
  if (der[0] !== 0x30) return -1;
  const lengthByte = der[1] ?? 0;
  let at = 2 + (lengthByte & 0x80 ? lengthByte & 0x7f : 0);
  if (der[at] !== 0x02 || der[at + 1] !== 1) return -1;
  at += 3;
  if (der[at] !== 0x02 || der[at + 1] !== 2) return -1;
  return ((der[at + 2] ?? 0) << 8) | (der[at + 3] ?? 0);
}

/** Where a data plane's new sessions go and the others' come from. */
export interface SessionShare {
  publish(id: Buffer, data: Buffer): void;
  /** `receive` gets each session another data plane published */
  subscribe(receive: (id: Buffer, data: Buffer) => void): void;
  close(): void;
}

export class TlsSessions {
  readonly #server: TlsServer;
  /** the keys of tickets when the ConfigMap names none: given (shared by threads) or the server's own */
  readonly #generatedKeys: Buffer;
  /** the ticket key the server holds now ('' for the generated keys) */
  #ticketKey = '';
  #cache: LRUCache<string, Buffer> | null = null;
  #cacheSize = 0;
  #ttlMs = 0;
  readonly #share: SessionShare | null;
  readonly #onNewSession = (id: Buffer, data: Buffer, done: () => void): void => {
    // sessions Node would only ever look up by a random legacy ID are not kept
    if (sessionVersion(data) !== TLS1_3 && this.#store(id, data)) this.#share?.publish(id, data);
    done();
  };
  readonly #onResumeSession = (
    id: Buffer,
    done: (error: Error | null, data: Buffer | null) => void,
  ): void => {
    done(null, this.#cache?.get(id.toString('hex')) ?? null);
  };

  /** `generatedKeys`: 48 bytes every data plane of a pool shares; default the server's own. */
  constructor(server: TlsServer, generatedKeys?: Uint8Array, share?: SessionShare) {
    this.#server = server;
    this.#generatedKeys = generatedKeys === undefined ? server.getTicketKeys() : Buffer.from(generatedKeys);
    this.#share = share ?? null;
    share?.subscribe((id, data) => {
      this.#store(id, data);
    });
  }

  /** Follow a model's settings: the ticket key, the cache on or off, its size and timeout. */
  apply(config: SslHandshakeConfig): void {
    if (config.sessionTicketKey !== this.#ticketKey) {
      this.#ticketKey = config.sessionTicketKey;
      // ingress-nginx rewrites tickets.key and reloads: tickets under the old key stop resuming
      this.#server.setTicketKeys(
        config.sessionTicketKey === '' ? this.#generatedKeys : Buffer.from(config.sessionTicketKey, 'base64'),
      );
    }
    this.#ttlMs = config.sessionTimeout * 1000;
    if (!config.sessionCache) {
      if (this.#cache !== null) {
        this.#server.off('newSession', this.#onNewSession);
        this.#server.off('resumeSession', this.#onResumeSession);
        this.#cache = null;
      }
      return;
    }
    if (this.#cache === null) {
      this.#server.on('newSession', this.#onNewSession);
      this.#server.on('resumeSession', this.#onResumeSession);
    }
    if (this.#cache === null || this.#cacheSize !== config.sessionCacheSize) {
      this.#cacheSize = config.sessionCacheSize;
      this.#cache = new LRUCache<string, Buffer>({
        maxSize: config.sessionCacheSize,
        sizeCalculation: (data, id) => data.length + id.length + ENTRY_OVERHEAD,
      });
    }
  }

  /** Tests: the sessions held now. */
  get size(): number {
    return this.#cache?.size ?? 0;
  }

  close(): void {
    this.#share?.close();
  }

  #store(id: Buffer, data: Buffer): boolean {
    const cache = this.#cache;
    if (cache === null || data.length + ENTRY_OVERHEAD > this.#cacheSize) return false;
    cache.set(id.toString('hex'), data, { ttl: this.#ttlMs });
    return true;
  }
}
