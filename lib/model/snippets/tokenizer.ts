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

/** NGINX's reader as a state machine, one character at a time (its variables keep NGINX's names). */
class ConfReader {
  readonly text: string;
  readonly tokens: Token[] = [];
  line = 1;
  startLine = 1;
  start = 0;
  lastSpace = true;
  needSpace = false;
  comment = false;
  variable = false;
  escaped = false;
  single = false;
  double = false;
  /** words since the last `;`, `{` or `}` (NGINX's cf->args) */
  args = 0;
  /** block depth, and the first word of the top-level statement under way */
  depth = 0;
  outer: string | null = null;

  constructor(text: string) {
    this.text = text;
  }

  word(end: number): boolean {
    if (end - this.start > MAX_WORD) return false;
    const read = wordText(this.text.slice(this.start, end));
    this.tokens.push({ kind: 'word', text: read, line: this.startLine });
    if (this.depth === 0 && this.args === 0) this.outer = read;
    this.args++;
    return true;
  }

  punct(kind: ';' | '{' | '}'): void {
    this.tokens.push({ kind, line: this.line });
    this.args = 0;
    if (kind === '{') this.depth++;
    else if (kind === '}') this.depth = Math.max(0, this.depth - 1);
    if (this.depth === 0) this.outer = null;
  }

  /** One character: null when read, else why the text is refused. */
  step(ch: string, i: number): string | null {
    if (ch === '\0') return 'a NUL character';
    if (ch === '\n') {
      this.line++;
      this.comment = false;
    } else if (this.comment) return null;
    if (this.escaped) {
      this.escaped = false;
      return null;
    }
    if (this.needSpace) {
      this.needSpace = false;
      this.lastSpace = true;
      if (isSpace(ch)) return null;
      if (ch === ';' || ch === '{') {
        this.punct(ch);
        return null;
      }
      // NGINX lets `)` follow a quoted word (an `if` condition) and reads it as the next word
      if (ch !== ')') return `an unexpected ${JSON.stringify(ch)} right after a quoted string`;
    }
    return this.lastSpace ? this.wordStart(ch, i) : this.inWord(ch, i);
  }

  /** Between words: a punctuation, a comment, or the first character of a word. */
  wordStart(ch: string, i: number): string | null {
    this.start = i;
    this.startLine = this.line;
    if (isSpace(ch)) return null;
    if (ch === ';' || ch === '{') {
      if (this.args === 0) return `an unexpected ${JSON.stringify(ch)}`;
      this.punct(ch);
      return null;
    }
    if (ch === '}') {
      if (this.args !== 0) return 'an unexpected "}"';
      this.punct('}');
      return null;
    }
    if (ch === '#') {
      this.comment = true;
      return null;
    }
    this.lastSpace = false;
    if (ch === '\\') this.escaped = true;
    else if (ch === '"' || ch === "'") {
      this.start = i + 1;
      if (ch === '"') this.double = true;
      else this.single = true;
    } else if (ch === '$') this.variable = true;
    return null;
  }

  /** Inside a word: its end (a closing quote, or a space, `;` or `{` after a bare word). */
  inWord(ch: string, i: number): string | null {
    // `${` does not open a block
    if (ch === '{' && this.variable) return null;
    this.variable = false;
    if (ch === '\\') {
      this.escaped = true;
      return null;
    }
    if (ch === '$') {
      this.variable = true;
      return null;
    }
    if (this.double || this.single) {
      if (ch !== (this.double ? '"' : "'")) return null;
      this.double = false;
      this.single = false;
      this.needSpace = true;
    } else if (isSpace(ch) || ch === ';' || ch === '{') {
      this.lastSpace = true;
    } else {
      return null;
    }
    if (!this.word(i)) return `a word longer than ${MAX_WORD} characters`;
    if (ch === ';' || ch === '{') this.punct(ch);
    return null;
  }

  /** At the end of the text: only complete statements. */
  end(): string | null {
    if (this.double || this.single) return 'a quoted string that is never closed';
    if (this.escaped) return 'a backslash at the end';
    // a word still open at the end, or a statement without its `;`: pasted into a block, NGINX would
    // read the generated lines that follow as its arguments
    if ((!this.lastSpace && !this.needSpace) || this.args !== 0)
      return 'a statement without its ";" at the end';
    return null;
  }
}

/** The tokens of `text`, or why NGINX would not read it as a complete list of statements. */
export function tokenize(text: string): TokenizeResult {
  const reader = new ConfReader(text);
  for (let i = 0; i < text.length; i++) {
    const refused = reader.step(text[i] as string, i);
    if (refused !== null) return { ok: false, reason: refused, line: reader.line, directive: reader.outer };
  }
  const refused = reader.end();
  if (refused !== null) return { ok: false, reason: refused, line: reader.line, directive: reader.outer };
  return { ok: true, tokens: reader.tokens };
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
