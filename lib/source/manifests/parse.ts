// One manifest file's text → the objects ingress-ts keeps, and findings about the documents it cannot
// use. Pure: no file system, no clock.
//
// - Multi-document YAML, or one JSON document; `List` / `*List` items are flattened. Each document
//   (and List item) is judged on its own, as `kubectl apply -f` does: one that does not parse (a
//   duplicate key, a bad indent) or is not an object (no kind, no metadata.name) is a finding with
//   its line, and the file's other documents are read.
// - Only the kinds the model reads are kept (by apiVersion + kind); other kinds (a Deployment, a
//   Kustomization) are ignored silently. A kept kind with another apiVersion (an extensions/v1beta1
//   Ingress) is a finding: the user expects it routed, and ingress-ts (like Kubernetes since 1.22)
//   does not read it.
// - Namespaced objects without a namespace get "default"; IngressClass is cluster-scoped.
// - metadata.resourceVersion is dropped: in a file it is a stale copy of a server's stamp, and the
//   store would take two edits that kept it for the same object.

import { type ParseError, parse as parseJson } from 'jsonc-parser';
import { isMap, isSeq, LineCounter, type Node, parseAllDocuments } from 'yaml';
import type { DiagnosticCode } from '../../model/diagnostics.ts';
import type { KubeObject } from '../../model/k8s.ts';
import type { StoreKind } from '../../store/store.ts';
import { withoutUnreadMetadata } from '../../store/unread.ts';

export type ManifestCode = Extract<DiagnosticCode, `MANIFEST_${string}`>;

/** The object a document defines. */
export interface ObjectId {
  kind: string;
  namespace: string;
  name: string;
}

/** "Ingress default/web" (an IngressClass: "IngressClass nginx"), for messages; made when one is
 * written rather than kept per entry (70,000 strings at 10,000 Ingresses). */
export const labelOf = (id: ObjectId): string =>
  id.namespace === '' ? `${id.kind} ${id.name}` : `${id.kind} ${id.namespace}/${id.name}`;

/** One kept object of a file. */
export interface Entry {
  /** kind/namespace/name */
  key: string;
  kind: StoreKind;
  id: ObjectId;
  line: number | null;
  /** Normalized object (namespace defaulted), without a filled-in creationTimestamp. */
  object: KubeObject;
}

/** A finding about one document of a file; `id` when the document says which object it is. */
export interface Finding {
  line: number | null;
  code: ManifestCode;
  message: string;
  id?: ObjectId;
}

export interface ParseResult {
  entries: Entry[];
  findings: Finding[];
  /** some document could not be read: what the file held before may be in it */
  broken: boolean;
}

const GATEWAY_VERSIONS = ['gateway.networking.k8s.io/v1', 'gateway.networking.k8s.io/v1beta1'];

const KEPT: Record<
  StoreKind,
  { apiVersions: readonly string[]; clusterScoped: boolean; stringMaps: readonly string[] }
> = {
  Ingress: { apiVersions: ['networking.k8s.io/v1'], clusterScoped: false, stringMaps: [] },
  IngressClass: { apiVersions: ['networking.k8s.io/v1'], clusterScoped: true, stringMaps: [] },
  Service: { apiVersions: ['v1'], clusterScoped: false, stringMaps: [] },
  EndpointSlice: { apiVersions: ['discovery.k8s.io/v1'], clusterScoped: false, stringMaps: [] },
  Secret: { apiVersions: ['v1'], clusterScoped: false, stringMaps: ['data', 'stringData'] },
  ConfigMap: { apiVersions: ['v1'], clusterScoped: false, stringMaps: ['data'] },
  // the versions the Gateway API CRDs serve (the fields read are the same in both)
  GatewayClass: { apiVersions: GATEWAY_VERSIONS, clusterScoped: true, stringMaps: [] },
  Gateway: { apiVersions: GATEWAY_VERSIONS, clusterScoped: false, stringMaps: [] },
  HTTPRoute: { apiVersions: GATEWAY_VERSIONS, clusterScoped: false, stringMaps: [] },
  ReferenceGrant: { apiVersions: GATEWAY_VERSIONS, clusterScoped: false, stringMaps: [] },
  Namespace: { apiVersions: ['v1'], clusterScoped: true, stringMaps: [] },
};

function isKeptKind(kind: string): kind is StoreKind {
  return Object.hasOwn(KEPT, kind);
}

const DEFAULT_NAMESPACE = 'default';

type Fields = Record<string, unknown>;

export function isRecord(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a sequence';
  return `a ${typeof value}`;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
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

/** Parses one file's text (`rel` says whether it is JSON). */
export function parseManifestFile(rel: string, text: string): ParseResult {
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

/** Strict JSON.parse finds the error, jsonc-parser (strict mode: no comments, no trailing commas) says
 * where; V8 itself gives a position for only some errors. */
function jsonErrorLine(text: string): number | null {
  const errors: ParseError[] = [];
  parseJson(text, errors, { allowTrailingComma: false, disallowComments: true });
  const first = errors[0];
  return first === undefined ? null : lineAt(text, first.offset);
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

/** One document or List item: flattened when a List, else kept, ignored or reported. */
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
  keep(value, kind, apiVersion, line, result);
}

/** A document of a kept kind: its identity checked, then normalized into an entry. */
function keep(value: Fields, kind: StoreKind, apiVersion: unknown, line: number | null, result: ParseResult) {
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
  const id: ObjectId = { kind, namespace, name };
  if (typeof apiVersion !== 'string' || !spec.apiVersions.includes(apiVersion)) {
    result.findings.push({
      line,
      code: 'MANIFEST_API_VERSION_IGNORED',
      message: `${labelOf(id)} has apiVersion ${String(apiVersion)}, only ${spec.apiVersions.join(' or ')} is read: ignored`,
      id,
    });
    return;
  }
  // without managedFields and kubectl's last-applied copy (store/unread.ts), and without the
  // resourceVersion and, cluster-scoped, the namespace: rest copies, not `delete` (dictionary objects)
  const { resourceVersion: _version, namespace: _namespace, ...meta } = withoutUnreadMetadata(metadata);
  if (!spec.clusterScoped) meta.namespace = namespace;
  coerceStringMap(meta, 'labels');
  coerceStringMap(meta, 'annotations');
  const object: Fields = { ...value, apiVersion, kind, metadata: meta };
  for (const field of spec.stringMaps) coerceStringMap(object, field);
  result.entries.push({
    key: `${kind}/${namespace}/${name}`,
    kind,
    id,
    line,
    object: object as KubeObject,
  });
}

/**
 * Unquoted numbers and booleans in string maps (`use-regex: true`) become strings, as a YAML 1.1
 * reading of the manifest would have it; anything else is left for the model to report.
 */
function coerceStringMap(owner: Fields, field: string): void {
  const map = owner[field];
  if (!isRecord(map)) return;
  let copy: Fields | null = null;
  for (const [key, value] of Object.entries(map)) {
    if (typeof value === 'number' || typeof value === 'boolean') {
      copy ??= { ...map };
      copy[key] = String(value);
    }
  }
  if (copy) owner[field] = copy;
}
