// Standalone mode's source: a watched directory of manifests becomes the objects of its store.

import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { DEFAULT_MODEL_OPTIONS } from '../../lib/model/index.ts';
import type { KubeObject, Snapshot } from '../../lib/model/k8s.ts';
import {
  createManifestSource,
  type ManifestProblem,
  type ManifestSource,
} from '../../lib/source/manifests/source.ts';

/** The Ingresses here have no class: these tests are about reading files, so every Ingress counts
 * (the store's relevance filter has its own tests, and manifests-store.test.ts shows it here). */
const MODEL = { ...DEFAULT_MODEL_OPTIONS, watchIngressWithoutClass: true };

/** Failure guard for awaited events; they normally arrive within ~100 ms. */
const TIMEOUT_MS = 5000;
const T0 = Date.parse('2026-03-01T10:00:00.750Z');
const T0_STAMP = '2026-03-01T10:00:00Z';

interface Harness {
  dir: string;
  source: ManifestSource;
  changes: () => number;
  problemsSeen: ManifestProblem[];
  clock: { ms: number };
  /** Resolves at the next onChange whose snapshot satisfies the predicate. */
  changed: (predicate?: (snapshot: Snapshot) => boolean, what?: string) => Promise<Snapshot>;
  /** Resolves at the next onProblem that satisfies the predicate. */
  problem: (predicate: (problem: ManifestProblem) => boolean) => Promise<ManifestProblem>;
  write: (rel: string, text: string) => Promise<void>;
}

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ingress-ts-manifests-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function write(dir: string, rel: string, text: string): Promise<void> {
  const file = path.join(dir, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

/** Writes the files, starts a source on them, stops it in teardown. */
async function harness(
  t: Test,
  files: Record<string, string> = {},
  extra: { emptiedSettleMs?: number } = {},
): Promise<Harness> {
  const dir = await tempDir(t);
  for (const [rel, text] of Object.entries(files)) await write(dir, rel, text);
  const clock = { ms: T0 };
  let count = 0;
  const problemsSeen: ManifestProblem[] = [];
  let changeWaiters: Array<() => void> = [];
  let problemWaiters: Array<(problem: ManifestProblem) => void> = [];
  const source = createManifestSource({
    dir,
    model: MODEL,
    now: () => new Date(clock.ms),
    ...extra,
    onChange: () => {
      count += 1;
      const waiters = changeWaiters;
      changeWaiters = [];
      for (const waiter of waiters) waiter();
    },
    onProblem: (problem) => {
      problemsSeen.push(problem);
      for (const waiter of problemWaiters) waiter(problem);
    },
  });
  await source.start();
  t.teardown(() => source.stop());

  const changed = (predicate: (snapshot: Snapshot) => boolean = () => true, what = 'a change') =>
    new Promise<Snapshot>((resolve, reject) => {
      const timeout = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), TIMEOUT_MS);
      const check = () => {
        const snapshot = source.snapshot();
        if (predicate(snapshot)) {
          clearTimeout(timeout);
          resolve(snapshot);
        } else changeWaiters.push(check);
      };
      changeWaiters.push(check);
    });
  const problem = (predicate: (problem: ManifestProblem) => boolean) =>
    new Promise<ManifestProblem>((resolve, reject) => {
      const timeout = setTimeout(() => reject(new Error('timed out waiting for a problem')), TIMEOUT_MS);
      const waiter = (found: ManifestProblem) => {
        if (!predicate(found)) return;
        clearTimeout(timeout);
        problemWaiters = problemWaiters.filter((other) => other !== waiter);
        resolve(found);
      };
      problemWaiters.push(waiter);
    });
  return {
    dir,
    source,
    changes: () => count,
    problemsSeen,
    clock,
    changed,
    problem,
    write: (rel, text) => write(dir, rel, text),
  };
}

// --- manifest builders ---

function ingressYaml(
  name: string,
  opts: { namespace?: string; host?: string; created?: string } = {},
): string {
  const meta = [`  name: ${name}`];
  if (opts.namespace) meta.push(`  namespace: ${opts.namespace}`);
  if (opts.created) meta.push(`  creationTimestamp: "${opts.created}"`);
  return [
    'apiVersion: networking.k8s.io/v1',
    'kind: Ingress',
    'metadata:',
    ...meta,
    'spec:',
    '  rules:',
    `  - host: ${opts.host ?? `${name}.example.com`}`,
    '',
  ].join('\n');
}

function serviceYaml(name: string): string {
  return [
    'apiVersion: v1',
    'kind: Service',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  ports:',
    '  - port: 80',
    '',
  ].join('\n');
}

const ids = (objects: readonly KubeObject[]) =>
  objects.map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`).sort();
/** By name, or by namespace/name. */
const find = (objects: readonly KubeObject[], name: string) =>
  objects.find((o) =>
    name.includes('/') ? `${o.metadata?.namespace}/${o.metadata?.name}` === name : o.metadata?.name === name,
  );
const created = (snapshot: Snapshot, name: string) =>
  find(snapshot.ingresses, name)?.metadata?.creationTimestamp;
const host = (snapshot: Snapshot, name: string) =>
  (find(snapshot.ingresses, name) as { spec?: { rules?: Array<{ host?: string }> } } | undefined)?.spec
    ?.rules?.[0]?.host;

// --- reading ---

t.test(
  'reads YAML (multi-document), JSON, Lists, recursively; keeps only the kinds the model reads',
  async (t) => {
    const h = await harness(t, {
      'multi.yaml': [
        ingressYaml('one', { namespace: 'team' }),
        '---',
        '# an empty document',
        '---',
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: web',
        '---',
        serviceYaml('web'),
        '---',
        'apiVersion: networking.k8s.io/v1',
        'kind: IngressClass',
        'metadata:',
        '  name: nginx',
        '  namespace: ignored',
        'spec:',
        '  controller: k8s.io/ingress-nginx',
        '---',
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources: [multi.yaml]',
      ].join('\n'),
      'svc.json': JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'tls', namespace: 'team' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': 'Y2VydA==' },
      }),
      'list.yml': [
        'apiVersion: v1',
        'kind: List',
        'items:',
        '- apiVersion: v1',
        '  kind: ConfigMap',
        '  metadata: { name: settings }',
        '  data: { proxy-body-size: 8m, use-gzip: true, workers: 4 }',
        '- apiVersion: discovery.k8s.io/v1',
        '  kind: EndpointSlice',
        '  metadata: { name: web-abc, labels: { kubernetes.io/service-name: web } }',
        '  addressType: IPv4',
        '  endpoints: [{ addresses: [10.0.0.1] }]',
      ].join('\n'),
      'typed-list.json': JSON.stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressList',
        items: [{ metadata: { name: 'from-api', namespace: 'ns' }, spec: {} }],
      }),
      'apps/deeper/two.yaml': ingressYaml('two'),
      '.hidden/three.yaml': ingressYaml('three'),
      'node_modules/pkg/four.yaml': ingressYaml('four'),
      'notes.txt': ingressYaml('five'),
      '.six.yaml': ingressYaml('six'),
    });
    const s = h.source.snapshot();
    t.same(ids(s.ingresses), ['default/two', 'ns/from-api', 'team/one']);
    t.same(ids(s.services), ['default/web']);
    t.same(ids(s.secrets), ['team/tls']);
    t.same(ids(s.configMaps), ['default/settings']);
    t.same(ids(s.endpointSlices), ['default/web-abc']);
    t.same(ids(s.ingressClasses), ['/nginx'], 'IngressClass is cluster-scoped: its namespace is dropped');
    t.equal(find(s.ingresses, 'from-api')?.kind, 'Ingress', 'typed list items get the kind of their list');
    t.same(
      (find(s.configMaps, 'settings') as { data?: unknown }).data,
      { 'proxy-body-size': '8m', 'use-gzip': 'true', workers: '4' },
      'unquoted scalars in string maps become strings',
    );
    t.same(h.source.problems(), [], 'ignored kinds are ignored silently');
    t.same(h.problemsSeen, []);
  },
);

t.test(
  'an export from a cluster: managedFields and the kubectl last-applied copy are not kept',
  async (t) => {
    const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
    const exported = (kind: string, name: string, extra: object) => ({
      apiVersion: kind === 'Ingress' ? 'networking.k8s.io/v1' : 'v1',
      kind,
      metadata: {
        name,
        namespace: 'team',
        uid: `uid-${name}`,
        resourceVersion: '42',
        labels: { app: name },
        annotations: {
          'nginx.ingress.kubernetes.io/ssl-redirect': 'false',
          [LAST_APPLIED]: `{"kind":"${kind}","marker":"applied"}\n`,
        },
        managedFields: [
          { manager: 'kubectl-client-side-apply', operation: 'Update', fieldsV1: { marker: 1 } },
        ],
      },
      ...extra,
    });
    const h = await harness(t, {
      'export.json': JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          exported('Ingress', 'site', { spec: { rules: [{ host: 'site.example.com' }] } }),
          exported('Secret', 'tls', { type: 'kubernetes.io/tls', data: { 'tls.crt': 'Y2VydA==' } }),
        ],
      }),
    });
    const s = h.source.snapshot();
    for (const object of [...s.ingresses, ...s.secrets]) {
      const name = object.metadata?.name ?? '';
      const { creationTimestamp: _filled, ...metadata } = object.metadata ?? {};
      t.same(
        metadata,
        {
          name,
          namespace: 'team',
          uid: `uid-${name}`,
          labels: { app: name },
          annotations: { 'nginx.ingress.kubernetes.io/ssl-redirect': 'false' },
        },
        `${name}: no managedFields, no last-applied copy; the rest of its metadata as before`,
      );
    }
    t.notMatch(JSON.stringify(s), /marker/, 'nothing of either is left in the snapshot');
  },
);

t.test('creationTimestamp: first-seen time, kept across edits of its file and of others', async (t) => {
  const h = await harness(t, {
    'a.yaml': ingressYaml('a'),
    'b.yaml': ingressYaml('b'),
    'c.yaml': ingressYaml('explicit', { created: '2020-01-02T03:04:05Z' }),
  });
  let s = h.source.snapshot();
  t.equal(created(s, 'a'), T0_STAMP, 'RFC 3339 in whole seconds, from now()');
  t.equal(created(s, 'b'), T0_STAMP);
  t.equal(created(s, 'explicit'), '2020-01-02T03:04:05Z', 'a creationTimestamp in the manifest is kept');

  h.clock.ms = T0 + 60_000;
  const edit = h.changed((x) => host(x, 'a') === 'changed.example.com', 'the edit of a');
  await h.write('a.yaml', ingressYaml('a', { host: 'changed.example.com' }));
  s = await edit;
  t.equal(created(s, 'a'), T0_STAMP, 'an edit of its own file keeps the time');

  const added = h.changed((x) => find(x.ingresses, 'c') !== undefined, 'c added to b.yaml');
  await h.write('b.yaml', `${ingressYaml('b')}---\n${ingressYaml('c')}`);
  s = await added;
  t.equal(created(s, 'c'), '2026-03-01T10:01:00Z', 'a new object gets the current time');
  t.equal(created(s, 'a'), T0_STAMP, 'an edit of another file changes nothing for a');
  t.equal(created(s, 'b'), T0_STAMP);

  h.clock.ms = T0 + 120_000;
  const moved = h.changed((x) => host(x, 'a') === 'moved.example.com', 'a moved to b.yaml');
  writeFileSync(path.join(h.dir, 'a.yaml'), '# moved\n');
  writeFileSync(
    path.join(h.dir, 'b.yaml'),
    `${ingressYaml('b')}---\n${ingressYaml('a', { host: 'moved.example.com' })}`,
  );
  s = await moved;
  t.equal(created(s, 'a'), T0_STAMP, 'moving an object to another file in one step keeps its time');
  t.equal(find(s.ingresses, 'c'), undefined);

  const removed = h.changed((x) => find(x.ingresses, 'b') === undefined, 'b removed');
  await unlink(path.join(h.dir, 'b.yaml'));
  await removed;
  h.clock.ms = T0 + 180_000;
  const readded = h.changed((x) => find(x.ingresses, 'b') !== undefined, 'b re-added');
  await h.write('b.yaml', ingressYaml('b'));
  s = await readded;
  t.equal(created(s, 'b'), '2026-03-01T10:03:00Z', 'removed and added again: a new object');
});

t.test(
  'the same kind/namespace/name twice: the first in path order wins, the other is a problem',
  async (t) => {
    const h = await harness(t, {
      'b.yaml': ingressYaml('web', { host: 'from-b.example.com' }),
      'z/dup.yaml': `${serviceYaml('other')}---\n${ingressYaml('web', { host: 'from-z.example.com' })}`,
      'c.yaml': ingressYaml('web', { namespace: 'other', host: 'other-namespace.example.com' }),
    });
    const s = h.source.snapshot();
    t.same(ids(s.ingresses), ['default/web', 'other/web'], 'another namespace is another object');
    t.equal(host(s, 'default/web'), 'from-b.example.com');
    const problems = h.source.problems();
    t.equal(problems.length, 1);
    t.equal(problems[0]?.file, path.join(h.dir, 'z/dup.yaml'));
    t.equal(problems[0]?.line, 9, 'the line of the ignored document');
    t.match(problems[0]?.message, `Ingress default/web is also defined in ${path.join(h.dir, 'b.yaml')}`);
    t.match(problems[0], {
      kind: 'Ingress',
      namespace: 'default',
      name: 'web',
      code: 'MANIFEST_DUPLICATE',
      severity: 'warning',
    });
    t.same(h.problemsSeen, problems, 'reported through onProblem too');

    const takeover = h.changed(
      (x) => host(x, 'default/web') === 'from-z.example.com',
      'z/dup.yaml taking over',
    );
    await unlink(path.join(h.dir, 'b.yaml'));
    await takeover;
    t.same(h.source.problems(), [], 'the problem is gone with the first definition');
  },
);

t.test('a document that fails to parse is a problem with its line; its previous objects stay', async (t) => {
  const h = await harness(t, {
    'a.yaml': `${serviceYaml('svc')}---\n${ingressYaml('a')}`,
    'b.json': JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } }),
    'broken-from-start.yaml': 'apiVersion: v1\nkind: Service\nmetadata:\n  name: [unclosed\n',
  });
  t.same(ids(h.source.snapshot().services), ['default/svc'], 'a file broken from the start adds nothing');
  t.equal(h.source.problems().length, 1);
  t.equal(h.source.problems()[0]?.file, path.join(h.dir, 'broken-from-start.yaml'));
  t.type(h.source.problems()[0]?.line, 'number');
  const before = h.source.snapshot();

  const yamlProblem = h.problem((p) => p.file.endsWith('a.yaml'));
  await h.write(
    'a.yaml',
    'apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  labels: {a: b\nspec: {}\n',
  );
  const p1 = await yamlProblem;
  t.equal(p1.line, 6, 'the 1-based line yaml reports (the flow mapping is never closed)');
  t.match(
    p1.message,
    'this document is ignored; the 2 object(s) it held before and no longer defines are kept',
  );
  t.match(p1, {
    kind: 'Manifest',
    namespace: '',
    name: p1.file,
    code: 'MANIFEST_INVALID',
    severity: 'error',
  });

  const jsonProblem = h.problem((p) => p.file.endsWith('b.json'));
  await h.write('b.json', '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": }\n');
  t.equal((await jsonProblem).line, 4, 'the line of a JSON syntax error');

  const notMapping = h.problem((p) => p.file.endsWith('c.yaml'));
  await h.write(
    'c.yaml',
    'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n---\n- just\n- a list\n',
  );
  const p3 = await notMapping;
  t.equal(p3.line, 6);
  t.match(p3.message, 'must be a mapping');

  const noName = h.problem((p) => p.file.endsWith('d.yaml'));
  await h.write('d.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  labels: {}\n');
  t.match((await noName).message, 'no metadata.name');

  const noKind = h.problem((p) => p.file.endsWith('e.yaml'));
  await h.write('e.yaml', 'apiVersion: v1\nmetadata:\n  name: x\n');
  t.match((await noKind).message, 'no kind');

  const after = h.source.snapshot();
  t.equal(after, before, 'no new snapshot: the broken files kept their previous objects');
  t.same(ids(after.ingresses), ['default/a']);
  t.same(ids(after.configMaps), ['default/cm']);
  t.equal(h.changes(), 0, 'no onChange for problems alone');
  t.equal(h.source.problems().length, 6);

  const fixed = h.changed((x) => find(x.services, 'svc2') !== undefined, 'a.yaml fixed');
  await h.write('a.yaml', serviceYaml('svc2'));
  const s = await fixed;
  t.same(ids(s.ingresses), [], 'the fixed content replaces the kept one');
  t.notOk(
    h.source.problems().some((p) => p.file.endsWith('a.yaml')),
    'the problem of the fixed file is gone',
  );
});

t.test(
  'one bad document of a multi-document file: the others are read, the bad one is a problem with its line',
  async (t) => {
    const h = await harness(t, {
      'site.yaml': [
        ingressYaml('before'),
        '---',
        ingressYaml('dup-key'),
        '  - host: again.example.com', // valid YAML: a second rule
        '---',
        serviceYaml('after'),
      ].join('\n'),
    });
    t.same(ids(h.source.snapshot().ingresses), ['default/before', 'default/dup-key']);
    t.same(h.source.problems(), []);

    // a duplicate key in the middle document: kubectl applies the other two
    const problem = h.problem((p) => p.code === 'MANIFEST_INVALID');
    const changed = h.changed((s) => find(s.services, 'later') !== undefined, 'the valid documents read');
    await h.write(
      'site.yaml',
      [
        ingressYaml('before', { host: 'edited.example.com' }),
        '---',
        ingressYaml('dup-key').replace('kind: Ingress', 'kind: Ingress\nkind: Ingress'),
        '---',
        serviceYaml('later'),
      ].join('\n'),
    );
    const p = await problem;
    const s = await changed;
    t.equal(p.file, path.join(h.dir, 'site.yaml'));
    t.equal(p.line, 12, 'the line of the second `kind`');
    t.match(p.message, /Map keys must be unique: this document is ignored/);
    t.equal(host(s, 'default/before'), 'edited.example.com', 'the document before it is read');
    t.same(
      ids(s.services),
      ['default/after', 'default/later'],
      'the document after it is read (the Service it renamed stays while the file is broken: kubectl apply deletes nothing either)',
    );
    t.same(
      ids(s.ingresses),
      ['default/before', 'default/dup-key'],
      'the object the bad document held before stays, as kubectl would leave it in the cluster',
    );
    t.match(p.message, 'the 2 object(s) it held before and no longer defines are kept', 'dup-key and after');
    t.same(h.source.problems(), [p]);

    // fixed: the file holds exactly what it says
    const fixed = h.changed((x) => find(x.ingresses, 'dup-key') === undefined, 'the file fixed');
    await h.write('site.yaml', [ingressYaml('before'), '---', serviceYaml('later')].join('\n'));
    const after = await fixed;
    t.same(ids(after.ingresses), ['default/before']);
    t.same(ids(after.services), ['default/later']);
    t.same(h.source.problems(), []);
  },
);

t.test('a file with a bad document from the start: its valid documents are read', async (t) => {
  const h = await harness(t, {
    'site.yaml': [
      ingressYaml('good'),
      '---',
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  name: b',
      '---',
      'apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {}',
      '---',
      ingressYaml('also-good'),
    ].join('\n'),
  });
  t.same(ids(h.source.snapshot().ingresses), ['default/also-good', 'default/good']);
  t.same(ids(h.source.snapshot().services), []);
  t.match(h.source.problems(), [
    { code: 'MANIFEST_INVALID', line: 14, message: /^Map keys must be unique: this document is ignored$/ },
    {
      code: 'MANIFEST_INVALID',
      line: 16,
      message: /^the Ingress has no metadata.name: this document is ignored$/,
    },
  ]);
});

t.test(
  'a kept kind with another apiVersion is ignored with a problem; the rest of its file is read',
  async (t) => {
    const h = await harness(t, {
      'old.yaml': `${ingressYaml('new')}---\n${ingressYaml('old').replace('networking.k8s.io/v1', 'extensions/v1beta1')}`,
    });
    t.same(ids(h.source.snapshot().ingresses), ['default/new']);
    t.equal(h.source.problems().length, 1);
    t.equal(h.source.problems()[0]?.line, 9);
    t.match(h.source.problems()[0]?.message, 'Ingress default/old has apiVersion extensions/v1beta1');
    t.match(h.source.problems()[0], {
      kind: 'Ingress',
      namespace: 'default',
      name: 'old',
      code: 'MANIFEST_API_VERSION_IGNORED',
      severity: 'warning',
    });
  },
);

t.test('deleting files and directories removes their objects; new directories are watched', async (t) => {
  const h = await harness(t, {
    'a.yaml': ingressYaml('a'),
    'sub/b.yaml': ingressYaml('b'),
    'sub2/keep.txt': 'not a manifest',
  });
  const gone = h.changed((x) => find(x.ingresses, 'a') === undefined, 'a.yaml deleted');
  await unlink(path.join(h.dir, 'a.yaml'));
  t.same(ids((await gone).ingresses), ['default/b']);

  const dirGone = h.changed((x) => x.ingresses.length === 0, 'sub/ removed');
  await rm(path.join(h.dir, 'sub'), { recursive: true });
  await dirGone;

  // A directory removed and created again at once (one rescan sees the same name): the new one is
  // watched, not the deleted inode.
  const recreated = h.changed((x) => host(x, 'd') === 'd1.example.com', 'sub/ recreated');
  await rm(path.join(h.dir, 'sub2'), { recursive: true });
  await h.write('sub2/d.yaml', ingressYaml('d', { host: 'd1.example.com' }));
  await recreated;
  const inRecreated = h.changed((x) => host(x, 'd') === 'd2.example.com', 'the edit in the recreated sub2/');
  await h.write('sub2/d.yaml', ingressYaml('d', { host: 'd2.example.com' }));
  await inRecreated;

  const created1 = h.changed((x) => find(x.ingresses, 'c') !== undefined, 'new/deeper/c.yaml');
  await h.write('new/deeper/c.yaml', ingressYaml('c'));
  await created1;
  // The directories created above must be watched now: an edit inside is seen.
  const edited = h.changed((x) => host(x, 'c') === 'edited.example.com', 'the edit in new/deeper');
  await h.write('new/deeper/c.yaml', ingressYaml('c', { host: 'edited.example.com' }));
  await edited;
});

t.test('a rewrite that changes no object (comments, formatting) is no change', async (t) => {
  const h = await harness(t, { 'a.yaml': ingressYaml('a') });
  const before = h.source.snapshot();
  await h.write('a.yaml', `# a comment\n${ingressYaml('a')}\n\n`);
  await h.write('a.txt', 'not a manifest');
  // Nothing can be awaited for "no change": give the watcher a few scans' time, then send a sentinel
  // change that must be the first onChange.
  await new Promise((resolve) => setTimeout(resolve, 60));
  t.equal(h.source.snapshot(), before);
  const sentinel = h.changed();
  await h.write('sentinel.yaml', serviceYaml('sentinel'));
  const s = await sentinel;
  t.equal(h.changes(), 1);
  t.equal(find(s.ingresses, 'a'), find(before.ingresses, 'a'), 'the unchanged object keeps its identity');
});

t.test(
  'a file emptied in place keeps its objects while it is rewritten, loses them once it stays empty',
  async (t) => {
    // A settle far longer than the test: the empty file is never believed here.
    const h = await harness(t, { 'a.yaml': ingressYaml('a') }, { emptiedSettleMs: 60_000 });
    // a rewrite in place: truncated, then written (as cp or an editor saving without a rename)
    writeFileSync(path.join(h.dir, 'a.yaml'), '');
    // a scan that saw the empty file: the one that reports a document written after the truncation
    const marker = h.problem((p) => p.file.endsWith('marker.yaml'));
    await h.write('marker.yaml', ingressYaml('marker').replace('networking.k8s.io/v1', 'extensions/v1beta1'));
    await marker;
    t.same(ids(h.source.snapshot().ingresses), ['default/a'], 'the truncated file still holds its Ingress');
    t.equal(h.changes(), 0, 'and nothing changed');
    const rewritten = h.changed((x) => host(x, 'a') === 'rewritten.example.com', 'the rewrite');
    await h.write('a.yaml', ingressYaml('a', { host: 'rewritten.example.com' }));
    await rewritten;
    t.equal(h.changes(), 1, 'one change: the rewrite, never the empty file');

    const other = await harness(t, { 'a.yaml': ingressYaml('a'), 'b.yaml': ingressYaml('b') });
    const emptied = other.changed((x) => find(x.ingresses, 'b') === undefined, 'b.yaml emptied');
    await other.write('b.yaml', '');
    t.same(ids((await emptied).ingresses), ['default/a'], 'a file that stays empty holds nothing');
  },
);

t.test("an editor's atomic save (write a temp file, rename over) is seen", async (t) => {
  const h = await harness(t, { 'a.yaml': ingressYaml('a') });
  const saved = h.changed((x) => host(x, 'a') === 'saved.example.com', 'the atomic save');
  await writeFile(path.join(h.dir, '.a.yaml.swp'), ingressYaml('a', { host: 'saved.example.com' }));
  await rename(path.join(h.dir, '.a.yaml.swp'), path.join(h.dir, 'a.yaml'));
  await saved;
  const again = h.changed((x) => host(x, 'a') === 'again.example.com', 'the second atomic save');
  await writeFile(path.join(h.dir, 'a.yaml.tmp~'), ingressYaml('a', { host: 'again.example.com' }));
  await rename(path.join(h.dir, 'a.yaml.tmp~'), path.join(h.dir, 'a.yaml'));
  await again;
  t.same(h.source.problems(), []);
});

t.test(
  'a ConfigMap volume (files are symlinks through ..data, swapped atomically) is followed',
  async (t) => {
    const dir = await tempDir(t);
    await write(dir, '..2026_01/ingress.yaml', ingressYaml('cm', { host: 'v1.example.com' }));
    await symlink('..2026_01', path.join(dir, '..data'));
    await symlink('..data/ingress.yaml', path.join(dir, 'ingress.yaml'));
    const waiters: Array<() => void> = [];
    const source = createManifestSource({ dir, model: MODEL, onChange: () => waiters.shift()?.() });
    await source.start();
    t.teardown(() => source.stop());
    t.equal(host(source.snapshot(), 'cm'), 'v1.example.com');
    t.equal(source.snapshot().ingresses.length, 1, 'the ..data files are not read twice');

    const changed = new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(() => reject(new Error('timed out')), TIMEOUT_MS);
      waiters.push(() => {
        clearTimeout(timeout);
        resolve();
      });
    });
    await write(dir, '..2026_02/ingress.yaml', ingressYaml('cm', { host: 'v2.example.com' }));
    await symlink('..2026_02', path.join(dir, '..data_tmp'));
    await rename(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    await changed;
    t.equal(host(source.snapshot(), 'cm'), 'v2.example.com');
  },
);

t.test('a change reaches onChange well within a second', async (t) => {
  const h = await harness(t, { 'a.yaml': ingressYaml('a') });
  for (const [what, act] of [
    ['a new file', () => h.write('b.yaml', ingressYaml('b'))],
    ['an edit', () => h.write('a.yaml', ingressYaml('a', { host: 'quick.example.com' }))],
    ['a deletion', () => unlink(path.join(h.dir, 'b.yaml'))],
  ] as const) {
    const seen = h.changed();
    const started = performance.now();
    await act();
    await seen;
    const elapsed = performance.now() - started;
    t.ok(elapsed < 1000, `${what} was seen after ${Math.round(elapsed)} ms`);
  }
});

t.test('start fails on a missing directory; stop is idempotent', async (t) => {
  const dir = await tempDir(t);
  const source = createManifestSource({ dir: path.join(dir, 'missing'), model: MODEL, onChange: () => {} });
  await t.rejects(source.start(), /cannot read the manifest directory/);
  await source.stop();
  await source.stop();
  t.same(source.snapshot().ingresses, []);
});
