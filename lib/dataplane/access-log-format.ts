// The access log line, compiled from `log-format-upstream` once per configuration: a list of
// constant byte parts and one writer per variable, run in order into the batch buffer. Nothing is
// parsed per request and no string is made for a line: constant parts are copied from bytes made
// once, strings are escaped as they are copied, numbers written digit by digit, and the times'
// prefixes made once a second (bench/README.md, "The log format's cost").
//
// NGINX's values: a variable that is not found is `-` (with escape=json or escape=none: nothing),
// lists of upstream tries are `a, b`, times have three decimals, $status three digits.
// Escaping, per NGINX's log_format `escape=`:
// - default: `"`, `\`, bytes below 0x20 and from 0x7f as `\xHH`;
// - json: `"` and `\` after a backslash, `\n \r \t \b \f`, other controls as `\u00HH`; other bytes raw;
// - none: bytes as they are, except CR and LF, written `\x0D` and `\x0A`: NGINX writes them raw, but
//   then a client could end a line in a header and forge the next one; here it never can.
// The request's strings are Node's latin1 strings (one character per byte received), so writing a
// character's code is writing the client's byte: the log gets the bytes NGINX would log.
//
// A line that does not fit: `encode` returns an end beyond the buffer (a typed array ignores writes
// past its end), and the caller encodes it again in a larger buffer.

import {
  DEFAULT_LOG_FORMAT_UPSTREAM,
  type LogFormatPart,
  parseLogFormat,
} from '../model/configmap/log-format.ts';
import { getterOf } from './access-log-values.ts';
import type { RequestRecord } from './request-record.ts';

export type LogEscape = 'default' | 'json' | 'none';

export interface LogLineEncoder {
  /** Writes the line of `r` (no newline) at `at`; returns its end, beyond `buf.length` if it did not fit. */
  encode(buf: Buffer, at: number, r: RequestRecord, time: number): number;
  /** the format names $server_port, $ssl_protocol or $ssl_cipher (records must read them) */
  readonly connectionDetails: boolean;
}

/** What decides a line's format: the model's `config.accessLog` has these. */
export interface LogFormatSettings {
  format: string;
  escapeJson: boolean;
  escapeNone: boolean;
}

type Writer = (buf: Buffer, at: number, r: RequestRecord, time: number) => number;
type PutString = (buf: Buffer, at: number, value: string) => number;
type Getter = (r: RequestRecord) => string | undefined;

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const DASH = 0x2d;
const ZERO = 0x30;
const HEX = '0123456789ABCDEF';

function put(buf: Buffer, at: number, part: Uint8Array): number {
  const n = part.length;
  for (let k = 0; k < n; k++) buf[at + k] = part[k] as number;
  return at + n;
}

function putAscii(buf: Buffer, at: number, text: string): number {
  const n = text.length;
  for (let k = 0; k < n; k++) buf[at + k] = String.prototype.charCodeAt.call(text, k);
  return at + n;
}

/** The UTF-8 bytes of the code point at `value[k]` (above 0xff: only from the model's strings). */
function utf8Of(value: string, k: number): number[] {
  const cp = value.codePointAt(k) as number;
  return [...Buffer.from(String.fromCodePoint(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp), 'utf8')];
}

function putHex(buf: Buffer, at: number, byte: number): number {
  buf[at] = BACKSLASH;
  buf[at + 1] = 0x78; // x
  buf[at + 2] = HEX.charCodeAt(byte >> 4);
  buf[at + 3] = HEX.charCodeAt(byte & 0xf);
  return at + 4;
}

/** A character above 0xff: its UTF-8 bytes, escaped or not; returns [end, units consumed]. */
function putWide(buf: Buffer, at: number, value: string, k: number, hex: boolean): [number, number] {
  const bytes = utf8Of(value, k);
  let i = at;
  for (const b of bytes) {
    if (hex) i = putHex(buf, i, b);
    else buf[i++] = b;
  }
  return [i, (value.codePointAt(k) as number) > 0xffff ? 2 : 1];
}

// A long string (a user agent, a URI) that needs no escaping is copied by one native write: the loop
// below costs more per character than the call, for long strings. What needs escaping, per mode:
const DEFAULT_ESCAPED = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
const JSON_ESCAPED = /["\\\u0000-\u001f\u0100-\uffff]/;
const NONE_ESCAPED = /[\n\r\u0100-\uffff]/;
const LONG_STRING = 48;
// A character's code is read as `String.prototype.charCodeAt.call(value, k)`. The values of a line
// are strings of many representations (a slice of the parser's buffer, a concatenation, a constant,
// an external string), and a `value.charCodeAt` load per character, seeing more than four of their
// maps, went megamorphic: a stub-cache lookup per character (~0.4 µs per request in `perf`, ~4% of
// the request's CPU). Read from `String.prototype` at the call, the builtin is a constant the
// optimising compiler inlines; held in a module constant or behind a helper function, it measured
// 5-15 % slower per line (`bench/log-format.ts`).

/** A string of characters up to 0xff, one byte each (a write past the buffer's end is skipped). */
function putLatin1(buf: Buffer, at: number, value: string): number {
  const end = at + value.length;
  if (end <= buf.length) buf.write(value, at, 'latin1');
  return end;
}

const putDefault: PutString = (buf, at, value) => {
  if (value.length > LONG_STRING && !DEFAULT_ESCAPED.test(value)) return putLatin1(buf, at, value);
  let i = at;
  const n = value.length;
  for (let k = 0; k < n; k++) {
    const c = String.prototype.charCodeAt.call(value, k);
    if (c >= 0x20 && c < 0x7f && c !== QUOTE && c !== BACKSLASH) buf[i++] = c;
    else if (c <= 0xff) i = putHex(buf, i, c);
    else {
      const [end, units] = putWide(buf, i, value, k, true);
      i = end;
      k += units - 1;
    }
  }
  return i;
};

const JSON_SHORT: Record<number, number> = { 10: 0x6e, 13: 0x72, 9: 0x74, 8: 0x62, 12: 0x66 };

const putJson: PutString = (buf, at, value) => {
  if (value.length > LONG_STRING && !JSON_ESCAPED.test(value)) return putLatin1(buf, at, value);
  let i = at;
  const n = value.length;
  for (let k = 0; k < n; k++) {
    const c = String.prototype.charCodeAt.call(value, k);
    if (c >= 0x20 && c <= 0xff) {
      if (c === QUOTE || c === BACKSLASH) buf[i++] = BACKSLASH;
      buf[i++] = c;
    } else if (c < 0x20) {
      buf[i++] = BACKSLASH;
      const short = JSON_SHORT[c];
      if (short !== undefined) buf[i++] = short;
      else i = putAscii(buf, i, `u00${HEX[c >> 4]}${HEX[c & 0xf]}`);
    } else {
      const [end, units] = putWide(buf, i, value, k, false);
      i = end;
      k += units - 1;
    }
  }
  return i;
};

const putNone: PutString = (buf, at, value) => {
  if (value.length > LONG_STRING && !NONE_ESCAPED.test(value)) return putLatin1(buf, at, value);
  let i = at;
  const n = value.length;
  for (let k = 0; k < n; k++) {
    const c = String.prototype.charCodeAt.call(value, k);
    if (c === 0x0a || c === 0x0d) i = putHex(buf, i, c);
    else if (c <= 0xff) buf[i++] = c;
    else {
      const [end, units] = putWide(buf, i, value, k, false);
      i = end;
      k += units - 1;
    }
  }
  return i;
};

/** A non-negative integer below 2^53, in decimal, with at least `width` digits (else 0). */
function putInt(buf: Buffer, at: number, value: number, width = 1): number {
  // below 2^31 (every status, length and time of a line): int32 arithmetic, where the wider range
  // would make V8 compute in doubles, with a C call for each digit's remainder
  if (value >= 0 && value <= 0x7fffffff) return putSmall(buf, at, value | 0, width);
  // what is not a count (negative, NaN, infinite) is never written as one, nor loops
  let n = value >= 0 && value <= Number.MAX_SAFE_INTEGER ? Math.floor(value) : 0;
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  if (digits < width) digits = width;
  for (let i = at + digits - 1; i >= at; i--) {
    buf[i] = ZERO + (n % 10);
    n = Math.floor(n / 10);
  }
  return at + digits;
}

/** putInt of an int32 that is not negative. */
function putSmall(buf: Buffer, at: number, value: number, width: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) digits++;
  if (digits < width) digits = width;
  let n = value;
  for (let i = at + digits - 1; i >= at; i--) {
    const next = (n / 10) | 0;
    buf[i] = ZERO + n - next * 10;
    n = next;
  }
  return at + digits;
}

/** Seconds with three decimals ("0.004"). */
function putSeconds(buf: Buffer, at: number, value: number): number {
  const ms = Math.round(value * 1000);
  const whole = Math.trunc(ms / 1000);
  const rest = ms - whole * 1000;
  const end = putInt(buf, at, whole);
  buf[end] = 0x2e;
  return putInt(buf, end + 1, rest, 3);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** $time_local ("26/Nov/2026:18:52:07 +0000") or $time_iso8601, in UTC, made once a second. */
function timeWriter(iso: boolean): Writer {
  let second = Number.NaN;
  let text = new Uint8Array(0);
  return (buf, at, _r, time) => {
    // remade when the time leaves the second of the text: a comparison per line, no division
    if (!(time >= second && time < second + 1000)) {
      second = time - (time % 1000);
      const d = new Date(second);
      const hms = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
      const line = iso
        ? `${d.toISOString().slice(0, 10)}T${hms}+00:00`
        : `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${hms} +0000`;
      text = Buffer.from(line, 'latin1');
    }
    return put(buf, at, text);
  };
}

/** $msec: seconds since the epoch with milliseconds. */
const msec: Writer = (buf, at, _r, time) => {
  const end = putInt(buf, at, Math.floor(time / 1000));
  buf[end] = 0x2e;
  return putInt(buf, end + 1, time % 1000, 3);
};

/** One try's value in NGINX's list: the earlier tries' text, then the last one's. */
type Last = (buf: Buffer, at: number, r: RequestRecord) => number;

function listWriter(
  previous: (r: RequestRecord) => string,
  last: Last,
  missing: Writer,
  putPrevious: PutString = putAscii,
): Writer {
  return (buf, at, r, time) => {
    if (r.upstreamAddr === '') return missing(buf, at, r, time);
    return last(buf, putPrevious(buf, at, previous(r)), r);
  };
}

/** `-` for a value not observed (negative), else the value. */
function putDashOr(
  buf: Buffer,
  at: number,
  value: number,
  write: (buf: Buffer, at: number, v: number) => number,
): number {
  if (value >= 0) return write(buf, at, value);
  buf[at] = DASH;
  return at + 1;
}

const secondsOrDash =
  (get: (r: RequestRecord) => number): Last =>
  (buf, at, r) =>
    putDashOr(buf, at, get(r), putSeconds);

const intOrDash = (buf: Buffer, at: number, v: number) => putInt(buf, at, v);

/** The upstream lists, by variable. */
function upstreamWriter(name: string, str: PutString, missing: Writer): Writer | undefined {
  switch (name) {
    case 'upstream_addr':
      return listWriter(
        (r) => r.previousAddrs,
        (buf, at, r) => str(buf, at, r.upstreamAddr),
        missing,
        // addresses are escaped as every other string is; the other lists are numbers and dashes of ours
        str,
      );
    case 'upstream_status':
      return listWriter(
        (r) => r.previousStatuses,
        (buf, at, r) => putDashOr(buf, at, r.upstreamStatus === 0 ? -1 : r.upstreamStatus, intOrDash),
        missing,
      );
    case 'upstream_response_time':
      return listWriter(
        (r) => r.previousTimes,
        secondsOrDash((r) => r.responseTime),
        missing,
      );
    case 'upstream_connect_time':
      return listWriter(
        (r) => r.previousConnectTimes,
        secondsOrDash((r) => r.connectTime),
        missing,
      );
    case 'upstream_header_time':
      return listWriter(
        (r) => r.previousHeaderTimes,
        secondsOrDash((r) => r.headerTime),
        missing,
      );
    case 'upstream_response_length':
      return listWriter(
        (r) => r.previousLengths,
        (buf, at, r) => putDashOr(buf, at, r.upstreamResponseLength, intOrDash),
        missing,
      );
    default:
      return undefined;
  }
}

const numberWriter =
  (get: (r: RequestRecord) => number, width = 1): Writer =>
  (buf, at, r) =>
    putInt(buf, at, get(r), width);

const NUMBERS: Record<string, Writer> = {
  status: numberWriter((r) => r.status, 3),
  bytes_sent: numberWriter((r) => r.bytesSent),
  body_bytes_sent: numberWriter((r) => r.bytesSent - (r.headBytes > 0 ? r.headBytes : 0)),
  request_length: numberWriter((r) => r.requestLength),
  connection: numberWriter((r) => r.connection),
  connection_requests: numberWriter((r) => r.connectionRequests),
  request_time: (buf, at, r) => putSeconds(buf, at, r.requestTime),
  msec,
};

/** $request: the request line; a first line that was no request line, as it came. */
const requestLine =
  (str: PutString): Writer =>
  (buf, at, r) => {
    if (r.method === '') return str(buf, at, r.uri);
    let i = str(buf, at, r.method);
    buf[i++] = 0x20;
    i = str(buf, i, r.uri);
    if (r.protocol === '') return i;
    buf[i++] = 0x20;
    return str(buf, i, r.protocol);
  };

function variableWriter(name: string, str: PutString, missing: Writer): Writer {
  if (name === 'time_local') return timeWriter(false);
  if (name === 'time_iso8601') return timeWriter(true);
  if (name === 'request') return requestLine(str);
  const number = NUMBERS[name];
  if (number !== undefined) return number;
  const upstream = upstreamWriter(name, str, missing);
  if (upstream !== undefined) return upstream;
  const get: Getter | undefined = getterOf(name);
  if (get === undefined) throw new Error(`no writer for the log variable $${name}`);
  return (buf, at, r, time) => {
    const value = get(r);
    return value === undefined ? missing(buf, at, r, time) : str(buf, at, value);
  };
}

const DASH_BYTES = Buffer.from('-');
const CONNECTION_DETAILS: ReadonlySet<string> = new Set(['server_port', 'ssl_protocol', 'ssl_cipher']);

/** The encoder of a parsed format. */
export function compileLogFormat(parts: readonly LogFormatPart[], escaping: LogEscape): LogLineEncoder {
  const str = escaping === 'json' ? putJson : escaping === 'none' ? putNone : putDefault;
  const missing: Writer = escaping === 'default' ? (buf, at) => put(buf, at, DASH_BYTES) : (_buf, at) => at;
  // literal i comes before writer i; the last literal after the last writer
  const literals: Uint8Array[] = [];
  const writers: Writer[] = [];
  let pending = '';
  let details = false;
  for (const part of parts) {
    if ('text' in part) {
      pending += part.text;
      continue;
    }
    // the format's own text is the operator's: written as NGINX does, as it is (UTF-8)
    literals.push(Buffer.from(pending, 'utf8'));
    pending = '';
    writers.push(variableWriter(part.variable, str, missing));
    if (CONNECTION_DETAILS.has(part.variable)) details = true;
  }
  const tail = Buffer.from(pending, 'utf8');
  const n = writers.length;
  return {
    connectionDetails: details,
    encode(buf, at, r, time) {
      let i = at;
      for (let k = 0; k < n; k++)
        i = (writers[k] as Writer)(buf, put(buf, i, literals[k] as Uint8Array), r, time);
      return put(buf, i, tail);
    },
  };
}

/** The escaping nginx.tmpl chooses: escape=none over escape=json over the default. */
export function escapeOf(settings: LogFormatSettings): LogEscape {
  return settings.escapeNone ? 'none' : settings.escapeJson ? 'json' : 'default';
}

let cached: { key: string; encoder: LogLineEncoder } | null = null;

/**
 * The encoder of a model's settings: compiled when the format or its escaping changed, else the one
 * before (a model swap that keeps the format keeps its encoder and its time caches).
 */
export function logEncoderOf(settings: LogFormatSettings): LogLineEncoder {
  const escaping = escapeOf(settings);
  const key = `${escaping}\n${settings.format}`;
  if (cached !== null && cached.key === key) return cached.encoder;
  const parsed = parseLogFormat(settings.format);
  // the model accepted it; should it not parse, the default format is what the key falls back to
  const parts =
    'parts' in parsed
      ? parsed.parts
      : (parseLogFormat(DEFAULT_LOG_FORMAT_UPSTREAM) as { parts: LogFormatPart[] }).parts;
  const encoder = compileLogFormat(parts, escaping);
  cached = { key, encoder };
  return encoder;
}

/** The encoder of ingress-nginx's default format, before any model. */
export function defaultLogEncoder(): LogLineEncoder {
  return logEncoderOf({ format: DEFAULT_LOG_FORMAT_UPSTREAM, escapeJson: false, escapeNone: false });
}

/** Whether a getter or writer exists for every variable of the model's list (for the tests). */
export function hasWriter(name: string): boolean {
  return (
    name === 'time_local' ||
    name === 'time_iso8601' ||
    name === 'request' ||
    name in NUMBERS ||
    upstreamWriter(name, putNone, msec) !== undefined ||
    getterOf(name) !== undefined
  );
}
