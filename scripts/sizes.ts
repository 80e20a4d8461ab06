// Reports the longest files and functions under lib/, the sizes the layout keeps small.
// A function's size is the number of source lines its node spans, from its first token to its
// closing brace (comments inside included). Types are stripped by Node's own stripper, which
// keeps every position, and the JavaScript left is parsed with acorn.
// Usage: node scripts/sizes.ts [--max-file 500] [--max-function 120]
import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';
import { type Node, parse } from 'acorn';
import { ancestor } from 'acorn-walk';

export interface Size {
  file: string;
  name: string;
  lines: number;
}

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

type Named = Node & { id?: { name: string } | null; key?: { name?: string; value?: unknown }; name?: string };

/** The name a reader would search for: the function's own, the variable or member it is bound to. */
function nameOf(fn: Named, ancestors: Node[]): string {
  if (fn.id?.name) return fn.id.name;
  const parent = ancestors[ancestors.length - 2] as Named | undefined;
  if (parent?.type === 'VariableDeclarator')
    return (parent as unknown as { id: { name?: string } }).id.name ?? '';
  if (
    parent?.type === 'MethodDefinition' ||
    parent?.type === 'Property' ||
    parent?.type === 'PropertyDefinition'
  ) {
    const key = parent.key;
    const base = key?.name ?? String(key?.value ?? '');
    return parent.type === 'MethodDefinition' && (parent.key as Named).type === 'PrivateIdentifier'
      ? `#${base}`
      : base;
  }
  return '(anonymous)';
}

export function measure(root: string): { files: Size[]; functions: Size[] } {
  const files: Size[] = [];
  const functions: Size[] = [];
  for (const file of sources(root)) {
    const text = readFileSync(file, 'utf8');
    const starts = [0];
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
    const lineOf = (pos: number) => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if ((starts[mid] ?? 0) <= pos) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    };
    files.push({ file, name: '', lines: text.endsWith('\n') ? starts.length - 1 : starts.length });
    const js = stripTypeScriptTypes(text, { mode: 'strip' });
    const tree = parse(js, { ecmaVersion: 'latest', sourceType: 'module' });
    const visit = (node: Node, _state: unknown, ancestors: Node[]) => {
      const owners = ancestors
        .filter((a) => a.type === 'ClassDeclaration' || a.type === 'ClassExpression')
        .map((a) => (a as Named).id?.name ?? '(class)');
      const name = nameOf(node as Named, ancestors);
      functions.push({
        file,
        name: owners.length ? `${owners.at(-1)}.${name}` : name,
        lines: lineOf(node.end - 1) - lineOf(node.start) + 1,
      });
    };
    ancestor(tree, { FunctionDeclaration: visit, FunctionExpression: visit, ArrowFunctionExpression: visit });
  }
  return { files, functions };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const option = (flag: string, fallback: number): number => {
    const at = args.indexOf(flag);
    return at >= 0 ? Number(args[at + 1]) : fallback;
  };
  const maxFile = option('--max-file', 500);
  const maxFunction = option('--max-function', 120);
  const { files, functions } = measure('lib');
  const bigFiles = files.filter((f) => f.lines > maxFile).sort((a, b) => b.lines - a.lines);
  const bigFunctions = functions.filter((f) => f.lines > maxFunction).sort((a, b) => b.lines - a.lines);
  console.log(`files over ${maxFile} lines: ${bigFiles.length}`);
  for (const f of bigFiles) console.log(`  ${f.lines}\t${f.file}`);
  console.log(`functions over ${maxFunction} lines: ${bigFunctions.length}`);
  for (const f of bigFunctions) console.log(`  ${f.lines}\t${f.file}\t${f.name}`);
  const longest = [...functions].sort((a, b) => b.lines - a.lines)[0];
  console.log(
    `${files.length} files, ${functions.length} functions; longest function ${longest?.lines ?? 0} lines`,
  );
}
