// How a data-plane thread is started without its own TypeScript stripper. Node strips the types of
// a .ts module with a WebAssembly build of swc that it instantiates in every thread that loads one:
// ~16 MiB of RSS per thread, more than the data plane's own code. The main thread has it loaded
// already, so it strips the thread's modules once (the entry's import graph inside lib/), shares the
// JavaScript in one SharedArrayBuffer, and each thread starts from a small JavaScript entry whose
// load hook hands Node that JavaScript. A module missing from the set (one that could not be read or
// stripped here) is loaded by Node as usual: it costs the memory, never correctness.

import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { getEnvironmentData, setEnvironmentData, Worker, type WorkerOptions } from 'node:worker_threads';

/** The stripped modules of a thread: their JavaScript, UTF-8, one after another, and where each is. */
export interface ThreadSources {
  buffer: SharedArrayBuffer;
  /** file URL → [start, end) in `buffer` */
  index: ReadonlyMap<string, readonly [number, number]>;
}

// A relative .ts specifier of a static import or export, or of a dynamic import(); a match inside a
// comment or string only adds a module nobody loads (or, if there is no such file, nothing)
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"\n]+\.ts)['"]/g;

/** The call of Node's stripper, without its one-time ExperimentalWarning (the loader's own output). */
function strip(source: string): string {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.startsWith('stripTypeScriptTypes')) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** lib/: what a thread loads of this repository (its packages are JavaScript already) */
const LIB = new URL('../../', import.meta.url);

/** The JavaScript of the module at `url`, or null when it cannot be read or stripped (Node then loads it). */
function stripped(url: string): Buffer | null {
  try {
    return Buffer.from(strip(readFileSync(new URL(url), 'utf8')));
  } catch {
    return null;
  }
}

/** The .ts modules under `root` that `entry` imports, directly or not, stripped (those Node can strip). */
export function stripThreadModules(entry: URL, root: URL = LIB): ThreadSources {
  const chunks: Buffer[] = [];
  const index = new Map<string, readonly [number, number]>();
  const seen = new Set<string>();
  let offset = 0;
  const pending = [entry.href];
  for (let url = pending.pop(); url !== undefined; url = pending.pop()) {
    if (seen.has(url) || !url.startsWith(root.href)) continue;
    seen.add(url);
    const code = stripped(url);
    if (code === null) continue;
    chunks.push(code);
    index.set(url, [offset, offset + code.length]);
    offset += code.length;
    for (const [, specifier] of code.toString('utf8').matchAll(RELATIVE_IMPORT)) {
      pending.push(new URL(specifier as string, url).href);
    }
  }
  const buffer = new SharedArrayBuffer(offset);
  Buffer.from(buffer).set(Buffer.concat(chunks));
  return { buffer, index };
}

// The thread's first code: plain JavaScript (CommonJS, as an eval worker runs), so nothing needs
// stripping before the load hook is in place. It then imports the TypeScript entry.
const boot = (entry: URL, key: string) => `'use strict';
const { registerHooks } = require('node:module');
const { getEnvironmentData } = require('node:worker_threads');
const sources = getEnvironmentData(${JSON.stringify(key)});
if (typeof sources === 'object' && typeof registerHooks === 'function') {
  const bytes = Buffer.from(sources.buffer);
  registerHooks({
    load(url, context, nextLoad) {
      const at = sources.index.get(url);
      if (at === undefined) return nextLoad(url, context);
      return { format: 'module', source: bytes.toString('utf8', at[0], at[1]), shortCircuit: true };
    },
  });
}
import(${JSON.stringify(entry.href)});
`;

/**
 * A Worker running the module at `entry`, its modules under `root` (lib/) stripped once per process
 * for every thread started with the same entry.
 */
export function startThread(entry: URL, options: WorkerOptions = {}, root: URL = LIB): Worker {
  const key = `ingress-ts:thread-modules:${entry.href}:${root.href}`;
  if (getEnvironmentData(key) === undefined) {
    // every Worker created from now on gets it, the SharedArrayBuffer shared, not copied
    setEnvironmentData(key, stripThreadModules(entry, root));
  }
  return new Worker(boot(entry, key), { ...options, eval: true });
}
