// The dependency rules of lib/ hold: a forbidden import fails here with the file, the import and the rule.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { checkImports, declaredExports, dependencyRules, type Exception } from './dependency-rules.ts';
import { type ImportRef, scanImports } from './imports.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(root + path, 'utf8');

function libFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const entries = readdirSync(`${root}lib`, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const path = `${entry.parentPath.slice(root.length)}/${entry.name}`;
    files.set(path, read(path));
  }
  return files;
}

const kubeNames = declaredExports(read('lib/model/k8s.ts'));
const rules = dependencyRules(kubeNames);

// Imports that break a rule today; each one says why it stays. The test fails when one is gone, so
// the list never outlives the code.
const EXCEPTIONS: Exception[] = [];

const excepted = (f: { file: string; specifier: string; rule: string }) =>
  EXCEPTIONS.some((e) => e.file === f.file && e.specifier === f.specifier && e.rule === f.rule);

const imported = (
  specifier: string,
  line: number,
  names: [string, boolean][] = [],
  typeOnly = false,
): ImportRef => ({
  specifier,
  line,
  kind: 'static',
  typeOnly,
  names: names.map(([name, type]) => ({ name, typeOnly: type })),
});

t.test('the scanner finds imports and nothing that only looks like one', async (t) => {
  const cases: { name: string; source: string; want: ImportRef[] }[] = [
    {
      name: 'default, named, namespace and side-effect imports',
      source: [
        "import a from './a.ts';",
        "import { b, c as d, type E } from './b.ts';",
        "import * as ns from 'node:fs';",
        "import './side.ts';",
        "import type { F } from './f.ts';",
        "import g, { type H } from './g.ts';",
      ].join('\n'),
      want: [
        imported('./a.ts', 1, [['default', false]]),
        imported('./b.ts', 2, [
          ['b', false],
          ['c', false],
          ['E', true],
        ]),
        imported('node:fs', 3, [['*', false]]),
        imported('./side.ts', 4),
        imported('./f.ts', 5, [['F', true]], true),
        imported('./g.ts', 6, [
          ['default', false],
          ['H', true],
        ]),
      ],
    },
    {
      name: 'an import clause over several lines',
      source: "import {\n  one,\n  two,\n} from '../store/store.ts';\n",
      want: [
        imported('../store/store.ts', 4, [
          ['one', false],
          ['two', false],
        ]),
      ],
    },
    {
      name: 're-exports',
      source: [
        "export { x } from './x.ts';",
        "export type * from './k8s.ts';",
        "export * as all from './all.ts';",
        'export const local = 1;',
        'export { local as other };',
      ].join('\n'),
      want: [
        {
          specifier: './x.ts',
          line: 1,
          kind: 'reexport',
          typeOnly: false,
          names: [{ name: 'x', typeOnly: false }],
        },
        {
          specifier: './k8s.ts',
          line: 2,
          kind: 'reexport',
          typeOnly: true,
          names: [{ name: '*', typeOnly: true }],
        },
        {
          specifier: './all.ts',
          line: 3,
          kind: 'reexport',
          typeOnly: false,
          names: [{ name: '*', typeOnly: false }],
        },
      ],
    },
    {
      name: 'dynamic imports, typeof import() and import.meta',
      source: [
        "const m = await import('./source/kube/index.ts');",
        "type M = typeof import('./source/kube/index.ts');",
        "const u = new URL('.', import.meta.url);",
        'const n = await import(name);',
      ].join('\n'),
      want: [
        {
          specifier: './source/kube/index.ts',
          line: 1,
          kind: 'dynamic',
          typeOnly: false,
          names: [{ name: '*', typeOnly: false }],
        },
        {
          specifier: './source/kube/index.ts',
          line: 2,
          kind: 'dynamic',
          typeOnly: true,
          names: [{ name: '*', typeOnly: true }],
        },
        {
          specifier: null,
          line: 4,
          kind: 'dynamic',
          typeOnly: false,
          names: [{ name: '*', typeOnly: false }],
        },
      ],
    },
    {
      name: 'import text in comments, strings, templates and regular expressions is not an import',
      source: [
        "// import { a } from '../store/store.ts';",
        "/* export * from '../metrics/requests.ts'; */",
        'const s = "import x from \'../source/manifests.ts\'";',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the scanned source holds a template literal
        "const tpl = `import y from '../store/store.ts' ${`nested ${1}`} import('../cli.ts')`;",
        "const re = /import z from '..\\/main.ts'/;",
        "const q = a / b; const r = /[/']/.test(s);",
        "import real from './real.ts';",
      ].join('\n'),
      want: [imported('./real.ts', 7, [['default', false]])],
    },
  ];
  for (const c of cases) t.strictSame(scanImports(c.source), c.want, c.name);
});

t.test('a forbidden import is reported with the file, the import and the rule', async (t) => {
  const files = new Map([
    ['lib/dataplane/proxy.ts', "import { ObjectStore } from '../store/store.ts';\n"],
    [
      'lib/model/build.ts',
      "\nimport type { Logger } from '../log.ts';\nimport { readFileSync } from 'node:fs';\n",
    ],
    ['lib/dataplane/router.ts', "import type { Ingress, Route } from '../model/index.ts';\n"],
    ['lib/metrics/requests.ts', "import { createDataPlane } from '../dataplane/dataplane.ts';\n"],
    ['lib/metrics/controller.ts', "import type { RequestRecord } from '../dataplane/request-record.ts';\n"],
    ['lib/store/store.ts', "import { createKubeSource } from '../source/kube/index.ts';\n"],
    [
      'lib/main.ts',
      "import { Registry } from 'prom-client';\nimport { KubeConfig } from '@kubernetes/client-node';\n",
    ],
    ['lib/errors.ts', "import type { DiagnosticCode } from './model/index.ts';\n"],
    ['lib/dataplane/dataplane.ts', "import { threadId } from 'node:worker_threads';\n"],
    ['lib/dataplane/worker/pool.ts', "import { dataPlane } from './thread-main.ts';\n"],
  ]);
  const findings = checkImports(files, rules, () => true);
  t.strictSame(
    findings.map((f) => `${f.file} ${f.specifier} ${f.rule}`),
    [
      'lib/dataplane/proxy.ts ../store/store.ts the data plane is made of options and a model',
      'lib/model/build.ts ../log.ts the model is pure',
      'lib/model/build.ts node:fs the model is pure',
      'lib/dataplane/router.ts ../model/index.ts the data plane never sees a Kubernetes object',
      'lib/metrics/requests.ts ../dataplane/dataplane.ts metrics only observe',
      'lib/store/store.ts ../source/kube/index.ts the store knows only the model',
      'lib/store/store.ts ../source/kube/index.ts the Kubernetes client is loaded lazily',
      'lib/main.ts prom-client prom-client stays in lib/metrics',
      'lib/main.ts @kubernetes/client-node the Kubernetes client is loaded lazily',
      'lib/errors.ts ./model/index.ts the errors module is a leaf',
      "lib/dataplane/dataplane.ts node:worker_threads threads are the pool's business",
      'lib/dataplane/worker/pool.ts ./thread-main.ts the thread entry runs only as a thread',
    ],
  );
  t.equal(
    findings[0]?.message,
    "lib/dataplane/proxy.ts:1 imports '../store/store.ts' (lib/store/store.ts): breaks " +
      '"the data plane is made of options and a model": lib/dataplane/ imports only itself, lib/model/ and ' +
      'lib/errors.ts (never source, store, metrics, config, log, main) and never prom-client, pino or the ' +
      'Kubernetes client: ' +
      'it reports through events so it can run in a worker thread',
  );
  t.match(
    findings[1]?.message,
    /^lib\/model\/build\.ts:2 imports '\.\.\/log\.ts' \(lib\/log\.ts\) \(types only\)/,
  );

  const missing = checkImports(
    new Map([['lib/store/store.ts', "import './gone.ts';\n"]]),
    rules,
    () => false,
  );
  t.match(missing[0]?.message, /lib\/store\/gone\.ts, which does not exist/);
});

t.test('lib/ holds the dependency rules', async (t) => {
  const files = libFiles();
  t.ok(files.has('lib/model/build.ts') && files.has('lib/dataplane/dataplane.ts'), 'lib/ is read');
  const findings = checkImports(files, rules, (path) => existsSync(root + path));
  const broken = findings.filter((f) => !excepted(f));
  for (const f of broken) t.fail(f.message);
  t.equal(broken.length, 0, 'no forbidden import in lib/');
  for (const e of EXCEPTIONS) {
    t.ok(
      findings.some((f) => f.file === e.file && f.specifier === e.specifier && f.rule === e.rule),
      `the exception for ${e.file} → ${e.specifier} is still needed (remove it from EXCEPTIONS when it is not)`,
    );
  }
});

t.test('the scanner sees every one-line import of lib/', async (t) => {
  // a plain-text cross-check: any `import ... from '...'` that starts a line is found by the scanner
  for (const [file, source] of libFiles()) {
    const found = new Set(scanImports(source).map((r) => r.specifier));
    for (const m of source.matchAll(/^(?:import|export)\b[^'"\n]*\bfrom '([^']+)';$/gm)) {
      if (!found.has(m[1] as string)) t.fail(`${file}: '${m[1]}' not seen by the scanner`);
    }
  }
  t.pass('cross-checked');
});
