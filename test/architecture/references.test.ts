// Code and comments point only at what a reader of the repository can open: no work items (an issue
// number, a "part K" of one) and no notes kept outside the repository, which a newcomer cannot follow
// and which go stale without anyone noticing.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SELF = 'test/architecture/references.test.ts';
const DIRS = ['lib', 'test', 'bench', 'bin', 'examples', 'charts', 'scripts'];
const TEXT = /\.(ts|js|mjs|md|ya?ml|tpl|txt|json)$/;

const FORBIDDEN: { pattern: RegExp; what: string }[] = [
  { pattern: /\bissues? #\d+/i, what: 'an issue number' },
  { pattern: /\bTODO\(#\d+\)/, what: 'an issue number' },
  { pattern: /\bparts? [A-Z]\b(?=[),:;]|,? (?:and|or) [A-Z]\b)/, what: "a work item's part" },
  {
    pattern: /shared\/reference|\/work\/|perf-baseline\.md|kube-api-fake\.md|DESIGN\.md/,
    what: 'a file outside the repository',
  },
  { pattern: /\breference(?: surface)? §/, what: 'a section of a file outside the repository' },
];

function files(): string[] {
  const found: string[] = [];
  for (const dir of DIRS) {
    for (const entry of readdirSync(root + dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !TEXT.test(entry.name)) continue;
      const path = `${entry.parentPath.slice(root.length)}/${entry.name}`;
      // bench/results are dated reports: they record what was true when they were written
      if (path !== SELF && !path.startsWith('bench/results/')) found.push(path);
    }
  }
  return found;
}

t.test('no work-item or out-of-repository references', async (t) => {
  const checked = files();
  t.ok(checked.includes('lib/model/index.ts') && checked.includes('bench/README.md'), 'the tree is read');
  for (const path of checked) {
    const lines = readFileSync(root + path, 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const { pattern, what } of FORBIDDEN) {
        const m = pattern.exec(line);
        if (m !== null) t.fail(`${path}:${i + 1} cites ${what} ("${m[0]}"): say why in the text instead`);
      }
    });
  }
});

t.test('the patterns catch what they are for', async (t) => {
  const hits = (line: string) =>
    FORBIDDEN.filter(({ pattern }) => pattern.test(line)).map(({ what }) => what);
  t.strictSame(hits('// compiled once per runtime (issue #9, part F), in order'), [
    'an issue number',
    "a work item's part",
  ]);
  t.strictSame(hits('// parts D and H of the plan'), ["a work item's part"]);
  t.strictSame(hits('// TODO(#5): call this'), ['an issue number']);
  t.strictSame(hits('// (../shared/reference/ingress-nginx-behavior.md §3.6)'), [
    'a file outside the repository',
  ]);
  t.strictSame(hits('// upstream headers (reference §1.10)'), ['a section of a file outside the repository']);
  t.strictSame(hits('// RFC 9112 §3.2.2: a server MUST ignore the Host header'), []);
  t.strictSame(hits('// part of the route table'), []);
});
