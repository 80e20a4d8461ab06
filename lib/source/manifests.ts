// Standalone mode's source: a directory of Kubernetes manifests (YAML or JSON), read once and then
// watched. It turns the files into the same Snapshot the Kubernetes source produces.
//
// - Files: *.yaml, *.yml, *.json under dir, recursively, in sorted path order. Dot-files and
//   dot-directories (editor temp files, a ConfigMap volume's ..data machinery) and node_modules are
//   skipped; symlinks to files are followed (a ConfigMap volume's files are such symlinks), symlinks to
//   directories are not.
// - Objects: multi-document YAML; `List` / `*List` items are flattened. Each document (and List item)
//   is judged on its own, as `kubectl apply -f` does: one that does not parse (a duplicate key, a
//   bad indent) or is not an object (no kind, no metadata.name) is a problem with its file and line,
//   and the file's other documents are read. Only the kinds the model reads are kept (by apiVersion +
//   kind); other kinds (a Deployment, a Kustomization) are ignored silently, as nothing of them is
//   ingress-ts's business. A kept kind with another apiVersion (an extensions/v1beta1 Ingress) is
//   ignored with a problem: the user expects it routed, and ingress-ts (like Kubernetes since 1.22)
//   does not read it.
// - Namespaced objects without a namespace get "default"; IngressClass is cluster-scoped.
// - An Ingress without metadata.creationTimestamp gets the time its namespace/name was first seen,
//   kept while such an Ingress exists (also across edits and moves between files), so oldest-wins is
//   stable; one removed and added later is new. (Only Ingresses are ordered by age; other kinds are
//   left as written, which spares 10,000s of object copies.)
// - The same kind/namespace/name twice: the first in path order (then document order) wins, the other
//   is a problem.
// - While a file has a document that cannot be read, the objects it held before and no valid document
//   defines any more stay in the snapshot (kubectl apply would leave them in the cluster as they were):
//   a typo in one document never takes its object's routes down. Once every document parses, the file
//   holds exactly what it says. A file that cannot be read at all keeps everything it held.
// - Problems are diagnostics (codes MANIFEST_*, docs/diagnostics.md) carrying the file and line;
//   they are logged and shown in /debug/model next to the model's.
//
// Watching uses one non-recursive fs.watch per directory, set up during each scan BEFORE the directory
// is listed, so nothing written after a scan saw a directory goes unnoticed. (Node's recursive mode on
// Linux walks the tree asynchronously with no "ready" signal, descends into node_modules and dot
// directories, and has used stat polling in some versions.) Events are debounced; a rescan lists the
// tree, stats every file and re-reads the files that an event named or whose stat changed (new inode
// after an atomic rename, size, mtime, ctime), which stays cheap for thousands of files. The snapshot
// is rebuilt from per-file results and onChange fires only when its content changed.

import { hash } from 'node:crypto';
import { type BigIntStats, type Dirent, type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { type ParseError, parse as parseJson } from 'jsonc-parser';
import { isMap, isSeq, LineCounter, type Node, parseAllDocuments } from 'yaml';
import { DIAGNOSTIC_CODES, type Diagnostic, type DiagnosticCode } from '../model/diagnostics.ts';
import { EMPTY_SNAPSHOT, type KubeObject, type Snapshot } from '../model/k8s.ts';
import { redactText } from '../model/redact.ts';

/**
 * A finding about a manifest file: a diagnostic on the object concerned when the document says which
 * (kind `Manifest` and the file's path as name when it does not), with where it was written.
 */
export interface ManifestProblem extends Diagnostic {
  file: string;
  line: number | null;
}

type ManifestCode = Extract<DiagnosticCode, `MANIFEST_${string}`>;

export interface ManifestSource {
  /** Reads everything once; resolves when the first snapshot is ready; then watches. */
  start(): Promise<void>;
  /** Stops watching and releases everything; resolves after a scan in progress has finished. */
  stop(): Promise<void>;
  /** The current objects of all files; a new Snapshot object after each change. */
  snapshot(): Snapshot;
  /** Current problems: one per unreadable file or invalid document, plus one per ignored object. */
  problems(): readonly ManifestProblem[];
}

export interface ManifestSourceOptions {
  dir: string;
  /** Something in the snapshot changed (after the debounce). Not called for the first snapshot. */
  onChange: () => void;
  /** A new problem appeared (also called for the problems of the first scan). */
  onProblem?: (problem: ManifestProblem) => void;
  /** Clock for creationTimestamp (tests). */
  now?: () => Date;
  /** Quiet time after a file system event before rescanning. Default 50. */
  debounceMs?: number;
}

type KeptKind = 'Ingress' | 'IngressClass' | 'Service' | 'EndpointSlice' | 'Secret' | 'ConfigMap';

const KEPT: Record<
  KeptKind,
  { apiVersion: string; list: keyof Snapshot; clusterScoped: boolean; stringMaps: readonly string[] }
> = {
  Ingress: { apiVersion: 'networking.k8s.io/v1', list: 'ingresses', clusterScoped: false, stringMaps: [] },
  IngressClass: {
    apiVersion: 'networking.k8s.io/v1',
    list: 'ingressClasses',
    clusterScoped: true,
    stringMaps: [],
  },
  Service: { apiVersion: 'v1', list: 'services', clusterScoped: false, stringMaps: [] },
  EndpointSlice: {
    apiVersion: 'discovery.k8s.io/v1',
    list: 'endpointSlices',
    clusterScoped: false,
    stringMaps: [],
  },
  Secret: { apiVersion: 'v1', list: 'secrets', clusterScoped: false, stringMaps: ['data', 'stringData'] },
  ConfigMap: { apiVersion: 'v1', list: 'configMaps', clusterScoped: false, stringMaps: ['data'] },
};

function isKeptKind(kind: string): kind is KeptKind {
  return Object.hasOwn(KEPT, kind);
}

const MANIFEST_FILE = /\.(ya?ml|json)$/;
const DEFAULT_NAMESPACE = 'default';

/** The object a document defines. */
interface ObjectId {
  kind: string;
  namespace: string;
  name: string;
}

/** One kept object of a file. */
interface Entry {
  key: string;
  id: ObjectId;
  /** "Ingress default/web", for messages. */
  label: string;
  list: keyof Snapshot;
  line: number | null;
  /** Normalized object (namespace defaulted), without a filled-in creationTimestamp. */
  object: KubeObject;
}

interface Stamp {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

interface FileState {
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

type Record_ = Record<string, unknown>;

function isRecord(value: unknown): value is Record_ {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a sequence';
  return `a ${typeof value}`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorCode(error: unknown): string | undefined {
  return isRecord(error) && typeof error.code === 'string' ? error.code : undefined;
}

function rfc3339Seconds(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function toStamp(stats: BigIntStats): Stamp {
  return { ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}

function sameStamp(a: Stamp | null, b: Stamp): boolean {
  return (
    a !== null && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
  );
}

/** What a problem adds when a file's earlier objects stay. */
function keptNote(kept: number): string {
  return kept > 0
    ? `; the ${kept} object(s) it held before and no longer defines are kept until it is fixed`
    : '';
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

// ---------------------------------------------------------------------------------------------------
// Parsing one file

/** A finding about one document of a file; `id` when the document says which object it is. */
interface Finding {
  line: number | null;
  code: ManifestCode;
  message: string;
  id?: ObjectId;
}

interface ParseResult {
  entries: Entry[];
  findings: Finding[];
  /** some document could not be read: what the file held before may be in it */
  broken: boolean;
}

/** A document that is not a readable object: reported, the file's other documents still count. */
function invalid(result: ParseResult, line: number | null, message: string): void {
  result.findings.push({ line, code: 'MANIFEST_INVALID', message });
  result.broken = true;
}

/** A document (or list item) and where it starts. */
interface Doc {
  value: unknown;
  line: number | null;
  /** The YAML node, to find the lines of List items. */
  node: Node | null;
  lineOf: (node: Node | null) => number | null;
}

/** The same objects in the same order (compared as JSON; only computed when a file changed). */
function sameObjects(a: readonly Entry[], b: readonly Entry[]): boolean {
  if (a.length !== b.length) return false;
  const json = (entries: readonly Entry[]) => JSON.stringify(entries.map((entry) => entry.object));
  return json(a) === json(b);
}

function parseFile(rel: string, text: string): ParseResult {
  const result: ParseResult = { entries: [], findings: [], broken: false };
  const docs = rel.endsWith('.json') ? jsonDocs(text, result) : yamlDocs(text, result);
  for (const doc of docs) collect(doc, result, null);
  return result;
}

function jsonDocs(text: string, result: ParseResult): Doc[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = errorMessage(error);
    // V8 quotes (part of) the source in some messages; the line number says where instead.
    invalid(result, jsonErrorLine(text), message.replace(/, ".*" is not valid JSON$/s, ''));
    return [];
  }
  return [{ value, line: 1, node: null, lineOf: () => null }];
}

function yamlDocs(text: string, result: ParseResult): Doc[] {
  const lineCounter = new LineCounter();
  const lineOfOffset = (offset: number): number => lineCounter.linePos(offset).line;
  const lineOf = (node: Node | null): number | null => (node?.range ? lineOfOffset(node.range[0]) : null);
  const docs: Doc[] = [];
  for (const doc of parseAllDocuments(text, { lineCounter, prettyErrors: false, merge: true })) {
    // Each document on its own: an error in one (a duplicate key) leaves the others readable.
    const error = doc.errors[0];
    if (error) {
      invalid(result, lineOfOffset(error.pos[0]), error.message);
      continue;
    }
    const node = doc.contents;
    if (node === null) continue; // empty document (comments only, a trailing ---)
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (error) {
      invalid(result, lineOf(node), errorMessage(error));
      continue;
    }
    if (value === null || value === undefined) continue;
    docs.push({ value, line: lineOf(node), node, lineOf });
  }
  return docs;
}

function listItemNodes(node: Node | null): Array<Node | null> {
  if (!isMap(node)) return [];
  const items = node.get('items', true);
  return isSeq(items)
    ? items.items.map((item) => (item && typeof item === 'object' ? (item as Node) : null))
    : [];
}

function collect(doc: Doc, result: ParseResult, list: { kind: string; apiVersion: unknown } | null): void {
  const { value, line } = doc;
  if (!isRecord(value)) {
    invalid(result, line, `a manifest must be a mapping, not ${describe(value)}`);
    return;
  }
  let kind = value.kind;
  let apiVersion = value.apiVersion;
  if (kind === undefined && list) {
    // Items of a typed list (IngressList from the API) may omit their kind and apiVersion.
    kind = list.kind.slice(0, -'List'.length);
    apiVersion = list.apiVersion;
  }
  if (typeof kind !== 'string' || kind === '') {
    invalid(result, line, 'the object has no kind');
    return;
  }

  if (kind.endsWith('List') && Array.isArray(value.items)) {
    const nodes = listItemNodes(doc.node);
    value.items.forEach((item: unknown, i) => {
      const node = nodes[i] ?? null;
      collect({ ...doc, value: item, node, line: doc.lineOf(node) ?? line }, result, {
        kind,
        apiVersion: value.apiVersion,
      });
    });
    return;
  }
  if (!isKeptKind(kind)) return; // a Deployment, a Kustomization...: not ours
  const spec = KEPT[kind];

  const metadata = value.metadata;
  if (!isRecord(metadata)) {
    invalid(result, line, `the ${kind} has no metadata`);
    return;
  }
  const name = metadata.name;
  if (typeof name !== 'string' || name === '') {
    invalid(result, line, `the ${kind} has no metadata.name`);
    return;
  }
  if (metadata.namespace !== undefined && typeof metadata.namespace !== 'string') {
    invalid(result, line, `the ${kind} ${name} has a metadata.namespace that is not a string`);
    return;
  }
  const namespace = spec.clusterScoped ? '' : metadata.namespace || DEFAULT_NAMESPACE;
  const label = spec.clusterScoped ? `${kind} ${name}` : `${kind} ${namespace}/${name}`;
  const id: ObjectId = { kind, namespace, name };
  if (apiVersion !== spec.apiVersion) {
    result.findings.push({
      line,
      code: 'MANIFEST_API_VERSION_IGNORED',
      message: `${label} has apiVersion ${String(apiVersion)}, only ${spec.apiVersion} is read: ignored`,
      id,
    });
    return;
  }

  const meta: Record_ = { ...metadata };
  if (spec.clusterScoped) delete meta.namespace;
  else meta.namespace = namespace;
  coerceStringMap(meta, 'labels');
  coerceStringMap(meta, 'annotations');
  const object: Record_ = { ...value, apiVersion, kind, metadata: meta };
  for (const field of spec.stringMaps) coerceStringMap(object, field);
  result.entries.push({
    key: `${kind}/${namespace}/${name}`,
    id,
    label,
    list: spec.list,
    line,
    object: object as KubeObject,
  });
}

/**
 * Unquoted numbers and booleans in string maps (`use-regex: true`) become strings, as a YAML 1.1
 * reading of the manifest would have it; anything else is left for the model to report.
 */
function coerceStringMap(owner: Record_, field: string): void {
  const map = owner[field];
  if (!isRecord(map)) return;
  let copy: Record_ | null = null;
  for (const [key, value] of Object.entries(map)) {
    if (typeof value === 'number' || typeof value === 'boolean') {
      copy ??= { ...map };
      copy[key] = String(value);
    }
  }
  if (copy) owner[field] = copy;
}

// ---------------------------------------------------------------------------------------------------
// JSON error line: strict JSON.parse finds the error, jsonc-parser (strict mode: no comments, no
// trailing commas) says where; V8 itself gives a position for only some errors.

function jsonErrorLine(text: string): number | null {
  const errors: ParseError[] = [];
  parseJson(text, errors, { allowTrailingComma: false, disallowComments: true });
  const first = errors[0];
  return first === undefined ? null : lineAt(text, first.offset);
}

// ---------------------------------------------------------------------------------------------------
// The source

function problemId(problem: ManifestProblem): string {
  return `${problem.file}\0${problem.line}\0${problem.code}\0${problem.message}`;
}

/** Kind of the diagnostics about a document that names no object (it does not parse, say). */
const MANIFEST_KIND = 'Manifest';

function problemOf(
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

export function createManifestSource(options: ManifestSourceOptions): ManifestSource {
  const { dir, onChange, onProblem } = options;
  const now = options.now ?? (() => new Date());
  const debounceMs = Math.max(0, options.debounceMs ?? 50);
  /** A steady stream of events (a log file written in the tree) still rescans this often. */
  const maxWaitMs = Math.max(debounceMs * 5, 1);

  const files = new Map<string, FileState>();
  /** One watcher per directory, with the inode it watches (a directory replaced by another one of
   * the same name needs a new watcher). */
  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  /** Ingress key → creationTimestamp given when first seen. */
  let firstSeen = new Map<string, string>();
  /** The filled-in object per key, reused while its source object and timestamp stay. */
  let filled = new Map<string, { source: KubeObject; timestamp: string; out: KubeObject }>();
  /** The objects of the current snapshot by key, to tell whether a rebuild changed anything. */
  let current = new Map<string, KubeObject>();
  let snapshot: Snapshot = EMPTY_SNAPSHOT;
  let problems: readonly ManifestProblem[] = [];
  let rootProblem: ManifestProblem | null = null;

  let started = false;
  let stopped = false;
  let dirtyAll = false;
  let dirty = new Set<string>();
  let pendingSince: number | null = null;
  let lastEventAt = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let scanning: Promise<void> | null = null;

  const display = (rel: string): string => path.join(dir, rel);

  // --- watching ---

  function onEvent(relDir: string, filename: string | Buffer | null): void {
    if (stopped) return;
    if (filename === null) dirtyAll = true;
    else {
      const name = filename.toString();
      dirty.add(relDir === '' ? name : `${relDir}/${name}`);
    }
    const t = Date.now();
    lastEventAt = t;
    pendingSince ??= t;
    if (scanning) return; // the scan's end re-arms
    arm();
  }

  function arm(): void {
    if (stopped || pendingSince === null) return;
    if (timer) clearTimeout(timer);
    const due = Math.min(lastEventAt + debounceMs, pendingSince + maxWaitMs);
    timer = setTimeout(fire, Math.max(0, due - Date.now()));
  }

  function fire(): void {
    timer = null;
    if (stopped || scanning) return;
    pendingSince = null;
    scanning = scan(false)
      .catch(() => {
        // scan reports what it can as problems; nothing escapes the watcher
      })
      .finally(() => {
        scanning = null;
        arm(); // events that arrived during the scan
      });
  }

  function ensureWatcher(relDir: string, ino: number): void {
    if (stopped) return;
    const existing = watchers.get(relDir);
    if (existing?.ino === ino) return;
    existing?.watcher.close();
    const own = path.basename(path.resolve(display(relDir)));
    const forget = (): void => {
      watcher.close();
      if (watchers.get(relDir)?.watcher === watcher) watchers.delete(relDir);
    };
    const watcher = watch(display(relDir), { persistent: true }, (event, filename) => {
      // A watch follows an inode: when the directory itself is deleted or moved away, inotify says
      // "rename" with the directory's own name, and the watch is dead (or watches the moved
      // directory). Forget it, so the rescan watches whatever now has that name, even a new
      // directory that got the same inode number. (A file named like its directory costs a re-watch.)
      if (event === 'rename' && filename?.toString() === own) forget();
      onEvent(relDir, filename);
    });
    watcher.on('error', () => {
      // The watch broke: forget it; the rescan sets it up again if the directory is still there.
      forget();
      onEvent(relDir, null);
    });
    watchers.set(relDir, { watcher, ino });
  }

  // --- scanning ---

  /** Lists the tree (watching each directory before listing it): manifest files and their stamps. */
  async function walk(): Promise<{ files: Map<string, Stamp>; dirs: Set<string> }> {
    const found = new Map<string, Stamp>();
    const dirs = new Set<string>();
    const visit = async (relDir: string): Promise<void> => {
      const abs = display(relDir);
      try {
        ensureWatcher(relDir, (await stat(abs)).ino);
      } catch (error) {
        if (relDir === '') throw error;
        return; // gone already
      }
      let entries: Dirent[];
      try {
        entries = await readdir(abs, { withFileTypes: true });
      } catch (error) {
        if (relDir === '') throw error;
        return;
      }
      dirs.add(relDir);
      await Promise.all(
        entries.map(async (entry) => {
          const name = entry.name;
          if (name.startsWith('.')) return;
          const rel = relDir === '' ? name : `${relDir}/${name}`;
          if (entry.isDirectory()) {
            if (name !== 'node_modules') await visit(rel);
            return;
          }
          if (!MANIFEST_FILE.test(name) || !(entry.isFile() || entry.isSymbolicLink())) return;
          try {
            const stats = await stat(path.join(abs, name), { bigint: true });
            if (stats.isFile()) found.set(rel, toStamp(stats));
          } catch {
            // vanished meanwhile, or a dangling symlink (an editor's lock file): not a manifest
          }
        }),
      );
    };
    await visit('');
    return { files: found, dirs };
  }

  async function read(rel: string, stamp: Stamp): Promise<void> {
    const previous = files.get(rel);
    let bytes: Buffer;
    try {
      // bytes, then one decode: readFile's own 'utf8' decodes chunk by chunk and concatenates
      bytes = await readFile(display(rel));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') {
        files.delete(rel);
        return;
      }
      const kept = previous?.entries.length ?? 0;
      const note = kept > 0 ? `; the ${kept} object(s) it held before are kept` : '';
      const message = `cannot read the file: ${errorMessage(error)}${note}`;
      files.set(rel, {
        stamp,
        digest: null,
        entries: previous?.entries ?? [],
        problems: [problemOf(display(rel), null, 'MANIFEST_UNREADABLE', message)],
      });
      return;
    }
    if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3); // a BOM
    const digest = hash('sha256', bytes, 'base64');
    if (previous && previous.digest === digest) {
      previous.stamp = stamp;
      return;
    }
    const parsed = parseFile(rel, bytes.toString('utf8'));
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
    files.set(rel, {
      stamp,
      digest,
      entries,
      problems: parsed.findings.map(({ line, code, message, id }) =>
        problemOf(
          display(rel),
          line,
          code,
          code === 'MANIFEST_INVALID' ? `${message}: this document is ignored${keptNote(kept)}` : message,
          id,
        ),
      ),
    });
  }

  /** One scan: list, re-read what changed, rebuild. */
  async function scan(initial: boolean): Promise<void> {
    const all = initial || dirtyAll;
    const named = dirty;
    dirtyAll = false;
    dirty = new Set();

    let tree: { files: Map<string, Stamp>; dirs: Set<string> };
    try {
      tree = await walk();
    } catch (error) {
      if (initial) throw error;
      // The directory itself is unreadable or gone: keep serving what we have and say so.
      rootProblem = problemOf(
        dir,
        null,
        'MANIFEST_UNREADABLE',
        `cannot read the directory: ${errorMessage(error)}; the objects read before are kept`,
      );
      publishProblems();
      return;
    }
    rootProblem = null;
    for (const [relDir, { watcher }] of watchers) {
      if (!tree.dirs.has(relDir)) {
        watcher.close();
        watchers.delete(relDir);
      }
    }
    for (const rel of [...files.keys()]) if (!tree.files.has(rel)) files.delete(rel);
    const reads: Promise<void>[] = [];
    for (const [rel, stamp] of tree.files) {
      const state = files.get(rel);
      if (all || !state || named.has(rel) || !sameStamp(state.stamp, stamp)) reads.push(read(rel, stamp));
    }
    await Promise.all(reads);
    if (stopped) return;
    const changed = rebuild();
    publishProblems();
    if (changed && !initial) {
      try {
        onChange();
      } catch {
        // The consumer's failure is not the watcher's.
      }
    }
  }

  let fileProblems: ManifestProblem[] = [];

  /** Rebuilds the snapshot from the per-file results; says whether its content changed. */
  function rebuild(): boolean {
    const stamp = rfc3339Seconds(now());
    const winners = new Map<string, { rel: string; entry: Entry }>();
    const found: ManifestProblem[] = [];
    for (const rel of [...files.keys()].sort()) {
      const state = files.get(rel)!;
      found.push(...state.problems);
      for (const entry of state.entries) {
        const first = winners.get(entry.key);
        if (first) {
          const where = first.entry.line === null ? '' : ` (line ${first.entry.line})`;
          found.push(
            problemOf(
              display(rel),
              entry.line,
              'MANIFEST_DUPLICATE',
              `${entry.label} is also defined in ${display(first.rel)}${where}, which comes first: this one is ignored`,
              entry.id,
            ),
          );
          continue;
        }
        winners.set(entry.key, { rel, entry });
      }
    }
    fileProblems = found;

    const nextFirstSeen = new Map<string, string>();
    const nextFilled = new Map<string, { source: KubeObject; timestamp: string; out: KubeObject }>();
    const next = new Map<string, KubeObject>();
    const lists: Record<keyof Snapshot, KubeObject[]> = {
      ingresses: [],
      ingressClasses: [],
      services: [],
      endpointSlices: [],
      secrets: [],
      configMaps: [],
    };
    for (const [key, { entry }] of winners) {
      const source = entry.object;
      let out = source;
      if (entry.list !== 'ingresses') {
        next.set(key, out);
        lists[entry.list].push(out);
        continue;
      }
      const timestamp = firstSeen.get(key) ?? stamp;
      nextFirstSeen.set(key, timestamp);
      if (typeof source.metadata?.creationTimestamp !== 'string') {
        const cached = filled.get(key);
        if (cached && cached.source === source && cached.timestamp === timestamp) out = cached.out;
        else out = { ...source, metadata: { ...source.metadata, creationTimestamp: timestamp } };
        nextFilled.set(key, { source, timestamp, out });
      }
      next.set(key, out);
      lists[entry.list].push(out);
    }
    firstSeen = nextFirstSeen;
    filled = nextFilled;

    let changed = next.size !== current.size;
    if (!changed) {
      for (const [key, out] of next) {
        const before = current.get(key);
        if (before !== out && (before === undefined || JSON.stringify(before) !== JSON.stringify(out))) {
          changed = true;
          break;
        }
      }
    }
    current = next;
    if (changed) {
      snapshot = Object.freeze({
        ingresses: lists.ingresses,
        ingressClasses: lists.ingressClasses,
        services: lists.services,
        endpointSlices: lists.endpointSlices,
        secrets: lists.secrets,
        configMaps: lists.configMaps,
      });
    }
    return changed;
  }

  function publishProblems(): void {
    const all = rootProblem ? [rootProblem, ...fileProblems] : fileProblems;
    const before = new Set(problems.map(problemId));
    problems = Object.freeze([...all]);
    if (!onProblem) return;
    for (const problem of all) {
      if (before.has(problemId(problem))) continue;
      try {
        onProblem(problem);
      } catch {
        // as for onChange
      }
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
        for (const { watcher } of watchers.values()) watcher.close();
        watchers.clear();
        throw new Error(`cannot read the manifest directory ${dir}: ${errorMessage(error)}`, {
          cause: error,
        });
      } finally {
        scanning = null;
      }
      arm(); // events that arrived during the first scan
    },

    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      for (const { watcher } of watchers.values()) watcher.close();
      watchers.clear();
      await scanning?.catch(() => {});
    },

    snapshot: () => snapshot,
    problems: () => problems,
  };
}
