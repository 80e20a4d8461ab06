// Liveness: /livez answers whenever the event loop runs and only a stuck loop makes it fail — the
// controller runs in a worker thread whose loop the test really stops (Atomics.wait), then restarts.
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { INGRESS_CLASS } from '../support/manifests.ts';

const MANIFESTS = INGRESS_CLASS;

/** GET /livez: the status, or 'no answer' when none came within `ms`. */
function probe(port: number, ms: number): Promise<number | 'no answer'> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path: '/livez', timeout: ms }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => {
      req.destroy();
      resolve('no answer');
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('/livez fails only while the event loop is stuck', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-livez-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'class.yaml'), MANIFESTS);
  const flag = new SharedArrayBuffer(4);
  const worker = new Worker(new URL('../support/stuck-loop-worker.ts', import.meta.url), {
    workerData: { dir, flag },
  });
  t.teardown(() => worker.terminate());
  const [ready] = (await once(worker, 'message')) as [{ healthz: number }];
  const port = ready.healthz;

  t.equal(await probe(port, 5_000), 200, 'alive');

  worker.postMessage('block');
  t.equal((await once(worker, 'message'))[0], 'blocking');
  t.equal(await probe(port, 300), 'no answer', 'a stuck loop leaves the probe unanswered');

  Atomics.store(new Int32Array(flag), 0, 1);
  Atomics.notify(new Int32Array(flag), 0);
  t.equal(await probe(port, 5_000), 200, 'alive again once the loop runs');

  worker.postMessage('stop');
  t.equal((await once(worker, 'message'))[0], 'stopped');
});
