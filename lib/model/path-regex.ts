// Regex-mode paths compiled once: ingress-nginx renders every path of a host in regex mode as
// `location ~* "^<path>"`, which ingress-ts matches with RE2 (linear time). Compiling a long pattern
// is costly; the build compiles each one to refuse those RE2 cannot take, and the data plane needs a
// compiled object to match with. Without a cache, a host with many long regex paths paid for all of
// them on every full swap, even one caused by a change elsewhere (bench/regex-swap.ts; the figures
// are in bench/README.md).
//
// A cache is an object its owner holds: the controller keeps one for its builds, each data plane one
// for its compiles (a worker thread has its own; nothing is module state). When the build and the
// data plane share a thread they may share one cache, so the runtime reuses the build's objects.
// Compiled patterns (and RE2's refusals) are kept for two generations: the owner starts a new one
// before each build or full compile (rotate), and a pattern looked up in it or in the one before
// stays. What no longer occurs is released after one more rotation: memory is at most the live
// patterns plus those the last change removed.

import { RE2JS } from 're2js';

type Compiled = RE2JS | Error;

/**
 * A regex-mode path as ingress-nginx renders it: `^<path>`, case-insensitive, anchored at the start
 * only. Throws RE2's error for a pattern it cannot compile (backreferences, lookaround...). Compiles
 * every time: PathRegexCache keeps the results.
 */
export function compilePathRegex(path: string): RE2JS {
  return RE2JS.compile(`^${path}`, RE2JS.CASE_INSENSITIVE);
}

export class PathRegexCache {
  #current = new Map<string, Compiled>();
  #previous = new Map<string, Compiled>();

  /** Patterns not looked up since the rotation before this one are released. */
  rotate(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }

  /** Patterns held now (both generations), for tests and benchmarks. */
  get size(): number {
    let size = this.#current.size;
    for (const key of this.#previous.keys()) if (!this.#current.has(key)) size++;
    return size;
  }

  /** compilePathRegex's object for `path` (or its error, thrown again), compiled once while in use. */
  compile(path: string): RE2JS {
    let entry = this.#current.get(path);
    if (entry === undefined) {
      entry = this.#previous.get(path);
      if (entry === undefined) {
        try {
          entry = compilePathRegex(path);
        } catch (error) {
          entry = error instanceof Error ? error : new Error(String(error));
        }
      }
      this.#current.set(path, entry);
    }
    if (entry instanceof Error) throw entry;
    return entry;
  }
}
