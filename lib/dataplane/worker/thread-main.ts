// The entry of a data-plane worker thread: one DataPlane with its own listeners (sharing the ports
// with the other threads through SO_REUSEPORT), runtime, SNI store and pools, driven by the calls
// of the main thread's pool (pool.ts). What it reports leaves through the forwarded channels in
// batches (event-batch.ts), with the access log lines it encodes itself (thread-records.ts).

import { deserialize } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import type { Model } from '../../model/index.ts';
import { ZoneMemory } from '../access/zone-memory.ts';
import { DataPlane } from '../dataplane.ts';
import { createEventBatch } from './event-batch.ts';
import type { ThreadCall, ThreadDataPlaneOptions, ThreadMessage } from './protocol.ts';
import { createThreadRecords } from './thread-records.ts';

const port = parentPort;
if (port === null) throw new Error('thread-main.ts runs as a data-plane worker thread');

const options = workerData as ThreadDataPlaneOptions;
// the zones' buffers come from the main thread with each model: every thread counts in the same ones
const zoneMemory = new ZoneMemory();
const dataPlane = new DataPlane({ ...options, reusePort: true, zoneMemory });
const post = (message: ThreadMessage, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);
// a full buffer of access log lines leaves at once, with what else waits
const records = createThreadRecords({ full: () => batch.flush() });
const batch = createEventBatch({
  post,
  stats: () => dataPlane.stats,
  lines: records.takeLines,
  intervalMs: options.batchIntervalMs,
});

async function answer(call: ThreadCall): Promise<unknown> {
  switch (call.type) {
    case 'apply': {
      zoneMemory.adopt(call.zones);
      const model = deserialize(call.model) as Model;
      const swapped = await dataPlane.apply(model);
      // the log settings follow the model served, as the controller's writer follows it with one thread
      records.configure(model.config.accessLog);
      return swapped;
    }
    case 'listen':
      return dataPlane.listen(call.ports ?? undefined);
    case 'describe':
      return dataPlane.describe();
    case 'flush':
      batch.flush();
      return null;
    case 'drain':
      await dataPlane.drain(call.drainMs);
      return null;
    case 'close':
      await dataPlane.close(call.drainMs);
      // the last records go out before the reply: the main thread has them all once close resolves
      batch.stop();
      return null;
  }
}

port.on('message', (call: ThreadCall) => {
  answer(call).then(
    (result) => post({ type: 'reply', id: call.id, result }),
    (error: unknown) => {
      const { message, stack } = error instanceof Error ? error : new Error(String(error));
      post({ type: 'reply', id: call.id, error: { message, stack: stack ?? '' } });
    },
  );
});
