// Standalone mode up to the build, wired as lib/main.ts wires it: the manifest source fills its
// ObjectStore, the store's relevant changes trigger the scheduler, each run builds the model and hands
// its references back to the store. Real files, real fs.watch, real timers (recorded).

import { createHook } from 'node:async_hooks';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { buildModel, DEFAULT_MODEL_OPTIONS, type KubeObject, type Snapshot } from '../../lib/model/index.ts';
import {
  createManifestSource,
  type ManifestProblem,
  type ManifestSource,
} from '../../lib/source/manifests/source.ts';
import { createScheduler, type Scheduler, type SchedulerTimers } from '../../lib/store/scheduler.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';

/** Failure guard for awaited events; they normally arrive within ~100 ms. */
const TIMEOUT_MS = 10_000;

interface Wiring {
  dir: string;
  source: ManifestSource;
  scheduler: Scheduler;
  /** the snapshot of every run, the first build included */
  builds: Snapshot[];
  /** the delay of every hold-off timer the scheduler armed */
  holdOffs: number[];
  /** Resolves at the next build whose snapshot satisfies the predicate. */
  built: (predicate: (snapshot: Snapshot) => boolean, what: string) => Promise<Snapshot>;
  /** Resolves at the next new problem that satisfies the predicate. */
  problem: (predicate: (problem: ManifestProblem) => boolean) => Promise<ManifestProblem>;
  write: (rel: string, text: string) => Promise<void>;
}

function guarded<T>(what: string, register: (resolve: (value: T) => void) => () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timeout = setTimeout(() => {
      unregister();
      reject(new Error(`timed out waiting for ${what}`));
    }, TIMEOUT_MS);
    const unregister = register((value) => {
      clearTimeout(timeout);
      unregister();
      resolve(value);
    });
  });
}

async function wire(
  t: Test,
  files: Record<string, string>,
  scheduling: { holdOffMs: number; maxDelayMs: number },
): Promise<Wiring> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ingress-ts-manifests-store-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const write = (rel: string, text: string) => writeFile(path.join(dir, rel), text);
  for (const [rel, text] of Object.entries(files)) await write(rel, text);

  const builds: Snapshot[] = [];
  const holdOffs: number[] = [];
  const buildWaiters = new Set<(snapshot: Snapshot) => void>();
  const problemWaiters = new Set<(problem: ManifestProblem) => void>();
  const timers: SchedulerTimers = {
    setTimeout: (callback, ms) => {
      holdOffs.push(ms);
      return setTimeout(callback, ms);
    },
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
    now: () => performance.now(),
  };
  const source = createManifestSource({
    dir,
    model: DEFAULT_MODEL_OPTIONS,
    onChange: () => scheduler.trigger(),
    onProblem: (problem) => {
      for (const waiter of [...problemWaiters]) waiter(problem);
    },
  });
  const scheduler = createScheduler({
    ...scheduling,
    timers,
    run: () => {
      const snapshot = source.snapshot();
      source.setReferences(buildModel(snapshot, DEFAULT_MODEL_OPTIONS).references);
      builds.push(snapshot);
      for (const waiter of [...buildWaiters]) waiter(snapshot);
    },
  });
  await source.start();
  t.teardown(async () => {
    scheduler.stop();
    await source.stop();
  });
  scheduler.trigger();
  await scheduler.idle();

  const built = (predicate: (snapshot: Snapshot) => boolean, what: string) =>
    guarded<Snapshot>(what, (resolve) => {
      const waiter = (snapshot: Snapshot) => {
        if (predicate(snapshot)) resolve(snapshot);
      };
      buildWaiters.add(waiter);
      return () => buildWaiters.delete(waiter);
    });
  const problem = (predicate: (problem: ManifestProblem) => boolean) =>
    guarded<ManifestProblem>('a problem', (resolve) => {
      const waiter = (found: ManifestProblem) => {
        if (predicate(found)) resolve(found);
      };
      problemWaiters.add(waiter);
      return () => problemWaiters.delete(waiter);
    });
  return { dir, source, scheduler, builds, holdOffs, built, problem, write };
}

const find = (objects: readonly KubeObject[], name: string) =>
  objects.find((object) => object.metadata?.name === name);
const hostOf = (snapshot: Snapshot, name: string) =>
  (find(snapshot.ingresses, name) as { spec?: { rules?: Array<{ host?: string }> } } | undefined)?.spec
    ?.rules?.[0]?.host;
const dataOf = (snapshot: Snapshot, name: string) =>
  (find(snapshot.secrets, name) as { data?: Record<string, string> } | undefined)?.data;

function secretYaml(name: string, value: string): string {
  return `---
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: e2e }
type: Opaque
data: { auth: ${Buffer.from(value).toString('base64')} }
`;
}

/** A document the source reports and does not keep: something to await that says a scan has run. */
function markerYaml(name: string): string {
  return `apiVersion: extensions/v1beta1
kind: Ingress
metadata: { name: ${name}, namespace: e2e }
`;
}

t.test('a Secret no Ingress refers to is stored but builds nothing; a referenced one builds', async (t) => {
  const w = await wire(
    t,
    {
      'class.yaml': INGRESS_CLASS,
      'site.yaml': `${serviceYaml('web', [])}${ingressYaml({
        name: 'web',
        host: 'web.example.com',
        service: 'web',
        annotations: { 'auth-type': 'basic', 'auth-secret': 'users' },
      })}`,
      'users.yaml': secretYaml('users', 'alice:one'),
      'unrelated.yaml': secretYaml('unrelated', 'nobody:one'),
    },
    { holdOffMs: 50, maxDelayMs: 1000 },
  );
  t.equal(w.builds.length, 1, 'the first build');

  await w.write('unrelated.yaml', secretYaml('unrelated', 'nobody:two'));
  // the scan that reports the marker saw the edit above (it was written first)
  const marker = w.problem((p) => p.name === 'marker-1');
  await w.write('marker.yaml', markerYaml('marker-1'));
  await marker;
  await w.scheduler.idle();
  t.same(
    dataOf(w.source.snapshot(), 'unrelated'),
    { auth: Buffer.from('nobody:two').toString('base64') },
    'the unrelated Secret is stored at its latest state',
  );
  t.equal(w.builds.length, 1, 'and its change built nothing');

  const rebuilt = w.built(
    (s) => dataOf(s, 'users')?.auth === Buffer.from('alice:two').toString('base64'),
    'the build with the referenced Secret',
  );
  await w.write('users.yaml', secretYaml('users', 'alice:two'));
  await rebuilt;
  await w.scheduler.idle();
  t.equal(w.builds.length, 2, 'the referenced Secret built once');
});

t.test(
  'a file change reaches the scheduler through no timer of the source: one build, after the hold-off',
  async (t) => {
    // A hold-off far longer than a scan takes: the change lands inside the one after the first build.
    const holdOffMs = 1000;
    const w = await wire(
      t,
      {
        'class.yaml': INGRESS_CLASS,
        'site.yaml': `${serviceYaml('web', [])}${ingressYaml({ name: 'web', host: 'one.example.com', service: 'web' })}`,
      },
      { holdOffMs, maxDelayMs: 30_000 },
    );
    t.equal(w.builds.length, 1);

    // Every timer lib/source/ creates while the change travels (a debounce would be one). The caller of
    // setTimeout says whose timer it is: the scheduler's own is created further down the same stack.
    const sourceTimers: string[] = [];
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 50;
    const hook = createHook({
      init(_id, type) {
        if (type !== 'Timeout') return;
        const frames = (new Error('a timer').stack ?? '').split('\n');
        const caller = frames[frames.findIndex((frame) => frame.includes('at setTimeout (node:timers')) + 1];
        if (caller?.includes(`${path.sep}lib${path.sep}source${path.sep}`))
          sourceTimers.push(frames.join('\n'));
      },
    });
    hook.enable();
    t.teardown(() => {
      hook.disable();
      Error.stackTraceLimit = limit;
    });

    const edited = w.built((s) => hostOf(s, 'web') === 'two.example.com', 'the build of the edit');
    // Saved as editors and ConfigMap volumes save, by rename: an in-place write shows the file empty
    // for an instant, and an emptied file is the one case the source gives a moment (source.ts).
    await w.write(
      '.site.yaml.tmp',
      `${serviceYaml('web', [])}${ingressYaml({ name: 'web', host: 'two.example.com', service: 'web' })}`,
    );
    await rename(path.join(w.dir, '.site.yaml.tmp'), path.join(w.dir, 'site.yaml'));
    await edited;
    await w.scheduler.idle();
    hook.disable();
    t.same(sourceTimers, [], 'no timer of the source between the write and the build');
    t.equal(w.builds.length, 2, 'exactly one build for the change');
    const [first = 0, ...rest] = w.holdOffs;
    t.ok(first > 0 && first <= holdOffMs, "the change waited for the scheduler's hold-off");
    t.ok(
      rest.every((ms) => ms < 2),
      `and nothing else: a later timer only re-arms one that fired a little early (libuv counts whole ms): ${w.holdOffs}`,
    );
  },
);

t.test('a burst of 20 writes within the hold-off gives one build with all of them', async (t) => {
  // A hold-off comfortably longer than the gaps between the burst's writes, even on a loaded machine;
  // the burst starts right after the first build, so its first change is inside that hold-off too.
  const w = await wire(
    t,
    {
      'class.yaml': INGRESS_CLASS,
      'a.yaml': `${serviceYaml('web', [])}${ingressYaml({ name: 'a', host: 'a.example.com', service: 'web' })}`,
    },
    { holdOffMs: 400, maxDelayMs: 30_000 },
  );
  const burst = w.built(
    (s) => s.ingresses.length === 21 && hostOf(s, 'a') === 'a19.example.com',
    'the build with every write of the burst',
  );
  for (let i = 0; i < 20; i++) {
    // Asynchronous writes: the watcher sees events between them.
    await w.write(
      `burst-${String(i).padStart(2, '0')}.yaml`,
      ingressYaml({ name: `b${i}`, host: `b${i}.example.com`, service: 'web' }),
    );
    await w.write(
      'a.yaml',
      `${serviceYaml('web', [])}${ingressYaml({ name: 'a', host: `a${i}.example.com`, service: 'web' })}`,
    );
  }
  await burst;
  await w.scheduler.idle();
  t.equal(w.builds.length, 2, 'the first build, then one for the whole burst');
  // A later sentinel change is the next build: nothing else was built in between.
  const sentinel = w.built((s) => find(s.ingresses, 'sentinel') !== undefined, 'the sentinel');
  await w.write('sentinel.yaml', ingressYaml({ name: 'sentinel', host: 's.example.com', service: 'web' }));
  await sentinel;
  await w.scheduler.idle();
  t.equal(w.builds.length, 3);
});
