// The TLS sessions a data-plane thread caches, sent to the pool's other threads over one
// BroadcastChannel per pool (its name comes with the thread's options), so each thread's cache holds
// the sessions of all (listening/tls-sessions.ts). A message is a session's ID and its serialised
// state, a few hundred bytes, once per full TLS 1.2 handshake.

import { BroadcastChannel } from 'node:worker_threads';
import type { SessionShare } from '../listening/tls-sessions.ts';

interface SessionMessage {
  id: Uint8Array;
  data: Uint8Array;
}

export function createSessionShare(name: string): SessionShare {
  const channel = new BroadcastChannel(name);
  // the listeners keep a thread alive while it serves; the channel must not keep it after
  channel.unref();
  return {
    publish(id, data) {
      // copies of the bytes alone: a view would carry its whole backing buffer across
      channel.postMessage({ id: new Uint8Array(id), data: new Uint8Array(data) } satisfies SessionMessage);
    },
    subscribe(receive) {
      channel.onmessage = (event) => {
        const { id, data } = (event as { data: SessionMessage }).data;
        receive(
          Buffer.from(id.buffer, id.byteOffset, id.byteLength),
          Buffer.from(data.buffer, data.byteOffset, data.byteLength),
        );
      };
    },
    close() {
      channel.close();
    },
  };
}
