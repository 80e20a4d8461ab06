// Waiting for a listener to go away, without sleeping: each attempt awaits its own outcome.
import { connect } from 'node:net';

/** Resolves once a connection to `port` on 127.0.0.1 is refused: nothing listens there any more. */
export async function untilRefused(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
  }
}
