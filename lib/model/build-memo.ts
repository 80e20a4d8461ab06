// What one build keeps for the next: entries the last build used, keyed by the inputs they were
// made from. A build starts a generation (begin) and ends it (end); an entry not used by the build
// that just ended is gone, so the memory is bounded by what the last snapshot holds (an Ingress
// deleted takes its entry with it at the next build). A context names everything the entries depend
// on besides their key (options, ConfigMap settings): when it changes, nothing is kept.

export class BuildMemo<K, V> {
  #current = new Map<K, V>();
  #previous = new Map<K, V>();
  #context: string | null = null;

  /** Starts a build's generation; a context other than the last one's drops every entry. */
  begin(context = ''): void {
    this.#previous = context === this.#context ? this.#current : new Map();
    this.#current = new Map();
    this.#context = context;
  }

  /** Entries the build did not use are released. */
  end(): void {
    this.#previous = new Map();
  }

  get(key: K): V | undefined {
    let value = this.#current.get(key);
    if (value === undefined) {
      value = this.#previous.get(key);
      if (value !== undefined) this.#current.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.#current.set(key, value);
  }

  /** Entries held now (both generations, a key counted once), for tests and benchmarks. */
  get size(): number {
    let size = this.#current.size;
    for (const key of this.#previous.keys()) if (!this.#current.has(key)) size++;
    return size;
  }
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A set of names in sorted order (code units, as `<` compares strings), kept from build to build:
 * the same names as last time are not sorted again, and a few names added or removed are inserted
 * into or dropped from the last order.
 */
export class SortedNames {
  #names: readonly string[] = [];

  of(names: ReadonlyMap<string, unknown>): readonly string[] {
    const last = this.#names;
    if (last.length === names.size && last.every((name) => names.has(name))) return last;
    const kept = last.filter((name) => names.has(name));
    const known = new Set(kept);
    const added: string[] = [];
    for (const name of names.keys()) if (!known.has(name)) added.push(name);
    let sorted: string[];
    if (added.length > 64) {
      sorted = [...names.keys()].sort(byCodeUnits);
    } else {
      sorted = kept;
      for (const name of added) {
        let low = 0;
        let high = sorted.length;
        while (low < high) {
          const middle = (low + high) >>> 1;
          if ((sorted[middle] as string) < name) low = middle + 1;
          else high = middle;
        }
        sorted.splice(low, 0, name);
      }
    }
    this.#names = sorted;
    return sorted;
  }
}
