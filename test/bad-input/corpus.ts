// The bad-input corpus: one YAML file per case under corpus/, plus a few cases too large to keep as
// files (generated here). A file starts with comment lines:
//   # what the case is
//   # expect: CODE Kind namespace/name      (one or more: a diagnostic that must be reported)
//   # expect: nothing: <why>                (instead, where ingress-nginx reports nothing either)
//   # options: {"configMap": "corpus/x"}   (optional ModelOptions for the build)
// The known-good world (good.example → Service good/web) is what must keep working next to each case.

import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments, stringify } from 'yaml';
import type { Diagnostic, KubeObject, ModelOptions, Snapshot } from '../../lib/model/index.ts';

export interface Expected {
  code: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface CorpusCase {
  /** file name without .yaml, or the generated case's name */
  name: string;
  what: string;
  expect: Expected[];
  /** why the case expects no diagnostic ('' when it expects some) */
  nothing: string;
  options: Partial<ModelOptions>;
  /** the manifest text (what the e2e test writes into its manifests folder) */
  yaml: string;
  objects: unknown[];
}

export const NAMESPACE = 'corpus';
export const GOOD_HOST = 'good.example';
const PREFIX = 'nginx.ingress.kubernetes.io';
const corpusDir = new URL('corpus/', import.meta.url);

function parseHeader(name: string, text: string): Omit<CorpusCase, 'yaml' | 'objects' | 'name'> {
  const lines = text.split('\n');
  const head: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('#')) break;
    head.push(line.slice(1).trim());
  }
  const what = head[0] ?? '';
  const expect: Expected[] = [];
  let options: Partial<ModelOptions> = {};
  let nothing = '';
  for (const line of head.slice(1)) {
    const expectMatch = /^expect: (\S+) (\S+) ([^/\s]*)\/(\S*)$/.exec(line);
    if (line.startsWith('expect: nothing: ')) {
      nothing = line.slice('expect: nothing: '.length);
    } else if (expectMatch !== null) {
      const [, code = '', kind = '', namespace = '', objectName = ''] = expectMatch;
      expect.push({ code, kind, namespace: unescapeName(namespace), name: unescapeName(objectName) });
    } else if (line.startsWith('options: ')) {
      options = JSON.parse(line.slice('options: '.length)) as Partial<ModelOptions>;
    } else {
      throw new Error(`${name}: header line not understood: ${line}`);
    }
  }
  if (what === '' || (expect.length === 0) === (nothing === ''))
    throw new Error(`${name}: a case needs a description and either expect lines or one expect: nothing`);
  return { what, expect, nothing, options };
}

function fromYaml(name: string, yaml: string): CorpusCase {
  const objects = parseAllDocuments(yaml).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${name}: ${doc.errors[0]?.message}`);
    return doc.toJS() as unknown;
  });
  return { name, yaml, objects, ...parseHeader(name, yaml) };
}

const ingressDoc = (name: string, annotations: Record<string, string>, paths: unknown[]) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: NAMESPACE, annotations },
  spec: { ingressClassName: 'ingress-ts', rules: [{ host: `${name}.example`, http: { paths } }] },
});

const prefixPath = (path: string, service: string) => ({
  path,
  pathType: 'Prefix',
  backend: { service: { name: service, port: { number: 80 } } },
});

/** Cases too large to keep in the repository. */
function generated(): CorpusCase[] {
  const mib = 'a'.repeat(1024 * 1024);
  const paths = Array.from({ length: 5000 }, (_, i) => prefixPath(`/p${i % 4999}`, 'many'));
  const cases = [
    {
      name: 'generated-huge-annotations',
      what: 'annotation values of 1 MiB (a number, a URL, a regex, a header list)',
      expect: 'ANNOTATION_INVALID Ingress corpus/generated-huge-annotations',
      object: ingressDoc(
        'generated-huge-annotations',
        {
          [`${PREFIX}/proxy-read-timeout`]: `1${'0'.repeat(1024 * 1024)}`,
          [`${PREFIX}/permanent-redirect`]: `https://x.example/${mib}`,
          [`${PREFIX}/canary-by-header-pattern`]: `(${mib})+$`,
          [`${PREFIX}/cors-allow-headers`]: `${'X-A,'.repeat(256 * 1024)};`,
          [`${PREFIX}/rewrite-target`]: `/${mib}`,
        },
        [prefixPath('/', 'huge')],
      ),
    },
    {
      name: 'generated-5000-paths',
      what: 'an Ingress with 5,000 paths, the last one a duplicate of the first',
      expect: 'PATH_CONFLICT Ingress corpus/generated-5000-paths',
      object: ingressDoc('generated-5000-paths', {}, paths),
    },
    {
      name: 'generated-huge-regex-paths',
      // (1,000 paths of 1,000 characters: ~1.4 s to build, ~2.4 s to compile on the CI machine)
      what: 'use-regex with 300 paths of 300 characters each, every tenth one refused by RE2',
      expect: 'PATH_REGEX_INVALID Ingress corpus/generated-huge-regex-paths',
      object: ingressDoc(
        'generated-huge-regex-paths',
        { [`${PREFIX}/use-regex`]: 'true' },
        Array.from({ length: 300 }, (_, i) =>
          prefixPath(`/${i}${i % 10 === 0 ? '(?!x)' : '(a|aa)*'}${'b'.repeat(290)}`, 'regex'),
        ),
      ),
    },
  ];
  return cases.map((c) => {
    const yaml = `# ${c.what}\n# expect: ${c.expect}\n${stringify(c.object, { lineWidth: 0 })}`;
    return { name: c.name, yaml, objects: [c.object], ...parseHeader(c.name, yaml) };
  });
}

export function loadCorpus(): CorpusCase[] {
  const files = readdirSync(corpusDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  return [
    ...files.map((f) => fromYaml(f.slice(0, -'.yaml'.length), readFileSync(new URL(f, corpusDir), 'utf8'))),
    ...generated(),
  ];
}

/** The known-good world: good.example / → Service good/web (one ready endpoint on `port`). */
export function goodObjects(port = 8080): KubeObject[] {
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'ingress-ts' },
      spec: { controller: 'ingress-ts.dev/controller' },
    } as KubeObject,
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'good', namespace: 'good', creationTimestamp: '2020-01-01T00:00:00Z' },
      spec: {
        ingressClassName: 'ingress-ts',
        rules: [{ host: GOOD_HOST, http: { paths: [prefixPath('/', 'web')] } }],
      },
    } as KubeObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'good' },
      spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    } as KubeObject,
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-1', namespace: 'good', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port, protocol: 'TCP' }],
      endpoints: [{ addresses: ['127.0.0.1'] }],
    } as KubeObject,
  ];
}

const LISTS: Record<string, keyof Snapshot> = {
  Ingress: 'ingresses',
  IngressClass: 'ingressClasses',
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Secret: 'secrets',
  ConfigMap: 'configMaps',
};

/** A Snapshot of the objects, sorted into lists by kind (anything else is dropped, as the sources do). */
export function snapshotFrom(objects: readonly unknown[]): Snapshot {
  const snapshot: { [K in keyof Snapshot]: unknown[] } = {
    ingresses: [],
    ingressClasses: [],
    services: [],
    endpointSlices: [],
    secrets: [],
    configMaps: [],
  };
  for (const object of objects) {
    const kind = (object as { kind?: unknown } | null)?.kind;
    const list = typeof kind === 'string' && Object.hasOwn(LISTS, kind) ? LISTS[kind] : undefined;
    if (list !== undefined) snapshot[list]?.push(object);
  }
  return snapshot as Snapshot;
}

export const matches = (d: Diagnostic, e: Expected): boolean =>
  d.code === e.code && d.kind === e.kind && d.namespace === e.namespace && d.name === e.name;

/** JSON string escapes, and \uXXXX for spaces and anything not printable ASCII: one word, one line. */
export const escapeName = (text: string): string =>
  JSON.stringify(text)
    .slice(1, -1)
    .replace(/[^\x21-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const unescapeName = (text: string): string => JSON.parse(`"${text}"`) as string;

/** `CODE Kind namespace/name`, as an expect line writes it. */
export const describeDiagnostic = (d: Diagnostic): string =>
  `${d.code} ${d.kind} ${escapeName(d.namespace)}/${escapeName(d.name)}`;
