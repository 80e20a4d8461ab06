// What a data-plane thread keeps over a stream of changes: the model and the runtime it serves, and
// nothing of the ones they replaced (a prepared swap, a delta's base, a dropped prepare). A thread
// that held one of them per change would grow by a model and a runtime with every change. Checked on
// the thread's own apply path (thread-apply.ts over a DataPlane, driven with the payloads the pool
// posts) in this thread, with a WeakRef to each model and runtime and forced full collections.
import { serialize, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { ZoneMemory } from '../../../lib/dataplane/access/zone-memory.ts';
import { DataPlane } from '../../../lib/dataplane/dataplane.ts';
import { generateDefaultCertificate } from '../../../lib/dataplane/listening/sni.ts';
import { diffModel } from '../../../lib/dataplane/worker/model-delta.ts';
import type { ModelPayload } from '../../../lib/dataplane/worker/protocol.ts';
import { createThreadApply } from '../../../lib/dataplane/worker/thread-apply.ts';
import type { Model } from '../../../lib/model/index.ts';
import { build, ingress, path, rule, service, slice } from '../../model/helpers.ts';

/** V8's synchronous full collection, from a fresh context while --expose-gc is briefly on. */
function fullCollection(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** `hosts` served by one Service; `addresses` its endpoints (a change of them alone updates in place). */
function model(hosts: string[], addresses = ['10.0.0.1']): Model {
  return build({
    ingresses: hosts.map((host, i) =>
      ingress(`site-${host}`, { created: i, rules: [rule(host, path('/', 'web:80'))] }),
    ),
    services: [service('web', [{ port: 80, targetPort: 8080 }])],
    slices: [slice('web', [{ addresses }], [{ port: 8080 }])],
  }).model;
}

const delta = (base: Model, next: Model): ModelPayload => {
  const changes = diffModel(base, next);
  if (changes === null) throw new Error('no delta between the two models');
  return { kind: 'delta', bytes: serialize(changes) };
};

/** What `ref`s still reach after the turn ends (a WeakRef holds its target for the job) and two full collections. */
async function alive<T extends object>(refs: ReadonlyArray<WeakRef<T>>): Promise<number> {
  const collect = fullCollection();
  for (let round = 0; round < 2; round++) {
    await new Promise((resolve) => setImmediate(resolve));
    collect();
  }
  return refs.filter((ref) => ref.deref() !== undefined).length;
}

t.test('after a stream of changes a thread holds only the model and runtime it serves', async (t) => {
  const dataPlane = new DataPlane({
    httpPort: 0,
    httpsPort: 0,
    bindAddress: '127.0.0.1',
    generatedDefaultCertificate: await generateDefaultCertificate(),
  });
  t.teardown(() => dataPlane.close());
  const applying = createThreadApply(dataPlane, new ZoneMemory());
  const models: Array<WeakRef<Model>> = [];
  const runtimes: Array<WeakRef<object>> = [];
  const seen = new WeakSet<object>();
  const track = (runtime: { model: Model } | null, model: Model) => {
    for (const [value, refs] of [
      [runtime, runtimes],
      [model, models],
    ] as const) {
      if (value === null || seen.has(value)) continue;
      seen.add(value);
      (refs as Array<WeakRef<object>>).push(new WeakRef(value));
    }
  };
  // every model and runtime a prepare makes, those of the prepare that is dropped included
  const prepare = dataPlane.prepare.bind(dataPlane);
  dataPlane.prepare = (model) => {
    const prepared = prepare(model);
    track(prepared.next, prepared.model);
    return prepared;
  };
  // and the runtime a commit compiles (an endpoints-only change)
  const served = () => {
    const runtime = dataPlane.current as { model: Model };
    track(runtime, runtime.model);
  };

  let built = model(['a.test']);
  const first = applying.prepare({ kind: 'full', bytes: serialize(built) }, new Map());
  applying.commit(first.hash);
  served();
  const hosts = ['a.test'];
  for (let change = 0; change < 8; change++) {
    // routes (a full compile) and endpoints only (updated in place), in turn
    if (change % 2 === 0) hosts.push(`h${change}.test`);
    const next = model(hosts, change % 2 === 0 ? ['10.0.0.1'] : ['10.0.0.1', `10.0.1.${change}`]);
    const prepared = applying.prepare(delta(built, next), new Map());
    applying.commit(prepared.hash);
    built = next;
    served();
  }
  // a prepare that is dropped (another thread failed) leaves nothing behind either
  const dropped = applying.prepare(delta(built, model([...hosts, 'dropped.test'])), new Map());
  applying.discard(dropped.hash);
  t.equal(models.length, 10, 'ten models prepared in turn');
  t.ok(runtimes.length >= 5, `a runtime per compiled change (${runtimes.length})`);
  const serving = dataPlane.current;
  built = model([]);

  t.equal(await alive(models), 1, 'one model alive: the one served');
  t.equal(await alive(runtimes), 1, 'one runtime alive: the one served');
  t.equal(dataPlane.current, serving, 'the runtime alive is the one served');
});
