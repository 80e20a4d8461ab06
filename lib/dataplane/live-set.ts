// Sets of the objects a data plane is serving now (responses in flight, TLS sockets, tunnels), with
// the Map and Set API the data plane needs, kept off V8's hash tables.
//
// A Map or Set that lives long and sees one add and one delete per request (or connection) makes
// the young generation's collections keep dead requests alive. Its backing table fills with
// deleted slots and is rebuilt every few dozen requests; the table it replaces stays linked to the
// new one and keeps the entries it held at that moment. Once one of these tables sits in the old
// generation (the set lived long enough), a scavenge treats everything it reaches as alive: the
// next table, its entries, and through them each request's whole graph (request, response, the
// upstream's header arrays, buffers). They are copied, then promoted, and wait for a full
// collection. Measured with one such Map of the responses in flight (`--trace-gc-nvp`, wrk -c64):
// ~13 MB survived each scavenge instead of ~0.5 MB, each scavenge paused ~15 ms instead of ~1.5 ms,
// and the thread served ~26k instead of ~35k requests/s.
//
// Here each member carries its own link in a property (a symbol's, or a field its class declares) that
// is set once and cleared to undefined on delete, so the member's shape does not change again. The
// property is read and written only through the kind's LinkSlot: two small functions written where
// the kind is declared, so that each kind's property accesses have inline caches of their own. Had
// the set's methods read `member[symbol]` themselves, their caches would see every kind's objects
// and symbols, go megamorphic, and cost a stub-cache lookup per access (bench/README.md, "A set's
// property access per kind"). Members are chained in a doubly linked list whose links are cleared
// when a member leaves: an object that left holds no pointer to one that is still in, whatever
// generation it is in. An object is in at most one set of a kind at a time.

/**
 * Where the members of one kind of set keep their link. Write the pair where the kind is declared
 * (never from a shared factory: closures of one function literal share their inline caches), e.g.
 * `{ name: 'open TLS connection', get: (s) => (s as Slotted)[TLS], set: (s, link) => { (s as Slotted)[TLS] = link; } }`.
 */
export interface LinkSlot<K> {
  /** the kind, for the error of a member put in two sets of it */
  readonly name: string;
  get(member: K): unknown;
  set(member: K, link: unknown): void;
}

/** An object as a LinkSlot reads it: its link under the kind's symbol. */
export type Slotted = { [key: symbol]: unknown };

interface Link<K, V> {
  owner: object | null;
  key: K | null;
  value: V | undefined;
  prev: Link<K, V> | null;
  next: Link<K, V> | null;
}

/** A map from live objects to a value each: get, set, has and delete cost one property access. */
export class LiveMap<K extends object, V> {
  readonly #slot: LinkSlot<K>;
  #head: Link<K, V> | null = null;
  #size = 0;

  /** `slot`: where this kind of set keeps its members' links (one LinkSlot per kind, at module level) */
  constructor(slot: LinkSlot<K>) {
    this.#slot = slot;
  }

  get size(): number {
    return this.#size;
  }

  #own(key: K): Link<K, V> | undefined {
    const link = this.#slot.get(key) as Link<K, V> | undefined;
    return link !== undefined && link.owner === this ? link : undefined;
  }

  get(key: K): V | undefined {
    return this.#own(key)?.value;
  }

  has(key: K): boolean {
    return this.#own(key) !== undefined;
  }

  set(key: K, value: V): this {
    const slot = this.#slot;
    const existing = slot.get(key) as Link<K, V> | undefined;
    if (existing !== undefined) {
      if (existing.owner !== this) throw new Error(`already in another set of its kind (${slot.name})`);
      existing.value = value;
      return this;
    }
    const link: Link<K, V> = { owner: this, key, value, prev: null, next: this.#head };
    if (this.#head !== null) this.#head.prev = link;
    this.#head = link;
    slot.set(key, link);
    this.#size++;
    return this;
  }

  delete(key: K): boolean {
    const link = this.#own(key);
    if (link === undefined) return false;
    this.#slot.set(key, undefined);
    if (link.prev === null) this.#head = link.next;
    else link.prev.next = link.next;
    if (link.next !== null) link.next.prev = link.prev;
    link.owner = null;
    link.key = null;
    link.value = undefined;
    link.prev = null;
    link.next = null;
    this.#size--;
    return true;
  }

  /** Every member leaves. */
  clear(): void {
    for (const key of this.keys()) this.delete(key);
  }

  /** The keys as they are now (an array: callers may delete while they go through it). */
  keys(): K[] {
    const keys: K[] = [];
    for (let link = this.#head; link !== null; link = link.next) keys.push(link.key!);
    return keys;
  }

  /** The members and their values as they are now (an array, as keys()). */
  entries(): Array<[K, V]> {
    const entries: Array<[K, V]> = [];
    for (let link = this.#head; link !== null; link = link.next) entries.push([link.key!, link.value!]);
    return entries;
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries()[Symbol.iterator]();
  }
}

/** A set of live objects (see LiveMap). */
export class LiveSet<T extends object> {
  readonly #members: LiveMap<T, true>;

  /** `slot`: as LiveMap's */
  constructor(slot: LinkSlot<T>) {
    this.#members = new LiveMap<T, true>(slot);
  }

  get size(): number {
    return this.#members.size;
  }

  has(value: T): boolean {
    return this.#members.has(value);
  }

  add(value: T): this {
    this.#members.set(value, true);
    return this;
  }

  delete(value: T): boolean {
    return this.#members.delete(value);
  }

  /** Every member leaves. */
  clear(): void {
    this.#members.clear();
  }

  /** The members as they are now (an array: callers may delete while they go through it). */
  values(): T[] {
    return this.#members.keys();
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.values()[Symbol.iterator]();
  }
}
