// The shared rate-limit zones in one thread: two zone objects over one buffer (two threads' views)
// count as one zone; the table against reference models (a Map for in-flight counts, an ordered Map
// for the least-recently-seen eviction), across index collisions and backward-shift removals; a lock
// left by a terminated holder; and the ZoneMemory that hands the same buffers to every compile.
import t from 'tap';
import { type AccessPolicy, admit } from '../../lib/dataplane/access/access.ts';
import {
  ConnectionZone,
  RequestZone,
  takeRequest,
  ZONE_MAX_ADDRESSES,
} from '../../lib/dataplane/access/rate-limit.ts';
import { allocateZoneBuffer, ZONE_BYTES, zoneNow } from '../../lib/dataplane/access/shared-zone.ts';
import { modelZoneKeys, ZoneMemory } from '../../lib/dataplane/access/zone-memory.ts';
import { createRuntimeCaches } from '../../lib/dataplane/caches.ts';
import { dataplaneError } from '../../lib/dataplane/events.ts';
import { generateDefaultCertificate } from '../../lib/dataplane/listening/sni.ts';
import { compileRuntime, type Runtime } from '../../lib/dataplane/routing/runtime.ts';
import { createEwmaStore } from '../../lib/dataplane/upstream/balancers/ewma.ts';
import type { Model } from '../../lib/model/index.ts';
import { build, ingress, path, rule } from '../model/helpers.ts';

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

t.test(
  'two zone objects over one buffer answer as one zone (each request through either view)',
  async (t) => {
    // [time ms, expected] for 1 r/s with a burst of 3, alternately through each view
    const table: [number, boolean][] = [
      [0, true],
      [0, true],
      [0, true],
      [0, true],
      [0, false],
      [999, false],
      [1000, true],
      [1000, false],
      [3000, true],
      [3000, true],
      [3000, false],
    ];
    const buffer = allocateZoneBuffer();
    const views = [new RequestZone(1, 3, false, buffer), new RequestZone(1, 3, false, buffer)];
    const single = new RequestZone(1, 3, false);
    table.forEach(([now, expected], i) => {
      t.equal(views[i % 2]?.take('10.0.0.1', now), expected, `request ${i} at ${now} ms`);
      t.equal(single.take('10.0.0.1', now), expected, `the same on a zone of its own`);
    });
    t.equal(views[1]?.size, 1);

    const connections = [
      new ConnectionZone(2, buffer.byteLength === ZONE_BYTES ? allocateZoneBuffer() : buffer),
    ];
    const shared = connections[0] as ConnectionZone;
    const other = new ConnectionZone(2, shared.table.buffer);
    t.ok(shared.acquire('a'));
    t.ok(other.acquire('a'));
    t.notOk(shared.acquire('a'), 'the second view took the last slot');
    other.release('a');
    t.equal(shared.inFlight('a'), 1);
  },
);

t.test('rpm and rps over shared buffers: charged together or not at all', async (t) => {
  const rpmBuffer = allocateZoneBuffer();
  const rpsBuffer = allocateZoneBuffer();
  const views = [0, 1].map(() => ({
    rpm: new RequestZone(1, 1, true, rpmBuffer),
    rps: new RequestZone(100, 0, false, rpsBuffer),
  }));
  const at = (i: number, now: number) =>
    takeRequest(views[i % 2]?.rpm ?? null, views[i % 2]?.rps ?? null, 'a', now);
  t.ok(at(0, 0));
  t.notOk(at(1, 1), 'rps rejects (10 ms per request)');
  t.ok(at(0, 20), 'rpm was not charged by the rejected request: its burst of 1 is left');
  t.notOk(at(1, 40), 'now rpm is over');
  const policy: AccessPolicy = {
    deny: null,
    allow: null,
    limits: {
      exempt: null,
      connections: null,
      rpm: views[0]?.rpm ?? null,
      rps: null,
      reqStatus: 503,
      connStatus: 503,
    },
  };
  t.equal(admit(policy, 'a', 50), 503, 'admit reads the same zone');
});

t.test(
  'connection zone against a Map: collisions, removals with backward shift, the address bound',
  async (t) => {
    const zone = new ConnectionZone(3);
    const model = new Map<string, number>();
    const next = random(7);
    // 6,000 addresses over 32,768 slots: many share a probe run, and removals shift entries back
    const addresses = Array.from({ length: 6000 }, (_, i) => `10.${i >> 8}.${i & 255}.${i % 7}`);
    let mismatches = 0;
    for (let i = 0; i < 200_000; i++) {
      const address = addresses[Math.floor(next() * addresses.length)] as string;
      const count = model.get(address) ?? 0;
      if (next() < 0.55) {
        const expected = count < 3 && (count > 0 || model.size < ZONE_MAX_ADDRESSES);
        if (zone.acquire(address) !== expected) mismatches++;
        if (expected) model.set(address, count + 1);
      } else {
        zone.release(address);
        if (count <= 1) model.delete(address);
        else model.set(address, count - 1);
      }
    }
    t.equal(mismatches, 0, 'every acquire answered as the Map says');
    let wrong = 0;
    for (const address of addresses) if (zone.inFlight(address) !== (model.get(address) ?? 0)) wrong++;
    t.equal(wrong, 0, 'every count matches');
    t.equal(zone.table.size, model.size, 'addresses held');
    for (const address of addresses) while (zone.inFlight(address) > 0) zone.release(address);
    t.equal(zone.table.size, 0, 'all released: nothing held');
  },
);

t.test('a full connection zone rejects a new address and takes it once one leaves', async (t) => {
  const zone = new ConnectionZone(1);
  for (let i = 0; i < ZONE_MAX_ADDRESSES; i++) zone.acquire(`a${i}`);
  t.notOk(zone.acquire('new'));
  t.ok(zone.acquire('a5') === false, 'a held address is still limited by its count');
  zone.release('a5');
  t.ok(zone.acquire('new'));
  t.equal(zone.table.size, ZONE_MAX_ADDRESSES);
});

t.test('a request zone evicts the least recently seen address, as an LRU would', async (t) => {
  const zone = new RequestZone(1, 0, false);
  const lru = new Map<string, true>();
  const next = random(11);
  const seen = (address: string) => {
    lru.delete(address);
    lru.set(address, true);
    if (lru.size > ZONE_MAX_ADDRESSES) lru.delete(lru.keys().next().value as string);
  };
  let wrong = 0;
  // 40,000 distinct addresses, a hot quarter coming back often: evictions all along
  for (let i = 0; i < 120_000; i++) {
    const hot = next() < 0.5;
    const address = hot ? `h${Math.floor(next() * 4000)}` : `c${Math.floor(next() * 36_000)}`;
    // burst 0 and the same instant: a remembered address is rejected, a new (or evicted) one accepted
    const accepted = zone.take(address, 0);
    if (accepted !== !lru.has(address)) wrong++;
    seen(address);
  }
  t.equal(wrong, 0, 'accepted exactly when the LRU had forgotten the address');
  t.equal(zone.size, ZONE_MAX_ADDRESSES);
});

t.test('a lock left by a terminated holder is taken over after a while, and the zone emptied', async (t) => {
  const zone = new ConnectionZone(5);
  t.ok(zone.acquire('a'));
  const words = new Int32Array(zone.table.buffer);
  words[0] = 999; // the lock word, as a thread terminated inside the section leaves it
  const reported: unknown[] = [];
  const report = (message: unknown) => reported.push(message);
  dataplaneError.subscribe(report);
  t.teardown(() => dataplaneError.unsubscribe(report));
  const started = zoneNow();
  t.ok(zone.acquire('b'), 'the next caller gets through');
  t.match(
    reported,
    [{ message: /lock was left by a thread that ended holding it/ }],
    'reported on the error channel',
  );
  const waited = zoneNow() - started;
  t.ok(waited >= 250 && waited < 2000, `after about 250 ms (${Math.round(waited)})`);
  t.equal(zone.table.takenOver, 1);
  t.equal(zone.inFlight('a'), 0, 'what the dead holder might have half-written is gone');
  t.equal(zone.inFlight('b'), 1);
  t.equal(words[0], 0, 'released');
});

t.test('a zone costs no memory until it is used (pages reserved, not allocated)', async (t) => {
  const before = process.memoryUsage().arrayBuffers;
  const zones = Array.from({ length: 200 }, () => new RequestZone(1, 0, false));
  const grown = process.memoryUsage().arrayBuffers - before;
  // 200 plain SharedArrayBuffers of a zone's size would count 150 MiB here
  t.ok(
    grown < 8 * 2 ** 20,
    `${(grown / 2 ** 20).toFixed(1)} MiB counted for ${zones.length} zones of ${ZONE_BYTES} bytes`,
  );
  t.ok(zones[199]?.take('a', 0), 'and each works');
});

t.test('zoneNow is the process-wide monotonic clock in ms', async (t) => {
  const before = Number(process.hrtime.bigint()) / 1e6;
  const now = zoneNow();
  const after = Number(process.hrtime.bigint()) / 1e6;
  t.ok(now >= before - 0.01 && now <= after + 0.01, `${before} ≤ ${now} ≤ ${after}`);
});

const generatedDefaultCertificate = await generateDefaultCertificate();

function limited(annotations: Record<string, string>, name = 'site'): Model {
  return build({
    ingresses: [
      ingress(name, {
        nginx: annotations,
        rules: [rule('a.example.com', path('/', 'web:80'), path('/b', 'web:80'))],
      }),
      ingress('free', { rules: [rule('b.example.com', path('/', 'web:80'))] }),
    ],
  }).model;
}

function compile(model: Model, previous: Runtime | null, zones: ZoneMemory): Runtime {
  return compileRuntime(model, previous, {
    generatedDefaultCertificate,
    balancerEnv: { random: Math.random, now: () => 0 },
    ewmaStore: createEwmaStore(),
    caches: createRuntimeCaches(undefined, zones),
  });
}

t.test(
  'ZoneMemory: the owner allocates per zone key, a compile over adopted buffers counts in them',
  async (t) => {
    const model = limited({ 'limit-rps': '5', 'limit-rpm': '100', 'limit-connections': '2' });
    const keys = [...modelZoneKeys(model)].sort();
    t.strictSame(keys, ['default/site conn 2', 'default/site rpm 100 500', 'default/site rps 5 25']);

    const owner = new ZoneMemory();
    const posted = owner.buffersFor(model);
    t.strictSame([...posted.keys()].sort(), keys);
    t.equal(
      owner.buffersFor(model).get('default/site rps 5 25'),
      posted.get('default/site rps 5 25'),
      'stable per key',
    );

    // two "threads": each its own ZoneMemory, adopting what the owner posted
    const runtimes = [0, 1].map(() => {
      const zones = new ZoneMemory();
      zones.adopt(posted);
      return compile(model, null, zones);
    });
    for (const runtime of runtimes)
      for (const key of keys)
        t.equal(
          runtime.rateLimitZones.get(key)?.table.buffer,
          posted.get(key),
          `${key} over the owner's buffer`,
        );
    t.equal(runtimes[0]?.rateLimitZones.size, 3, 'the free Ingress has no zone');

    const changed = limited({ 'limit-rps': '6', 'limit-connections': '2' });
    const next = owner.buffersFor(changed);
    t.equal(owner.size, 4, 'nothing forgotten before the changed model is applied');
    t.equal(
      owner.buffersFor(model).get('default/site rps 5 25'),
      posted.get('default/site rps 5 25'),
      'an apply that failed leaves the served zones their buffers',
    );
    owner.retain(next.keys());
    t.equal(
      next.get('default/site conn 2'),
      posted.get('default/site conn 2'),
      'an unchanged limit keeps its buffer',
    );
    t.notOk(next.has('default/site rps 5 25'), 'a changed one is forgotten');
    t.ok(next.has('default/site rps 6 30'));
    t.equal(owner.size, 2);
  },
);

t.test(
  'one data plane: zones and their buffers taken over by the next compile while unchanged',
  async (t) => {
    const zones = new ZoneMemory();
    const first = compile(limited({ 'limit-rps': '5' }), null, zones);
    const zone = first.rateLimitZones.get('default/site rps 5 25');
    const second = compile(limited({ 'limit-rps': '5', 'limit-connections': '1' }), first, zones);
    t.equal(second.rateLimitZones.get('default/site rps 5 25'), zone, 'the same zone object');
    t.equal(zones.size, 2);
    const third = compile(limited({}), second, zones);
    t.equal(third.rateLimitZones.size, 0);
    t.equal(zones.size, 0, 'zones no route uses are forgotten');
  },
);
