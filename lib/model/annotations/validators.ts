// ingress-nginx's value validators (its annotations/parser package), as the character sets each
// annotation's value must stay within. They are what keeps a value from turning into something else
// when it is written into a header, a URL or a cookie: a value outside them is refused here as it is
// there. What a refusal does (default, denied location, Ingress dropped) is each group's business.

/** letters, digits and `-._~/:` (its BasicCharsRegex: names, `namespace/name`, host:port/path) */
export const BASIC_CHARS = /^[-._~a-zA-Z0-9/:]*$/;

/** BASIC_CHARS plus space (its CharsWithSpace) */
export const CHARS_WITH_SPACE = /^[-._~a-zA-Z0-9/: ]*$/;

/** BASIC_CHARS plus `,` and space (its ExtendedCharsRegex) */
export const EXTENDED_CHARS = /^[-._~a-zA-Z0-9/:, ]*$/;

/** BASIC_CHARS plus `,?&=` (its URLIsValidRegex: URLs with a query, but no `$`, `%`, `#` or `;`) */
export const URL_CHARS = /^[-._~a-zA-Z0-9/:,?&=]*$/;

/** URL_CHARS plus space and `$` (its URLWithNginxVariableRegex: URLs that may name NGINX variables) */
export const URL_WITH_VARIABLES = /^[-._~a-zA-Z0-9/:, ?&=$]*$/;

/** letters, digits, `-_$` and braces (its NGINXVariable) */
export const NGINX_VARIABLE = /^[A-Za-z0-9\-_${}]*$/;

/** a path that may hold `$1` captures (its RegexPathWithCapture) */
export const PATH_WITH_CAPTURES = /^\/?[-._~a-zA-Z0-9/:$]*$/;

/** comma-separated header names (its HeadersVariable) */
export const HEADERS_VARIABLE = /^[A-Za-z0-9\-_, ]*$/;

/** an HTTP field name: RFC 9110's token, what Node itself accepts as a header name */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Response headers that frame the message or belong to one hop. Added by configuration (add-headers,
 * a snippet) they would desync an HTTP/1.1 connection (a wrong Content-Length) or make Node refuse
 * an HTTP/2 response, so configuration may not set them.
 */
export const FRAMING_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** a header name as ingress-nginx's auth and custom-headers parsers accept it */
export const SIMPLE_HEADER_NAME = /^[a-zA-Z0-9\-_]+$/;

/** server names, which may be regexes (its IsValidRegex, used by ValidateServerName) */
export const SERVER_NAME_CHARS = /^[/\-._~a-zA-Z0-9:^$[\](){}*+?|&=\\]*$/;

/** NGINX sizes: 1000, 100k, 1m (its SizeRegex) */
export const NGINX_SIZE = /^\d+[bkmg]?$/i;

/** what Go's strconv.Atoi accepts (its ValidateInt), range aside */
export const GO_INT = /^[+-]?\d+$/;

/**
 * ValidateRegex: the value, with spaces removed when `removeSpace`, must match `pattern`. (ingress-nginx
 * also refuses line breaks, which none of the patterns above admits.)
 */
export function matches(pattern: RegExp, value: string, removeSpace: boolean): boolean {
  return pattern.test(removeSpace ? value.replaceAll(' ', '') : value);
}

/** ValidateInt: a decimal integer Go's strconv.Atoi parses (64-bit). */
export function isGoInt(value: string): boolean {
  return GO_INT.test(value) && Number.isSafeInteger(Number(value));
}
