// The access log line as one string, for the usual case where no value needs escaping: the values
// are read from the record into one string with the format's text, checked for characters to escape
// by one regular expression over the values alone, and the line is written by the caller with one
// native copy (Buffer#latin1Write). Under callgrind a loop over a string's characters costs ~50
// instructions a character and a native write ~500 a call, so a line of ~170 bytes written a
// character (or a value) at a time cost more than everything else the log does per request
// (bench/README.md, "The log format's cost"). A line with a value to escape, or a format with a
// variable not read here, is written by access-log-format.ts's writers instead: the same bytes.
//
// The numbers and times are made as NGINX writes them (and as the writers do): integers from tables
// of the first thousand, seconds with three decimals.

import { getterOf, withoutUserinfo } from './access-log-values.ts';
import type { RequestRecord } from './request-record.ts';

/** A variable written by the writers of access-log-format.ts only: no line string for its format. */
export const BY_WRITER = 0;
const REMOTE_ADDR = 1;
const REQUEST = 2;
const STATUS = 3;
const BODY_BYTES_SENT = 4;
const BYTES_SENT = 5;
const REFERER = 6;
const USER_AGENT = 7;
const REQUEST_LENGTH = 8;
const REQUEST_TIME = 9;
const UPSTREAM_NAME = 10;
const CANARY = 11;
const UPSTREAM_ADDR = 12;
const UPSTREAM_LENGTH = 13;
const UPSTREAM_TIME = 14;
const UPSTREAM_STATUS = 15;
const REQ_ID = 16;
const TIME_LOCAL = 17;
const HOST = 18;
const TIME_ISO = 19;
const MSEC = 20;
const CONNECTION = 21;
const CONNECTION_REQUESTS = 22;
const CONNECT_TIME = 23;
const HEADER_TIME = 24;
/** a string variable of access-log-values.ts, through its getter */
const GETTER = 25;

const KINDS: Readonly<Record<string, number>> = {
  remote_addr: REMOTE_ADDR,
  request: REQUEST,
  status: STATUS,
  body_bytes_sent: BODY_BYTES_SENT,
  bytes_sent: BYTES_SENT,
  http_referer: REFERER,
  http_user_agent: USER_AGENT,
  request_length: REQUEST_LENGTH,
  request_time: REQUEST_TIME,
  proxy_upstream_name: UPSTREAM_NAME,
  proxy_alternative_upstream_name: CANARY,
  upstream_addr: UPSTREAM_ADDR,
  upstream_response_length: UPSTREAM_LENGTH,
  upstream_response_time: UPSTREAM_TIME,
  upstream_status: UPSTREAM_STATUS,
  req_id: REQ_ID,
  time_local: TIME_LOCAL,
  host: HOST,
  time_iso8601: TIME_ISO,
  msec: MSEC,
  connection: CONNECTION,
  connection_requests: CONNECTION_REQUESTS,
  upstream_connect_time: CONNECT_TIME,
  upstream_header_time: HEADER_TIME,
};

type Getter = (r: RequestRecord) => string | undefined;

/** How a variable is read into the line string; BY_WRITER: it is not. */
export function kindOf(name: string): number {
  const kind = KINDS[name];
  if (kind !== undefined) return kind;
  return getterOf(name) === undefined ? BY_WRITER : GETTER;
}

/** "0" to "999", and "000" to "999" for the digits after a thousand or a decimal point. */
const SMALL: readonly string[] = Array.from({ length: 1000 }, (_, n) => String(n));
const PADDED: readonly string[] = SMALL.map((s) => s.padStart(3, '0'));

/**
 * A non-negative integer below 2^53 in decimal, as the writers' putInt writes it: a fraction
 * dropped; what is not a count (negative, NaN, beyond 2^53) is 0. `width` 3 pads with zeros.
 */
function intText(value: number, width: number): string {
  const n = value >= 0 && value <= Number.MAX_SAFE_INTEGER ? Math.floor(value) : 0;
  if (n < 1000) return width === 3 ? (PADDED[n] as string) : (SMALL[n] as string);
  if (n < 1_000_000) {
    const high = Math.floor(n / 1000);
    return (SMALL[high] as string) + (PADDED[n - high * 1000] as string);
  }
  return String(n);
}

/** Seconds with three decimals ("0.004"), as the writers' putSeconds. */
function secondsText(value: number): string {
  const ms = Math.round(value * 1000);
  const whole = Math.trunc(ms / 1000);
  return `${intText(whole, 1)}.${intText(ms - whole * 1000, 3)}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => (n < 10 ? `0${n}` : String(n));

/** $time_local ("26/Nov/2026:18:52:07 +0000") or $time_iso8601, in UTC, made once a second. */
export function timeText(iso: boolean): (time: number) => string {
  let second = Number.NaN;
  let text = '';
  return (time) => {
    const s = time - (time % 1000);
    if (s !== second) {
      second = s;
      const d = new Date(s);
      const hms = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
      text = iso
        ? `${d.toISOString().slice(0, 10)}T${hms}+00:00`
        : `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${hms} +0000`;
    }
    return text;
  };
}

/** The line of a record as a string; undefined when a value needs escaping (`escaped` found it). */
export type LineText = (r: RequestRecord, time: number) => string | undefined;

// Values that come from the model or the parser's tables (the upstream's name and address, the
// method, the protocol) are the same strings request after request: each is checked when it
// changes, not per line. The connection's address too (one string per connection).
const KNOWN_METHOD = 0;
const KNOWN_PROTOCOL = 1;
const KNOWN_UPSTREAM = 2;
const KNOWN_CANARY = 3;
const KNOWN_ADDR = 4;
const KNOWN_REMOTE = 5;

/** The upstream's list of a try's values (ours: numbers and dashes, never escaped). */
function tries(previous: string, last: string): string {
  return previous === '' ? last : previous + last;
}

/** The variables numberText makes: counts, times, the upstream's lists of numbers. */
const NUMERIC: ReadonlySet<number> = new Set([
  STATUS,
  BODY_BYTES_SENT,
  BYTES_SENT,
  REQUEST_LENGTH,
  REQUEST_TIME,
  TIME_LOCAL,
  TIME_ISO,
  MSEC,
  CONNECTION,
  CONNECTION_REQUESTS,
  UPSTREAM_LENGTH,
  UPSTREAM_TIME,
  UPSTREAM_STATUS,
  CONNECT_TIME,
  HEADER_TIME,
]);

/** The text of a NUMERIC variable; `missing` as in lineTextOf. */
function numberText(
  kind: number,
  r: RequestRecord,
  time: number,
  missing: string,
  localTime: (time: number) => string,
  isoTime: (time: number) => string,
): string {
  switch (kind) {
    case STATUS:
      return intText(r.status, 3);
    case BODY_BYTES_SENT:
      return intText(r.bytesSent - (r.headBytes > 0 ? r.headBytes : 0), 1);
    case BYTES_SENT:
      return intText(r.bytesSent, 1);
    case REQUEST_LENGTH:
      return intText(r.requestLength, 1);
    case REQUEST_TIME:
      return secondsText(r.requestTime);
    case TIME_LOCAL:
      return localTime(time);
    case TIME_ISO:
      return isoTime(time);
    case MSEC:
      return `${intText(Math.floor(time / 1000), 1)}.${intText(time % 1000, 3)}`;
    case CONNECTION:
      return intText(r.connection, 1);
    case CONNECTION_REQUESTS:
      return intText(r.connectionRequests, 1);
  }
  if (r.upstreamAddr === '') return missing;
  switch (kind) {
    case UPSTREAM_LENGTH:
      return tries(
        r.previousLengths,
        r.upstreamResponseLength >= 0 ? intText(r.upstreamResponseLength, 1) : '-',
      );
    case UPSTREAM_TIME:
      return tries(r.previousTimes, r.responseTime >= 0 ? secondsText(r.responseTime) : '-');
    case UPSTREAM_STATUS:
      return tries(r.previousStatuses, r.upstreamStatus > 0 ? intText(r.upstreamStatus, 1) : '-');
    case CONNECT_TIME:
      return tries(r.previousConnectTimes, r.connectTime >= 0 ? secondsText(r.connectTime) : '-');
    default:
      return tries(r.previousHeaderTimes, r.headerTime >= 0 ? secondsText(r.headerTime) : '-');
  }
}

/**
 * The line string of a format whose variables are all read here (`kinds`, none BY_WRITER) and whose
 * text is ASCII: `literals[k]` before variable k, `tail` after the last. `missing` is what a value not
 * found is (`-`, or nothing with escape=json or escape=none); `escaped` finds a character that the
 * format's escaping would not write as it is.
 */
export function lineTextOf(
  names: readonly string[],
  kinds: readonly number[],
  literals: readonly string[],
  tail: string,
  missing: string,
  escaped: RegExp,
): LineText {
  const n = kinds.length;
  const getters: Array<Getter | undefined> = names.map((name, k) =>
    kinds[k] === GETTER ? getterOf(name) : undefined,
  );
  const numeric = kinds.map((kind) => NUMERIC.has(kind));
  const localTime = timeText(false);
  const isoTime = timeText(true);
  // the strings found safe last, by KNOWN_*; '' is always safe
  const known = ['', '', '', '', '', ''];
  const safe = (value: string, slot: number): boolean => {
    if (value === known[slot]) return true;
    if (escaped.test(value)) return false;
    known[slot] = value;
    return true;
  };
  return (r, time) => {
    let line = '';
    // the other values, for one check: the format's own text is the operator's, written as it is
    let values = '';
    for (let k = 0; k < n; k++) {
      const kind = kinds[k] as number;
      let value: string;
      if (numeric[k]) value = numberText(kind, r, time, missing, localTime, isoTime);
      else {
        switch (kind) {
          case REMOTE_ADDR:
            value = r.remoteAddress;
            if (value === '') value = missing;
            else if (!safe(value, KNOWN_REMOTE)) return undefined;
            break;
          case REQUEST:
            values += r.uri;
            if (r.method === '') value = r.uri;
            else {
              if (!safe(r.method, KNOWN_METHOD) || !safe(r.protocol, KNOWN_PROTOCOL)) return undefined;
              value = r.protocol === '' ? `${r.method} ${r.uri}` : `${r.method} ${r.uri} ${r.protocol}`;
            }
            break;
          case REFERER:
            value = withoutUserinfo(r.referer);
            if (value === '') value = missing;
            else values += value;
            break;
          case USER_AGENT:
            value = r.userAgent;
            if (value === '') value = missing;
            else values += value;
            break;
          case UPSTREAM_NAME:
            // NGINX's server-level `set $proxy_upstream_name "-"` runs for every routed request
            value = r.upstream !== '' ? r.upstream : r.refused ? '' : '-';
            if (!safe(value, KNOWN_UPSTREAM)) return undefined;
            break;
          case CANARY:
            value = r.canary;
            if (!safe(value, KNOWN_CANARY)) return undefined;
            break;
          case UPSTREAM_ADDR:
            if (r.upstreamAddr === '') value = missing;
            else {
              if (!safe(r.upstreamAddr, KNOWN_ADDR)) return undefined;
              values += r.previousAddrs;
              value = tries(r.previousAddrs, r.upstreamAddr);
            }
            break;
          case REQ_ID:
            value = r.requestId;
            values += value;
            break;
          case HOST:
            // no Host: the name of the default server, `_` in ingress-nginx
            value = r.host === '' ? '_' : r.host;
            values += value;
            break;
          default:
            value = (getters[k] as Getter)(r) ?? missing;
            values += value;
        }
      }
      // added part by part: a template's ToString per part cost ~900 instructions a line under
      // callgrind, and Array#join of the parts ~5k
      line = line + (literals[k] as string) + value;
    }
    return values !== '' && escaped.test(values) ? undefined : line + tail;
  };
}
