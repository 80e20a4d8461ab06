// docs/annotations.md and the annotation registry must agree: every annotation ingress-ts parses is
// documented as supported (or differs), and every one documented so is parsed; the tuning ones
// documented as "no effect" are exactly those the registry accepts with ANNOTATION_NOT_APPLICABLE.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { NOT_APPLICABLE_ANNOTATIONS, SUPPORTED_ANNOTATIONS } from '../../lib/model/annotations/index.ts';

const doc = readFileSync(new URL('../../docs/annotations.md', import.meta.url), 'utf8');
const states = new Map<string, string>();
for (const m of doc.matchAll(/^\| `([a-z0-9-]+)` \| \*\*([a-z ]+)\*\*/gm)) {
  states.set(m[1] as string, m[2] as string);
}

const parsed = new Set(SUPPORTED_ANNOTATIONS.map((a) => a.name));
const notApplicable = new Set(Object.keys(NOT_APPLICABLE_ANNOTATIONS));

t.test('the doc lists annotations', async (t) => {
  t.ok(states.size > 100, `${states.size} rows`);
});

t.test('every parsed annotation is documented as supported or differs', async (t) => {
  for (const name of parsed) t.match(states.get(name), /^(supported|differs)$/, name);
});

t.test('every annotation documented as supported or differs is parsed', async (t) => {
  for (const [name, state] of states) {
    if (state === 'supported' || state === 'differs') t.ok(parsed.has(name), name);
  }
});

t.test('"no effect" rows are exactly the NGINX tuning annotations', async (t) => {
  const documented = [...states].filter(([, s]) => s === 'no effect').map(([n]) => n);
  t.same(documented.sort(), [...notApplicable].sort());
});

t.test('"refused" rows are snippets', async (t) => {
  for (const [name, state] of states) if (state === 'refused') t.match(name, /-snippet$/, name);
});
