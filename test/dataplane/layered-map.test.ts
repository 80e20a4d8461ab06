// A LayeredMap patched over and over must hold what a plain Map given the same changes holds, fold
// its layer without losing an entry, and leave every map it was patched from as it was (a runtime
// still serving, or a discarded prepare). The host table on top of it: names and wildcards alike.
import fc from 'fast-check';
import t from 'tap';
import { LayeredMap } from '../../lib/dataplane/routing/layered-map.ts';
import { HostTable } from '../../lib/dataplane/routing/router.ts';

const sorted = (entries: Iterable<[string, number]>) =>
  [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

// few keys for collisions, many changes per patch for folds (a layer folds past 64 + size / 8)
const key = fc.integer({ min: 0, max: 300 }).map((n) => `k${n}`);
const patch = fc.array(fc.tuple(key, fc.option(fc.integer(), { nil: undefined })), { maxLength: 120 });

t.test('patched maps equal a plain Map, and the maps they came from do not change', async (t) => {
  let folds = 0;
  fc.assert(
    fc.property(
      fc.array(fc.tuple(key, fc.integer()), { maxLength: 200 }),
      fc.array(patch, { maxLength: 8 }),
      (initial, patches) => {
        let map = new LayeredMap<number>();
        const reference = new Map<string, number>();
        for (const [k, v] of initial) {
          map.addIfAbsent(k, v);
          if (!reference.has(k)) reference.set(k, v);
        }
        const history: Array<[LayeredMap<number>, Array<[string, number]>]> = [];
        for (const changes of patches) {
          history.push([map, sorted(reference)]);
          const next = map.patched(changes);
          for (const [k, v] of changes) {
            if (v === undefined) reference.delete(k);
            else reference.set(k, v);
          }
          map = next;
          if (!t.strictSame(sorted(map), sorted(reference), 'the same entries')) return false;
          if (map.size !== reference.size) return t.equal(map.size, reference.size, 'the same size');
          for (const [k] of changes) if (map.get(k) !== reference.get(k)) return t.fail(`get ${k}`);
          if (map.has('k999')) return t.fail('an absent key');
        }
        for (const [old, entries] of history) {
          if (!t.strictSame(sorted(old), entries, 'an earlier map is unchanged')) return false;
          if (old.size !== entries.length) return t.fail('an earlier size changed');
        }
        // a fold leaves a map with no layer: adding in place is then allowed again
        if (patches.length > 0) {
          try {
            map.addIfAbsent('fresh', 1);
            folds++;
          } catch {}
        }
        return true;
      },
    ),
    {
      numRuns: 200,
      // a sequence that must fold (100 new keys over an empty map), whatever the random runs draw:
      // with only those, a run without a fold was possible
      examples: [[[], [Array.from({ length: 100 }, (_, i): [string, number | undefined] => [`k${i}`, i])]]],
    },
  );
  t.ok(folds > 0, `layers were folded (${folds} times)`);
  t.throws(
    () => new LayeredMap<number>().patched([['a', 1]]).addIfAbsent('b', 2),
    'a patched map is not filled in place',
  );
});

t.test('a patched host table: names, wildcards, removals, a new catch-all', async (t) => {
  const table = new HostTable<string>('catch-all');
  table.add('a.com', 'A');
  table.add('*.w.com', 'W');
  table.add('a.com', 'not this one: the first registration wins');
  const patched = table.patched(
    'catch-all 2',
    new Map([
      ['a.com', undefined],
      ['b.com', 'B'],
      ['*.w.com', undefined],
      ['*.v.com', 'V'],
    ]),
  );
  t.strictSame(
    [table.lookup('a.com'), table.lookup('x.w.com'), table.lookup('b.com'), table.lookup('x.v.com')],
    ['A', 'W', 'catch-all', 'catch-all'],
    'the table patched from is unchanged',
  );
  t.strictSame(
    [patched.lookup('a.com'), patched.lookup('x.w.com'), patched.lookup('b.com'), patched.lookup('x.v.com')],
    ['catch-all 2', 'catch-all 2', 'B', 'V'],
  );
  t.strictSame([...patched.entries()].sort(), [
    ['*.v.com', 'V'],
    ['b.com', 'B'],
  ]);
  t.throws(() => patched.add('c.com', 'C'), 'a patched table is not filled in place');
});
