// A standalone controller in a worker thread whose event loop the test can stop and restart: the
// liveness test (test/e2e/liveness.test.ts) needs a loop that is really stuck, which it cannot do to
// its own thread. Messages: in 'block' → out 'blocking', then the loop waits (Atomics.wait) until the
// parent sets the shared flag and notifies; in 'stop' → out 'stopped'.
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { testConfig } from './http.ts';

const { dir, flag } = workerData as { dir: string; flag: SharedArrayBuffer };
const port = parentPort;
if (port === null) throw new Error('stuck-loop-worker.ts runs as a worker thread');
const controller = await start(testConfig(dir), createLogger('silent'));
port.on('message', (message: string) => {
  if (message === 'block') {
    port.postMessage('blocking');
    Atomics.wait(new Int32Array(flag), 0, 0);
  } else if (message === 'stop') {
    void controller.stop(0).then(() => {
      port.postMessage('stopped');
      port.close();
    });
  }
});
port.postMessage({ healthz: controller.healthz.port });
