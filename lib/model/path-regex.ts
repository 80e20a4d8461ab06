// Regex-mode paths compiled once: ingress-nginx renders every path of a host in regex mode as
// `location ~* "^<path>"`, which ingress-ts matches with RE2 (linear time). Compiling a long pattern
// is costly; the build compiles each one to refuse those RE2 cannot take, and the data plane needs the
// same compiled object to match with. Without sharing, a host with many long regex paths paid for all
// of them twice on every full swap, even one caused by a change elsewhere (bench/regex-swap.ts; the
// figures are in bench/README.md).
//
// Compiled patterns (and RE2's refusals) are kept for two generations: a build starts a new one
// (newPathRegexGeneration), and a pattern looked up in it or in the one before stays. So a swap
// reuses what the previous build and runtime compiled, and what no longer occurs is released after
// one more build: memory is at most the live patterns plus those the last change removed.

import { RE2JS } from 're2js';

type Compiled = RE2JS | Error;

let current = new Map<string, Compiled>();
let previous = new Map<string, Compiled>();

/** Patterns not looked up since the call before this one are released. Called by each build. */
export function newPathRegexGeneration(): void {
  previous = current;
  current = new Map();
}

/**
 * A regex-mode path as ingress-nginx renders it: `^<path>`, case-insensitive, anchored at the start
 * only. Throws RE2's error for a pattern it cannot compile (backreferences, lookaround...).
 */
export function compilePathRegex(path: string): RE2JS {
  let entry = current.get(path);
  if (entry === undefined) {
    entry = previous.get(path);
    if (entry === undefined) {
      try {
        entry = RE2JS.compile(`^${path}`, RE2JS.CASE_INSENSITIVE);
      } catch (error) {
        entry = error instanceof Error ? error : new Error(String(error));
      }
    }
    current.set(path, entry);
  }
  if (entry instanceof Error) throw entry;
  return entry;
}
