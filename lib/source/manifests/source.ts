// Standalone mode's source: a folder of Kubernetes manifests (YAML or JSON), read once and then
// watched, feeding the same ObjectStore the Kubernetes source feeds.
//
// Each scan lists the tree (tree.ts), re-reads the files that changed (files.ts, parse.ts), merges
// them into one object per kind/namespace/name, and hands the store what differs from the last
// delivery: upserts for new or changed objects, removals for the rest. onChange fires when the store
// calls one of them relevant, so an unrelated Secret or ConfigMap in the folder is stored but builds
// nothing, as in cluster mode.
//
// No timer stands between a file event and the store: the scheduler's hold-off is the one place where
// changes wait. The watcher only coalesces: the events of one event-loop turn share a scan, and events
// arriving during a scan bring exactly one more scan after it. One exception, which delays no content:
// a file that held objects and reads empty looks exactly like one being rewritten in place (truncated,
// not yet written), so its objects stay until it has content again or stayed empty for
// ManifestSourceOptions.emptiedSettleMs; without it an editor's save in place could take its routes down for a build.
//
// Problems are diagnostics (codes MANIFEST_*, docs/diagnostics.md) carrying the file and line; they
// are logged and shown in /debug/model next to the model's.

import path from 'node:path';
import type { KubeObject, ModelOptions, ModelReferences, Snapshot } from '../../model/index.ts';
import { ObjectStore } from '../../store/store.ts';
import { type FileState, mergeFiles, readFileState, sameStamp } from './files.ts';
import { createFirstSeen, type Delivered } from './first-seen.ts';
import { errorMessage } from './parse.ts';
import { type ManifestProblem, problemId, problemOf } from './problems.ts';
import { createManifestTree, type TreeListing } from './tree.ts';

export type { ManifestProblem } from './problems.ts';

export interface ManifestSource {
  /** Reads everything once; resolves when the store holds the first full read; then watches. */
  start(): Promise<void>;
  /** Stops watching and releases everything; resolves after a scan in progress has finished. */
  stop(): Promise<void>;
  /** The store's objects; the same object until something changes. */
  snapshot(): Snapshot;
  /** The last build's references: changes to anything else are only stored. */
  setReferences(references: ModelReferences): void;
  /** Current problems: one per unreadable file or invalid document, plus one per ignored object. */
  problems(): readonly ManifestProblem[];
}

export interface ManifestSourceOptions {
  dir: string;
  /** The class and ConfigMap flags the store's relevance filter reads. */
  model: Pick<
    ModelOptions,
    'controllerClass' | 'ingressClass' | 'ingressClassByName' | 'watchIngressWithoutClass' | 'configMap'
  >;
  /** A relevant change after the first read. */
  onChange: () => void;
  /** A new problem appeared (also called for the problems of the first scan). */
  onProblem?: (problem: ManifestProblem) => void;
  /** Clock for creationTimestamp (tests). */
  now?: () => Date;
  /** How long a file that held objects must stay empty to be believed empty. Default 50. */
  emptiedSettleMs?: number;
}

/** What the store is told to move from one delivery to the next; true when any of it is relevant. */
function deliver(
  store: ObjectStore,
  previous: ReadonlyMap<string, Delivered>,
  next: Map<string, Delivered>,
): boolean {
  let relevant = false;
  for (const [key, { kind, object }] of previous) {
    if (!next.has(key)) relevant = store.remove(kind, object) || relevant;
  }
  for (const [key, item] of next) {
    const before = previous.get(key);
    if (before !== undefined && sameObject(before.object, item.object)) {
      next.set(key, before); // the store keeps the object it has: its snapshot stays the same
      continue;
    }
    relevant = store.upsert(item.kind, item.object) || relevant;
  }
  return relevant;
}

function sameObject(a: KubeObject, b: KubeObject): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Calls a consumer's callback; its failure is not the watcher's. */
function notify(callback: () => void): void {
  try {
    callback();
  } catch {
    // nothing escapes into the watcher
  }
}

export function createManifestSource(options: ManifestSourceOptions): ManifestSource {
  const { dir, onChange, onProblem } = options;
  const emptiedSettleMs = options.emptiedSettleMs ?? 50;
  const store = new ObjectStore({ classes: options.model, configMap: options.model.configMap });
  const firstSeen = createFirstSeen(options.now ?? (() => new Date()));
  const display = (rel: string): string => path.join(dir, rel);
  const files = new Map<string, FileState>();
  let delivered = new Map<string, Delivered>();
  let problems: readonly ManifestProblem[] = [];
  let fileProblems: ManifestProblem[] = [];
  let rootProblem: ManifestProblem | null = null;

  let started = false;
  let stopped = false;
  /** What events named since the last scan began; everything when an event could not say. */
  let dirtyAll = false;
  let dirty = new Set<string>();
  let queued = false;
  let scanning: Promise<void> | null = null;
  /** Files that held objects and were read empty: when first, and the timer that looks again. */
  const emptied = new Map<string, { since: number; timer: ReturnType<typeof setTimeout> }>();

  const tree = createManifestTree(dir, (relDir, name) => {
    if (stopped) return;
    if (name === null) dirtyAll = true;
    else dirty.add(relDir === '' ? name : `${relDir}/${name}`);
    queueScan();
  });

  /** A scan on the next turn, unless one is queued or running (its end looks again). */
  function queueScan(): void {
    if (stopped || queued || scanning !== null || (!dirtyAll && dirty.size === 0)) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      if (stopped || scanning !== null) return;
      scanning = scan(false)
        .catch(() => {
          // scan reports what it can as problems; nothing escapes the watcher
        })
        .finally(() => {
          scanning = null;
          queueScan();
        });
    });
  }

  /** One scan: list, re-read what changed, merge, deliver. */
  async function scan(initial: boolean): Promise<void> {
    const all = initial || dirtyAll;
    const named = dirty;
    dirtyAll = false;
    dirty = new Set();
    let listing: TreeListing;
    try {
      listing = await tree.walk();
    } catch (error) {
      if (initial) throw error;
      // The folder itself is unreadable or gone: keep serving what we have and say so.
      const message = `cannot read the directory: ${errorMessage(error)}; the objects read before are kept`;
      rootProblem = problemOf(dir, null, 'MANIFEST_UNREADABLE', message);
      publishProblems();
      return;
    }
    rootProblem = null;
    for (const rel of [...files.keys()]) if (!listing.files.has(rel)) forget(rel);
    const reads: Promise<void>[] = [];
    for (const [rel, stamp] of listing.files) {
      const state = files.get(rel);
      if (all || !state || named.has(rel) || !sameStamp(state.stamp, stamp)) reads.push(reread(rel));
    }
    await Promise.all(reads);
    if (stopped) return;
    const merged = mergeFiles(files, display);
    fileProblems = merged.problems;
    const next = firstSeen.objects(merged.winners);
    const relevant = deliver(store, delivered, next);
    delivered = next;
    publishProblems();
    if (relevant && !initial) notify(onChange);
  }

  async function reread(rel: string): Promise<void> {
    const since = emptied.get(rel)?.since;
    const trustEmpty = since !== undefined && performance.now() - since >= emptiedSettleMs;
    const next = await readFileState(display(rel), rel, files.get(rel), trustEmpty);
    if (next === 'emptied') {
      if (since === undefined && !stopped) {
        const timer = setTimeout(() => {
          dirty.add(rel);
          queueScan();
        }, emptiedSettleMs);
        emptied.set(rel, { since: performance.now(), timer });
      }
      return; // its previous state stays, stamp included: the next scan reads it again
    }
    if (next === undefined) forget(rel);
    else {
      files.set(rel, next);
      clearTimeout(emptied.get(rel)?.timer);
      emptied.delete(rel);
    }
  }

  function forget(rel: string): void {
    files.delete(rel);
    clearTimeout(emptied.get(rel)?.timer);
    emptied.delete(rel);
  }

  function publishProblems(): void {
    const all = rootProblem ? [rootProblem, ...fileProblems] : fileProblems;
    const before = new Set(problems.map(problemId));
    problems = Object.freeze([...all]);
    if (!onProblem) return;
    for (const problem of all) {
      if (!before.has(problemId(problem))) notify(() => onProblem(problem));
    }
  }

  return {
    async start(): Promise<void> {
      if (started) throw new Error('the manifest source was already started');
      started = true;
      const first = scan(true);
      scanning = first;
      try {
        await first;
      } catch (error) {
        stopped = true;
        tree.close();
        throw new Error(`cannot read the manifest directory ${dir}: ${errorMessage(error)}`, {
          cause: error,
        });
      } finally {
        scanning = null;
      }
      queueScan(); // events that arrived during the first scan
    },

    async stop(): Promise<void> {
      stopped = true;
      tree.close();
      for (const { timer } of emptied.values()) clearTimeout(timer);
      emptied.clear();
      await scanning?.catch(() => {});
    },

    snapshot: () => store.snapshot(),
    setReferences: (references) => store.setReferences(references),
    problems: () => problems,
  };
}
