// Finds the module specifiers a TypeScript file imports, without a TypeScript parser (TypeScript 7
// ships none for JavaScript): a small tokenizer that knows comments, strings, template literals and
// regular expressions, so import-looking text inside any of them is never taken for an import.

export interface ImportedName {
  name: string;
  typeOnly: boolean;
}

export interface ImportRef {
  /** the quoted module specifier; null for an `import()` whose argument is not a string literal */
  specifier: string | null;
  line: number;
  kind: 'static' | 'reexport' | 'dynamic';
  /** erased by type stripping: `import type`, `export type`, `typeof import()` */
  typeOnly: boolean;
  /** the names taken from the module; `*` for a namespace import or `export *` */
  names: ImportedName[];
}

interface Token {
  type: 'word' | 'string' | 'punct' | 'template' | 'regex';
  value: string;
  line: number;
}

// after these words an expression starts, so a `/` opens a regular expression
const EXPRESSION_KEYWORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  // brace depth at which each open `${` resumes its template literal
  const templateDepths: number[] = [];
  let braces = 0;
  let line = 1;
  let i = 0;
  const n = source.length;

  const readTemplate = (): void => {
    // i is just after a backtick or a template's closing brace
    const start = line;
    while (i < n) {
      const c = source[i];
      if (c === '\\') {
        if (source[i + 1] === '\n') line++;
        i += 2;
      } else if (c === '`') {
        i++;
        tokens.push({ type: 'template', value: '', line: start });
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2;
        templateDepths.push(braces);
        braces++;
        tokens.push({ type: 'punct', value: '${', line });
        return;
      } else {
        if (c === '\n') line++;
        i++;
      }
    }
  };

  const regexAllowed = (): boolean => {
    const prev = tokens.at(-1);
    if (prev === undefined) return true;
    if (prev.type === 'punct') return prev.value !== ')' && prev.value !== ']' && prev.value !== '}';
    if (prev.type === 'word') return EXPRESSION_KEYWORDS.has(prev.value);
    return false;
  };

  while (i < n) {
    const c = source[i] as string;
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && source[i + 1] === '/') {
      while (i < n && source[i] !== '\n') i++;
    } else if (c === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      for (let j = i; j < stop; j++) if (source[j] === '\n') line++;
      i = stop;
    } else if (c === "'" || c === '"') {
      let value = '';
      i++;
      while (i < n && source[i] !== c && source[i] !== '\n') {
        if (source[i] === '\\') {
          value += source.slice(i, i + 2);
          i += 2;
        } else {
          value += source[i];
          i++;
        }
      }
      i++;
      tokens.push({ type: 'string', value, line });
    } else if (c === '`') {
      i++;
      readTemplate();
    } else if (c === '/' && regexAllowed()) {
      let inClass = false;
      i++;
      while (i < n && source[i] !== '\n') {
        const r = source[i];
        if (r === '\\') i++;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i++;
      }
      i++;
      while (i < n && /[a-z]/.test(source[i] as string)) i++;
      tokens.push({ type: 'regex', value: '', line });
    } else if (/[\w$]/.test(c) || c.charCodeAt(0) > 127) {
      const start = i;
      while (i < n && (/[\w$]/.test(source[i] as string) || (source[i] as string).charCodeAt(0) > 127)) i++;
      tokens.push({ type: 'word', value: source.slice(start, i), line });
    } else if (c === '}' && templateDepths.length > 0 && templateDepths.at(-1) === braces - 1) {
      templateDepths.pop();
      braces--;
      i++;
      readTemplate();
    } else {
      if (c === '{') braces++;
      else if (c === '}') braces--;
      tokens.push({ type: 'punct', value: c, line });
      i++;
    }
  }
  return tokens;
}

/** The names of an import or export clause: `a`, `{ a as b, type c }`, `* as ns`, `*`. */
function clauseNames(clause: Token[], wholeTypeOnly: boolean): ImportedName[] {
  const names: ImportedName[] = [];
  let inBraces = false;
  for (let k = 0; k < clause.length; k++) {
    const tok = clause[k] as Token;
    if (tok.value === '{') inBraces = true;
    else if (tok.value === '}') inBraces = false;
    else if (tok.value === '*') names.push({ name: '*', typeOnly: wholeTypeOnly });
    else if (tok.type === 'word' && !inBraces) {
      // a default import's local name; `as ns` after `*` names nothing new
      if (tok.value !== 'as' && clause[k - 1]?.value !== 'as')
        names.push({ name: 'default', typeOnly: wholeTypeOnly });
    } else if (tok.type === 'word' && inBraces) {
      const prev = clause[k - 1];
      if (prev?.value === 'as' || tok.value === 'as') continue;
      const next = clause[k + 1];
      // `type X` inside braces: X is a type; `type` alone (or `type as y`) is a name
      if (tok.value === 'type' && next?.type === 'word' && next.value !== 'as') continue;
      names.push({ name: tok.value, typeOnly: wholeTypeOnly || prev?.value === 'type' });
    }
  }
  return names;
}

export function scanImports(source: string): ImportRef[] {
  const tokens = tokenize(source);
  const refs: ImportRef[] = [];
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k] as Token;
    if (tok.type !== 'word' || (tok.value !== 'import' && tok.value !== 'export')) continue;
    const prev = tokens[k - 1];
    if (prev?.value === '.') continue; // a property named import
    const next = tokens[k + 1];
    if (next === undefined) continue;

    if (tok.value === 'import' && next.value === '(') {
      const arg = tokens[k + 2];
      const close = tokens[k + 3];
      const literal = arg?.type === 'string' && (close?.value === ')' || close?.value === ',');
      refs.push({
        specifier: literal ? (arg as Token).value : null,
        line: tok.line,
        kind: 'dynamic',
        typeOnly: prev?.value === 'typeof',
        names: [{ name: '*', typeOnly: prev?.value === 'typeof' }],
      });
      continue;
    }
    if (tok.value === 'import' && next.value === '.') continue; // import.meta

    if (tok.value === 'import' && next.type === 'string') {
      refs.push({ specifier: next.value, line: next.line, kind: 'static', typeOnly: false, names: [] });
      continue;
    }

    // find `from '...'` ending this statement's clause; a clause never holds a `;` or `=`
    let j = k + 1;
    while (j < tokens.length) {
      const t = tokens[j] as Token;
      if (t.value === ';' || t.value === '=' || t.value === '(') break;
      if (t.type === 'word' && (t.value === 'import' || t.value === 'export')) break;
      if (t.type === 'word' && t.value === 'from' && tokens[j + 1]?.type === 'string') break;
      if (tok.value === 'export' && j === k + 1 && t.value !== '{' && t.value !== '*' && t.value !== 'type')
        break;
      j++;
    }
    const from = tokens[j];
    const spec = tokens[j + 1];
    if (from?.value !== 'from' || spec?.type !== 'string') continue;
    let clause = tokens.slice(k + 1, j);
    const first = clause[0];
    const second = clause[1];
    const typeOnly =
      first?.value === 'type' && second !== undefined && second.value !== ',' && second.value !== 'from';
    if (typeOnly) clause = clause.slice(1);
    refs.push({
      specifier: spec.value,
      line: spec.line,
      kind: tok.value === 'import' ? 'static' : 'reexport',
      typeOnly,
      names: clauseNames(clause, typeOnly),
    });
  }
  return refs;
}
