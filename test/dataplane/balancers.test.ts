// Load balancers (ingress-nginx's balancer/round_robin.lua and balancer/ewma.lua), driven by a fake
// clock and a seeded random source so every run is identical.
import fc from 'fast-check';
import t from 'tap';
import { type BalancerEnv, type Peer, peerKey } from '../../lib/dataplane/upstream/balancer.ts';
import {
  balancerKindFor,
  createBalancer,
  createEwmaStore,
  DECAY_TIME,
  decayEwma,
  defaultBalancerEnv,
  EwmaBalancer,
  ewmaScore,
  RoundRobinBalancer,
} from '../../lib/dataplane/upstream/balancers/index.ts';

function peer(address: string, port = 8080): Peer {
  return { address, port, key: peerKey(address, port) };
}

/** mulberry32: a small seeded PRNG in [0, 1) */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface FakeEnv extends BalancerEnv {
  time: number;
  randomCalls: number;
}

function fakeEnv(random: () => number = seeded(1), time = 1000): FakeEnv {
  const env: FakeEnv = {
    time,
    randomCalls: 0,
    random() {
      env.randomCalls++;
      return random();
    },
    now: () => env.time,
  };
  return env;
}

const A = peer('10.0.0.1');
const B = peer('10.0.0.2');
const C = peer('10.0.0.3');
const D = peer('fd00::4', 9000);

function counts(picks: readonly (Peer | undefined)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of picks) {
    const key = p?.key ?? 'undefined';
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

function repeat<T>(n: number, f: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => f(i));
}

t.test('round_robin', async (t) => {
  t.test('600 picks over 3 peers: exactly 200 each, whatever the start', async (t) => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const rr = new RoundRobinBalancer([A, B, C], fakeEnv(seeded(seed)));
      t.same(counts(repeat(600, () => rr.pick())), { [A.key]: 200, [B.key]: 200, [C.key]: 200 });
    }
    const rr = createBalancer('round_robin', [A, B, C], defaultBalancerEnv, createEwmaStore());
    t.same(counts(repeat(600, () => rr.pick())), { [A.key]: 200, [B.key]: 200, [C.key]: 200 });
  });

  t.test('the start is a random peer and the cycle is strict', async (t) => {
    const firsts = [0, 0.34, 0.67, 0.999999].map((r) => {
      const env = fakeEnv(() => r);
      const rr = new RoundRobinBalancer([A, B, C], env);
      t.equal(env.randomCalls, 1, 'one draw at creation');
      const picks = repeat(7, () => rr.pick()?.address);
      t.equal(env.randomCalls, 1, 'no draw per pick');
      return picks;
    });
    t.same(firsts, [
      ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1'],
      ['10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2'],
      ['10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3'],
      ['10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3'],
    ]);
    // a random() that (wrongly) returns 1 still yields a peer
    t.equal(
      new RoundRobinBalancer(
        [A, B],
        fakeEnv(() => 1),
      ).pick(),
      B,
    );
  });

  t.test('an update with the same set keeps the position; a new set reinitialises', async (t) => {
    let draw = 0;
    const env = fakeEnv(() => draw);
    const rr = new RoundRobinBalancer([A, B, C], env);
    t.equal(rr.pick(), A);
    // same set, other order, other objects: nothing changes, not even the random draw count
    rr.update([peer('10.0.0.3'), peer('10.0.0.2'), peer('10.0.0.1')]);
    t.equal(env.randomCalls, 1);
    t.same(
      repeat(5, () => rr.pick()?.address),
      ['10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.2', '10.0.0.3'],
    );
    // a new set: a new random start over the new peers
    draw = 0.99;
    rr.update([A, B, D]);
    t.equal(env.randomCalls, 2, 'a new random start');
    t.same(rr.peers, [A, B, D]);
    t.same(
      repeat(4, () => rr.pick()),
      [D, A, B, D],
    );
    rr.update([C]);
    t.same(
      repeat(3, () => rr.pick()),
      [C, C, C],
    );
  });

  t.test('a retry skips tried peers while untried ones remain', async (t) => {
    const rr = new RoundRobinBalancer(
      [A, B, C],
      fakeEnv(() => 0),
    );
    const first = rr.pick(); // request 1 gets A, which fails
    t.equal(first, A);
    t.equal(rr.pick(), B); // other requests move the cycle on
    t.equal(rr.pick(), C);
    // the cycle is back at A, but request 1 already tried it
    t.equal(rr.pick(new Set([A.key])), B);
    t.equal(rr.pick(), C, 'the cycle continues after the chosen peer');
    t.equal(rr.pick(new Set([A.key, B.key])), C, 'skips two');
    t.equal(rr.pick(), A);
    t.equal(rr.pick(new Set(['10.9.9.9:1'])), B, 'keys outside the set do not matter');
    // all tried: the next one anyway, and the cycle still moves
    t.equal(rr.pick(new Set([A.key, B.key, C.key])), C);
    t.equal(rr.pick(new Set([A.key, B.key, C.key])), A);
    t.equal(rr.pick(new Set()), B);
  });

  t.test('no peers: undefined, until an update brings some', async (t) => {
    const rr = new RoundRobinBalancer([], fakeEnv());
    t.equal(rr.pick(), undefined);
    t.equal(rr.pick(new Set([A.key])), undefined);
    rr.update([A]);
    t.equal(rr.pick(), A);
    t.equal(rr.pick(new Set([A.key])), A);
    rr.update([]);
    t.equal(rr.pick(), undefined);
    t.same(rr.peers, []);
  });
});

t.test('ewma', async (t) => {
  t.test('decay arithmetic', async (t) => {
    t.equal(DECAY_TIME, 10);
    t.equal(decayEwma(1, 100, 0, 100), 1, 'no time passed: unchanged');
    t.equal(decayEwma(1, 100, 0, 90), 1, 'negative elapsed time counts as 0');
    t.ok(Math.abs(decayEwma(1, 0, 0, 10) - Math.exp(-1)) < 1e-12);
    t.ok(Math.abs(decayEwma(1, 0, 2, 10) - (Math.exp(-1) + 2 * (1 - Math.exp(-1)))) < 1e-12);

    const env = fakeEnv();
    const store = createEwmaStore();
    const ewma = new EwmaBalancer([A, B], env, store);
    env.time = 5; // a clock near 0 (performance.now): the first observation still is the ewma
    ewma.observe(A, 0.4);
    t.same(store.get(A.key), { ewma: 0.4, lastTouched: 5 });
    ewma.observe(A, 2); // same instant: weight 1, the old value stays
    t.same(store.get(A.key), { ewma: 0.4, lastTouched: 5 });
    env.time = 15;
    ewma.observe(A, 2);
    t.ok(Math.abs((store.get(A.key)?.ewma ?? 0) - (0.4 * Math.exp(-1) + 2 * (1 - Math.exp(-1)))) < 1e-12);
    t.equal(store.get(A.key)?.lastTouched, 15);
    ewma.observe(A, Number.NaN);
    ewma.observe(A, -1);
    ewma.observe(A, Number.POSITIVE_INFINITY);
    t.equal(store.get(A.key)?.lastTouched, 15, 'nonsense durations are ignored');
  });

  t.test('scores decay toward 0 while a peer is idle', async (t) => {
    const env = fakeEnv(seeded(7), 100);
    const store = createEwmaStore();
    new EwmaBalancer([A, B], env, store).observe(A, 1);
    t.equal(ewmaScore(store, A.key, 100), 1);
    t.ok(Math.abs(ewmaScore(store, A.key, 110) - Math.exp(-1)) < 1e-12);
    t.ok(ewmaScore(store, A.key, 200) < 1e-4);
    t.equal(ewmaScore(store, C.key, 200), 0, 'no state: 0');
    t.same(store.get(A.key), { ewma: 1, lastTouched: 100 }, 'reading does not store');

    const ewma = new EwmaBalancer([A, B], env, createEwmaStore());

    // A was slow long ago, B moderately fast just now: A's decayed score wins
    env.time = 0;
    ewma.observe(A, 0.5);
    env.time = 95;
    ewma.observe(B, 0.1);
    env.time = 100;
    t.same(counts(repeat(50, () => ewma.pick())), { [A.key]: 50 }, 'without decay B (0.1 < 0.5) would win');
  });

  t.test('prefers a fast peer over a slow one', async (t) => {
    // static: after one observation each, two peers are always compared
    const env = fakeEnv(seeded(3));
    const ewma = createBalancer('ewma', [A, B], env, createEwmaStore());
    ewma.observe(A, 0.5);
    ewma.observe(B, 0.01);
    t.same(counts(repeat(1000, () => ewma.pick())), { [B.key]: 1000 });

    // dynamic, two peers: every response feeds back, the clock advances 10 ms per request
    const env1 = fakeEnv(seeded(17), 0);
    const pair = createBalancer('ewma', [A, B], env1, createEwmaStore());
    let fastOfTwo = 0;
    for (let i = 0; i < 1000; i++) {
      env1.time += 0.01;
      const p = pair.pick();
      if (p === B) fastOfTwo++;
      if (p !== undefined) pair.observe(p, p === B ? 0.01 : 0.5);
    }
    t.ok(fastOfTwo > 900, `fast peer got ${fastOfTwo} of 1000`);

    // dynamic, three peers
    const env2 = fakeEnv(seeded(11), 0);
    const slow = [peer('10.1.0.1'), peer('10.1.0.2')];
    const fast = peer('10.1.0.3');
    const latency = (p: Peer) => (p === fast ? 0.01 : 0.5);
    const ewma2 = createBalancer('ewma', [...slow, fast], env2, createEwmaStore());
    let fastPicks = 0;
    for (let i = 0; i < 1000; i++) {
      env2.time += 0.01;
      const p = ewma2.pick();
      if (p === undefined) throw new Error('no peer');
      if (p === fast) fastPicks++;
      ewma2.observe(p, latency(p));
    }
    // the fast peer is in 2 of the 3 possible pairs: about 2/3 of the picks (random would give 1/3)
    t.ok(fastPicks > 600 && fastPicks < 730, `fast peer got ${fastPicks} of 1000`);
  });

  t.test('ties go to the first of the two drawn', async (t) => {
    const draws = [0.9, 0]; // first = C (index 2 of 3), second = A (index 0 of the other 2)
    const env = fakeEnv(() => draws.shift() ?? 0);
    const ewma = new EwmaBalancer([A, B, C], env, createEwmaStore());
    t.equal(ewma.pick(), C);
  });

  t.test('tried peers are excluded while untried ones remain', async (t) => {
    const env = fakeEnv(seeded(5));
    const store = createEwmaStore();
    const ewma = new EwmaBalancer([A, B, C, D], env, store);
    ewma.observe(A, 0.001); // the best peer, but already tried
    ewma.observe(B, 1);
    ewma.observe(C, 2);
    ewma.observe(D, 3);
    // B, C, D untried: B wins the pairs BC and BD, C wins CD, D none
    const withoutA = counts(repeat(300, () => ewma.pick(new Set([A.key]))));
    t.same(Object.keys(withoutA).sort(), [B.key, C.key]);
    t.ok((withoutA[B.key] ?? 0) > 170 && (withoutA[B.key] ?? 0) < 230, `B ${withoutA[B.key]} ≈ 200`);
    t.same(counts(repeat(100, () => ewma.pick(new Set([A.key, B.key, C.key])))), { [D.key]: 100 });
    t.same(counts(repeat(100, () => ewma.pick(new Set([A.key, B.key, D.key, 'x:1'])))), { [C.key]: 100 });
    // all tried: pick among all, as if nothing was tried
    const all = counts(repeat(300, () => ewma.pick(new Set([A.key, B.key, C.key, D.key]))));
    t.same(Object.keys(all).sort(), [A.key, B.key, C.key]);
    t.ok((all[A.key] ?? 0) > 120 && (all[A.key] ?? 0) < 180, `A ${all[A.key]} ≈ 150: in half of the pairs`);
    // two peers, the fast one tried: the slow one
    const two = new EwmaBalancer([A, D], env, store);
    t.equal(two.pick(new Set([A.key])), D);
    // one peer: it, tried or not; none: undefined
    t.equal(new EwmaBalancer([C], env, store).pick(new Set([C.key])), C);
    t.equal(new EwmaBalancer([], env, store).pick(), undefined);
    t.equal(new EwmaBalancer([], env, store).pick(new Set([C.key])), undefined);
  });

  t.test('update: removed peers lose their state, new ones start at the average (slow start)', async (t) => {
    const env = fakeEnv(seeded(9), 0);
    const store = createEwmaStore();
    const ewma = new EwmaBalancer([A, B], env, store);
    ewma.observe(A, 0.2);
    ewma.observe(B, 0.4);
    env.time = 5;
    ewma.update([B, A]);
    t.equal(store.size, 2, 'same set: nothing happens');
    t.same(store.get(A.key), { ewma: 0.2, lastTouched: 0 });

    ewma.update([A, B, C]);
    t.same(ewma.peers, [A, B, C]);
    t.same(store.get(C.key), { ewma: (0.2 + 0.4) / 2, lastTouched: 5 }, 'raw average, touched now');
    t.same(store.get(A.key), { ewma: 0.2, lastTouched: 0 }, 'kept peers untouched');
    // without slow start C (score 0) would win every pair it is in; with it, A (0.2 decayed) beats it
    env.time = 6;
    // scores: A 0.2·e^-0.6 ≈ 0.11, B 0.4·e^-0.6 ≈ 0.22, C 0.3·e^-0.1 ≈ 0.27: C loses every pair
    t.same(Object.keys(counts(repeat(300, () => ewma.pick()))).sort(), [A.key, B.key]);

    env.time = 7;
    ewma.update([A, D]); // B and C removed, D added: average of A alone
    t.notOk(store.has(B.key));
    t.notOk(store.has(C.key));
    t.same(store.get(D.key), { ewma: 0.2, lastTouched: 7 });

    // no kept peer has a value: nothing is stored for the new ones
    const bare = new EwmaBalancer([peer('10.2.0.1')], env, store);
    bare.update([peer('10.2.0.1'), peer('10.2.0.2')]);
    t.notOk(store.has(peer('10.2.0.2').key));
    bare.update([]);
    t.equal(bare.pick(), undefined);
  });

  t.test('the store is shared between balancers with a common peer', async (t) => {
    const env = fakeEnv(seeded(13));
    const store = createEwmaStore();
    const one = createBalancer('ewma', [A, B], env, store);
    const two = createBalancer('ewma', [A, C], env, store);
    one.observe(A, 0.5);
    one.observe(B, 0.1);
    two.observe(C, 0.2);
    // `two` learned nothing about A itself, yet avoids it
    t.same(counts(repeat(100, () => two.pick())), { [C.key]: 100 });
    two.observe(A, 0.01);
    t.equal(store.get(A.key)?.ewma, 0.5, 'same instant: weight 1');
    env.time += DECAY_TIME * 5;
    two.observe(A, 0.01);
    one.observe(B, 0.1);
    t.same(counts(repeat(100, () => one.pick())), { [A.key]: 100 }, "`one` sees `two`'s observation");
    // as in ingress-nginx, removing a peer from one balancer drops its shared state
    one.update([B]);
    t.notOk(store.has(A.key));
  });
});

t.test('balancerKindFor and createBalancer', async (t) => {
  t.equal(balancerKindFor(undefined), 'round_robin');
  t.equal(balancerKindFor(''), 'round_robin');
  t.equal(balancerKindFor('round_robin'), 'round_robin');
  t.equal(balancerKindFor('ewma'), 'ewma');
  t.equal(balancerKindFor('EWMA'), 'round_robin', 'names match exactly');
  for (const later of ['chash', 'chashsubset', 'sticky_balanced', 'sticky_persistent', 'least_conn']) {
    t.equal(balancerKindFor(later), 'round_robin', later);
  }
  const store = createEwmaStore();
  const rr = createBalancer('round_robin', [A], defaultBalancerEnv, store);
  const ewma = createBalancer('ewma', [A], defaultBalancerEnv, store);
  t.equal(rr.kind, 'round_robin');
  t.ok(rr instanceof RoundRobinBalancer);
  t.equal(ewma.kind, 'ewma');
  t.ok(ewma instanceof EwmaBalancer);
  t.same(ewma.peers, [A]);

  const r = defaultBalancerEnv.random();
  t.ok(r >= 0 && r < 1);
  const before = defaultBalancerEnv.now();
  const wall = performance.now() / 1000;
  const after = defaultBalancerEnv.now();
  t.ok(before <= wall && wall <= after, 'seconds on the performance.now() clock');
});

t.test(
  'property: pick returns a member, undefined iff empty, never a tried peer while untried remain',
  async (t) => {
    const POOL = [A, B, C, D, peer('10.0.0.5'), peer('10.0.0.6', 81), peer('fd00::7', 443)];
    const peerSet = fc.subarray(POOL).chain((ps) => fc.shuffledSubarray(ps, { minLength: ps.length }));
    const op = fc.oneof(
      fc.record({ op: fc.constant('pick' as const), tried: fc.subarray(POOL.map((p) => p.key)) }),
      fc.record({
        op: fc.constant('observe' as const),
        peer: fc.integer({ min: 0, max: POOL.length - 1 }),
        seconds: fc.double({ min: 0, max: 5, noNaN: true }),
      }),
      fc.record({ op: fc.constant('update' as const), peers: peerSet }),
      fc.record({
        op: fc.constant('advance' as const),
        seconds: fc.double({ min: 0, max: 60, noNaN: true }),
      }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('round_robin' as const, 'ewma' as const),
        peerSet,
        fc.array(op, { maxLength: 40 }),
        fc.integer(),
        (kind, initial, ops, seed) => {
          const env = fakeEnv(seeded(seed), 0);
          const balancer = createBalancer(kind, initial, env, createEwmaStore());
          let current = initial;
          for (const o of ops) {
            if (o.op === 'update') {
              balancer.update(o.peers);
              const same =
                o.peers.length === current.length &&
                o.peers.every((p) => current.some((q) => q.key === p.key));
              if (!same) current = o.peers;
            } else if (o.op === 'observe') {
              balancer.observe(POOL[o.peer] as Peer, o.seconds);
            } else if (o.op === 'advance') {
              env.time += o.seconds;
            } else {
              const tried = new Set(o.tried);
              const got = balancer.pick(tried);
              if (current.length === 0) {
                if (got !== undefined) return false;
                continue;
              }
              if (got === undefined || !current.includes(got)) return false;
              if (current.some((p) => !tried.has(p.key)) && tried.has(got.key)) return false;
            }
            if (balancer.peers !== current) return false;
          }
          return true;
        },
      ),
      { numRuns: 500, seed: 42 },
    );
    t.pass('500 runs');
  },
);
