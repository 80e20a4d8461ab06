// The folder as a whole: its tree (watched), what each file holds, and one read of everything that
// changed since the last, merged into one object per kind/namespace/name.
//
// A file that held objects and reads empty looks exactly like one being rewritten in place (truncated,
// not yet written: `cp`, an editor saving without a rename, a shell redirection). Its objects stay
// until it has content again or has stayed empty for `emptiedSettleMs`, when the folder looks at it
// once more; without this an editor's save could take its routes down for a build. This is the one
// timer of the source, and it never delays content.

import path from 'node:path';
import { type FileState, mergeFiles, readFileState, sameStamp } from './files.ts';
import type { Entry } from './parse.ts';
import type { ManifestProblem } from './problems.ts';
import { createManifestTree, type TreeListing } from './tree.ts';

export interface FolderRead {
  /** The winning object of each kind/namespace/name, in path order. */
  winners: Map<string, Entry>;
  /** The files' problems and one per duplicate definition. */
  problems: ManifestProblem[];
}

export interface ManifestFolder {
  /**
   * Lists the tree and re-reads every file (`all`), or those `named` or whose stat changed; throws
   * when the folder itself cannot be read.
   */
  read(all: boolean, named: ReadonlySet<string>): Promise<FolderRead>;
  /** Stops watching and looking again at emptied files. */
  close(): void;
}

/**
 * `onChange(rel)`: something under the folder changed; `rel` is its path relative to the folder, null
 * when unknown (a watch broke).
 */
export function createManifestFolder(
  dir: string,
  emptiedSettleMs: number,
  onChange: (rel: string | null) => void,
): ManifestFolder {
  const display = (rel: string): string => path.join(dir, rel);
  const files = new Map<string, FileState>();
  /** Files that held objects and were read empty: since when, and the timer that looks again. */
  const emptied = new Map<string, { since: number; timer: ReturnType<typeof setTimeout> }>();
  let closed = false;
  const tree = createManifestTree(dir, (relDir, name) => {
    if (name === null) onChange(null);
    else onChange(relDir === '' ? name : `${relDir}/${name}`);
  });

  function settle(rel: string): void {
    clearTimeout(emptied.get(rel)?.timer);
    emptied.delete(rel);
  }

  async function reread(rel: string): Promise<void> {
    const since = emptied.get(rel)?.since;
    const trustEmpty = since !== undefined && performance.now() - since >= emptiedSettleMs;
    const next = await readFileState(display(rel), rel, files.get(rel), trustEmpty);
    if (next === 'emptied') {
      if (since === undefined && !closed) {
        const timer = setTimeout(() => onChange(rel), emptiedSettleMs);
        emptied.set(rel, { since: performance.now(), timer });
      }
      return; // its previous state stays, stamp included: the next read looks at it again
    }
    settle(rel);
    if (next === undefined) files.delete(rel);
    else files.set(rel, next);
  }

  return {
    async read(all, named) {
      const listing: TreeListing = await tree.walk();
      for (const rel of [...files.keys()]) {
        if (listing.files.has(rel)) continue;
        files.delete(rel);
        settle(rel);
      }
      const reads: Promise<void>[] = [];
      for (const [rel, stamp] of listing.files) {
        const state = files.get(rel);
        if (all || !state || named.has(rel) || !sameStamp(state.stamp, stamp)) reads.push(reread(rel));
      }
      await Promise.all(reads);
      return mergeFiles(files, display);
    },
    close() {
      closed = true;
      tree.close();
      for (const rel of [...emptied.keys()]) settle(rel);
    },
  };
}
