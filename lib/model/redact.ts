// What ingress-ts shows of its configuration (/debug/model, diagnostics, log lines, Events) never
// carries a credential: the status port is reachable from the cluster network, and logs and Events
// are read by many more people than the Secrets and ConfigMaps they come from.
//
// - A URL keeps its scheme, host, port and path, so the user can still tell which URL it is; its
//   userinfo becomes `***`, and so does every query and fragment value (the parameter names stay).
//   A value that is only an NGINX variable (`$arg_x`) is kept: it is no secret, and it says how the
//   URL is built. Values that do not parse as URLs (the ones a diagnostic is about) are cut up the
//   same way, by their characters, so a rejected value is redacted too.
// - Header values from ConfigMaps (proxy-set-headers, add-headers, custom-headers) become `***`:
//   API keys sent to backends live there.
// - Free text (a diagnostic's message, a data-plane error) has each URL-looking word redacted.
// - The value of ssl-session-ticket-key (whoever holds it decrypts every session ticket) is `***`, and
//   so are canary-by-header-value and canary-by-header-pattern (a shared secret for beta access).
// Every function is idempotent: redacting twice is redacting once.

import type { GlobalConfig, HeaderBlock } from './configmap/global-config.ts';

export const REDACTED = '***';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const NGINX_VARIABLE = /^\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})$/;

/** `a=1&b&c=$arg_c` → `a=***&***&c=$arg_c`. */
function redactParameters(part: string): string {
  if (part === '') return part;
  return part
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      const value = equals === -1 ? parameter : parameter.slice(equals + 1);
      if (value === '' || value === REDACTED || NGINX_VARIABLE.test(value)) return parameter;
      return equals === -1 ? REDACTED : `${parameter.slice(0, equals + 1)}${REDACTED}`;
    })
    .join('&');
}

/**
 * A URL (or anything written where a URL belongs) without userinfo, query values or fragment values.
 * Works on text that does not parse. As the WHATWG URL parser does, C0 controls and spaces around the
 * value and tabs and newlines inside it are dropped first (` https://u:p@h/` is a URL to a browser).
 * Then it errs on the side of hiding, because a value written wrong is exactly what a diagnostic
 * quotes: a password may hold a raw `/`, `?` or `#`, which would end the authority too early.
 * - Userinfo runs from after `scheme://` (or `//`, or the start) to the LAST `@` before the first `?`
 *   or `#`: `https://a@b/c@d` shows `https://***@d`, a path's `@` hides more than it must.
 * - Else, when an `@` follows the first `?` or `#`, everything before that `?` or `#` is hidden
 *   (`https://user:p/a?ss@h/x` → `https://***?***`), an `@` in a query value's too: the query and
 *   fragment then hide their values as always.
 */
export function redactUrl(value: string): string {
  const url = urlAsParsed(value);
  const scheme = SCHEME.exec(url);
  const start = scheme === null ? (url.startsWith('//') ? 2 : 0) : scheme[0].length;
  let queryAt = url.length;
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) {
      queryAt = i;
      break;
    }
  }
  let out = url.slice(0, start);
  const at = url.lastIndexOf('@', queryAt - 1);
  if (at >= start) out += `${REDACTED}${url.slice(at, queryAt)}`;
  else if (queryAt !== url.length && url.includes('@', queryAt)) out += start === queryAt ? '' : REDACTED;
  else out += url.slice(start, queryAt);
  const rest = url.slice(queryAt);
  const hashAt = rest.indexOf('#');
  const beforeHash = hashAt === -1 ? rest : rest.slice(0, hashAt);
  const questionAt = beforeHash.indexOf('?');
  if (questionAt === -1) out += beforeHash;
  else out += `${beforeHash.slice(0, questionAt + 1)}${redactParameters(beforeHash.slice(questionAt + 1))}`;
  if (hashAt !== -1) out += `#${redactParameters(rest.slice(hashAt + 1))}`;
  return out;
}

/** Tab, LF and CR, which URL parsers drop wherever they are. */
const URL_NEWLINES = /[\t\n\r]/g;

/** The value as a URL parser reads it: without C0 controls and spaces around it, nor tab, LF, CR inside. */
function urlAsParsed(value: string): string {
  let from = 0;
  let to = value.length;
  while (from < to && value.charCodeAt(from) <= 0x20) from++;
  while (to > from && value.charCodeAt(to - 1) <= 0x20) to--;
  const trimmed = from === 0 && to === value.length ? value : value.slice(from, to);
  return trimmed.includes('\t') || trimmed.includes('\n') || trimmed.includes('\r')
    ? trimmed.replace(URL_NEWLINES, '')
    : trimmed;
}

/** `redactUrl` for optional values. */
export function redactOptionalUrl(value: string | null): string | null {
  return value === null ? null : redactUrl(value);
}

/** Runs of characters a URL can be made of, within free text. */
const WORD = /[^\s"'`<>]+/g;
/** A word worth redacting: a scheme, userinfo, or a query parameter with a value. */
const URL_LIKE = /:\/\/|@|\?[^=&]*=/;
/** Closing punctuation after a URL in prose is not part of it. */
const TRAILING = /[).,;:]+$/;

/** A scheme inside a word (`key=https://...`): the URL starts there. */
const EMBEDDED_SCHEME = /[A-Za-z][A-Za-z0-9+.-]*:\/\//;

function redactWord(word: string): string {
  if (!URL_LIKE.test(word)) return word;
  const schemeAt = word.search(EMBEDDED_SCHEME);
  if (schemeAt > 0) return redactWord(word.slice(0, schemeAt)) + redactWord(word.slice(schemeAt));
  const trailing = TRAILING.exec(word)?.[0] ?? '';
  return redactUrl(word.slice(0, word.length - trailing.length)) + trailing;
}

/** Free text with every URL-looking word redacted (a diagnostic's message, a log line). */
export function redactText(text: string): string {
  return URL_LIKE.test(text) ? text.replace(WORD, redactWord) : text;
}

/** Annotations (without prefix) and ConfigMap keys whose values are URLs. */
const URL_KEYS = new Set([
  'auth-url',
  'auth-signin',
  'auth-request-redirect',
  'global-auth-url',
  'global-auth-signin',
  'global-auth-request-redirect',
  'mirror-target',
  'permanent-redirect',
  'temporal-redirect',
  'proxy-redirect-from',
  'proxy-redirect-to',
]);

/**
 * An annotation or ConfigMap value as a diagnostic may quote it: a URL key's value as a URL (also
 * when it does not parse, spaces and all), any other value as free text.
 */
export function redactValue(key: string, value: string): string {
  if (SECRET_KEYS.has(key)) return REDACTED;
  return URL_KEYS.has(key) ? redactUrl(value) : redactText(value);
}

/**
 * ConfigMap keys and annotations whose whole value is a secret. A canary header's value (or the
 * pattern, which usually spells the values out) is how teams hand out beta access: a shared secret.
 */
const SECRET_KEYS = new Set(['ssl-session-ticket-key', 'canary-by-header-value', 'canary-by-header-pattern']);

/** Header name/value pairs from a ConfigMap, values hidden. */
export function redactHeaders(headers: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  return headers.map(([name]) => [name, REDACTED]);
}

/** The ConfigMap's settings as /debug/model shows them: URLs and header values redacted. */
export function redactConfig(config: GlobalConfig): GlobalConfig {
  const { access, globalAuth, headers, proxy, sslHandshake } = config;
  // a Referer entry may be a whole URL, with userinfo or a query token
  const blocks = (list: readonly HeaderBlock[]) => list.map((b) => ({ ...b, value: redactText(b.value) }));
  return {
    ...config,
    access: {
      ...access,
      blockUserAgents: blocks(access.blockUserAgents),
      blockReferers: blocks(access.blockReferers),
    },
    sslHandshake: {
      ...sslHandshake,
      sessionTicketKey: sslHandshake.sessionTicketKey === '' ? '' : REDACTED,
    },
    proxy: { ...proxy, redirectFrom: redactUrl(proxy.redirectFrom), redirectTo: redactUrl(proxy.redirectTo) },
    headers: {
      ...headers,
      proxySetHeaders: {
        ...headers.proxySetHeaders,
        headers: redactHeaders(headers.proxySetHeaders.headers),
      },
      addHeaders: { ...headers.addHeaders, headers: redactHeaders(headers.addHeaders.headers) },
    },
    globalAuth: {
      ...globalAuth,
      url: redactUrl(globalAuth.url),
      signin: redactOptionalUrl(globalAuth.signin),
      requestRedirect: redactUrl(globalAuth.requestRedirect),
    },
  };
}
