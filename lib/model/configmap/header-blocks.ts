// block-user-agents and block-referers: ingress-nginx writes each comma-separated entry, trimmed, as
// a source value of an NGINX `map` ($http_user_agent → $block_ua, $http_referer → $block_ref) and
// every server answers 403 when the map gives 1. So an entry reads as map reads its keys: `~re` a
// case-sensitive regex, `~*re` a case-insensitive one, `\x` the literal text `x` (how map escapes a
// key that starts with `~` or is one of its parameter names), anything else an exact string, which
// map compares case-insensitively (its hash lower-cases keys and the value looked up). Regexes run on
// RE2 here: one RE2 refuses (a backreference, a lookaround) is left out with a diagnostic, as is an
// entry NGINX would not load (whitespace, `;`, braces, quotes left open), and the others are kept.

import { RE2JS } from 're2js';
import type { HeaderBlock } from './global-config.ts';
import type { KeyParser } from './key-parser.ts';

/** map's parameter names: an entry spelled like one is not a source value (escape it with `\`). */
const MAP_PARAMETERS: ReadonlySet<string> = new Set(['default', 'hostnames', 'include', 'volatile']);

/** A token NGINX's configuration reader would split or refuse: whitespace, `;`, braces. */
const NOT_ONE_TOKEN = /[\s;{}]/;

/** The entry as NGINX's configuration reader takes one token: quotes removed, `\"` / `\'` unescaped. */
function unquoted(entry: string): string | null {
  const quote = entry[0];
  if (quote !== '"' && quote !== "'") return NOT_ONE_TOKEN.test(entry) || /["']/.test(entry) ? null : entry;
  if (entry.length < 2 || entry[entry.length - 1] !== quote) return null;
  const inner = entry.slice(1, -1);
  // an unescaped quote of the same kind inside would end the token early
  if (new RegExp(`(^|[^\\\\])${quote}`).test(inner)) return null;
  return inner.replaceAll(`\\${quote}`, quote);
}

/** One entry read, or why NGINX (or RE2) would not take it. */
export function parseHeaderBlock(entry: string): HeaderBlock | string {
  const token = unquoted(entry);
  if (token === null) return `${JSON.stringify(entry)} is not one NGINX token`;
  if (token === '') return `${JSON.stringify(entry)} is empty`;
  if (MAP_PARAMETERS.has(token)) {
    return `${JSON.stringify(entry)} is a parameter of NGINX's map (write \\${token} for the text)`;
  }
  if (token.startsWith('~')) {
    const caseless = token.startsWith('~*');
    const pattern = token.slice(caseless ? 2 : 1);
    if (pattern === '') return `${JSON.stringify(entry)} has no regex`;
    try {
      RE2JS.compile(pattern, caseless ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (error) {
      return `${JSON.stringify(entry)} is not a regex RE2 accepts (${(error as Error).message})`;
    }
    return { kind: caseless ? 'iregex' : 'regex', value: pattern };
  }
  const text = token.startsWith('\\') ? token.slice(1) : token;
  return { kind: 'exact', value: text.toLowerCase() };
}

/** A comma list of entries; bad ones are dropped (reported), duplicates kept once. */
export const headerBlockList =
  (field: 'blockUserAgents' | 'blockReferers'): KeyParser =>
  (value, config, _lookup, dropped) => {
    const blocks: HeaderBlock[] = [];
    const seen = new Set<string>();
    for (const part of value.split(',')) {
      const entry = part.trim();
      if (entry === '') continue;
      const block = parseHeaderBlock(entry);
      if (typeof block === 'string') {
        dropped(`${block}: the entry is left out`);
        continue;
      }
      const key = `${block.kind} ${block.value}`;
      if (seen.has(key)) continue;
      seen.add(key);
      blocks.push(block);
    }
    config.access[field] = blocks;
    return null;
  };
