// A fake kube-apiserver for tests: plain HTTP on 127.0.0.1, the REST surface the controller uses, and
// hooks to inject faults. It answers the way a real apiserver answers @kubernetes/client-node 2, and
// test/source/fake-apiserver.test.ts holds it to that with the real client.
//
// Discovery is modelled for the Gateway API group only (/apis/gateway.networking.k8s.io/v1, with the
// `gatewayApi` option: the CRDs installed; without it that group answers 404 like any unknown path).
// Not modelled: the rest of discovery (/api, /apis), CRD defaulting and validation, server-side apply, strategic merge keys (treated as a merge
// patch), protobuf, managedFields, admission (namespaces need not exist), dryRun, list paging.

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';

// ---------------------------------------------------------------------------------------------
// Types

/** Any Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown> & {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    resourceVersion?: string;
  };
  [field: string]: unknown;
}

/** A kind, optionally with its apiVersion (`Event` alone means the core v1 Event). */
export type TypeRef = string | { apiVersion?: string; kind: string };
export interface ObjectRef {
  apiVersion?: string;
  kind: string;
  namespace?: string;
  name: string;
}

export type Verb = 'list' | 'watch' | 'get' | 'create' | 'update' | 'patch' | 'delete';

/** One request as the fake saw it; `status` is set once the response (or watch header) is sent. */
export interface RequestRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  verb?: Verb;
  group?: string;
  resource?: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  contentType?: string;
  headers: IncomingMessage['headers'];
  body?: unknown;
  status?: number;
}

/** Fields a request must equal (undefined fields are not compared), or a predicate. */
export type RequestMatcher =
  | Partial<
      Pick<RequestRecord, 'method' | 'verb' | 'group' | 'resource' | 'namespace' | 'name' | 'subresource'>
    >
  | ((request: RequestRecord) => boolean);

export interface Fault {
  /** HTTP status to answer with, as a Status object (429 adds `Retry-After: 1`). */
  status: number;
  /** How many matching requests fail (default 1). */
  count?: number;
  message?: string;
}

/**
 * One RBAC rule, as a Role or ClusterRole holds it. `namespaces` undefined: a ClusterRole's rule (every
 * namespace and cluster-scoped kinds); else a Role's, in those namespaces. `resources` may name a
 * subresource (`ingresses/status`).
 */
export interface RbacRule {
  apiGroups: string[];
  resources: string[];
  verbs: Verb[];
  resourceNames?: string[];
  namespaces?: string[];
}

export interface FakeApiServerOptions {
  /** Listening port; default 0 (a free one). */
  port?: number;
  /** Bearer token every request must carry (401 otherwise); also what kubeConfig() uses. */
  token?: string;
  /** Watch events kept per resource before the oldest are compacted (the watch cache window). */
  maxHistory?: number;
  /** Ends every watch cleanly after this long, as a real server does after 30-60 min. */
  watchTimeoutMs?: number;
  /** A too-old watch RV gets `200` + an ERROR 410 event (the real cacher) or an HTTP 410. */
  expiredWatch?: 'event' | 'status';
  /** Objects applied at start, in order. */
  objects?: KubeObject[];
  /** When set, every request must be allowed by one of these rules (403 otherwise), as RBAC does. */
  rbac?: RbacRule[];
  /**
   * The Gateway API CRDs are installed: discovery of gateway.networking.k8s.io/v1 lists its four
   * kinds, they are served, and the HTTPRoute CRD exists with this bundle-version annotation
   * (default v1.6.1; null: the annotation is missing). Discovery is open to every caller (as the
   * system:discovery ClusterRole makes it): RBAC rules do not apply to it, faults do.
   */
  gatewayApi?: boolean | { bundleVersion?: string | null };
}

// ---------------------------------------------------------------------------------------------
// Resources

interface Resource {
  group: string; // '' for core
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** A /status subresource: the main resource keeps .status, /status changes only .status. */
  status: boolean;
  /** When metadata.generation moves: never set, on spec changes, or on any non-metadata/label change. */
  generation: 'none' | 'spec' | 'nonMetadata';
  /** false for Lease: a PUT must carry metadata.resourceVersion (lease/strategy.go). */
  unconditionalUpdate: boolean;
  /** true for Lease: a PUT to a missing name creates it. */
  createOnUpdate: boolean;
  /** metav1.MicroTime fields, which only parse with 6 fractional digits. */
  microTimes: string[][];
  /** Field labels a fieldSelector may use beyond metadata.name/metadata.namespace. */
  fieldLabels: string[];
  validate?: (obj: KubeObject) => string[];
}

function resource(group: string, kind: string, plural: string, extra: Partial<Resource> = {}): Resource {
  return {
    group,
    version: 'v1',
    kind,
    plural,
    namespaced: true,
    status: false,
    generation: 'none',
    unconditionalUpdate: true,
    createOnUpdate: false,
    microTimes: [],
    fieldLabels: [],
    ...extra,
  };
}

// Event validation (pkg/apis/core/validation/events.go), reduced to the rules
// a controller is likely to break.
function validateCoreEvent(obj: KubeObject): string[] {
  const involvedNs = (obj.involvedObject as { namespace?: string } | undefined)?.namespace ?? '';
  const ns = obj.metadata?.namespace ?? '';
  const problems: string[] = [];
  if (obj.eventTime === undefined || obj.eventTime === null) {
    if (involvedNs === '' ? ns !== 'default' && ns !== '' : involvedNs !== ns)
      problems.push('involvedObject.namespace: Invalid value: does not match event.namespace');
  } else {
    for (const field of ['reportingController', 'reportingInstance', 'action', 'reason'])
      if (!obj[field]) problems.push(`${field}: Required value`);
  }
  return problems;
}

function validateEventsV1(obj: KubeObject): string[] {
  const problems: string[] = [];
  if (!obj.eventTime) problems.push('eventTime: Required value');
  if (obj.type !== 'Normal' && obj.type !== 'Warning') problems.push('type: Unsupported value');
  for (const field of ['reportingController', 'reportingInstance', 'action', 'reason'])
    if (!obj[field]) problems.push(`${field}: Required value`);
  for (const field of [
    'deprecatedFirstTimestamp',
    'deprecatedLastTimestamp',
    'deprecatedCount',
    'deprecatedSource',
  ])
    if (obj[field] !== undefined) problems.push(`${field}: Invalid value: must be unset`);
  return problems;
}

const EVENT_MICROTIMES = [['eventTime'], ['series', 'lastObservedTime']];
export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const RESOURCES: Resource[] = [
  resource(GATEWAY_GROUP, 'GatewayClass', 'gatewayclasses', {
    namespaced: false,
    status: true,
    generation: 'spec',
  }),
  resource(GATEWAY_GROUP, 'Gateway', 'gateways', { status: true, generation: 'spec' }),
  resource(GATEWAY_GROUP, 'HTTPRoute', 'httproutes', { status: true, generation: 'spec' }),
  resource(GATEWAY_GROUP, 'ReferenceGrant', 'referencegrants', { generation: 'spec' }),
  resource('apiextensions.k8s.io', 'CustomResourceDefinition', 'customresourcedefinitions', {
    namespaced: false,
    generation: 'spec',
  }),
  resource('networking.k8s.io', 'Ingress', 'ingresses', { status: true, generation: 'spec' }),
  resource('networking.k8s.io', 'IngressClass', 'ingressclasses', { namespaced: false, generation: 'spec' }),
  resource('', 'Service', 'services', { status: true }),
  resource('', 'Secret', 'secrets', { fieldLabels: ['type'] }),
  resource('', 'ConfigMap', 'configmaps'),
  resource('', 'Namespace', 'namespaces', { namespaced: false }),
  resource('', 'Event', 'events', {
    microTimes: EVENT_MICROTIMES,
    fieldLabels: ['involvedObject.kind', 'involvedObject.name', 'involvedObject.namespace', 'reason', 'type'],
    validate: validateCoreEvent,
  }),
  resource('events.k8s.io', 'Event', 'events', { microTimes: EVENT_MICROTIMES, validate: validateEventsV1 }),
  resource('discovery.k8s.io', 'EndpointSlice', 'endpointslices', { generation: 'nonMetadata' }),
  resource(
    'admissionregistration.k8s.io',
    'ValidatingWebhookConfiguration',
    'validatingwebhookconfigurations',
    {
      namespaced: false,
    },
  ),
  resource('coordination.k8s.io', 'Lease', 'leases', {
    unconditionalUpdate: false,
    createOnUpdate: true,
    microTimes: [
      ['spec', 'acquireTime'],
      ['spec', 'renewTime'],
    ],
  }),
];

const apiVersionOf = (r: Resource) => (r.group === '' ? r.version : `${r.group}/${r.version}`);
/** `ingresses.networking.k8s.io`, or `services` for core: how messages name a resource. */
const qualified = (r: Resource) => (r.group === '' ? r.plural : `${r.plural}.${r.group}`);

/** The APIResourceList of gateway.networking.k8s.io/v1 (the standard channel's kinds). */
function gatewayDiscovery(): KubeObject {
  const resources = RESOURCES.filter((r) => r.group === GATEWAY_GROUP).flatMap((r) => {
    const verbs = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'];
    const main = {
      name: r.plural,
      singularName: r.kind.toLowerCase(),
      namespaced: r.namespaced,
      kind: r.kind,
      verbs,
    };
    const status = {
      name: `${r.plural}/status`,
      singularName: '',
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: ['get', 'patch', 'update'],
    };
    return r.status ? [main, status] : [main];
  });
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${GATEWAY_GROUP}/v1`, resources };
}

function resolveType(type: TypeRef): Resource {
  const { kind, apiVersion } = typeof type === 'string' ? { kind: type, apiVersion: undefined } : type;
  const found = RESOURCES.find(
    (r) => r.kind === kind && (apiVersion === undefined || apiVersionOf(r) === apiVersion),
  );
  if (found === undefined) throw new Error(`fake apiserver: unknown type ${apiVersion ?? ''} ${kind}`);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Status errors (every non-2xx carries a Status object)

class ApiError extends Error {
  code: number;
  reason: string;
  details: Record<string, unknown> | undefined;
  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
  toStatus(): KubeObject {
    const { code, reason, message, details } = this;
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      details,
      code,
    };
  }
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

function objectError(r: Resource, name: string, code: number, reason: string, message: string): ApiError {
  const details = { name, ...(r.group === '' ? {} : { group: r.group }), kind: r.plural };
  return new ApiError(code, reason, message, details);
}
const notFound = (r: Resource, name: string) =>
  objectError(r, name, 404, 'NotFound', `${qualified(r)} "${name}" not found`);
const conflict = (r: Resource, name: string) =>
  objectError(
    r,
    name,
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(r)} "${name}": the object has been modified; ` +
      'please apply your changes to the latest version and try again',
  );
const invalid = (r: Resource, name: string, problems: string[]) =>
  objectError(
    r,
    name,
    422,
    'Invalid',
    `${r.kind}.${r.group || 'core'} "${name}" is invalid: ${problems.join(', ')}`,
  );
const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);

// ---------------------------------------------------------------------------------------------
// Selectors

interface LabelRequirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | 'absent';
  values: string[];
}
interface FieldRequirement {
  field: string;
  equal: boolean;
  value: string;
}
interface Filter {
  namespace: string | undefined;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
}

const KEY = '[A-Za-z0-9][-A-Za-z0-9_./]*';
const VALUE = '[-A-Za-z0-9_.]*';

/** `a=b,c!=d,e in (f,g),h notin (i),j,!k` → requirements, ANDed (labels.Parse). */
export function parseLabelSelector(text: string): LabelRequirement[] {
  const parts = text.split(/,(?![^(]*\))/).map((p) => p.trim());
  if (parts.length === 1 && parts[0] === '') return [];
  return parts.map((part) => {
    let m = new RegExp(`^!\\s*(${KEY})$`).exec(part);
    if (m) return { key: m[1] as string, op: 'absent', values: [] };
    m = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^)]*)\\)$`).exec(part);
    if (m) {
      const values = (m[3] as string).split(',').map((v) => v.trim());
      return { key: m[1] as string, op: m[2] as 'in' | 'notin', values };
    }
    m = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`).exec(part);
    if (m) return { key: m[1] as string, op: m[2] === '!=' ? 'notin' : 'in', values: [m[3] as string] };
    if (new RegExp(`^${KEY}$`).test(part)) return { key: part, op: 'exists', values: [] };
    throw badRequest(`unable to parse requirement: "${part}"`);
  });
}

function parseFieldSelector(text: string, r: Resource): FieldRequirement[] {
  if (text.trim() === '') return [];
  return text.split(',').map((part) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    const field = m[1] as string;
    if (field !== 'metadata.name' && field !== 'metadata.namespace' && !r.fieldLabels.includes(field))
      throw badRequest(`field label not supported: ${field}`);
    return { field, equal: m[2] !== '!=', value: m[3] as string };
  });
}

function fieldValue(obj: KubeObject, field: string): string {
  let value: unknown = obj;
  for (const key of field.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value === undefined || value === null ? '' : String(value);
}

function matches(filter: Filter, obj: KubeObject): boolean {
  if (filter.namespace !== undefined && obj.metadata?.namespace !== filter.namespace) return false;
  const labels = obj.metadata?.labels ?? {};
  for (const { key, op, values } of filter.labels) {
    const has = Object.hasOwn(labels, key);
    if (op === 'exists' && !has) return false;
    if (op === 'absent' && has) return false;
    if (op === 'in' && !(has && values.includes(labels[key] as string))) return false;
    if (op === 'notin' && has && values.includes(labels[key] as string)) return false;
  }
  return filter.fields.every(({ field, equal, value }) => (fieldValue(obj, field) === value) === equal);
}

// ---------------------------------------------------------------------------------------------
// Patches

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces.
 * Subtrees the patch does not touch are shared with `target`: pass a copy if it must not change.
 */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

class PatchError extends Error {}

/** The container and key a JSON pointer (RFC 6901) points into; '' (the root) is not allowed here. */
function locate(doc: Json, pointer: string): { parent: Json; key: string } {
  if (!pointer.startsWith('/')) throw new PatchError(`invalid JSON pointer "${pointer}"`);
  const tokens = pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
  const key = tokens.pop() as string;
  let parent = doc;
  for (const token of tokens) {
    parent = Array.isArray(parent) ? parent[Number(token)] : isObject(parent) ? parent[token] : undefined;
    if (parent === undefined) throw new PatchError(`path "${pointer}" does not exist`);
  }
  return { parent, key };
}

function arrayIndex(array: Json[], key: string, forAdd: boolean): number {
  if (forAdd && key === '-') return array.length;
  const index = /^(0|[1-9][0-9]*)$/.test(key) ? Number(key) : -1;
  if (index < 0 || index > array.length - (forAdd ? 0 : 1))
    throw new PatchError(`index "${key}" out of bounds`);
  return index;
}

function pointerGet(doc: Json, pointer: string): Json {
  if (pointer === '') return doc;
  const { parent, key } = locate(doc, pointer);
  const value = Array.isArray(parent)
    ? parent[arrayIndex(parent, key, false)]
    : (parent as Record<string, Json>)[key];
  if (value === undefined) throw new PatchError(`path "${pointer}" does not exist`);
  return value;
}

function pointerAdd(doc: Json, pointer: string, value: Json): Json {
  if (pointer === '') return value;
  const { parent, key } = locate(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true), 0, value);
  else if (isObject(parent)) parent[key] = value;
  else throw new PatchError(`path "${pointer}" has no container`);
  return doc;
}

function pointerRemove(doc: Json, pointer: string): Json {
  pointerGet(doc, pointer); // must exist
  const { parent, key } = locate(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, false), 1);
  else delete (parent as Record<string, Json>)[key];
  return doc;
}

/** RFC 6902 JSON patch: add, remove, replace, move, copy, test. Throws PatchError (→ 422). */
export function jsonPatch(target: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw badRequest('a JSON patch must be an array of operations');
  let doc = structuredClone(target);
  for (const operation of operations) {
    const {
      op,
      path: to,
      from,
      value,
    } = operation as { op?: string; path?: string; from?: string; value?: Json };
    if (typeof to !== 'string')
      throw new PatchError(`operation without a path: ${JSON.stringify(operation)}`);
    if (op === 'add') doc = pointerAdd(doc, to, structuredClone(value));
    else if (op === 'remove') doc = pointerRemove(doc, to);
    else if (op === 'replace') doc = pointerAdd(pointerRemove(doc, to), to, structuredClone(value));
    else if (op === 'copy') doc = pointerAdd(doc, to, structuredClone(pointerGet(doc, from ?? '')));
    else if (op === 'move') {
      const moved = pointerGet(doc, from ?? '');
      doc = pointerAdd(pointerRemove(doc, from ?? ''), to, moved);
    } else if (op === 'test') {
      if (!isDeepStrictEqual(pointerGet(doc, to), value)) throw new PatchError(`test failed at "${to}"`);
    } else throw new PatchError(`unknown operation "${op}"`);
  }
  return doc;
}

const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
];

// ---------------------------------------------------------------------------------------------
// Store helpers

/** RFC 3339 with seconds only, as metav1.Time marshals. */
const stamp = () => `${new Date().toISOString().slice(0, 19)}Z`;
/** metav1.MicroTime parses only the layout 2006-01-02T15:04:05.000000Z07:00. */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** names.SimpleNameGenerator: prefix + 5 characters of utilrand's alphabet. */
function generateName(prefix: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += alphabet[Math.floor(Math.random() * alphabet.length)];
  return prefix + suffix;
}

const keyOf = (obj: KubeObject) => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
const meta = (obj: KubeObject) => obj.metadata as NonNullable<KubeObject['metadata']>;
/** List items carry no kind/apiVersion, as in a real apiserver's lists. */
function listItem(obj: KubeObject): KubeObject {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = obj;
  return rest;
}
function withRv(obj: KubeObject, rv: number): KubeObject {
  const copy = structuredClone(obj);
  meta(copy).resourceVersion = String(rv);
  return copy;
}

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';
interface Change {
  rv: number;
  type: EventType;
  object: KubeObject;
  /** The previous stored state (for MODIFIED and DELETED): decides selector transitions. */
  prev?: KubeObject;
}
interface ResourceState {
  objects: Map<string, KubeObject>;
  history: Change[];
  /** Watches from an RV below this get 410: its events are no longer in `history`. */
  horizon: number;
}
interface Watcher {
  resource: Resource;
  filter: Filter;
  res: ServerResponse;
  bookmarks: boolean;
}

/**
 * What a watcher sees of a change (the cacher's convertToWatchEvent): an object entering the
 * selection is ADDED, one leaving it is DELETED (previous content at the new RV).
 */
function eventFor(filter: Filter, change: Change): { type: EventType; object: KubeObject } | undefined {
  const before = change.prev !== undefined && matches(filter, change.prev);
  if (change.type === 'DELETED') return before ? { type: 'DELETED', object: change.object } : undefined;
  const now = matches(filter, change.object);
  if (now) return { type: before ? 'MODIFIED' : 'ADDED', object: change.object };
  if (before) return { type: 'DELETED', object: withRv(change.prev as KubeObject, change.rv) };
  return undefined;
}

function generationMoves(r: Resource, prev: KubeObject, next: KubeObject): boolean {
  if (r.generation === 'spec') return !isDeepStrictEqual(prev.spec, next.spec);
  if (r.generation === 'nonMetadata') {
    const { metadata: a, ...restA } = prev;
    const { metadata: b, ...restB } = next;
    return !isDeepStrictEqual(restA, restB) || !isDeepStrictEqual(a?.labels, b?.labels);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Routing (the resource paths)

interface Route {
  resource: Resource;
  namespace?: string;
  name?: string;
  subresource?: string;
}

function findResource(group: string, version: string, plural: string | undefined): Resource | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
}

function parseRoute(pathname: string): Route | undefined {
  let parts: string[];
  try {
    parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
  const [root, a, b] = parts;
  const [group, version, rest] =
    root === 'api' ? ['', a, parts.slice(2)] : root === 'apis' ? [a, b, parts.slice(3)] : [];
  if (group === undefined || version === undefined || rest === undefined) return undefined;
  let namespace: string | undefined;
  let tail = rest;
  if (rest[0] === 'namespaces' && rest.length >= 3 && findResource(group, version, rest[2])?.namespaced) {
    namespace = rest[1];
    tail = rest.slice(2);
  }
  const r = findResource(group, version, tail[0]);
  if (r === undefined || tail.length > 3 || (r.namespaced && namespace === undefined && tail.length > 1))
    return undefined;
  return { resource: r, namespace, name: tail[1], subresource: tail[2] };
}

function verbOf(method: string, route: Route, query: URLSearchParams): Verb | undefined {
  const collection = route.name === undefined;
  if (method === 'GET') {
    if (!collection) return 'get';
    return ['true', '1'].includes(query.get('watch') ?? '') ? 'watch' : 'list';
  }
  // POST to all namespaces of a namespaced kind is a 405, as for real.
  if (method === 'POST')
    return collection && (route.namespace !== undefined || !route.resource.namespaced) ? 'create' : undefined;
  if (collection) return undefined; // deletecollection is not modelled
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return 'delete';
  return undefined;
}

/**
 * The name RBAC judges a request by: the path's, or for a list or watch the name an exact
 * `metadata.name=` field selector requires (the API server's RequestInfo does the same), so a rule
 * with resourceNames allows a list and a watch of that one object. A create has none: a rule with
 * resourceNames never allows it.
 */
function authorizedName(record: RequestRecord): string | undefined {
  if (record.name !== undefined) return record.name;
  if (record.verb !== 'list' && record.verb !== 'watch') return undefined;
  for (const term of (record.query.fieldSelector ?? '').split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.+?)\s*$/.exec(term);
    if (m) return m[1];
  }
  return undefined;
}

function allowedBy(rules: readonly RbacRule[], record: RequestRecord): boolean {
  const resource = record.subresource ? `${record.resource}/${record.subresource}` : record.resource;
  const name = authorizedName(record);
  return rules.some(
    (rule) =>
      rule.apiGroups.includes(record.group ?? '') &&
      rule.resources.includes(resource ?? '') &&
      rule.verbs.includes(record.verb as Verb) &&
      (rule.namespaces === undefined ||
        (record.namespace !== undefined && rule.namespaces.includes(record.namespace))) &&
      (rule.resourceNames === undefined || (name !== undefined && rule.resourceNames.includes(name))),
  );
}

function requestMatches(matcher: RequestMatcher, request: RequestRecord): boolean {
  if (typeof matcher === 'function') return matcher(request);
  return Object.entries(matcher).every(
    ([k, v]) => v === undefined || request[k as keyof RequestRecord] === v,
  );
}

// ---------------------------------------------------------------------------------------------
// The server

export class FakeApiServer {
  /** Every request, in arrival order. */
  readonly requests: RequestRecord[] = [];
  /** TCP connections accepted so far (client-node opens one per request). */
  connectionCount = 0;
  /** RBAC rules every request must match; undefined: everything is allowed. */
  rbac: RbacRule[] | undefined;

  #options: FakeApiServerOptions;
  #server: Server;
  #port = 0;
  #listening = false;
  #rv = 0;
  #states = new Map<Resource, ResourceState>();
  #watchers = new Set<Watcher>();
  #sockets = new Set<Socket>();
  #faults: Array<{ matcher: RequestMatcher; fault: Fault; left: number }> = [];
  #delays: Array<{ matcher: RequestMatcher; ms: number; left: number }> = [];
  #waiters: Array<{ matcher: RequestMatcher; resolve: (r: RequestRecord) => void }> = [];
  #tempDirs: string[] = [];

  constructor(options: FakeApiServerOptions = {}) {
    this.#options = options;
    this.rbac = options.rbac;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) =>
        this.#send(res, undefined, 500, internal(err).toStatus()),
      );
    });
    this.#server.on('connection', (socket) => {
      this.connectionCount += 1;
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    if (options.gatewayApi) {
      const version = options.gatewayApi === true ? undefined : options.gatewayApi.bundleVersion;
      const annotations: Record<string, string> =
        version === null ? {} : { [`${GATEWAY_GROUP}/bundle-version`]: version ?? 'v1.6.1' };
      this.apply({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `httproutes.${GATEWAY_GROUP}`, annotations },
        spec: {
          group: GATEWAY_GROUP,
          names: { kind: 'HTTPRoute', plural: 'httproutes' },
          scope: 'Namespaced',
        },
      });
    }
    for (const obj of options.objects ?? []) this.apply(obj);
  }

  /** Starts listening (on options.port, or the port used before when restarting). */
  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#port || this.#options.port || 0, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as { port: number }).port;
    this.#listening = true;
  }

  get port(): number {
    return this.#port;
  }
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }
  /** The global resourceVersion counter (the etcd revision), as a string. */
  get resourceVersion(): string {
    return String(this.#rv);
  }
  /** Open TCP connections right now. */
  get openConnections(): number {
    return this.#sockets.size;
  }

  // --- client configuration ---------------------------------------------------------------------

  /** A KubeConfig for this server: http needs skipTLSVerify, plus a token user. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'fake', token: this.#options.token ?? 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake', namespace: 'default' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Writes the same config as a kubeconfig file (for `--kubeconfig`); removed by close(). */
  async writeKubeconfig(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'fake-apiserver-'));
    this.#tempDirs.push(dir);
    const file = path.join(dir, 'kubeconfig');
    const yaml = `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: { server: '${this.url}', insecure-skip-tls-verify: true }
users:
- name: fake
  user: { token: '${this.#options.token ?? 'fake-token'}' }
contexts:
- name: fake
  context: { cluster: fake, user: fake, namespace: default }
current-context: fake
`;
    await writeFile(file, yaml);
    return file;
  }

  // --- direct store access (no HTTP; emits watch events like any write) ----------------------

  /** Creates or replaces an object as given (status included); returns the stored copy. */
  apply(obj: KubeObject): KubeObject {
    const r = resolveType({ kind: obj.kind ?? '', apiVersion: obj.apiVersion });
    const next = this.#normalize(r, structuredClone(obj), undefined);
    if (r.namespaced) meta(next).namespace ||= 'default';
    const prev = this.#state(r).objects.get(keyOf(next));
    const stored = prev ? this.#update(r, prev, next, 'direct') : this.#create(r, next, false);
    return structuredClone(stored);
  }

  /** Deletes an object (ignoring finalizers); returns its last state, or undefined if missing. */
  remove(ref: ObjectRef): KubeObject | undefined {
    const r = resolveType(ref);
    const prev = this.#state(r).objects.get(
      `${r.namespaced ? (ref.namespace ?? 'default') : ''}/${ref.name}`,
    );
    return prev && structuredClone(this.#delete(r, prev));
  }

  get(ref: ObjectRef): KubeObject | undefined {
    const r = resolveType(ref);
    const obj = this.#state(r).objects.get(`${r.namespaced ? (ref.namespace ?? 'default') : ''}/${ref.name}`);
    return obj && structuredClone(obj);
  }

  /** Stored objects of a type (in one namespace if given), sorted by namespace/name. */
  list(type: TypeRef, namespace?: string): KubeObject[] {
    const filter = { namespace, labels: [], fields: [] };
    return this.#select(resolveType(type), filter).map((o) => structuredClone(o));
  }

  // --- fault injection and observation --------------------------------------------------------

  /** The next `fault.count` (default 1) requests matching `matcher` fail with `fault.status`. */
  failNext(matcher: RequestMatcher, fault: Fault): void {
    this.#faults.push({ matcher, fault, left: fault.count ?? 1 });
  }

  /** The next `count` (default 1) requests matching `matcher` are answered `ms` later (a slow or
   * overloaded API server); a delayed watch sends its header late. */
  delayNext(matcher: RequestMatcher, ms: number, count = 1): void {
    this.#delays.push({ matcher, ms, left: count });
  }

  /** How many requests so far matched. */
  count(matcher: RequestMatcher = {}): number {
    return this.requests.filter((r) => requestMatches(matcher, r)).length;
  }

  /** Resolves with the next matching request, once answered (for a watch: once its header is out). */
  waitForRequest(matcher: RequestMatcher = {}, timeoutMs = 5000): Promise<RequestRecord> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(
          new Error(`fake apiserver: no request matching ${JSON.stringify(matcher)} in ${timeoutMs} ms`),
        );
      }, timeoutMs);
      const waiter = {
        matcher,
        resolve: (r: RequestRecord) => {
          clearTimeout(timer);
          resolve(r);
        },
      };
      this.#waiters.push(waiter);
    });
  }

  /** Open watch streams, optionally only those of one type. */
  openWatches(type?: TypeRef): number {
    const r = type === undefined ? undefined : resolveType(type);
    return [...this.#watchers].filter((w) => r === undefined || w.resource === r).length;
  }

  /** Ends every watch stream cleanly (the last chunk), as a real server at its timeout. */
  async endWatches(): Promise<void> {
    const watchers = [...this.#watchers];
    this.#watchers.clear();
    // A watcher still in the set has not closed yet, so 'close' is still to come.
    await Promise.all(
      watchers.map(({ res }) => new Promise<void>((resolve) => res.once('close', resolve).end())),
    );
  }

  /** Resets every watch socket (TCP RST): the client sees "terminated" and its informer stops. */
  cutWatches(): void {
    for (const { res } of this.#watchers) res.socket?.resetAndDestroy();
    this.#watchers.clear();
  }

  /**
   * Forgets the watch history of one type (or all), like an etcd compaction: a watch from an RV
   * older than the current one then gets 410 Expired. Change something afterwards if the client's
   * RV is the current one.
   */
  compact(type?: TypeRef): void {
    const only = type === undefined ? undefined : resolveType(type);
    for (const r of RESOURCES) {
      if (only !== undefined && r !== only) continue;
      const state = this.#state(r);
      state.history = [];
      state.horizon = this.#rv;
    }
  }

  /** Sends a BOOKMARK with the current RV to the watches that asked for them (allowWatchBookmarks). */
  bookmark(): void {
    for (const w of this.#watchers) {
      if (!w.bookmarks) continue;
      const object = {
        kind: w.resource.kind,
        apiVersion: apiVersionOf(w.resource),
        metadata: { resourceVersion: this.resourceVersion },
      };
      w.res.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
    }
  }

  /** Simulates an unreachable server: stops listening and resets every connection (state is kept). */
  async stop(): Promise<void> {
    await this.#closeServer(false);
  }

  /** Listens again on the same port after stop(). */
  async restart(): Promise<void> {
    await this.listen();
  }

  /** Stops listening, ends watches cleanly, destroys every connection, removes temp files. */
  async close(): Promise<void> {
    await this.#closeServer(true);
    await Promise.all(this.#tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
    this.#tempDirs = [];
  }

  /**
   * Stops listening first, so a client that re-watches after a clean end meets a refused
   * connection rather than a socket about to be destroyed; then ends or cuts the watches.
   */
  async #closeServer(cleanly: boolean): Promise<void> {
    if (!this.#listening) return;
    this.#listening = false;
    const serverClosed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    if (cleanly) await this.endWatches();
    else this.cutWatches();
    // A socket's 'close' comes after its handle closed, possibly after the server's: await both.
    const socketsClosed = [...this.#sockets].map(
      (socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())),
    );
    for (const socket of this.#sockets) socket.destroy();
    await Promise.all([serverClosed, ...socketsClosed]);
  }

  // --- the store --------------------------------------------------------------------------------

  #state(r: Resource): ResourceState {
    let state = this.#states.get(r);
    if (state === undefined) {
      state = { objects: new Map(), history: [], horizon: 0 };
      this.#states.set(r, state);
    }
    return state;
  }

  #select(r: Resource, filter: Filter): KubeObject[] {
    return [...this.#state(r).objects.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) // etcd key order: namespace, then name
      .map(([, obj]) => obj)
      .filter((obj) => matches(filter, obj));
  }

  /** Every write takes the next global RV, is stored, kept in the history and sent to watchers. */
  #commit(r: Resource, type: EventType, object: KubeObject, prev?: KubeObject): KubeObject {
    this.#rv += 1;
    meta(object).resourceVersion = String(this.#rv);
    const state = this.#state(r);
    if (type === 'DELETED') state.objects.delete(keyOf(object));
    else state.objects.set(keyOf(object), object);
    const change: Change = { rv: this.#rv, type, object, prev };
    state.history.push(change);
    if (state.history.length > (this.#options.maxHistory ?? 1000)) {
      state.horizon = (state.history.shift() as Change).rv;
    }
    for (const w of this.#watchers) {
      if (w.resource !== r) continue;
      const event = eventFor(w.filter, change);
      if (event) w.res.write(`${JSON.stringify(event)}\n`);
    }
    return object;
  }

  /** Sets kind/apiVersion and the namespace a path or default gives; checks name and namespace. */
  #normalize(r: Resource, obj: KubeObject, namespace: string | undefined): KubeObject {
    if (!isObject(obj)) throw badRequest('the body must be a JSON object');
    if (
      (obj.kind !== undefined && obj.kind !== r.kind) ||
      (obj.apiVersion ?? apiVersionOf(r)) !== apiVersionOf(r)
    )
      throw badRequest(`the body is a ${obj.apiVersion} ${obj.kind}, not a ${apiVersionOf(r)} ${r.kind}`);
    obj.kind = r.kind;
    obj.apiVersion = apiVersionOf(r);
    obj.metadata = isObject(obj.metadata) ? obj.metadata : {};
    const m = meta(obj);
    if (!r.namespaced) delete m.namespace;
    else if (!m.namespace) m.namespace = namespace;
    else if (namespace !== undefined && m.namespace !== namespace)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    // the namespace controller's immutable label (NamespaceDefaultLabelName)
    if (r.kind === 'Namespace' && typeof m.name === 'string')
      m.labels = { ...m.labels, 'kubernetes.io/metadata.name': m.name };
    return obj;
  }

  #validate(r: Resource, obj: KubeObject, creating: boolean): void {
    for (const field of r.microTimes) {
      const value = fieldValue(obj, field.join('.'));
      // The decoder fails before validation: 400, not 422, as in a real apiserver.
      if (value !== '' && !MICRO_TIME.test(value))
        throw badRequest(
          `${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: parsing time "${value}" ` +
            `as "2006-01-02T15:04:05.000000Z07:00": ${field.join('.')} is not a MicroTime`,
        );
    }
    const problems = creating && r.validate ? r.validate(obj) : [];
    if (problems.length > 0) throw invalid(r, meta(obj).name ?? '', problems);
  }

  /** Create (rest.BeforeCreate): server-set uid, creationTimestamp, generation; status cleared. */
  #create(r: Resource, obj: KubeObject, viaApi: boolean): KubeObject {
    const m = meta(obj);
    if (!m.name && typeof m.generateName === 'string' && m.generateName !== '')
      m.name = generateName(m.generateName);
    if (!m.name) throw invalid(r, '', ['metadata.name: Required value: name or generateName is required']);
    if (this.#state(r).objects.has(keyOf(obj)))
      throw objectError(r, m.name, 409, 'AlreadyExists', `${qualified(r)} "${m.name}" already exists`);
    if (viaApi && m.resourceVersion)
      throw new ApiError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
    if (viaApi || !m.uid) m.uid = randomUUID();
    if (viaApi || !m.creationTimestamp) m.creationTimestamp = stamp();
    if (r.generation !== 'none') m.generation = 1;
    else delete m.generation;
    // Ingress/Service PrepareForCreate; a CRD's status subresource drops the status of a create
    if (viaApi && r.status) obj.status = r.group === GATEWAY_GROUP ? {} : { loadBalancer: {} };
    if (viaApi) this.#validate(r, obj, true);
    return this.#commit(r, 'ADDED', obj);
  }

  /**
   * Update (rest.BeforeUpdate + the kind's PrepareForUpdate): server-owned metadata is kept, the
   * main resource keeps .status, /status keeps .spec and never moves generation; a no-op write
   * keeps the RV and emits nothing.
   */
  #update(r: Resource, prev: KubeObject, next: KubeObject, mode: 'main' | 'status' | 'direct'): KubeObject {
    const m = meta(next);
    const p = meta(prev);
    for (const key of ['name', 'namespace', 'uid', 'creationTimestamp', 'generation', 'deletionTimestamp']) {
      if (p[key] === undefined) delete m[key];
      else m[key] = p[key];
    }
    m.resourceVersion = p.resourceVersion;
    if (mode === 'main' && r.status) {
      if (prev.status === undefined) delete next.status;
      else next.status = structuredClone(prev.status);
    }
    if (mode === 'status') {
      if (prev.spec === undefined) delete next.spec;
      else next.spec = structuredClone(prev.spec);
    }
    if (mode !== 'direct') this.#validate(r, next, false);
    if (isDeepStrictEqual(next, prev)) return prev;
    if (mode !== 'status' && generationMoves(r, prev, next)) m.generation = (p.generation as number) + 1;
    // The last finalizer removed from an object being deleted: the delete completes.
    if (m.deletionTimestamp && !(m.finalizers as unknown[] | undefined)?.length)
      return this.#commit(r, 'DELETED', next, prev);
    return this.#commit(r, 'MODIFIED', next, prev);
  }

  /** DELETED carries the last stored state at the delete's RV. */
  #delete(r: Resource, prev: KubeObject): KubeObject {
    return this.#commit(r, 'DELETED', structuredClone(prev), prev);
  }

  // --- HTTP -------------------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const parsed = parseRoute(url.pathname);
    // the Gateway API kinds exist only with their CRDs
    const route = parsed?.resource.group === GATEWAY_GROUP && !this.#options.gatewayApi ? undefined : parsed;
    const contentType = req.headers['content-type']?.split(';')[0]?.trim();
    const record: RequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      verb: route && verbOf(req.method ?? 'GET', route, url.searchParams),
      group: route?.resource.group,
      resource: route?.resource.plural,
      namespace: route?.namespace,
      name: route?.name,
      subresource: route?.subresource,
      contentType,
      headers: req.headers,
    };
    const text = await readBody(req);
    if (text !== '') {
      try {
        record.body = JSON.parse(text);
      } catch {
        record.body = text;
      }
    }
    this.requests.push(record);
    const delay = this.#delays.find((d) => requestMatches(d.matcher, record));
    if (delay !== undefined) {
      delay.left -= 1;
      if (delay.left <= 0) this.#delays = this.#delays.filter((d) => d !== delay);
      await new Promise((resolve) => setTimeout(resolve, delay.ms)); // a slow API server
    }
    try {
      this.#checkAuth(req);
      this.#injectFault(record);
      if (route === undefined && this.#options.gatewayApi && url.pathname === `/apis/${GATEWAY_GROUP}/v1`) {
        this.#send(res, record, 200, gatewayDiscovery());
        return;
      }
      if (route === undefined)
        throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      this.#authorize(record);
      if (record.verb === undefined)
        throw new ApiError(
          405,
          'MethodNotAllowed',
          `the server does not allow this method on the requested resource`,
        );
      if (record.verb === 'watch') return this.#watch(route, url.searchParams, res, record);
      const [status, body] = this.#serve(record.verb, route, record, text);
      this.#send(res, record, status, body);
    } catch (err) {
      const error = err instanceof ApiError ? err : internal(err);
      if (error.code === 429) res.setHeader('Retry-After', '1');
      this.#send(res, record, error.code, error.toStatus());
    }
  }

  #checkAuth(req: IncomingMessage): void {
    const token = this.#options.token;
    if (token !== undefined && req.headers.authorization !== `Bearer ${token}`)
      throw new ApiError(401, 'Unauthorized', 'Unauthorized');
  }

  /** RBAC, when rules are set: 403 Forbidden with the API server's wording. */
  #authorize(record: RequestRecord): void {
    const rules = this.rbac;
    if (rules === undefined || record.verb === undefined || allowedBy(rules, record)) return;
    const resource = record.subresource ? `${record.resource}/${record.subresource}` : record.resource;
    const name = record.name === undefined ? '' : ` "${record.name}"`;
    const where =
      record.namespace === undefined ? 'at the cluster scope' : `in the namespace "${record.namespace}"`;
    throw new ApiError(
      403,
      'Forbidden',
      `${resource}${name} is forbidden: User "fake" cannot ${record.verb} resource "${resource}" in API group "${record.group ?? ''}" ${where}`,
    );
  }

  #injectFault(record: RequestRecord): void {
    const entry = this.#faults.find((f) => requestMatches(f.matcher, record));
    if (entry === undefined) return;
    entry.left -= 1;
    if (entry.left <= 0) this.#faults = this.#faults.filter((f) => f !== entry);
    const { status, message } = entry.fault;
    throw new ApiError(status, REASONS[status] ?? 'Unknown', message ?? `injected ${status}`);
  }

  /** Every JSON answer says `Content-Type: application/json`, as a real apiserver's do. */
  #send(res: ServerResponse, record: RequestRecord | undefined, status: number, body: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
    if (record) this.#answered(record, status);
  }

  #answered(record: RequestRecord, status: number): void {
    record.status = status;
    const ready = this.#waiters.filter((w) => requestMatches(w.matcher, record));
    this.#waiters = this.#waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(record);
  }

  #filter(route: Route, query: URLSearchParams): Filter {
    return {
      namespace: route.namespace,
      labels: parseLabelSelector(query.get('labelSelector') ?? ''),
      fields: parseFieldSelector(query.get('fieldSelector') ?? '', route.resource),
    };
  }

  #serve(verb: Exclude<Verb, 'watch'>, route: Route, record: RequestRecord, text: string): [number, unknown] {
    const r = route.resource;
    if (route.subresource !== undefined && !(route.subresource === 'status' && r.status))
      throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    const existing =
      route.name === undefined
        ? undefined
        : this.#state(r).objects.get(`${route.namespace ?? ''}/${route.name}`);
    if (verb === 'list') {
      const items = this.#select(r, this.#filter(route, new URLSearchParams(record.query))).map(listItem);
      const metadata = { resourceVersion: this.resourceVersion }; // the RV at list time
      return [200, { kind: `${r.kind}List`, apiVersion: apiVersionOf(r), metadata, items }];
    }
    if (verb === 'get') {
      if (!existing) throw notFound(r, route.name as string);
      return [200, existing];
    }
    if (verb === 'delete') {
      if (!existing) throw notFound(r, route.name as string);
      if ((meta(existing).finalizers as unknown[] | undefined)?.length) {
        // Finalizers: only deletionTimestamp is set (a MODIFIED); the last finalizer removed deletes.
        if (meta(existing).deletionTimestamp) return [200, existing];
        const next = structuredClone(existing);
        meta(next).deletionTimestamp = stamp();
        return [200, this.#commit(r, 'MODIFIED', next, existing)];
      }
      const gone = this.#delete(r, existing);
      // finalizeDelete: a Status naming the deleted object (ReturnDeletedObject is false).
      const details = { name: route.name, group: r.group || undefined, kind: r.plural, uid: meta(gone).uid };
      return [200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }];
    }
    if (verb === 'patch') return [200, this.#patch(route, existing, record.contentType, text)];
    if (record.contentType !== 'application/json')
      throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format`);
    const body = this.#normalize(r, parseJson(text), route.namespace);
    if (verb === 'create') return [201, this.#create(r, body, true)];
    return this.#put(route, existing, body);
  }

  /** PUT: 409 on a stale RV or another uid; 422 without RV for Lease. */
  #put(route: Route, existing: KubeObject | undefined, body: KubeObject): [number, KubeObject] {
    const r = route.resource;
    const name = route.name as string;
    const m = meta(body);
    if (m.name !== name)
      throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${name})`);
    if (!existing) {
      // AllowCreateOnUpdate applies only to a PUT without resourceVersion (generic Store.Update).
      if (r.createOnUpdate && !m.resourceVersion && route.subresource === undefined)
        return [201, this.#create(r, body, true)];
      throw notFound(r, name);
    }
    if (!m.resourceVersion && !r.unconditionalUpdate)
      throw invalid(r, name, [
        'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
      ]);
    if (m.resourceVersion && m.resourceVersion !== meta(existing).resourceVersion) throw conflict(r, name);
    if (m.uid && m.uid !== meta(existing).uid)
      throw objectError(r, name, 409, 'Conflict', `Precondition failed: UID in precondition: ${m.uid}`);
    return [200, this.#update(r, existing, body, route.subresource === 'status' ? 'status' : 'main')];
  }

  /** PATCH: json-patch, merge-patch, strategic (as merge); 415 otherwise. */
  #patch(
    route: Route,
    existing: KubeObject | undefined,
    contentType: string | undefined,
    text: string,
  ): KubeObject {
    const r = route.resource;
    if (!contentType || !PATCH_TYPES.includes(contentType))
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(', ')}`,
      );
    if (!existing) throw notFound(r, route.name as string);
    const patch = parseJson(text);
    let patched: Json;
    try {
      patched =
        contentType === 'application/json-patch+json'
          ? jsonPatch(existing, patch)
          : mergePatch(structuredClone(existing), patch);
    } catch (err) {
      if (err instanceof PatchError)
        throw new ApiError(422, 'Invalid', `the server rejected our request: ${err.message}`);
      throw err;
    }
    const next = this.#normalize(r, patched as KubeObject, route.namespace);
    // A patch is unconditional unless it carries metadata.resourceVersion.
    const rv = meta(next).resourceVersion;
    if (rv && rv !== meta(existing).resourceVersion) throw conflict(r, route.name as string);
    return this.#update(r, existing, next, route.subresource === 'status' ? 'status' : 'main');
  }

  /**
   * A watch: header flushed at once, then the replay (history after RV,
   * or synthetic ADDED for RV unset/"0"), then live events; a too-old RV gets 410.
   */
  #watch(route: Route, query: URLSearchParams, res: ServerResponse, record: RequestRecord): void {
    const r = route.resource;
    const filter = this.#filter(route, query);
    const state = this.#state(r);
    const since = query.get('resourceVersion') ?? '';
    let replay: Array<{ type: EventType; object: KubeObject }>;
    if (since === '' || since === '0') {
      replay = this.#select(r, filter).map((object) => ({ type: 'ADDED', object }));
    } else {
      if (!/^\d+$/.test(since)) throw badRequest(`invalid resource version: ${since}`);
      if (Number(since) < state.horizon) {
        const expired = new ApiError(410, 'Expired', `too old resource version: ${since} (${state.horizon})`);
        if (this.#options.expiredWatch === 'status') throw expired;
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: expired.toStatus() })}\n`);
        this.#answered(record, 200);
        return;
      }
      replay = state.history.filter((c) => c.rv > Number(since)).flatMap((c) => eventFor(filter, c) ?? []);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders(); // informer.start() resolves only once the header has arrived
    for (const event of replay) res.write(`${JSON.stringify(event)}\n`);
    const watcher: Watcher = {
      resource: r,
      filter,
      res,
      bookmarks: query.get('allowWatchBookmarks') === 'true',
    };
    this.#watchers.add(watcher);
    const seconds = Number(query.get('timeoutSeconds') ?? Number.NaN);
    const timeoutMs = seconds > 0 ? seconds * 1000 : this.#options.watchTimeoutMs;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => res.end(), timeoutMs).unref();
    res.on('close', () => {
      clearTimeout(timer);
      this.#watchers.delete(watcher);
    });
    this.#answered(record, 200);
  }
}

function internal(err: unknown): ApiError {
  return new ApiError(
    500,
    'InternalError',
    `fake apiserver: ${err instanceof Error ? err.message : String(err)}`,
  );
}

function parseJson(text: string): KubeObject {
  try {
    return JSON.parse(text) as KubeObject;
  } catch (err) {
    throw badRequest(`the body is not JSON: ${(err as Error).message}`);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

/** Creates a fake apiserver and starts it on 127.0.0.1. */
export async function startFakeApiServer(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const server = new FakeApiServer(options);
  await server.listen();
  return server;
}
