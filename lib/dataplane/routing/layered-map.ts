// A string-keyed map that a compile can change without copying: `patched` returns a new map that
// shares this one's entries and holds the changed ones in a small layer above them. A one-Ingress
// change at 10,000 Ingresses then costs the few names it touches, where a copy of a 20,000-entry Map
// costs milliseconds and the garbage of its table; the map it was patched from is left as it is (the
// runtime that holds it may still be serving, or the patch may be discarded). Once the layer has
// grown past an eighth of the base, the patch folds both into fresh maps: that copy is paid once per
// thousands of changed names at that size. Until then the base still holds the entries the layer
// replaced or removed (at most that eighth: old compiled servers, not old models or runtimes).

/** A key the layer removed, though the base holds it. */
const GONE: unique symbol = Symbol('gone');
type Layer<V> = Map<string, V | typeof GONE>;

export class LayeredMap<V> implements ReadonlyMap<string, V> {
  readonly #base: Map<string, V>;
  readonly #layer: Layer<V> | null;
  #size: number;

  constructor(base: Map<string, V> = new Map(), layer: Layer<V> | null = null, size = base.size) {
    this.#base = base;
    this.#layer = layer;
    this.#size = size;
  }

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    const layer = this.#layer;
    if (layer !== null) {
      const value = layer.get(key);
      if (value !== undefined) return value === GONE ? undefined : value;
    }
    return this.#base.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /**
   * Adds `key` unless the map holds it: only while the map is being filled, before it is patched or
   * shared (a patched map's base belongs to its ancestors too).
   */
  addIfAbsent(key: string, value: V): void {
    if (this.#layer !== null) throw new Error('a patched map is not filled in place');
    if (this.#base.has(key)) return;
    this.#base.set(key, value);
    this.#size++;
  }

  /** This map with `changes` made (undefined: the key is removed); this map is left as it is. */
  patched(changes: Iterable<readonly [string, V | undefined]>): LayeredMap<V> {
    const base = this.#base;
    const layer: Layer<V> = new Map(this.#layer ?? []);
    let size = this.#size;
    for (const [key, value] of changes) {
      // the layer alone may already say it (an earlier change in the same patch)
      const before = layer.has(key) ? layer.get(key) !== GONE : base.has(key);
      if (value === undefined) {
        if (base.has(key)) layer.set(key, GONE);
        else layer.delete(key);
        if (before) size--;
      } else {
        layer.set(key, value);
        if (!before) size++;
      }
    }
    if (layer.size <= 64 + base.size / 8) return new LayeredMap(base, layer.size === 0 ? null : layer, size);
    const merged = new Map(base);
    for (const [key, value] of layer) {
      if (value === GONE) merged.delete(key);
      else merged.set(key, value);
    }
    return new LayeredMap(merged);
  }

  *entries(): MapIterator<[string, V]> {
    const layer = this.#layer;
    for (const entry of this.#base) if (layer === null || !layer.has(entry[0])) yield entry;
    if (layer !== null) for (const [key, value] of layer) if (value !== GONE) yield [key, value];
  }

  *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const [key, value] of this.entries()) callback(value, key, this);
  }
}
