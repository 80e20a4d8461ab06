// The manifest folder's tree: its manifest files with their stats, and one non-recursive fs.watch per
// directory, set up during each walk BEFORE the directory is listed, so nothing written after a walk
// saw a directory goes unnoticed. (Node's recursive mode on Linux walks the tree asynchronously with
// no "ready" signal, descends into node_modules and dot directories, and has used stat polling in
// some versions.)
//
// Files: *.yaml, *.yml, *.json under the folder, recursively. Dot-files and dot-directories (editor
// temp files, a ConfigMap volume's ..data machinery) and node_modules are skipped; symlinks to files
// are followed (a ConfigMap volume's files are such symlinks), symlinks to directories are not.

import { type Dirent, type FSWatcher, watch } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { type Stamp, toStamp } from './files.ts';

const MANIFEST_FILE = /\.(ya?ml|json)$/;

export interface TreeListing {
  /** relative path → stat of every manifest file */
  files: Map<string, Stamp>;
  /** relative paths of the directories listed ('' is the folder itself) */
  dirs: Set<string>;
}

export interface ManifestTree {
  /** Lists the tree, watching every directory it lists; throws when the folder itself cannot be read. */
  walk(): Promise<TreeListing>;
  /** Stops watching everything; a walk after this watches nothing. */
  close(): void;
}

/**
 * `onEvent(relDir, name)`: something in relDir changed; `name` is what changed, null when unknown
 * (the watch broke).
 */
export function createManifestTree(
  dir: string,
  onEvent: (relDir: string, name: string | null) => void,
): ManifestTree {
  /** One watcher per directory, with the inode it watches (a directory replaced by another one of
   * the same name needs a new watcher). */
  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  let closed = false;
  const abs = (rel: string): string => path.join(dir, rel);

  function ensureWatcher(relDir: string, ino: number): void {
    if (closed) return;
    const existing = watchers.get(relDir);
    if (existing?.ino === ino) return;
    existing?.watcher.close();
    const own = path.basename(path.resolve(abs(relDir)));
    const forget = (): void => {
      watcher.close();
      if (watchers.get(relDir)?.watcher === watcher) watchers.delete(relDir);
    };
    const watcher = watch(abs(relDir), { persistent: true }, (event, filename) => {
      // A watch follows an inode: when the directory itself is deleted or moved away, inotify says
      // "rename" with the directory's own name, and the watch is dead (or watches the moved
      // directory). Forget it, so the rescan watches whatever now has that name, even a new
      // directory that got the same inode number. (A file named like its directory costs a re-watch.)
      if (event === 'rename' && filename?.toString() === own) forget();
      onEvent(relDir, filename === null ? null : filename.toString());
    });
    watcher.on('error', () => {
      // The watch broke: forget it; the rescan sets it up again if the directory is still there.
      forget();
      onEvent(relDir, null);
    });
    watchers.set(relDir, { watcher, ino });
  }

  /** Lists one directory (watched first) into the listing, descending into subdirectories. */
  async function visit(relDir: string, listing: TreeListing): Promise<void> {
    const where = abs(relDir);
    let entries: Dirent[];
    try {
      ensureWatcher(relDir, (await stat(where)).ino);
      entries = await readdir(where, { withFileTypes: true });
    } catch (error) {
      if (relDir === '') throw error;
      return; // gone already
    }
    listing.dirs.add(relDir);
    await Promise.all(entries.map((entry) => visitEntry(relDir, entry, listing)));
  }

  async function visitEntry(relDir: string, entry: Dirent, listing: TreeListing): Promise<void> {
    const name = entry.name;
    if (name.startsWith('.')) return;
    const rel = relDir === '' ? name : `${relDir}/${name}`;
    if (entry.isDirectory()) {
      if (name !== 'node_modules') await visit(rel, listing);
      return;
    }
    if (!MANIFEST_FILE.test(name) || !(entry.isFile() || entry.isSymbolicLink())) return;
    try {
      const stats = await stat(abs(rel), { bigint: true });
      if (stats.isFile()) listing.files.set(rel, toStamp(stats));
    } catch {
      // vanished meanwhile, or a dangling symlink (an editor's lock file): not a manifest
    }
  }

  return {
    async walk() {
      const listing: TreeListing = { files: new Map(), dirs: new Set() };
      await visit('', listing);
      // directories gone since the last walk: their watches are dead
      for (const [relDir, { watcher }] of watchers) {
        if (!listing.dirs.has(relDir)) {
          watcher.close();
          watchers.delete(relDir);
        }
      }
      return listing;
    },
    close() {
      closed = true;
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
