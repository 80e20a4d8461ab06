// Sorting the many tiny arrays of a build (3 endpoints of an upstream, the routes of a host).
// V8's Array.prototype.sort allocates work arrays on every call, and a large build makes tens of
// thousands of such calls (their share of allocation is in bench/README.md). Insertion sort in place
// is stable and allocates nothing.

export function sortSmall<T>(items: T[], compare: (a: T, b: T) => number): T[] {
  if (items.length > 16) return items.sort(compare);
  for (let i = 1; i < items.length; i++) {
    const item = items[i] as T;
    let j = i - 1;
    while (j >= 0 && compare(items[j] as T, item) > 0) {
      items[j + 1] = items[j] as T;
      j--;
    }
    items[j + 1] = item;
  }
  return items;
}
