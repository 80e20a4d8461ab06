// block-user-agents and block-referers compiled once per runtime: the exact entries in one set
// (lower-cased, as NGINX's map compares them), the regexes on RE2 (linear in the header's length
// whatever the pattern, so a client cannot make a check slow). No list set: no compile, and the
// request path does not look at either header.

import type { IncomingMessage } from 'node:http';
import { RE2JS } from 're2js';
import type { AccessConfig, HeaderBlock } from '../../model/configmap/global-config.ts';

interface CompiledBlocks {
  readonly exact: ReadonlySet<string>;
  readonly regexes: readonly RE2JS[];
}

export interface HeaderBlocks {
  readonly userAgent: CompiledBlocks | null;
  readonly referer: CompiledBlocks | null;
}

function compileBlocks(blocks: readonly HeaderBlock[]): CompiledBlocks | null {
  if (blocks.length === 0) return null;
  const exact = new Set<string>();
  const regexes: RE2JS[] = [];
  for (const block of blocks) {
    if (block.kind === 'exact') exact.add(block.value);
    else regexes.push(RE2JS.compile(block.value, block.kind === 'iregex' ? RE2JS.CASE_INSENSITIVE : 0));
  }
  return { exact, regexes };
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
  for (const regex of blocks.regexes) if (regex.matcher(value).find()) return true;
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
