// A configuration-snippet or server-snippet read as data: its statements (tokenizer.ts) checked
// against a closed set of header and return directives, each turned into rules the data plane
// already knows how to carry out (response headers set, appended or removed, request headers set
// or removed, a redirect or a fixed answer). One statement outside the set refuses the whole
// snippet; the refusal names the directive and why, never a value (values may hold credentials).
// Nothing is evaluated: a value is a literal, and `$` is only accepted where listed below.

import { FRAMING_RESPONSE_HEADERS, HEADER_NAME } from '../annotations/validators.ts';
import { statementsOf } from './tokenizer.ts';

/** headers-more's operations in order: [name, value] sets (replaces), [name, null] clears. */
export type HeaderOp = [string, string | null];

export interface SnippetReturn {
  code: number;
  /** 301/302/303/307/308 (or `return URL`): the Location, which may hold LOCATION_VARIABLES */
  location: string | null;
  /** the body of any other code, a literal; null: none (an error code gets ingress-ts's error page) */
  text: string | null;
}

export interface AddHeader {
  name: string;
  value: string;
  /** `always`: on every status, not only NGINX's list (ADD_HEADER_STATUSES) */
  always: boolean;
}

/** What a snippet does, as data. Names are as written unless said lower-case. */
export interface SnippetRules {
  /** more_set_headers / more_clear_headers in order; a clear's name (lower-case) may end in `*` */
  responseOps: HeaderOp[];
  /** add_header, appended to the response */
  addHeaders: AddHeader[];
  /** proxy_hide_header: lower-case names of upstream headers not passed on */
  hideHeaders: string[];
  /** proxy_set_header, more_set_input_headers, more_clear_input_headers in order ('' or null: removed) */
  requestOps: HeaderOp[];
  /** the first `return`, or null */
  return: SnippetReturn | null;
  /** directives accepted that change nothing in ingress-ts (it already does what they say) */
  noEffect: string[];
}

export type SnippetScope = 'location' | 'server';

export type SnippetRead =
  | { ok: true; rules: SnippetRules }
  | { ok: false; directive: string | null; reason: string };

/** More statements than this refuse the snippet: header snippets in the wild hold a handful. */
export const MAX_STATEMENTS = 64;
/** A longer snippet is refused unread. */
export const MAX_SNIPPET_LENGTH = 65536;

/** NGINX's add_header statuses (ngx_http_headers_module) when `always` is not given. */
export const ADD_HEADER_STATUSES: readonly number[] = [200, 201, 204, 206, 301, 302, 303, 304, 307, 308];

const REDIRECT_CODES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/** Variables a `return` URL may name, expanded per request by the data plane. */
export const LOCATION_VARIABLES: ReadonlySet<string> = new Set([
  'scheme',
  'host',
  'request_uri',
  'uri',
  'args',
]);

/**
 * Request headers ingress-ts writes itself (Host, X-Forwarded-*, X-Real-IP, the request id, the
 * hop-by-hop ones, Content-Length, Cookie): a snippet setting or clearing them is refused, since the
 * proxy's own value would be sent too.
 */
const OWN_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'cookie',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'proxy',
  'expect',
  'x-request-id',
  'x-real-ip',
  'x-scheme',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-scheme',
  'x-forwarded-prefix',
  'x-original-forwarded-for',
  'x-original-forwarded-host',
  'x-original-uri',
]);
const OWN_REQUEST_PREFIXES = ['ssl-client-', ':'];

/**
 * proxy_set_header lines that say what ingress-ts (and ingress-nginx's own location) already sends:
 * the WebSocket pair and the client address. Accepted with no effect.
 */
const SAME_AS_OWN: ReadonlyArray<readonly [string, string]> = [
  ['upgrade', '$http_upgrade'],
  ['connection', '$connection_upgrade'],
  ['connection', 'upgrade'],
  ['x-real-ip', '$remote_addr'],
  ['x-forwarded-for', '$proxy_add_x_forwarded_for'],
  ['x-forwarded-proto', '$scheme'],
];

/** A header name without `$` (a variable there is never expanded, by NGINX either). */
const NAME = (name: string): boolean => HEADER_NAME.test(name) && !name.includes('$');
/** A literal header value: visible ASCII, space and tab; no CR, LF, NUL or `$`. */
const LITERAL_VALUE = /^[\t\x20-\x23\x25-\x7e]*$/;
/** A Location: visible ASCII without space, `"` or backslash; `$` only for a listed variable. */
const LOCATION = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

class Refusal {
  directive: string | null;
  reason: string;
  constructor(directive: string | null, reason: string) {
    this.directive = directive;
    this.reason = reason;
  }
}

const refuse = (directive: string, reason: string): never => {
  throw new Refusal(directive, reason);
};

function ownRequestHeader(lower: string): boolean {
  return OWN_REQUEST_HEADERS.has(lower) || OWN_REQUEST_PREFIXES.some((p) => lower.startsWith(p));
}

function literal(directive: string, value: string): string {
  if (value.includes('$')) {
    refuse(directive, 'a value holds an NGINX variable; header values are literals in ingress-ts');
  }
  if (!LITERAL_VALUE.test(value)) refuse(directive, 'a value holds a control character');
  return value;
}

function headerName(directive: string, name: string): string {
  if (!NAME(name)) refuse(directive, 'an argument is not a header name');
  return name;
}

/** headers-more's options (-s statuses, -t types, -r) are not read: refused by name. */
function noOptions(directive: string, args: readonly string[]): void {
  const option = args.find((arg) => arg.startsWith('-'));
  if (option !== undefined) {
    refuse(directive, `its option ${/^-[a-z]$/.test(option) ? option : '-…'} is not supported`);
  }
}

/** A response header a snippet may set. */
function responseName(directive: string, name: string): string {
  if (FRAMING_RESPONSE_HEADERS.has(name.toLowerCase())) {
    refuse(directive, `it sets ${name}, which frames the response or belongs to one connection`);
  }
  return name;
}

/** `"Name: value"` of more_set_headers / more_set_input_headers; an empty value clears. */
function nameValue(directive: string, arg: string): HeaderOp {
  const colon = arg.indexOf(':');
  if (colon === -1) refuse(directive, 'an argument is not "Name: value"');
  const name = headerName(directive, arg.slice(0, colon).trim());
  const value = literal(directive, arg.slice(colon + 1).trim());
  return [name, value === '' ? null : value];
}

/** A cleared name: a header name, or one ending in `*` (headers-more's prefix wildcard). */
function clearedName(directive: string, arg: string, wildcard: boolean): string {
  const star = arg.endsWith('*');
  if (star && !wildcard) refuse(directive, 'a wildcard is not supported here');
  const name = star ? arg.slice(0, -1) : arg;
  if (!NAME(name) || name.includes('*')) refuse(directive, 'an argument is not a header name');
  return star ? `${name.toLowerCase()}*` : name.toLowerCase();
}

function argsBetween(directive: string, args: readonly string[], min: number, max: number): void {
  if (args.length < min || args.length > max) {
    refuse(directive, min === max ? `expected ${min} arguments` : `expected ${min} to ${max} arguments`);
  }
}

function readReturn(args: readonly string[]): SnippetReturn {
  argsBetween('return', args, 1, 2);
  const first = args[0] as string;
  if (args.length === 1 && !/^\d+$/.test(first)) {
    // `return URL`: a 302, when the text starts as NGINX requires
    return { code: 302, location: location(first), text: null };
  }
  if (!/^\d{3}$/.test(first)) refuse('return', 'the code is not a status code');
  const code = Number(first);
  const text = args[1];
  if (REDIRECT_CODES.has(code)) {
    if (text === undefined) refuse('return', 'a redirect code without its URL');
    return { code, location: location(text as string), text: null };
  }
  if (code === 444) refuse('return', 'code 444 (close the connection without an answer) is not supported');
  if (!((code >= 200 && code <= 299) || (code >= 400 && code <= 599))) {
    refuse('return', 'only 2xx, 4xx and 5xx codes and the redirects 301, 302, 303, 307, 308 are supported');
  }
  if (text === undefined) return { code, location: null, text: null };
  if (text.includes('$')) refuse('return', 'its text holds an NGINX variable; it must be a literal');
  return { code, location: null, text };
}

/** A redirect's URL: absolute http(s) (or `$scheme://`), with only LOCATION_VARIABLES. */
function location(url: string): string {
  if (!LOCATION.test(url)) refuse('return', 'its URL holds characters a Location cannot');
  if (!/^(?:https?:\/\/|\$scheme:\/\/|\$\{scheme\}:\/\/)/.test(url)) {
    refuse('return', 'its URL is not absolute (http://, https:// or $scheme://)');
  }
  let rest = url;
  for (const match of url.matchAll(/\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)/g)) {
    const name = (match[1] ?? match[2]) as string;
    if (!LOCATION_VARIABLES.has(name)) {
      refuse('return', `its URL names a variable other than $${[...LOCATION_VARIABLES].join(', $')}`);
    }
    rest = rest.replace(match[0], '');
  }
  if (rest.includes('$')) refuse('return', 'its URL holds a "$" that is no variable');
  return url;
}

function readStatement(words: readonly string[], scope: SnippetScope, rules: SnippetRules): void {
  const directive = words[0] as string;
  const args = words.slice(1);
  switch (directive) {
    case 'more_set_headers':
      if (args.length === 0) refuse(directive, 'expected "Name: value" arguments');
      noOptions(directive, args);
      for (const arg of args) {
        const op = nameValue(directive, arg);
        responseName(directive, op[0]);
        rules.responseOps.push(op);
      }
      return;
    case 'more_clear_headers':
      if (args.length === 0) refuse(directive, 'expected header names');
      noOptions(directive, args);
      for (const arg of args) rules.responseOps.push([clearedName(directive, arg, true), null]);
      return;
    case 'add_header': {
      argsBetween(directive, args, 2, 3);
      if (args.length === 3 && args[2] !== 'always') refuse(directive, 'its third argument is not "always"');
      const name = responseName(directive, headerName(directive, args[0] as string));
      rules.addHeaders.push({
        name,
        value: literal(directive, args[1] as string),
        always: args.length === 3,
      });
      return;
    }
    case 'proxy_hide_header':
      argsBetween(directive, args, 1, 1);
      rules.hideHeaders.push(headerName(directive, args[0] as string).toLowerCase());
      return;
    case 'proxy_set_header': {
      argsBetween(directive, args, 2, 2);
      const name = headerName(directive, args[0] as string);
      const lower = name.toLowerCase();
      const value = args[1] as string;
      if (SAME_AS_OWN.some(([n, v]) => n === lower && v === value)) {
        rules.noEffect.push(`${directive} ${name}`);
        return;
      }
      if (ownRequestHeader(lower)) refuse(directive, `ingress-ts sets ${name} itself`);
      // ingress-nginx's every location sets its own proxy_set_header lines, so a server's are never
      // inherited by one
      if (scope === 'server') {
        rules.noEffect.push(`${directive} ${name}`);
        return;
      }
      rules.requestOps.push([name, literal(directive, value) === '' ? null : value]);
      return;
    }
    case 'more_set_input_headers':
      if (args.length === 0) refuse(directive, 'expected "Name: value" arguments');
      noOptions(directive, args);
      for (const arg of args) {
        const op = nameValue(directive, arg);
        if (ownRequestHeader(op[0].toLowerCase())) refuse(directive, `ingress-ts sets ${op[0]} itself`);
        rules.requestOps.push(op);
      }
      return;
    case 'more_clear_input_headers':
      if (args.length === 0) refuse(directive, 'expected header names');
      noOptions(directive, args);
      for (const arg of args) {
        const name = clearedName(directive, arg, false);
        if (ownRequestHeader(name)) refuse(directive, `ingress-ts sets ${arg} itself`);
        rules.requestOps.push([name, null]);
      }
      return;
    case 'return': {
      if (scope === 'server') refuse(directive, 'a return in a server-snippet is not supported');
      const read = readReturn(args);
      // the rewrite phase stops at the first return: later ones are never reached
      rules.return ??= read;
      return;
    }
    default:
      refuse(directive, 'the directive is not one ingress-ts reads');
  }
}

/** The rules of a snippet, or why it is refused (the directive, when one is to blame). */
export function readSnippet(text: string, scope: SnippetScope): SnippetRead {
  if (text.length > MAX_SNIPPET_LENGTH) {
    return { ok: false, directive: null, reason: `longer than ${MAX_SNIPPET_LENGTH} characters` };
  }
  const parsed = statementsOf(text);
  if (!parsed.ok) {
    const directive =
      parsed.directive !== null && DIRECTIVE_NAME.test(parsed.directive) ? parsed.directive : null;
    return { ok: false, directive, reason: `line ${parsed.line}: NGINX's reader finds ${parsed.reason}` };
  }
  if (parsed.statements.length > MAX_STATEMENTS) {
    return { ok: false, directive: null, reason: `more than ${MAX_STATEMENTS} statements` };
  }
  const rules: SnippetRules = {
    responseOps: [],
    addHeaders: [],
    hideHeaders: [],
    requestOps: [],
    return: null,
    noEffect: [],
  };
  for (const statement of parsed.statements) {
    const directive = statement.words[0] ?? '';
    // a directive is a lower-case name; anything else is never shown (it may be a value)
    const shown = DIRECTIVE_NAME.test(directive) ? directive : null;
    if (statement.block) {
      return { ok: false, directive: shown, reason: 'a block ({ ... }) is not read' };
    }
    try {
      if (shown === null)
        throw new Refusal(null, `line ${statement.line}: a statement that starts with no directive name`);
      readStatement(statement.words, scope, rules);
    } catch (error) {
      if (error instanceof Refusal) return { ok: false, directive: error.directive, reason: error.reason };
      throw error;
    }
  }
  return { ok: true, rules };
}

/** What may be shown as a directive's name: anything else could be a value. */
const DIRECTIVE_NAME = /^[a-z_][a-z0-9_]{0,63}$/;

/** A refusal as a phrase: `the directive add_header (expected 2 to 3 arguments)`. */
export function describeRefusal(read: { directive: string | null; reason: string }): string {
  return read.directive === null ? read.reason : `${read.directive}: ${read.reason}`;
}
