// NGINX's configuration syntax as its own reader (ngx_conf_read_token) cuts it: words, quoted
// strings with NGINX's escapes, `;`, `{`, `}`, `#` comments. A snippet is pasted by ingress-nginx
// into the middle of a generated block, so what NGINX would read differently there (a statement
// left open at the end, a `}` closing the enclosing block, a quote never closed) is refused here
// rather than guessed at: the reader answers with the tokens or with why it cannot read the text.
// Nothing here interprets a word; `$` is kept as written for the caller to judge.

export type Token = { kind: 'word'; text: string; line: number } | { kind: ';' | '{' | '}'; line: number };

/** A refusal names the top-level statement it happened in by its first word (`directive`), if any. */
export type TokenizeResult =
  | { ok: true; tokens: Token[] }
  | { ok: false; reason: string; line: number; directive: string | null };

/** NGINX's NGX_CONF_BUFFER: a longer word is "too long parameter" there. */
export const MAX_WORD = 4096;

const isSpace = (ch: string): boolean => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';

/**
 * A word's text as NGINX copies it: `\"`, `\'` and `\\` give the character, `\t`, `\r`, `\n` the
 * control character, any other backslash stays with the character after it.
 */
function wordText(raw: string): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] as string;
    if (ch === '\\' && i + 1 < raw.length) {
      const next = raw[i + 1] as string;
      if (next === '"' || next === "'" || next === '\\') {
        out += next;
        i++;
        continue;
      }
      if (next === 't' || next === 'r' || next === 'n') {
        out += next === 't' ? '\t' : next === 'r' ? '\r' : '\n';
        i++;
        continue;
      }
    }
    out += ch;
  }
  return out;
}

/** The tokens of `text`, or why NGINX would not read it as a complete list of statements. */
export function tokenize(text: string): TokenizeResult {
  const tokens: Token[] = [];
  let line = 1;
  let startLine = 1;
  let start = 0;
  let lastSpace = true;
  let needSpace = false;
  let comment = false;
  let variable = false;
  let escaped = false;
  let single = false;
  let double = false;
  /** words since the last `;`, `{` or `}` (NGINX's cf->args) */
  let args = 0;
  /** block depth, and the first word of the top-level statement under way */
  let depth = 0;
  let outer: string | null = null;
  const fail = (reason: string): TokenizeResult => ({ ok: false, reason, line, directive: outer });
  const word = (end: number): string | null => {
    if (end - start > MAX_WORD) return null;
    const read = wordText(text.slice(start, end));
    tokens.push({ kind: 'word', text: read, line: startLine });
    if (depth === 0 && args === 0) outer = read;
    args++;
    return '';
  };
  const punct = (kind: ';' | '{' | '}') => {
    tokens.push({ kind, line });
    args = 0;
    if (kind === '{') depth++;
    else if (kind === '}') depth = Math.max(0, depth - 1);
    if (depth === 0) outer = null;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === '\0') return fail('a NUL character');
    if (ch === '\n') {
      line++;
      if (comment) comment = false;
    }
    if (comment) continue;
    if (escaped) {
      escaped = false;
      continue;
    }
    if (needSpace) {
      if (isSpace(ch)) {
        lastSpace = true;
        needSpace = false;
        continue;
      }
      if (ch === ';' || ch === '{') {
        punct(ch);
        lastSpace = true;
        needSpace = false;
        continue;
      }
      // NGINX lets `)` follow a quoted word (an `if` condition) and reads it as the next word
      if (ch !== ')') return fail(`an unexpected ${JSON.stringify(ch)} right after a quoted string`);
      lastSpace = true;
      needSpace = false;
    }
    if (lastSpace) {
      start = i;
      startLine = line;
      if (isSpace(ch)) continue;
      switch (ch) {
        case ';':
        case '{':
          if (args === 0) return fail(`an unexpected ${JSON.stringify(ch)}`);
          punct(ch);
          continue;
        case '}':
          if (args !== 0) return fail('an unexpected "}"');
          punct('}');
          continue;
        case '#':
          comment = true;
          continue;
        case '\\':
          escaped = true;
          lastSpace = false;
          continue;
        case '"':
          start = i + 1;
          double = true;
          lastSpace = false;
          continue;
        case "'":
          start = i + 1;
          single = true;
          lastSpace = false;
          continue;
        case '$':
          variable = true;
          lastSpace = false;
          continue;
        default:
          lastSpace = false;
          continue;
      }
    }
    // inside a word: `${` does not open a block
    if (ch === '{' && variable) continue;
    variable = false;
    if (ch === '\\') {
      escaped = true;
      continue;
    }
    if (ch === '$') {
      variable = true;
      continue;
    }
    let found = false;
    if (double) {
      if (ch === '"') {
        double = false;
        needSpace = true;
        found = true;
      }
    } else if (single) {
      if (ch === "'") {
        single = false;
        needSpace = true;
        found = true;
      }
    } else if (isSpace(ch) || ch === ';' || ch === '{') {
      lastSpace = true;
      found = true;
    }
    if (!found) continue;
    if (word(i) === null) return fail(`a word longer than ${MAX_WORD} characters`);
    if (ch === ';' || ch === '{') punct(ch);
  }
  if (double || single) return fail('a quoted string that is never closed');
  if (escaped) return fail('a backslash at the end');
  // a word still open at the end, or a statement without its `;`: pasted into a block, NGINX would
  // read the generated lines that follow as its arguments
  if (!lastSpace && !needSpace) return fail('a statement without its ";" at the end');
  if (args !== 0) return fail('a statement without its ";" at the end');
  return { ok: true, tokens };
}

/** A statement: its words, and whether it opens a block (`{`) rather than ending with `;`. */
export interface Statement {
  words: string[];
  block: boolean;
  line: number;
}

export type StatementsResult =
  | { ok: true; statements: Statement[] }
  | { ok: false; reason: string; line: number; directive: string | null };

/**
 * The top-level statements of a snippet. A block is returned as its opening statement (the caller
 * refuses it) and the statements inside it are skipped; a `}` with no block open is refused, since
 * pasted into a location it would close that location.
 */
export function statementsOf(text: string): StatementsResult {
  const read = tokenize(text);
  if (!read.ok) return read;
  const out: Statement[] = [];
  let words: string[] = [];
  let line = 1;
  let depth = 0;
  for (const token of read.tokens) {
    if (token.kind === 'word') {
      if (words.length === 0) line = token.line;
      words.push(token.text);
      continue;
    }
    if (token.kind === '}') {
      if (depth === 0) {
        return {
          ok: false,
          reason: 'a "}" that closes no block of the snippet',
          line: token.line,
          directive: null,
        };
      }
      depth--;
      continue;
    }
    if (depth === 0) out.push({ words, block: token.kind === '{', line });
    if (token.kind === '{') depth++;
    words = [];
  }
  if (depth !== 0) return { ok: false, reason: 'a block that is never closed', line, directive: null };
  return { ok: true, statements: out };
}
