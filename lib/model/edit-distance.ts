// How far apart two names are, for "did you mean" hints on annotations and ConfigMap keys: a few
// lines of Levenshtein suffice for names this short and lists this small.

/** Levenshtein distance, stopping early past `limit`. */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      current.push(value);
      if (value < best) best = value;
    }
    if (best > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length]!;
}

/** The name of `known` closest to one of `spellings`, at most `limit` edits away; ties: the first. */
export function closestName(
  spellings: readonly string[],
  known: Iterable<string>,
  limit: number,
): string | null {
  let closest: string | null = null;
  let distance = limit + 1;
  for (const candidate of known) {
    for (const spelling of spellings) {
      const d = editDistance(spelling, candidate, distance - 1);
      if (d < distance) {
        distance = d;
        closest = candidate;
      }
    }
  }
  return closest;
}
