// A thread entry for test/dataplane/worker/thread-boot.test.ts: loads the whole data plane, then
// says whether this thread loaded Node's TypeScript stripper.
import { parentPort } from 'node:worker_threads';
import '../../lib/dataplane/dataplane.ts';

const loaded = (process as unknown as { moduleLoadList: string[] }).moduleLoadList;
parentPort?.postMessage({ stripper: loaded.some((name) => name.includes('internal/deps/amaro')) });
