// A decoded model's repeated strings, shared: the model is the same (deep-equal, its hash intact),
// and a string that v8.deserialize copied once per route or upstream is held once.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { deserialize, serialize } from 'node:v8';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { shareStrings } from '../../../lib/dataplane/worker/model-strings.ts';
import type { Model } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../../model/helpers.ts';

const COUNT = 30;
const marker = `shared-${randomBytes(6).toString('hex')}`;

/** COUNT Ingresses in namespace `marker`, each routing path `/marker` and `/` to its own Service. */
function serialisedModel(): Uint8Array {
  const { model } = build({
    ingresses: Array.from({ length: COUNT }, (_, i) =>
      ingress(`site-${i}`, {
        namespace: marker,
        created: i,
        rules: [rule(`site-${i}.test`, path(`/${marker}`, `web-${i}:80`), path('/', `web-${i}:80`))],
      }),
    ),
    services: Array.from({ length: COUNT }, (_, i) =>
      service(`web-${i}`, [{ port: 80, targetPort: 8080 }], marker),
    ),
    slices: Array.from({ length: COUNT }, (_, i) =>
      slice(`web-${i}`, [{ addresses: [`10.0.0.${i + 1}`] }], [{ port: 8080 }], { namespace: marker }),
    ),
  });
  return serialize(model);
}

// the heap examined is a small worker's: a snapshot of the test process itself takes too long
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { deserialize } = require('node:v8');
let model = deserialize(workerData.bytes);
parentPort.on('message', async () => {
  const { shareStrings } = await import(workerData.module);
  shareStrings(model);
  parentPort.postMessage(model.servers.length);
});
parentPort.postMessage(model.servers.length);
`;

/** How many strings equal to `value` the worker's heap holds (a heap snapshot starts with a full collection). */
async function copiesOf(worker: Worker, value: string): Promise<number> {
  let text = '';
  for await (const chunk of await worker.getHeapSnapshot()) text += String(chunk);
  const { snapshot, nodes, strings } = JSON.parse(text) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.meta.node_fields;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const stringType = snapshot.meta.node_types[0].indexOf('string');
  let copies = 0;
  for (let i = 0; i < nodes.length; i += fields.length) {
    if (nodes[i + typeAt] === stringType && strings[nodes[i + nameAt] as number] === value) copies++;
  }
  return copies;
}

t.test('the shared model is the model', async (t) => {
  const bytes = serialisedModel();
  const original = deserialize(bytes) as Model;
  const shared = shareStrings(deserialize(bytes) as Model);
  t.strictSame(shared, original);
  t.strictSame(Object.keys(shared.upstreams), Object.keys(original.upstreams), 'key order kept');
});

t.test('a repeated string is held once', async (t) => {
  const module = new URL('../../../lib/dataplane/worker/model-strings.ts', import.meta.url).href;
  const worker = new Worker(WORKER, { eval: true, workerData: { bytes: serialisedModel(), module } });
  t.teardown(() => worker.terminate());
  t.equal(await once(worker, 'message').then(([n]) => n), COUNT, 'decoded');
  const path = `/${marker}`;
  const before = await copiesOf(worker, path);
  t.ok(before >= COUNT, `v8.deserialize made a copy per route (${before})`);
  worker.postMessage('share');
  t.equal(await once(worker, 'message').then(([n]) => n), COUNT, 'shared, the model still held');
  t.equal(await copiesOf(worker, path), 1, 'one copy of the path');
  const namespaces = await copiesOf(worker, marker);
  t.ok(namespaces < COUNT, `fewer copies of the namespace: ${namespaces}`);
});
