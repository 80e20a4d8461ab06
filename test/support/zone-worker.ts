// A data-plane thread's side of the shared-zone tests: zones over the buffers it is given, requests
// at the times the test says, started together with the other worker (an Atomics barrier) so that
// both really hammer the zone at once.
import { parentPort, workerData } from 'node:worker_threads';
import { ConnectionZone, RequestZone } from '../../lib/dataplane/access/rate-limit.ts';

interface Data {
  requests: SharedArrayBuffer;
  connections: SharedArrayBuffer;
  /** [round started] */
  gate: SharedArrayBuffer;
  rate: number;
  burst: number;
  limit: number;
}

export type ZoneJob =
  | { round: number; kind: 'take'; now: number; count: number; addresses: number }
  | { round: number; kind: 'acquire'; count: number }
  | { round: number; kind: 'release'; count: number }
  | { round: number; kind: 'churn'; count: number; addresses: number };

const data = workerData as Data;
const requests = new RequestZone(data.rate, data.burst, false, data.requests);
const connections = new ConnectionZone(data.limit, data.connections);
const gate = new Int32Array(data.gate);
const port = parentPort;
if (port === null) throw new Error('a worker');

port.on('message', (job: ZoneJob) => {
  // wait for the test to open this round to both workers at once
  while (Atomics.load(gate, 0) < job.round) Atomics.wait(gate, 0, Atomics.load(gate, 0), 50);
  let done = 0;
  if (job.kind === 'take') {
    for (let i = 0; i < job.count; i++) if (requests.take(`10.0.0.${i % job.addresses}`, job.now)) done++;
  } else if (job.kind === 'acquire') {
    for (let i = 0; i < job.count; i++) if (connections.acquire('10.0.0.1')) done++;
  } else if (job.kind === 'release') {
    for (let i = 0; i < job.count; i++) connections.release('10.0.0.1');
  } else {
    for (let i = 0; i < job.count; i++) {
      const address = `10.1.${i % job.addresses}.1`;
      if (connections.acquire(address)) {
        done++;
        connections.release(address);
      }
    }
  }
  port.postMessage(done);
});
