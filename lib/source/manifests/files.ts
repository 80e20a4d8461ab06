// What each manifest file holds, read again only when it changed, and the files merged into one set of
// objects.
//
// - A file is re-read when an event named it or its stat changed (new inode after an atomic rename,
//   size, mtime, ctime); its content hash then tells a real change from a touch. A file whose stat
//   moved while it was read is being written: that read is not used (the writer's events bring
//   another scan).
// - A file that held objects and reads empty is most likely being rewritten in place (`cp`, an editor
//   saving without a rename, a shell redirection: the truncation comes first, the content after it):
//   such a read is reported as 'emptied' and the caller decides when to believe it.
// - While a file has a document that cannot be read, the objects it held before and no valid document
//   defines any more stay (kubectl apply would leave them in the cluster as they were): a typo in one
//   document never takes its object's routes down. Once every document parses, the file holds
//   exactly what it says. A file that cannot be read at all keeps everything it held.
// - The same kind/namespace/name twice: the first in path order (then document order) wins, the other
//   is a problem.

import { hash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { open } from 'node:fs/promises';
import { type Entry, errorMessage, isRecord, labelOf, parseManifestFile } from './parse.ts';
import { type ManifestProblem, problemOf } from './problems.ts';

export interface Stamp {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export interface FileState {
  stamp: Stamp | null;
  /** sha256 of the last read's text, good or bad; null after a read error. (Not the text: at 10,000
   * Ingresses the files are tens of MiB.) */
  digest: string | null;
  /** Objects of the valid documents of the last read, plus, while some document is invalid, those
   * held before that no valid document defines. */
  entries: Entry[];
  /** The read failure, or the findings of the last read. */
  problems: ManifestProblem[];
}

export function toStamp(stats: BigIntStats): Stamp {
  return { ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}

export function sameStamp(a: Stamp | null, b: Stamp): boolean {
  return (
    a !== null && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
  );
}

function errorCode(error: unknown): string | undefined {
  return isRecord(error) && typeof error.code === 'string' ? error.code : undefined;
}

/** What a problem adds when a file's earlier objects stay. */
function keptNote(kept: number): string {
  return kept > 0
    ? `; the ${kept} object(s) it held before and no longer defines are kept until it is fixed`
    : '';
}

/** The same objects in the same order (compared as JSON; only computed when a file changed). */
function sameObjects(a: readonly Entry[], b: readonly Entry[]): boolean {
  if (a.length !== b.length) return false;
  const json = (entries: readonly Entry[]) => JSON.stringify(entries.map((entry) => entry.object));
  return json(a) === json(b);
}

/** The bytes of a file and its stat after reading them; null when the stat moved meanwhile. */
async function readSettled(file: string): Promise<{ bytes: Buffer; stamp: Stamp } | null> {
  const handle = await open(file, 'r');
  try {
    const before = toStamp(await handle.stat({ bigint: true }));
    // bytes, then one decode: readFile's own 'utf8' decodes chunk by chunk and concatenates
    const bytes = await handle.readFile();
    const after = toStamp(await handle.stat({ bigint: true }));
    return sameStamp(before, after) && BigInt(bytes.length) === after.size ? { bytes, stamp: after } : null;
  } finally {
    await handle.close();
  }
}

/**
 * Reads one file (shown in messages as `file`) into its next state. undefined: it is gone; the
 * previous state unchanged: it is being written, or its content did not change; 'emptied': it held
 * objects and is empty now, unless `trustEmpty`.
 */
export async function readFileState(
  file: string,
  rel: string,
  previous: FileState | undefined,
  trustEmpty: boolean,
): Promise<FileState | undefined | 'emptied'> {
  let read: { bytes: Buffer; stamp: Stamp } | null;
  try {
    read = await readSettled(file);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    const kept = previous?.entries.length ?? 0;
    const note = kept > 0 ? `; the ${kept} object(s) it held before are kept` : '';
    const message = `cannot read the file: ${errorMessage(error)}${note}`;
    return {
      stamp: null,
      digest: null,
      entries: previous?.entries ?? [],
      problems: [problemOf(file, null, 'MANIFEST_UNREADABLE', message)],
    };
  }
  if (read === null) return previous ?? { stamp: null, digest: null, entries: [], problems: [] };
  if (read.bytes.length === 0 && !trustEmpty && (previous?.entries.length ?? 0) > 0) return 'emptied';
  let { bytes } = read;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3); // a BOM
  const digest = hash('sha256', bytes, 'base64');
  if (previous && previous.digest === digest) return { ...previous, stamp: read.stamp };
  return parsedState(file, rel, bytes.toString('utf8'), read.stamp, digest, previous);
}

function parsedState(
  file: string,
  rel: string,
  text: string,
  stamp: Stamp,
  digest: string,
  previous: FileState | undefined,
): FileState {
  const parsed = parseManifestFile(rel, text);
  let entries = parsed.entries;
  let kept = 0;
  if (parsed.broken && previous) {
    // what the invalid documents held before is among these: keep them as they were
    const defined = new Set(entries.map((entry) => entry.key));
    const carried = previous.entries.filter((entry) => !defined.has(entry.key));
    kept = carried.length;
    if (kept > 0) entries = [...entries, ...carried];
  }
  if (previous && previous.entries.length > 0 && sameObjects(previous.entries, entries)) {
    // Same objects (a comment or formatting changed): keep their identity, take the new lines.
    const old = previous.entries;
    entries = entries.map((entry, i) => ({ ...entry, object: old[i]?.object ?? entry.object }));
  }
  const problems = parsed.findings.map(({ line, code, message, id }) =>
    problemOf(
      file,
      line,
      code,
      code === 'MANIFEST_INVALID' ? `${message}: this document is ignored${keptNote(kept)}` : message,
      id,
    ),
  );
  return { stamp, digest, entries, problems };
}

/**
 * The files' objects in path order, the first definition of each winning, and every problem: the
 * files' own and one per duplicate. `display` turns a relative path into the one shown in messages.
 */
export function mergeFiles(
  files: ReadonlyMap<string, FileState>,
  display: (rel: string) => string,
): { winners: Map<string, Entry>; problems: ManifestProblem[] } {
  const winners = new Map<string, { rel: string; entry: Entry }>();
  const problems: ManifestProblem[] = [];
  for (const rel of [...files.keys()].sort()) {
    const state = files.get(rel)!;
    problems.push(...state.problems);
    for (const entry of state.entries) {
      const first = winners.get(entry.key);
      if (first === undefined) {
        winners.set(entry.key, { rel, entry });
        continue;
      }
      const where = first.entry.line === null ? '' : ` (line ${first.entry.line})`;
      problems.push(
        problemOf(
          display(rel),
          entry.line,
          'MANIFEST_DUPLICATE',
          `${labelOf(entry.id)} is also defined in ${display(first.rel)}${where}, which comes first: this one is ignored`,
          entry.id,
        ),
      );
    }
  }
  const entries = new Map<string, Entry>();
  for (const [key, { entry }] of winners) entries.set(key, entry);
  return { winners: entries, problems };
}
