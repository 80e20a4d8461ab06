// The entry of a data-plane worker thread: one DataPlane with its own listeners (sharing the ports
// with the other threads through SO_REUSEPORT), runtime, SNI store and pools, driven by the calls
// of the main thread's pool (pool.ts). What it reports leaves through the forwarded channels in
// batches (event-batch.ts), with the access log lines it encodes itself (thread-records.ts).

import { parentPort, workerData } from 'node:worker_threads';
import { ZoneMemory } from '../access/zone-memory.ts';
import { DataPlane } from '../dataplane.ts';
import { sdkLoaded } from '../tracing/sdk-loader.ts';
import { createEventBatch } from './event-batch.ts';
import type { ThreadCall, ThreadDataPlaneOptions, ThreadMessage } from './protocol.ts';
import { createSessionShare } from './session-share.ts';
import { createThreadApply } from './thread-apply.ts';
import { createThreadRecords } from './thread-records.ts';

const port = parentPort;
if (port === null) throw new Error('thread-main.ts runs as a data-plane worker thread');

const options = workerData as ThreadDataPlaneOptions;
// the zones' buffers come from the main thread with each model: every thread counts in the same ones
const zoneMemory = new ZoneMemory();
// the TLS sessions one thread caches reach the others (a client resumes on any thread)
const sessionShare =
  options.sessionChannel === undefined ? undefined : createSessionShare(options.sessionChannel);
const dataPlane = new DataPlane({ ...options, reusePort: true, zoneMemory, sessionShare });
const post = (message: ThreadMessage, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);
// a full buffer of access log lines leaves at once, with what else waits
const records = createThreadRecords({ full: () => batch.flush(), measures: options.measures });
const batch = createEventBatch({
  post,
  stats: () => dataPlane.stats,
  lines: records.takeLines,
  measures: records.takeMeasures,
  intervalMs: options.batchIntervalMs,
});
const applying = createThreadApply(dataPlane, zoneMemory);

async function answer(call: ThreadCall): Promise<unknown> {
  switch (call.type) {
    case 'prepare': {
      const prepared = applying.prepare(call.model, call.zones);
      // a compile with traced routes is prepared once the OpenTelemetry SDK is loaded
      await sdkLoaded();
      return prepared;
    }
    case 'commit': {
      const committed = applying.commit(call.hash);
      // the TCP and UDP service ports it opens or closes: applied means listening
      await dataPlane.streamsSettled();
      // the log settings follow the model served, as the controller's writer follows it with one thread
      const served = dataPlane.current?.model;
      if (served !== undefined) records.configure(served.config.accessLog);
      return committed;
    }
    case 'discard':
      applying.discard(call.hash);
      return null;
    case 'fail-next-prepare':
      applying.failNextPrepare(call.message);
      return null;
    case 'serving-model':
      return dataPlane.current?.model ?? null;
    case 'listen':
      return dataPlane.listen(call.ports ?? undefined);
    case 'describe':
      return dataPlane.describe();
    case 'describe-streams':
      return dataPlane.describeStreams();
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
      const code = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
      const reply = { message, stack: stack ?? '', ...(typeof code === 'string' ? { code } : {}) };
      post({ type: 'reply', id: call.id, error: reply });
    },
  );
});
