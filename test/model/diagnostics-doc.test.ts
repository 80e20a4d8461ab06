// docs/diagnostics.md and the code catalog must list the same codes with the same severities.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { DIAGNOSTIC_CODES } from '../../lib/model/index.ts';

const doc = readFileSync(new URL('../../docs/diagnostics.md', import.meta.url), 'utf8');
const documented = new Map(
  [...doc.matchAll(/^\| `([A-Z_]+)` \| (error|warning|info) \|/gm)].map((m) => [
    m[1] as string,
    m[2] as string,
  ]),
);

t.test('every diagnostic code is documented with its severity', async (t) => {
  for (const [code, [severity]] of Object.entries(DIAGNOSTIC_CODES)) {
    t.equal(documented.get(code), severity, code);
  }
});

t.test('every documented code exists', async (t) => {
  for (const code of documented.keys()) t.ok(code in DIAGNOSTIC_CODES, code);
});
