// The verified client-certificate leaves: two sets over one buffer (two threads' views) are one set,
// so a TLS session verified by one data-plane thread and resumed on another finds its leaf; a full set
// forgets the least recently seen leaf; the default is a set of its own.
import t from 'tap';
import { VERIFIED_LEAVES_MAX, VerifiedLeaves } from '../../lib/dataplane/access/verified-leaves.ts';
import { createRuntimeCaches } from '../../lib/dataplane/caches.ts';

const key = (n: number) => `ca-sha|3|${n.toString(16).padStart(64, '0')}`;

t.test('two views of one buffer share their leaves', async (t) => {
  const first = new VerifiedLeaves();
  const second = new VerifiedLeaves(first.buffer);
  first.add(key(1));
  t.ok(second.has(key(1)), 'added by one, seen by the other');
  t.notOk(second.has(key(2)));
  second.add(key(1));
  t.equal(first.size, 1, 'added twice, held once');
  t.notOk(new VerifiedLeaves().has(key(1)), 'a set of its own shares nothing');
});

t.test('data planes given the same buffer share the set; by default each has its own', async (t) => {
  const shared = new VerifiedLeaves();
  const a = createRuntimeCaches(undefined, undefined, shared.buffer);
  const b = createRuntimeCaches(undefined, undefined, shared.buffer);
  a.verifiedLeaves.add(key(7));
  t.ok(b.verifiedLeaves.has(key(7)));
  t.notOk(createRuntimeCaches().verifiedLeaves.has(key(7)));
});

t.test('a full set forgets the least recently seen leaf', async (t) => {
  const leaves = new VerifiedLeaves();
  for (let n = 0; n < VERIFIED_LEAVES_MAX; n++) leaves.add(key(n));
  t.equal(leaves.size, VERIFIED_LEAVES_MAX);
  t.ok(leaves.has(key(0)), 'the first leaf, seen again: now the most recent');
  leaves.add(key(VERIFIED_LEAVES_MAX));
  t.equal(leaves.size, VERIFIED_LEAVES_MAX);
  t.notOk(leaves.has(key(1)), 'the least recently seen is gone');
  t.ok(leaves.has(key(0)));
  t.ok(leaves.has(key(VERIFIED_LEAVES_MAX)));
});
