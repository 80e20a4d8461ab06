// What proxied requests leave to V8's young-generation collections: a request that is over must be
// garbage for the next scavenge. A structure of the data plane that outlives requests and keeps
// dead ones reachable from the old generation (live-set.ts says how a Map of the responses in flight
// did) makes every scavenge copy, then promote, whole requests: the thread then spends several
// times the CPU in GC and serves ~25% fewer requests. Measured here with V8's GC profiler on the
// main thread, which serves the requests (worker-processes: 1; skipped when the suite runs the data
// plane in threads).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GCProfiler } from 'node:v8';
import t from 'tap';
import { echoServer } from '../../examples/demo-backends.ts';
import { type LinkSlot, LiveMap, LiveSet, type Slotted } from '../../lib/dataplane/live-set.ts';
import { v8Gc } from '../../lib/dataplane/v8-gc.ts';
import { createLogger } from '../../lib/log.ts';
import { start } from '../../lib/main.ts';
import { listen, testConfig } from '../support/http.ts';
import { INGRESS_CLASS, ingressYaml, serviceYaml } from '../support/manifests.ts';
import { rawGets } from '../support/raw-gets.ts';
import { THREAD_MODE } from '../support/threads.ts';

t.setTimeout(120_000);

/** Bytes the old space grew by in the scavenges of `profile` (what they promoted, net). */
function promotedByScavenges(profile: ReturnType<GCProfiler['stop']>): { bytes: number; scavenges: number } {
  let bytes = 0;
  let scavenges = 0;
  const oldSpace = (spaces: Array<{ spaceName: string; spaceUsedSize: number }>) =>
    spaces.find((s) => s.spaceName === 'old_space')?.spaceUsedSize ?? 0;
  for (const gc of profile?.statistics ?? []) {
    if (gc.gcType !== 'Scavenge') continue;
    scavenges++;
    bytes += Math.max(
      0,
      oldSpace(gc.afterGC.heapSpaceStatistics) - oldSpace(gc.beforeGC.heapSpaceStatistics),
    );
  }
  return { bytes, scavenges };
}

/** A kind of set for these tests (the data plane's kinds write their pair where they are declared). */
function kind<K extends object>(name: string): LinkSlot<K> {
  const symbol = Symbol(name);
  return {
    name,
    get: (member) => (member as Slotted)[symbol],
    set: (member, link) => {
      (member as Slotted)[symbol] = link;
    },
  };
}

t.test('LiveMap: the Map operations the pipeline uses', async (t) => {
  const map = new LiveMap<object, string>(kind('test map'));
  const [a, b, c] = [{}, {}, {}];
  t.equal(map.size, 0);
  map.set(a, 'a').set(b, 'b').set(c, 'c');
  t.equal(map.size, 3);
  t.equal(map.get(b), 'b');
  t.same(new Set(map.keys()), new Set([a, b, c]), 'keys: every member');
  map.set(b, 'B');
  t.equal(map.size, 3, 'setting a member again replaces its value');
  t.equal(map.get(b), 'B');
  t.equal(map.delete(b), true);
  t.equal(map.delete(b), false, 'deleted once');
  t.equal(map.has(b), false);
  t.equal(map.get(b), undefined);
  t.same(new Set(map.keys()), new Set([a, c]));
  for (const key of map.keys()) map.delete(key);
  t.equal(map.size, 0, 'members deleted while going through keys()');
  map.set(b, 'again');
  t.equal(map.get(b), 'again', 'a member that left may come back');
  map.set(a, 'a');
  t.same(
    new Map(map.entries()),
    new Map([
      [a, 'a'],
      [b, 'again'],
    ]),
    'entries: each member and its value',
  );
  t.same(new Map(map), new Map(map.entries()), 'iterable as a Map is');
  map.clear();
  t.equal(map.size, 0, 'clear');
  t.equal(map.has(a) || map.has(b), false);
  t.same(Object.keys(b), [], 'the link is a symbol property: invisible to Object.keys and JSON');
});

t.test('LiveMap: two sets of one kind, two kinds on one object', async (t) => {
  const one = kind<object>('one kind');
  const first = new LiveMap<object, number>(one);
  const second = new LiveMap<object, number>(one);
  const other = new LiveSet<object>(kind('another kind'));
  const member = {};
  first.set(member, 1);
  t.equal(second.has(member), false, 'a member of one set is not in another of its kind');
  t.equal(second.delete(member), false);
  t.equal(first.get(member), 1, 'and stays in its own');
  t.throws(() => second.set(member, 2), /already in another set of its kind \(one kind\)/);
  other.add(member);
  t.equal(other.has(member), true, 'sets of different kinds are independent');
  t.same(other.values(), [member]);
  t.same([...other], [member]);
  other.clear();
  t.equal(other.size + Number(other.has(member)), 0, 'a set cleared');
  first.delete(member);
  second.set(member, 2);
  t.equal(second.get(member), 2, 'once it left the first, the second may take it');
});

t.test('LiveMap churned from the old generation promotes nothing it no longer holds', async (t) => {
  const map = new LiveMap<{ payload: number[] }, { more: number[] }>(kind('churn'));
  // the map and its first links in the old generation, as a data plane's are after a while
  const warm: Array<{ payload: number[] }> = [];
  for (let i = 0; i < 64; i++) {
    const key = { payload: [i] };
    warm.push(key);
    map.set(key, { more: [i] });
  }
  const gc = v8Gc();
  gc({ type: 'major', execution: 'sync' });
  gc({ type: 'major', execution: 'sync' });
  const profiler = new GCProfiler();
  profiler.start();
  const window: Array<{ payload: number[] }> = [...warm];
  // ~250 B per entry, 200,000 entries: ~50 MB allocated, 64 alive at any time
  for (let i = 0; i < 200_000; i++) {
    const key = { payload: new Array<number>(24).fill(i) };
    map.set(key, { more: new Array<number>(24).fill(i) });
    window.push(key);
    if (window.length > 64) map.delete(window.shift()!);
  }
  const { bytes, scavenges } = promotedByScavenges(profiler.stop());
  t.comment(`${scavenges} scavenges promoted ${(bytes / 2 ** 20).toFixed(2)} MiB`);
  // a Map here: ~50 MiB promoted, nearly all it was given (Node 24)
  t.ok(bytes < 2 * 2 ** 20, `under 2 MiB promoted (${bytes} B)`);
});

t.test(
  'proxied requests are garbage for the young generation',
  { skip: THREAD_MODE && 'the data plane runs in threads' },
  async (t) => {
    const backend = echoServer('young');
    const backendPort = await listen(backend);
    t.teardown(() => new Promise((resolve) => backend.close(resolve)));
    const dir = await mkdtemp(join(tmpdir(), 'ingress-ts-young-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      join(dir, 'all.yaml'),
      [
        INGRESS_CLASS,
        serviceYaml('young', [backendPort]),
        ingressYaml({ name: 'young', host: 'young.test', service: 'young' }),
      ].join(''),
    );
    // the access log and the metrics on, as by default: their records live as long as the requests
    const controller = await start(testConfig(dir), createLogger('silent'), {
      accessLogStdout: { write() {} },
    });
    t.teardown(() => controller.stop(0));
    const port = controller.http.port;
    // answers counted by status, batch by batch: the test itself keeps no request past its batch
    const statuses = new Map<number, number>();
    const serve = async (requests: number) => {
      for (let done = 0; done < requests; done += 1000) {
        const paths = Array.from({ length: 1000 }, (_, i) => `/r/${done + i}`);
        for (const reply of await rawGets(port, 'young.test', paths, 32))
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
      }
    };
    // compiled, pooled and in the old generation: what a data plane that served for a while holds
    await serve(4000);
    const gc = v8Gc();
    gc({ type: 'major', execution: 'sync' });
    gc({ type: 'major', execution: 'sync' });
    statuses.clear();
    const profiler = new GCProfiler();
    profiler.start();
    const requests = 20_000;
    await serve(requests);
    const { bytes, scavenges } = promotedByScavenges(profiler.stop());
    t.same(Object.fromEntries(statuses), { 200: requests }, `${requests} requests answered`);
    const perRequest = bytes / requests;
    t.comment(
      `${scavenges} scavenges promoted ${(bytes / 2 ** 20).toFixed(2)} MiB, ${perRequest.toFixed(0)} B per request`,
    );
    // with the responses in flight in a Map: ~4-5 KB per request (each request's whole graph)
    t.ok(perRequest < 2000, `under 2,000 B promoted per request (${perRequest.toFixed(0)})`);
  },
);
