// What to use instead of a refused snippet. Most snippets in the wild do a job an annotation or a
// ConfigMap key already does (security and cache headers, a body size, a redirect), so the refusal
// names them. The snippet is only looked at, never run: its text is cut into statements and the
// first word of each (the directive) picks a row below. A message names directives and header names,
// never values, which may hold credentials.

import { HEADER_NAME } from './validators.ts';

/** One row: directives (and, for header directives, header names) and what does their job. */
export interface SnippetHint {
  directives: readonly string[];
  /** lower-case header names the row is limited to (the directive's header argument) */
  headers?: readonly string[];
  /** for `return`: the status codes the row is limited to */
  codes?: readonly string[];
  annotations?: readonly string[];
  configKeys?: readonly string[];
  /** set when ingress-ts already does the job: why nothing is needed */
  nothingNeeded?: string;
}

const RESPONSE_HEADER_DIRECTIVES = ['more_set_headers', 'add_header'];
const HEADER_DIRECTIVES: ReadonlySet<string> = new Set([
  ...RESPONSE_HEADER_DIRECTIVES,
  'proxy_set_header',
  'more_set_input_headers',
  'more_clear_headers',
  'proxy_hide_header',
]);
const FORWARDING_HEADERS = [
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-for',
  'x-forwarded-scheme',
  'x-scheme',
  'x-real-ip',
];

/** First matching row wins; rows with headers or codes come before their directive's catch-all. */
export const SNIPPET_HINTS: readonly SnippetHint[] = [
  {
    directives: ['proxy_set_header'],
    headers: ['upgrade', 'connection'],
    nothingNeeded: 'ingress-ts proxies WebSocket upgrades as they are',
  },
  {
    directives: ['proxy_set_header'],
    headers: FORWARDING_HEADERS,
    nothingNeeded:
      'ingress-ts sets the X-Forwarded-* and X-Real-IP headers itself; the ConfigMap key use-forwarded-headers makes it trust those of the client',
  },
  { directives: ['proxy_set_header'], headers: ['host'], annotations: ['upstream-vhost'] },
  { directives: ['proxy_set_header', 'more_set_input_headers'], configKeys: ['proxy-set-headers'] },
  {
    directives: RESPONSE_HEADER_DIRECTIVES,
    headers: ['strict-transport-security'],
    configKeys: ['hsts', 'hsts-max-age', 'hsts-include-subdomains', 'hsts-preload'],
  },
  {
    directives: [...RESPONSE_HEADER_DIRECTIVES, 'expires'],
    annotations: ['custom-headers'],
    configKeys: ['add-headers'],
  },
  { directives: ['more_clear_headers', 'proxy_hide_header'], configKeys: ['hide-headers'] },
  { directives: ['auth_request_set'], annotations: ['auth-response-headers'] },
  { directives: ['rewrite'], annotations: ['rewrite-target', 'use-regex'] },
  {
    directives: ['return'],
    codes: ['301', '308'],
    annotations: ['permanent-redirect', 'permanent-redirect-code'],
  },
  {
    directives: ['return'],
    codes: ['302', '303', '307'],
    annotations: ['temporal-redirect', 'temporal-redirect-code'],
  },
  { directives: ['client_max_body_size'], annotations: ['proxy-body-size'] },
  { directives: ['proxy_read_timeout'], annotations: ['proxy-read-timeout'] },
  { directives: ['proxy_send_timeout'], annotations: ['proxy-send-timeout'] },
  { directives: ['proxy_connect_timeout'], annotations: ['proxy-connect-timeout'] },
  {
    directives: ['proxy_next_upstream', 'proxy_next_upstream_tries', 'proxy_next_upstream_timeout'],
    annotations: ['proxy-next-upstream', 'proxy-next-upstream-tries', 'proxy-next-upstream-timeout'],
  },
  { directives: ['proxy_buffering'], annotations: ['proxy-buffering'] },
  { directives: ['proxy_request_buffering'], annotations: ['proxy-request-buffering'] },
  { directives: ['proxy_cookie_path'], annotations: ['proxy-cookie-path'] },
  { directives: ['proxy_cookie_domain'], annotations: ['proxy-cookie-domain'] },
  { directives: ['proxy_redirect'], annotations: ['proxy-redirect-from', 'proxy-redirect-to'] },
  { directives: ['allow'], annotations: ['allowlist-source-range'] },
  { directives: ['deny'], annotations: ['denylist-source-range'] },
  { directives: ['satisfy'], annotations: ['satisfy'] },
  { directives: ['limit_req'], annotations: ['limit-rps', 'limit-rpm'] },
  { directives: ['limit_conn'], annotations: ['limit-connections'] },
  { directives: ['limit_rate', 'limit_rate_after'], annotations: ['limit-rate', 'limit-rate-after'] },
  { directives: ['auth_basic', 'auth_basic_user_file'], annotations: ['auth-type', 'auth-secret'] },
  { directives: ['auth_request'], annotations: ['auth-url'] },
];

const DIRECTIVE = /^[a-z_][a-z0-9_]*$/;

/** The statements of a snippet as word lists: cut at `;`, `{`, `}` outside quotes, comments dropped. */
function statements(text: string): string[][] {
  const out: string[][] = [];
  let words: string[] = [];
  let word = '';
  let quote = '';
  let comment = false;
  const endWord = () => {
    if (word !== '') words.push(word);
    word = '';
  };
  const endStatement = () => {
    endWord();
    if (words.length > 0) out.push(words);
    words = [];
  };
  for (const ch of text) {
    if (comment) {
      if (ch === '\n') comment = false;
    } else if (quote !== '') {
      if (ch === quote) quote = '';
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '#' && word === '') {
      comment = true;
    } else if (ch === ';' || ch === '{' || ch === '}') {
      endStatement();
    } else if (/\s/.test(ch)) {
      endWord();
    } else {
      word += ch;
    }
  }
  endStatement();
  return out;
}

/** The header a header directive names: `add_header Name value`, `more_set_headers [-s 404] "Name: value"`. */
function headerOf(words: readonly string[]): string | null {
  const args = words.slice(1);
  let i = 0;
  // more_*_headers options: -s <statuses>, -t <types>, -r
  while (i < args.length && args[i]!.startsWith('-')) i += args[i] === '-r' ? 1 : 2;
  const arg = args[i];
  if (arg === undefined) return null;
  // more_*_headers take "Name: value" (more_clear_headers a bare name); without the colon the word
  // could be a value, which is never shown
  const more = words[0]!.startsWith('more_') && words[0] !== 'more_clear_headers';
  if (more && !arg.includes(':')) return null;
  const name = more ? arg.slice(0, arg.indexOf(':')).trim() : arg;
  return HEADER_NAME.test(name) ? name : null;
}

function describe(hint: SnippetHint): string {
  if (hint.nothingNeeded !== undefined) return `nothing is needed (${hint.nothingNeeded})`;
  const parts: string[] = [];
  const list = (names: readonly string[]) => names.join(', ');
  if (hint.annotations !== undefined) {
    parts.push(
      `${hint.annotations.length === 1 ? 'the annotation' : 'the annotations'} ${list(hint.annotations)}`,
    );
  }
  if (hint.configKeys !== undefined) {
    parts.push(
      `${hint.configKeys.length === 1 ? 'the ConfigMap key' : 'the ConfigMap keys'} ${list(hint.configKeys)}`,
    );
  }
  return parts.join(' or ');
}

/**
 * What does the job of a snippet's directives, as one sentence, or null when no directive is known.
 * Directives without a counterpart are named too, so the reader knows the list is not the whole story.
 */
export function snippetHint(text: string): string | null {
  // per row, the directives it answers with the header names they set
  const uses = new Map<SnippetHint, Map<string, string[]>>();
  const unknown: string[] = [];
  for (const words of statements(text)) {
    const directive = words[0]!;
    // `if` only guards the statements inside it, which are looked at on their own
    if (!DIRECTIVE.test(directive) || directive === 'if') continue;
    const header = headerOf(words);
    const hint = SNIPPET_HINTS.find(
      (row) =>
        row.directives.includes(directive) &&
        (row.headers === undefined || (header !== null && row.headers.includes(header.toLowerCase()))) &&
        (row.codes === undefined || row.codes.includes(words[1] ?? '')),
    );
    if (hint === undefined) {
      if (!unknown.includes(directive)) unknown.push(directive);
      continue;
    }
    const directives = uses.get(hint) ?? new Map<string, string[]>();
    uses.set(hint, directives);
    const headers = directives.get(directive) ?? [];
    directives.set(directive, headers);
    if (HEADER_DIRECTIVES.has(directive) && header !== null && !headers.includes(header))
      headers.push(header);
  }
  if (uses.size === 0) return null;
  const found = [...uses].map(([hint, directives]) => {
    const subjects = [...directives].map(([directive, headers]) =>
      headers.length === 0 ? directive : `${directive} ${headers.join(', ')}`,
    );
    return `${subjects.join(' and ')}: ${describe(hint)}`;
  });
  const rest =
    unknown.length === 0 ? '' : `; no annotation or ConfigMap key does what ${unknown.join(', ')} does`;
  return `for its ${found.join('; ')}${rest}`;
}
