// Findings about manifest files as diagnostics: on the object concerned when the document says which,
// else on a `Manifest` named after the file, always with the file and line.

import { DIAGNOSTIC_CODES, type Diagnostic } from '../../model/diagnostics.ts';
import { redactText } from '../../model/redact.ts';
import type { ManifestCode, ObjectId } from './parse.ts';

export interface ManifestProblem extends Diagnostic {
  file: string;
  line: number | null;
}

/** Kind of the diagnostics about a document that names no object (it does not parse, say). */
const MANIFEST_KIND = 'Manifest';

export function problemOf(
  file: string,
  line: number | null,
  code: ManifestCode,
  message: string,
  id?: ObjectId,
): ManifestProblem {
  const object = id ?? { kind: MANIFEST_KIND, namespace: '', name: file };
  const severity = DIAGNOSTIC_CODES[code][0];
  return { ...object, severity, code, message: redactText(message), file, line };
}

/** Identity of a problem across scans: a problem seen again is not reported again. */
export function problemId(problem: ManifestProblem): string {
  return `${problem.file}\0${problem.line}\0${problem.code}\0${problem.message}`;
}

export interface ProblemLog {
  /** The folder itself cannot be read: this problem first, the files' problems as they were. */
  folderUnreadable(problem: ManifestProblem): void;
  /** A complete read of the folder: its problems are all there are. */
  read(problems: readonly ManifestProblem[]): void;
  current(): readonly ManifestProblem[];
}

/** The current problems; `onProblem` hears of each one not current before. */
export function createProblemLog(onProblem?: (problem: ManifestProblem) => void): ProblemLog {
  let root: ManifestProblem | null = null;
  let files: readonly ManifestProblem[] = [];
  let current: readonly ManifestProblem[] = [];

  function publish(): void {
    const all = root ? [root, ...files] : files;
    const before = new Set(current.map(problemId));
    current = Object.freeze([...all]);
    if (!onProblem) return;
    for (const problem of all) {
      if (before.has(problemId(problem))) continue;
      try {
        onProblem(problem);
      } catch {
        // the consumer's failure is not the watcher's
      }
    }
  }

  return {
    folderUnreadable(problem) {
      root = problem;
      publish();
    },
    read(problems) {
      root = null;
      files = problems;
      publish();
    },
    current: () => current,
  };
}
