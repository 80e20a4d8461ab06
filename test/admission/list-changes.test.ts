// listChanges: what differs between two lists by identity, as the store's lists change.

import t from 'tap';
import { listChanges } from '../../lib/admission/list-changes.ts';

const object = (name: string) => ({ name });
const [a, b, c, d, e] = [object('a'), object('b'), object('c'), object('d'), object('e')];
const names = (list: ReadonlyArray<{ name: string } | undefined>) => list.map((o) => o?.name).sort();

t.test('changes', async (t) => {
  const cases: Array<[string, object[], object[], string[], string[]]> = [
    ['the same objects', [a, b, c], [a, b, c], [], []],
    ['one replaced in place', [a, b, c], [a, d, c], ['b'], ['d']],
    ['one appended', [a, b], [a, b, c], [], ['c']],
    ['the first removed: the rest only moved', [a, b, c, d], [b, c, d], ['a'], []],
    ['one removed, one added at the end', [a, b, c], [a, c, e], ['b'], ['e']],
    ['two swapped', [a, b, c], [a, c, b], [], []],
    ['from nothing', [], [a, b], [], ['a', 'b']],
    ['to nothing', [a, b], [], ['a', 'b'], []],
  ];
  for (const [name, before, after, removed, added] of cases) {
    const changes = listChanges(before, after);
    t.strictSame(names(changes.removed as Array<{ name: string }>), removed, `${name}: removed`);
    t.strictSame(names(changes.added as Array<{ name: string }>), added, `${name}: added`);
  }
});
