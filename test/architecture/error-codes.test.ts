// Every code lib/ uses is defined once and documented: the build's diagnostics in DIAGNOSTIC_CODES
// (lib/model/diagnostics.ts), ingress-ts's own runtime errors in ERROR_CODES (lib/errors.ts), and
// docs/diagnostics.md lists both. A code-shaped string in lib/ that is in neither table must be a
// foreign code, named below with its owner, so a new code cannot slip in undefined and undocumented.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ERROR_CODES, type ErrorCode } from '../../lib/errors.ts';
import { DIAGNOSTIC_CODES } from '../../lib/model/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
// a newline first, so that the title is found like any other heading
const doc = `\n${readFileSync(`${root}docs/diagnostics.md`, 'utf8')}`;

/** Codes that are not ours, kept as their owners spell them; each says whose it is. */
const FOREIGN_CODES: Record<string, string> = {
  UND_ERR_ABORTED: 'undici',
  UND_ERR_CONNECT_TIMEOUT: 'undici',
  UND_ERR_HEADERS_OVERFLOW: 'undici',
  UND_ERR_HEADERS_TIMEOUT: 'undici',
  UND_ERR_INVALID_ARG: 'undici',
  UND_ERR_NOT_SUPPORTED: 'undici',
  UND_ERR_REQ_CONTENT_LENGTH_MISMATCH: 'undici',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'undici',
  HPE_HEADER_OVERFLOW: "llhttp, Node's HTTP parser",
  ERR_HTTP_REQUEST_TIMEOUT: 'Node (http server requestTimeout)',
  CERT_CHAIN_TOO_LONG: 'OpenSSL (ingress-ts also reports it under this name where it checks a depth itself)',
  CERT_HAS_EXPIRED: 'OpenSSL',
  CERT_NOT_YET_VALID: 'OpenSSL',
  CERT_UNTRUSTED: 'OpenSSL',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'OpenSSL',
  SELF_SIGNED_CERT_IN_CHAIN: 'OpenSSL',
  UNABLE_TO_GET_ISSUER_CERT: 'OpenSSL',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'OpenSSL',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'OpenSSL',
  AUTO_HTTP: 'ingress-nginx: a backend-protocol value, not an error',
  INGRESS_TS_THREAD_YOUNG_GENERATION_MB: 'an environment variable (lib/dataplane/worker/thread-heap.ts)',
  INGRESS_TS_BENCH_LOG_FLUSH_MS: 'a measurement-only environment variable (lib/access-log.ts)',
};

/** A string literal that reads like a code: capitals and digits in two or more words joined by `_`. */
const CODE_LITERAL = /(['"`])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\1/g;

/** Each .ts file of lib/ by repository path. */
function libSources(): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(`${root}lib`, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const path = `${entry.parentPath.slice(root.length)}/${entry.name}`;
    files.set(path, readFileSync(root + path, 'utf8'));
  }
  return files;
}

/** The rows `| \`CODE\` | second column |` of the table that follows `heading` in the doc. */
function documentedRows(heading: string): Map<string, string> {
  const start = doc.indexOf(`\n${heading}\n`);
  if (start === -1) return new Map();
  const next = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, next === -1 ? undefined : next);
  return new Map(
    [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+?) \|/gm)].map((m) => [
      m[1] as string,
      m[2] as string,
    ]),
  );
}

// tsc type-checks this file: ErrorCode must stay a closed union, or this line stops being an error
// @ts-expect-error a code that is not defined
const undefinedCode: ErrorCode = 'PROXY_NOT_DEFINED';

t.test('the two tables are apart and closed', async (t) => {
  for (const code of Object.keys(ERROR_CODES)) t.notOk(code in DIAGNOSTIC_CODES, `${code} in one table only`);
  for (const code of Object.keys(FOREIGN_CODES)) {
    t.notOk(code in ERROR_CODES || code in DIAGNOSTIC_CODES, `${code} is foreign, not ours`);
  }
  t.notOk(undefinedCode in ERROR_CODES);
});

t.test('every diagnostic code is documented', async (t) => {
  const documented = documentedRows('# Diagnostics');
  t.ok(documented.size > 0, 'the diagnostics table is read');
  for (const [code, [severity]] of Object.entries(DIAGNOSTIC_CODES)) {
    t.equal(documented.get(code), severity, code);
  }
});

t.test('every runtime error code is documented with where it shows', async (t) => {
  const documented = documentedRows('## Runtime error codes');
  t.ok(documented.size > 0, 'the runtime error table is read');
  for (const [code, [surface]] of Object.entries(ERROR_CODES)) t.equal(documented.get(code), surface, code);
  for (const code of documented.keys()) t.ok(code in ERROR_CODES, `${code} is documented and defined`);
});

t.test('every code-shaped string in lib/ is defined or known to be foreign', async (t) => {
  const sources = libSources();
  t.ok(sources.has('lib/errors.ts') && sources.size > 20, 'lib/ is read');
  const seen = new Set<string>();
  for (const [path, source] of sources) {
    for (const m of source.matchAll(CODE_LITERAL)) {
      const code = m[2] as string;
      seen.add(code);
      if (code in DIAGNOSTIC_CODES || code in ERROR_CODES || code in FOREIGN_CODES) continue;
      const line = source.slice(0, m.index).split('\n').length;
      t.fail(
        `${path}:${line}: '${code}' is defined nowhere: add it to ERROR_CODES (lib/errors.ts) and ` +
          "docs/diagnostics.md, or, if it is another library's, to FOREIGN_CODES here",
      );
    }
  }
  // so the list never outlives the code
  for (const code of Object.keys(FOREIGN_CODES))
    t.ok(seen.has(code), `foreign ${code} is still used in lib/`);
});

t.test('every defined code is raised somewhere in lib/', async (t) => {
  const sources = libSources();
  const defining = new Set(['lib/errors.ts', 'lib/model/diagnostics.ts']);
  const used = (code: string) =>
    [...sources].some(([path, source]) => !defining.has(path) && source.includes(`'${code}'`));
  for (const code of [...Object.keys(DIAGNOSTIC_CODES), ...Object.keys(ERROR_CODES)]) {
    t.ok(used(code), `${code} is used outside its table`);
  }
});
