// Client-certificate leaves that verified in a full handshake, remembered so that a resumed TLS
// session, which carries the leaf but not its intermediates, can be accepted again (client-cert.ts).
//
// The set lives in a zone buffer (shared-zone.ts) rather than in a Map: with data-plane threads the
// kernel hands a client's next connection to any thread, and the session-ticket keys are shared, so a
// session verified by one thread is resumed by another; that thread must find the leaf. NGINX keeps
// the verify result inside the session itself, in a cache its workers share; Node exposes neither,
// so the threads share this set instead. With one thread the buffer is simply this data plane's own.
//
// A key is hashed to 64 bits by the table. Its last part is a SHA-256 fingerprint the client cannot
// choose, so passing for a verified leaf of the same CA takes about 2^64 / 16,384 certificates.

import { allocateZoneBuffer, SharedAddressTable, ZONE_MAX_ADDRESSES } from './shared-zone.ts';

/** Leaves remembered before the least recently seen is forgotten. */
export const VERIFIED_LEAVES_MAX = ZONE_MAX_ADDRESSES;

/** Leaves by `<CA sha256>|<max chain>|<sha256 fingerprint>`, least recently seen forgotten first. */
export class VerifiedLeaves {
  readonly #table: SharedAddressTable;

  /** `buffer`: the set of other data planes (threads) to share; default a set of this one's own. */
  constructor(buffer: SharedArrayBuffer = allocateZoneBuffer()) {
    this.#table = new SharedAddressTable(buffer);
  }

  /** the memory, for another thread to share */
  get buffer(): SharedArrayBuffer {
    return this.#table.buffer;
  }

  has(key: string): boolean {
    const table = this.#table;
    table.select(key);
    table.lock();
    const node = table.find();
    if (node !== 0) table.touch(node);
    table.unlock();
    return node !== 0;
  }

  add(key: string): void {
    const table = this.#table;
    table.select(key);
    table.lock();
    let node = table.find();
    if (node === 0) {
      node = table.insert(1);
      if (node === 0) {
        table.remove(table.oldest(), true);
        table.find();
        node = table.insert(1);
      }
    }
    table.touch(node);
    table.unlock();
  }

  get size(): number {
    return this.#table.size;
  }
}
