// A manifests folder for N Ingresses, as a GitOps repository would hold it: the synthetic cluster of
// model-build.ts (its `generateCluster`, clean case) written as block-style YAML (one multi-document
// file per namespace: team-00.yaml … team-99.yaml, plus ingress-class.yaml) or as JSON (one List per
// file, the same split). Per Ingress, in order:
// its 3 Services, each followed by its EndpointSlice, then the Ingress.
//
// Changes to the generated objects, so that ingress-ts can serve them on loopback:
// - metadata keeps name, namespace, labels and annotations; the fields an API server sets (uid,
//   resourceVersion, creationTimestamp) are dropped, so ingress-ts stamps objects itself as it does
//   for any manifest without them. Services lose their clusterIP for the same reason;
// - every EndpointSlice endpoint is 127.0.0.1 and every slice port (and Service targetPort) is the
//   upstream's port, so every route of every host reaches the one upstream. The 3 endpoints of a
//   slice thus become the same address:port and the model keeps one endpoint per upstream;
// - only the `ingress-ts` IngressClass is written (model-build's cluster also has an unrelated one).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EndpointSlice, Ingress, KubeObject, ObjectMeta, Service } from '../../lib/model/index.ts';
import { generateCluster } from '../model-build.ts';
import { applied, managed } from './realistic-metadata.ts';

export interface ScaleManifests {
  /** files written */
  files: number;
  /** Kubernetes objects in them (IngressClass included) */
  objects: number;
  ingresses: number;
  services: number;
  endpointSlices: number;
  /** total size of the files */
  bytes: number;
  /** the first host of the Ingress in the middle of the set (index ⌊N/2⌋ in name order) */
  host: string;
}

// --- a minimal block-style YAML writer ---------------------------------------------------------------
// The `yaml` package's stringify needs ~16 s for the 70,000 objects of N = 10,000; this writer handles
// the plain JSON values the generator makes (objects, arrays, strings, numbers, booleans) in well
// under a second. Strings that YAML would read as something else are written double-quoted (JSON
// string syntax is valid YAML).

const PLAIN = /^[A-Za-z_/][\w./-]*$/;
const RESERVED = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;

function scalar(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') {
    return PLAIN.test(value) && !RESERVED.test(value) ? value : JSON.stringify(value);
  }
  throw new Error(`cannot write ${typeof value} as YAML`);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value` as YAML lines, each indented by `indent` spaces. */
function block(value: unknown, indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (Array.isArray(value)) {
    for (const item of value) {
      if (isObject(item) && Object.keys(item).length > 0) {
        // "- " then the mapping's first key on the same line, the rest aligned under it
        const lines: string[] = [];
        block(item, indent + 2, lines);
        lines[0] = `${pad}- ${lines[0]!.slice(indent + 2)}`;
        out.push(...lines);
      } else if (Array.isArray(item) && item.length > 0) {
        out.push(`${pad}-`);
        block(item, indent + 2, out);
      } else out.push(`${pad}- ${inline(item)}`);
    }
    return;
  }
  if (!isObject(value)) throw new Error('a YAML block must be a mapping or a sequence');
  for (const [key, child] of Object.entries(value)) {
    if (child === undefined) continue;
    const nested =
      (isObject(child) && Object.keys(child).length > 0) || (Array.isArray(child) && child.length > 0);
    if (!nested) out.push(`${pad}${scalar(key)}: ${inline(child)}`);
    else {
      out.push(`${pad}${scalar(key)}:`);
      block(child, Array.isArray(child) ? indent : indent + 2, out);
    }
  }
}

/** A scalar, or an empty mapping/sequence in flow style. */
const inline = (value: unknown): string =>
  Array.isArray(value) ? '[]' : isObject(value) ? '{}' : scalar(value);

/** One YAML document per object, separated by `---`. */
export function toYaml(objects: readonly unknown[]): string {
  const out: string[] = [];
  for (const object of objects) {
    out.push('---');
    block(object, 0, out);
  }
  out.push('');
  return out.join('\n');
}

// --- the cluster, adapted ---------------------------------------------------------------------------

function gitopsMeta(metadata: ObjectMeta | undefined): ObjectMeta {
  const { name, namespace, labels, annotations } = metadata ?? {};
  return { name, namespace, labels, annotations };
}

function adaptService(service: Service, port: number): Service {
  const { clusterIP: _assigned, ...spec } = service.spec ?? {};
  return {
    ...service,
    metadata: gitopsMeta(service.metadata),
    spec: { ...spec, ports: (spec.ports ?? []).map((p) => ({ ...p, targetPort: port })) },
  };
}

function adaptSlice(slice: EndpointSlice, port: number): EndpointSlice {
  return {
    ...slice,
    metadata: gitopsMeta(slice.metadata),
    ports: (slice.ports ?? []).map((p) => ({ ...p, port })),
    endpoints: (slice.endpoints ?? []).map((e) => ({ ...e, addresses: ['127.0.0.1'] })),
  };
}

const nameOf = (object: KubeObject): string => object.metadata?.name ?? '';
const byName = (a: KubeObject, b: KubeObject): number =>
  nameOf(a).localeCompare(nameOf(b), 'en', { numeric: true });

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}

/** Generates the cluster for `size` Ingresses and writes it under `dir` (which must exist). */
/** yaml: multi-document block YAML files; json: one `List` per file, as `kubectl get -o json` writes it. */
export type ManifestFormat = 'yaml' | 'json';

export function writeScaleManifests(
  dir: string,
  size: number,
  upstreamPort: number,
  format: ManifestFormat = 'yaml',
  /** add the managedFields and kubectl's last-applied annotation a cluster would (realistic-metadata.ts) */
  realistic = false,
): ScaleManifests {
  const { snapshot } = generateCluster(size, false);
  const ingressClass = snapshot.ingressClasses.find((c) => nameOf(c) === 'ingress-ts');
  if (ingressClass === undefined) throw new Error('the generated cluster has no ingress-ts IngressClass');
  const ingresses = [...snapshot.ingresses].sort(byName);

  // the generator labels each Service with its app (= the Ingress's name) and each slice with its Service
  const servicesByApp = groupBy(snapshot.services, (s) => s.metadata?.labels?.app ?? '');
  const slicesByService = groupBy(
    snapshot.endpointSlices,
    (s) => `${s.metadata?.namespace}/${s.metadata?.labels?.['kubernetes.io/service-name']}`,
  );

  const byNamespace = new Map<string, KubeObject[]>();
  for (const ingress of ingresses) {
    const namespace = ingress.metadata?.namespace ?? 'default';
    const objects = byNamespace.get(namespace) ?? [];
    byNamespace.set(namespace, objects);
    for (const service of (servicesByApp.get(nameOf(ingress)) ?? []).sort(byName)) {
      const adapted = adaptService(service, upstreamPort);
      objects.push(realistic ? applied(adapted) : adapted);
      for (const slice of slicesByService.get(`${namespace}/${nameOf(service)}`) ?? []) {
        const sliceObject = adaptSlice(slice, upstreamPort);
        objects.push(realistic ? managed(sliceObject, 'kube-controller-manager') : sliceObject);
      }
    }
    const object = { ...ingress, metadata: gitopsMeta(ingress.metadata) } satisfies Ingress;
    objects.push(realistic ? applied(object, true) : object);
  }

  let bytes = 0;
  const write = (name: string, objects: readonly KubeObject[]) => {
    const text =
      format === 'yaml'
        ? toYaml(objects)
        : `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 1)}\n`;
    writeFileSync(join(dir, `${name}.${format}`), text);
    bytes += Buffer.byteLength(text);
  };
  write('ingress-class', [{ ...ingressClass, metadata: { name: nameOf(ingressClass) } }]);
  for (const [namespace, objects] of [...byNamespace].sort(([a], [b]) => (a < b ? -1 : 1))) {
    write(namespace, objects);
  }

  const middle = ingresses[Math.floor(size / 2)];
  const host = middle?.spec?.rules?.[0]?.host;
  if (host === undefined) throw new Error('the middle Ingress has no host');
  const services = snapshot.services.length;
  const endpointSlices = snapshot.endpointSlices.length;
  return {
    files: byNamespace.size + 1,
    objects: 1 + ingresses.length + services + endpointSlices,
    ingresses: ingresses.length,
    services,
    endpointSlices,
    bytes,
    host,
  };
}
