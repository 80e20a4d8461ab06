// block-user-agents and block-referers compiled once per runtime: the exact entries in one set
// (lower-cased, as NGINX's map compares them), the regexes that are plain words (`~*bot`, the usual
// kind) as substring searches, the others as one RE2 alternation (linear in the header's length
// whatever the pattern, so a client cannot make a check slow). No list set: no compile, and the
// request path does not look at either header.

import type { IncomingMessage } from 'node:http';
import { RE2JS } from 're2js';
import type { AccessConfig, HeaderBlock } from '../../model/configmap/global-config.ts';

interface CompiledBlocks {
  /** exact entries, lower-cased */
  readonly exact: ReadonlySet<string>;
  /** `~*` entries without regex syntax (ASCII): substrings of the lower-cased value */
  readonly caselessWords: readonly string[];
  /** `~` entries without regex syntax: substrings of the value */
  readonly words: readonly string[];
  /** the other regexes as one RE2 alternation (one pass over the value), else one by one */
  readonly regexes: readonly RE2JS[];
}

export interface HeaderBlocks {
  readonly userAgent: CompiledBlocks | null;
  readonly referer: CompiledBlocks | null;
}

/** A regex that is only a literal: no RE2 syntax character, ASCII (so lower-casing is case folding). */
const LITERAL = /^[\x20-\x7e]+$/;
const SYNTAX = /[\\^$.|?*+()[\]{}]/;

function compileBlocks(blocks: readonly HeaderBlock[]): CompiledBlocks | null {
  if (blocks.length === 0) return null;
  const exact = new Set<string>();
  const caselessWords: string[] = [];
  const words: string[] = [];
  const alternatives: HeaderBlock[] = [];
  for (const { kind, value } of blocks) {
    if (kind === 'exact') exact.add(value);
    else if (LITERAL.test(value) && !SYNTAX.test(value)) {
      if (kind === 'iregex') caselessWords.push(value.toLowerCase());
      else words.push(value);
    } else alternatives.push({ kind, value });
  }
  return { exact, caselessWords, words, regexes: compileAlternatives(alternatives) };
}

/**
 * RE2's test() (no submatches) over one alternation costs a fraction of a matcher per entry. Each
 * entry compiled alone in the model; should their union not (a `\Q` left open swallows the
 * closing parenthesis), they are tested one by one.
 */
function compileAlternatives(alternatives: readonly HeaderBlock[]): RE2JS[] {
  if (alternatives.length === 0) return [];
  try {
    const union = alternatives.map(({ kind, value }) =>
      kind === 'iregex' ? `(?i:${value})` : `(?:${value})`,
    );
    return [RE2JS.compile(union.join('|'))];
  } catch {
    return alternatives.map(({ kind, value }) =>
      RE2JS.compile(value, kind === 'iregex' ? RE2JS.CASE_INSENSITIVE : 0),
    );
  }
}

/** The compiled lists, or null when neither key lists anything. */
export function compileHeaderBlocks(access: AccessConfig): HeaderBlocks | null {
  const userAgent = compileBlocks(access.blockUserAgents);
  const referer = compileBlocks(access.blockReferers);
  return userAgent === null && referer === null ? null : { userAgent, referer };
}

/**
 * NGINX's map lookup: the exact strings first, then the regexes in order; an empty value (no such
 * header) is looked up among the exact strings only, since map tries no regex on an empty value.
 */
function matches(blocks: CompiledBlocks, value: string): boolean {
  if (blocks.exact.size > 0 && blocks.exact.has(value.toLowerCase())) return true;
  if (value === '') return false;
  for (const word of blocks.words) if (value.includes(word)) return true;
  if (blocks.caselessWords.length > 0) {
    const lower = value.toLowerCase();
    for (const word of blocks.caselessWords) if (lower.includes(word)) return true;
  }
  for (const regex of blocks.regexes) if (regex.test(value)) return true;
  return false;
}

/**
 * Whether the request is refused: its User-Agent or Referer matches an entry. NGINX reads the first
 * User-Agent header; of several Referer headers it would join the values, Node keeps the first.
 */
export function blockedByHeaders(blocks: HeaderBlocks, head: IncomingMessage): boolean {
  const { userAgent, referer } = blocks;
  const headers = head.headers;
  if (userAgent !== null && matches(userAgent, headers['user-agent'] ?? '')) return true;
  if (referer !== null && matches(referer, headers.referer ?? '')) return true;
  return false;
}
