// The webhook's certificate and key files (--validating-webhook-certificate, -key), read again when
// they change. A Secret mounted as a volume changes by an atomic swap: the kubelet writes the new
// files into a fresh directory and renames the `..data` symlink onto it, so the path of the file
// never sees a write of its own. The watch is therefore on the directories that hold the files;
// any event there re-reads both, and a pair that differs from the one served is handed over. A
// pair that does not load (half-written, or a key that is not the certificate's) keeps the one in use.

import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface CertificateFiles {
  cert: string;
  key: string;
}

export interface CertificateWatch {
  /** the pair read last, or null when the files could not be read */
  readonly current: { cert: string; key: string } | null;
  close(): void;
}

export interface CertificateWatchOptions {
  /** a pair that differs from the last one; throws when it cannot be used */
  onPair: (cert: string, key: string) => void;
  /** why a read or a pair failed (never the key's content) */
  onProblem: (message: string) => void;
  /** after each read the files caused, used or not (tests wait on it) */
  onRead?: () => void;
}

export async function readPair(files: CertificateFiles): Promise<{ cert: string; key: string }> {
  const [cert, key] = await Promise.all([readFile(files.cert, 'utf8'), readFile(files.key, 'utf8')]);
  return { cert, key };
}

/** Reads the pair again whenever something changes beside the files; `served` is the pair in use. */
export function watchCertificateFiles(
  files: CertificateFiles,
  served: { cert: string; key: string } | null,
  options: CertificateWatchOptions,
): CertificateWatch {
  let current = served;
  let reading = false;
  let again = false;
  const reread = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        await readOnce();
      } while (again);
    } finally {
      reading = false;
    }
  };
  const readOnce = async (): Promise<void> => {
    let pair: { cert: string; key: string };
    try {
      pair = await readPair(files);
    } catch (error) {
      // between the kubelet's steps, or the files are gone: the pair in use stays
      options.onProblem(`cannot read the webhook certificate files: ${(error as Error).message}`);
      options.onRead?.();
      return;
    }
    if (current === null || pair.cert !== current.cert || pair.key !== current.key) {
      try {
        options.onPair(pair.cert, pair.key);
        current = pair;
      } catch (error) {
        options.onProblem((error as Error).message);
      }
    }
    options.onRead?.();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(files.cert), dirname(files.key)])) {
    try {
      const watcher = watch(dir, () => void reread());
      watcher.on('error', (error) => options.onProblem(`watching ${dir} failed: ${error.message}`));
      watchers.push(watcher);
    } catch (error) {
      options.onProblem(`cannot watch ${dir}; the certificate is not reloaded: ${(error as Error).message}`);
    }
  }
  return {
    get current() {
      return current;
    },
    close() {
      for (const watcher of watchers) watcher.close();
    },
  };
}
