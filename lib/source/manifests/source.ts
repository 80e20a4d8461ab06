// Standalone mode's source: a folder of Kubernetes manifests (YAML or JSON), read once and then
// watched, feeding the same ObjectStore the Kubernetes source feeds.
//
// Each scan reads what changed in the folder (folder.ts: tree.ts lists and watches, files.ts and
// parse.ts read), and hands the store what differs from the last delivery: upserts for new or changed
// objects, removals for the rest. onChange fires when the store calls one of them relevant, so an
// unrelated Secret or ConfigMap in the folder is stored but builds nothing, as in cluster mode.
//
// No timer stands between a file event and the store: the scheduler's hold-off is the one place where
// changes wait. The watcher only coalesces (scan-queue.ts). An emptied file is the one exception, and
// it delays no content (folder.ts).
//
// Problems are diagnostics (codes MANIFEST_*, docs/diagnostics.md) carrying the file and line; they
// are logged and shown in /debug/model next to the model's.

import type { KubeObject, ModelOptions, ModelReferences, Snapshot } from '../../model/index.ts';
import { ObjectStore } from '../../store/store.ts';
import { createFirstSeen, type Delivered } from './first-seen.ts';
import { createManifestFolder, type FolderRead } from './folder.ts';
import { errorMessage } from './parse.ts';
import { createProblemLog, type ManifestProblem, problemOf } from './problems.ts';
import { createScanQueue } from './scan-queue.ts';

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
  /** Read the Gateway API kinds (and Namespaces) from the folder; default true (--enable-gateway-api) */
  gatewayApi?: boolean;
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
    if (!next.has(key)) relevant = matters(() => store.remove(kind, object)) || relevant;
  }
  for (const [key, item] of next) {
    const before = previous.get(key);
    if (before !== undefined && sameObject(before.object, item.object)) {
      next.set(key, before); // the store keeps the object it has: its snapshot stays the same
      continue;
    }
    relevant = matters(() => store.upsert(item.kind, item.object)) || relevant;
  }
  return relevant;
}

/** A store operation's verdict; when judging throws (a malformed object), it may matter. */
function matters(operation: () => boolean): boolean {
  try {
    return operation();
  } catch {
    return true;
  }
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
  const { dir, onChange } = options;
  const store = new ObjectStore({
    classes: options.model,
    configMap: options.model.configMap,
    gatewayApi: options.gatewayApi !== false,
  });
  const firstSeen = createFirstSeen(options.now ?? (() => new Date()));
  const problems = createProblemLog(options.onProblem);
  let delivered = new Map<string, Delivered>();
  let started = false;
  let stopping = false;
  /** The first scan: its changes trigger nothing, and a folder it cannot read fails start(). */
  let initial = true;
  const folder = createManifestFolder(dir, options.emptiedSettleMs ?? 50, (rel) => queue.changed(rel));
  const queue = createScanQueue(scan);

  /** One scan: read what changed, deliver the difference, report. */
  async function scan(all: boolean, named: ReadonlySet<string>): Promise<void> {
    let read: FolderRead;
    try {
      read = await folder.read(all, named);
    } catch (error) {
      if (initial) throw error;
      // The folder itself is unreadable or gone: keep serving what we have and say so.
      const message = `cannot read the directory: ${errorMessage(error)}; the objects read before are kept`;
      problems.folderUnreadable(problemOf(dir, null, 'MANIFEST_UNREADABLE', message));
      return;
    }
    if (stopping) return;
    const next = firstSeen.objects(read.winners);
    const relevant = deliver(store, delivered, next);
    delivered = next;
    problems.read(read.problems);
    if (relevant && !initial) notify(onChange);
  }

  return {
    async start(): Promise<void> {
      if (started) throw new Error('the manifest source was already started');
      started = true;
      try {
        await queue.first();
      } catch (error) {
        stopping = true;
        folder.close();
        await queue.stop();
        throw new Error(`cannot read the manifest directory ${dir}: ${errorMessage(error)}`, {
          cause: error,
        });
      } finally {
        initial = false;
      }
    },

    async stop(): Promise<void> {
      stopping = true;
      folder.close();
      await queue.stop();
    },

    snapshot: () => store.snapshot(),
    setReferences: (references) => store.setReferences(references),
    problems: () => problems.current(),
  };
}
