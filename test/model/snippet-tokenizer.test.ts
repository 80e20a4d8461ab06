// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings hold NGINX's ${var} syntax, not templates
// The NGINX configuration tokenizer of snippets: tables of what NGINX's reader (ngx_conf_read_token)
// makes of a text, what it refuses, and a fuzz of random and mutated snippets with fixed seeds:
// the tokenizer and the reader never throw, what they accept reads back exactly, and an accepted
// snippet never holds a directive outside the set, a block, a variable in a header value or a
// control character in a header.
import t from 'tap';
import { readSnippet, type SnippetRules } from '../../lib/model/snippets/read.ts';
import { MAX_WORD, statementsOf, tokenize } from '../../lib/model/snippets/tokenizer.ts';

const words = (text: string): Array<string[] | string> => {
  const read = tokenize(text);
  if (!read.ok) return [`refused: ${read.reason}`];
  const out: Array<string[] | string> = [];
  let statement: string[] = [];
  for (const token of read.tokens) {
    if (token.kind === 'word') statement.push(token.text);
    else {
      out.push([...statement, token.kind]);
      statement = [];
    }
  }
  return out;
};

const READS: Array<[string, string, Array<string[] | string>]> = [
  ['plain words', 'a b c;', [['a', 'b', 'c', ';']]],
  ['spaces, tabs, CR and LF separate', 'a\tb\r\nc ;', [['a', 'b', 'c', ';']]],
  ['a statement over lines', 'add_header\n  X-A\n  "v";', [['add_header', 'X-A', 'v', ';']]],
  ['double quotes', 'a "b c";', [['a', 'b c', ';']]],
  ['single quotes', 'a \'b "c"\';', [['a', 'b "c"', ';']]],
  ['escaped quotes and backslash', 'a "b\\"c" \'d\\\'e\' "f\\\\g";', [['a', 'b"c', "d'e", 'f\\g', ';']]],
  ['\\t \\r \\n become control characters', 'a "b\\tc\\nd";', [['a', 'b\tc\nd', ';']]],
  ['another backslash stays', 'a "b\\xc";', [['a', 'b\\xc', ';']]],
  ['an escaped space joins a word', 'a b\\ c;', [['a', 'b\\ c', ';']]],
  ['a newline inside quotes is kept', 'a "b\nc";', [['a', 'b\nc', ';']]],
  ['a comment to the end of the line', '# x; y\na b; # z\n', [['a', 'b', ';']]],
  ['# inside a word is a character', 'a b#c;', [['a', 'b#c', ';']]],
  ['# inside quotes is a character', 'a "#b";', [['a', '#b', ';']]],
  [
    '; ends a word',
    'a b;c d;',
    [
      ['a', 'b', ';'],
      ['c', 'd', ';'],
    ],
  ],
  ['{ ends a word', 'if x{ y; }', [['if', 'x', '{'], ['y', ';'], ['}']]],
  ['${var} does not open a block', 'a ${b}c;', [['a', '${b}c', ';']]],
  ['$var stays as written', 'a $b;', [['a', '$b', ';']]],
  ['} inside a word is a character', 'a b};', [['a', 'b}', ';']]],
  ['a quoted word then ;', 'a "b";', [['a', 'b', ';']]],
  ['a quoted word then {', 'a "b"{ }', [['a', 'b', '{'], ['}']]],
  ['empty quotes are a word', 'a "";', [['a', '', ';']]],
  ['nothing at all', '', []],
  ['only comments and space', '  # a\n\t# b', []],
];

const REFUSES: Array<[string, string, RegExp]> = [
  ['a statement without ;', 'a b', /without its ";"/],
  ['a quoted last word without ;', 'a "b"', /without its ";"/],
  ['an unclosed double quote', 'a "b;', /never closed/],
  ['an unclosed single quote', "a 'b;", /never closed/],
  ['a character glued to a closing quote', 'a "b"c;', /right after a quoted string/],
  ['a lone ;', ';', /unexpected ";"/],
  ['a lone {', '{ }', /unexpected "{"/],
  ['} in the middle of a statement', 'a }', /unexpected "}"/],
  ['a backslash at the end', 'a b\\', /backslash/],
  ['a NUL', 'a "b\0";', /NUL/],
  ['a word over the buffer', `a ${'x'.repeat(MAX_WORD + 1)};`, /longer than/],
];

t.test('tokenizer: what NGINX reads', async (t) => {
  for (const [name, text, expected] of READS) t.strictSame(words(text), expected, name);
});

t.test('tokenizer: what NGINX would read otherwise, or not at all', async (t) => {
  for (const [name, text, reason] of REFUSES) {
    const read = tokenize(text);
    t.equal(read.ok, false, name);
    if (!read.ok) t.match(read.reason, reason, name);
  }
});

t.test('statements: blocks are statements that open one; a stray } is refused', async (t) => {
  const read = statementsOf('a b;\nif ($x) { return 404; }\nc;');
  t.ok(read.ok);
  if (read.ok) {
    t.strictSame(
      read.statements.map((s) => [s.words, s.block, s.line]),
      [
        [['a', 'b'], false, 1],
        [['if', '($x)'], true, 2],
        [['c'], false, 3],
      ],
    );
  }
  t.match(statementsOf('a;\n}\nb;'), { ok: false, reason: /closes no block/, line: 2 });
  t.match(statementsOf('if (x) { a;'), { ok: false, reason: /never closed/ });
});

// ---- fuzz ----

/** mulberry32: a small deterministic generator */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const ACCEPTED = new Set([
  'more_set_headers',
  'more_clear_headers',
  'add_header',
  'proxy_hide_header',
  'proxy_set_header',
  'more_set_input_headers',
  'more_clear_input_headers',
  'return',
]);

const SEEDS = [
  'more_set_headers "X-Frame-Options: DENY";',
  "more_set_headers 'X-A: 1' \"X-B: 2\";\nmore_clear_headers Server 'X-Powered-*';",
  'add_header Cache-Control "no-store" always;\nadd_header X-Content-Type-Options nosniff;',
  'proxy_hide_header X-Powered-By;\nproxy_set_header X-Team edge;',
  "more_set_input_headers 'X-In: 1';\nmore_clear_input_headers X-Out;",
  'return 301 https://example.com$request_uri;',
  'return 200 "ok";',
  '# security headers\nmore_set_headers "Referrer-Policy: no-referrer"; # done\n',
];
const ALPHABET = [
  '"',
  "'",
  '\\',
  ';',
  '{',
  '}',
  '#',
  '$',
  '\n',
  ' ',
  '\t',
  '\r',
  '\0',
  'a',
  ':',
  '*',
  '-',
  '(',
  ')',
  '{x}',
];

function mutate(text: string, next: () => number): string {
  let out = text;
  const edits = 1 + Math.floor(next() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(next() * (out.length + 1));
    const kind = next();
    if (kind < 0.5) {
      out = out.slice(0, at) + (ALPHABET[Math.floor(next() * ALPHABET.length)] as string) + out.slice(at);
    } else if (kind < 0.8) {
      out = out.slice(0, at) + out.slice(at + 1 + Math.floor(next() * 3));
    } else {
      const other = SEEDS[Math.floor(next() * SEEDS.length)] as string;
      out = out.slice(0, at) + other.slice(Math.floor(next() * other.length)) + out.slice(at);
    }
  }
  return out;
}

function randomText(next: () => number): string {
  let out = '';
  const length = Math.floor(next() * 60);
  for (let i = 0; i < length; i++) out += ALPHABET[Math.floor(next() * ALPHABET.length)] as string;
  return out;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for
const CONTROL = /[\0-\x08\x0a-\x1f\x7f]/;

/** What an accepted snippet may never hold. */
function invariantBroken(text: string, rules: SnippetRules): string | null {
  const read = statementsOf(text);
  if (!read.ok) return 'accepted text the tokenizer refuses';
  for (const statement of read.statements) {
    if (statement.block) return 'accepted a block';
    if (!ACCEPTED.has(statement.words[0] ?? '')) return `accepted the directive ${statement.words[0]}`;
  }
  const headers: Array<[string, string | null]> = [
    ...rules.responseOps,
    ...rules.requestOps,
    ...rules.addHeaders.map((a): [string, string] => [a.name, a.value]),
    ...rules.hideHeaders.map((name): [string, null] => [name, null]),
  ];
  for (const [name, value] of headers) {
    // `'` and `"` inside a word are characters to NGINX, and `'` is allowed in a field name
    if (CONTROL.test(name) || /[\s:"$]/.test(name))
      return 'a header name with a control character or separator';
    if (value !== null && (CONTROL.test(value) || value.includes('$')))
      return 'a header value with a control character or a variable';
  }
  const answer = rules.return;
  if (answer?.location != null && (/[\s"\\]/.test(answer.location) || CONTROL.test(answer.location))) {
    return 'a Location with a space, a quote or a control character';
  }
  if (answer?.text?.includes('$')) return 'a return text with a variable';
  return null;
}

t.test('fuzz: random and mutated snippets (fixed seeds)', async (t) => {
  let accepted = 0;
  let runs = 0;
  for (const seed of [1, 2, 3, 42, 2026]) {
    const next = random(seed);
    for (let i = 0; i < 2000; i++) {
      const text = i % 4 === 0 ? randomText(next) : mutate(SEEDS[i % SEEDS.length] as string, next);
      runs++;
      let broken: string | null = null;
      try {
        tokenize(text);
        for (const scope of ['location', 'server'] as const) {
          const read = readSnippet(text, scope);
          if (read.ok) {
            accepted++;
            broken ??= invariantBroken(text, read.rules);
            if (scope === 'server' && read.rules.return !== null) broken ??= 'a return in a server-snippet';
          } else if (read.reason === '' || /[\0\r\n]/.test(read.reason)) {
            broken ??= 'a refusal without a one-line reason';
          }
        }
      } catch (error) {
        broken = `threw ${String(error)}`;
      }
      if (broken !== null) {
        t.fail(`seed ${seed} #${i}: ${broken}: ${JSON.stringify(text)}`);
        return;
      }
    }
  }
  t.pass(`${runs} snippets, ${accepted} accepted reads, none broke an invariant`);
  t.ok(accepted > 0, 'the mutations leave some snippets acceptable (the invariants are exercised)');
});

t.test('fuzz: generated statements read back word for word', async (t) => {
  const next = random(7);
  const quote = (word: string, how: number): string => {
    if (how < 0.4) return `"${word.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    if (how < 0.8) return `'${word.replace(/[\\']/g, (c) => `\\${c}`)}'`;
    // bare only when nothing in it is special: NGINX keeps the backslash of any other escape
    if (/^[A-Za-z0-9_\-:/.*]+$/.test(word)) return word;
    return `"${word.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  };
  const chars = 'aZ09-_:;{}#"\' \t$\\/.*';
  for (let i = 0; i < 3000; i++) {
    const statements: string[][] = [];
    const count = 1 + Math.floor(next() * 4);
    for (let s = 0; s < count; s++) {
      const statement = [`d${String(s)}`];
      const args = Math.floor(next() * 4);
      for (let a = 0; a < args; a++) {
        let word = '';
        const length = Math.floor(next() * 12);
        for (let c = 0; c < length; c++) word += chars[Math.floor(next() * chars.length)];
        statement.push(word);
      }
      statements.push(statement);
    }
    const text = statements
      .map((s) => `${s.map((w, k) => (k === 0 ? w : quote(w, next()))).join(' ')};`)
      .join(next() < 0.5 ? '\n' : ' ');
    const expected = statements.map((s) => [...s, ';']);
    const got = words(text);
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      t.strictSame(got, expected, JSON.stringify(text));
      return;
    }
  }
  t.pass('3000 generated snippets read back exactly');
});
