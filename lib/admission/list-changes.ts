// What differs between two lists of objects by identity. The store rebuilds a kind's list from its
// map in insertion order, so a changed object keeps its position and an added one comes last: two
// consecutive lists are compared position by position, without a set of either. A removal shifts
// what follows it; an object that only moved is then seen on both sides and left out of both.

export function listChanges<T>(previous: readonly T[], next: readonly T[]): { removed: T[]; added: T[] } {
  const before: T[] = [];
  const after: T[] = [];
  const common = Math.min(previous.length, next.length);
  for (let i = 0; i < common; i++) {
    const a = previous[i] as T;
    const b = next[i] as T;
    if (a === b) continue;
    before.push(a);
    after.push(b);
  }
  for (let i = common; i < previous.length; i++) before.push(previous[i] as T);
  for (let i = common; i < next.length; i++) after.push(next[i] as T);
  if (before.length === 0 || after.length === 0) return { removed: before, added: after };
  const inBefore = new Set(before);
  const inAfter = new Set(after);
  return {
    removed: before.filter((object) => !inAfter.has(object)),
    added: after.filter((object) => !inBefore.has(object)),
  };
}
