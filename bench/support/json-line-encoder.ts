// The access log line as ingress-ts wrote it before log-format-upstream (a fixed JSON line), kept as
// the bench's baseline (bench/log-format.ts). It was: the line of access-log.ts, written straight into the batch buffer as UTF-8: the same
// bytes as `Buffer.from(accessLogLine(record, isoTime))`, without making the line as a string first.
//
// Why: the line is ~600 bytes made of ~50 parts. As a string it is a tree of parts that is flattened
// and then encoded, and all of it is garbage a moment later. Per request that garbage made the young
// generation collect more often, and each collection copies every request in flight: in the
// benchmark the string line cost clearly more than writing the same bytes here (bench/README.md,
// "What metrics and the access log cost"). Here the constant parts are copied from bytes made once,
// strings the client controls are escaped as JSON only when they need it, and numbers are written
// digit by digit; nothing is allocated for a line but the time's prefix, once a second.

import type { RequestRecord } from '../../lib/dataplane/request-record.ts';

/** Characters a JSON string cannot hold as they are: quote, backslash, controls, surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be escaped
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A JSON string: most values need no escaping, and a test is cheaper than JSON.stringify. */
export function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const DOT = 0x2e;
const DASH = 0x2d;
const ZERO = 0x30;

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

// the constant parts, in the order of accessLogLine
const OPEN = bytes('{"level":30,"time":"');
const REMOTE_ADDR = bytes('","remote_addr":');
const METHOD = bytes(',"request_method":');
const URI = bytes(',"request_uri":');
const PROTOCOL = bytes(',"server_protocol":');
const HOST = bytes(',"host":');
const STATUS = bytes(',"status":');
const BYTES_SENT = bytes(',"bytes_sent":');
const REFERER = bytes(',"http_referer":');
const USER_AGENT = bytes(',"http_user_agent":');
const REQUEST_LENGTH = bytes(',"request_length":');
const REQUEST_TIME = bytes(',"request_time":');
const UPSTREAM_NAME = bytes(',"proxy_upstream_name":');
const ALTERNATIVE_NAME = bytes(',"proxy_alternative_upstream_name":');
const UPSTREAM_ADDR = bytes(',"upstream_addr":');
const RESPONSE_LENGTH = bytes(',"upstream_response_length":');
const RESPONSE_TIME = bytes(',"upstream_response_time":');
const UPSTREAM_STATUS = bytes(',"upstream_status":');
const REQ_ID = bytes(',"req_id":');
const NAMESPACE = bytes(',"namespace":');
const INGRESS = bytes(',"ingress":');
const SERVICE = bytes(',"service":');
const SERVICE_PORT = bytes(',"service_port":');
const LOCATION_PATH = bytes(',"location_path":');
const CLOSE = bytes('}');
const NOT_OBSERVED = bytes('"-"');
const EMPTY = bytes('""');

/** Everything but the strings' own bytes: the constant parts, numbers and the time. */
const FIXED_BYTES = 1024;

/**
 * The most bytes the line of `r` can take: the strings escaped as JSON take at most 6 bytes per
 * UTF-16 unit (`\u001f`), UTF-8 at most 3.
 */
export function maxLineBytes(r: RequestRecord): number {
  const chars =
    r.remoteAddress.length +
    r.method.length +
    r.uri.length +
    r.protocol.length +
    r.host.length +
    r.referer.length +
    r.userAgent.length +
    r.upstream.length +
    r.canary.length +
    r.previousAddrs.length +
    r.upstreamAddr.length +
    r.previousTimes.length +
    r.previousStatuses.length +
    r.requestId.length +
    r.namespace.length +
    r.ingress.length +
    r.service.length +
    r.servicePort.length +
    r.path.length;
  return FIXED_BYTES + chars * 6;
}

// The parts of a line are short (a key, an address, an id): copied byte by byte here they cost less
// than a native call each (`set`, `write`), which is what dominated the line's encoding.

function put(buf: Buffer, at: number, part: Uint8Array): number {
  const n = part.length;
  for (let k = 0; k < n; k++) buf[at + k] = part[k] as number;
  return at + n;
}

/** Longer strings than this go through one native write (a loop would cost more than the call). */
const SHORT_STRING = 64;

function putString(buf: Buffer, at: number, value: string): number {
  const n = value.length;
  if (n <= SHORT_STRING) {
    // printable ASCII without a quote or a backslash, the common case, is its own JSON and UTF-8
    buf[at] = QUOTE;
    let k = 0;
    for (; k < n; k++) {
      const c = value.charCodeAt(k);
      if (c < 0x20 || c > 0x7e || c === QUOTE || c === BACKSLASH) break;
      buf[at + 1 + k] = c;
    }
    if (k === n) {
      buf[at + 1 + n] = QUOTE;
      return at + n + 2;
    }
  }
  if (NEEDS_ESCAPE.test(value)) return at + buf.write(JSON.stringify(value), at);
  buf[at] = QUOTE;
  const end = at + 1 + buf.write(value, at + 1);
  buf[end] = QUOTE;
  return end + 1;
}

/** A non-negative integer below 2^53 (or a negative one), in decimal. */
function putInt(buf: Buffer, at: number, value: number): number {
  let n = value;
  if (n < 0) {
    buf[at++] = DASH;
    n = -n;
  }
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = at + digits - 1; i >= at; i--) {
    buf[i] = ZERO + (n % 10);
    n = Math.floor(n / 10);
  }
  return at + digits;
}

/** Seconds with three decimals, as `seconds()` of access-log.ts ("0.004"). */
function putSeconds(buf: Buffer, at: number, value: number): number {
  const ms = Math.round(value * 1000);
  const whole = Math.trunc(ms / 1000);
  const rest = ms - whole * 1000;
  let end = putInt(buf, at, whole);
  buf[end++] = DOT;
  buf[end++] = ZERO + Math.trunc(rest / 100);
  buf[end++] = ZERO + (Math.trunc(rest / 10) % 10);
  buf[end++] = ZERO + (rest % 10);
  return end;
}

/** The ISO time of a millisecond timestamp, its "YYYY-MM-DDTHH:MM:SS." made once per second. */
export interface IsoBytes {
  put(buf: Buffer, at: number, time: number): number;
}

export function isoBytes(): IsoBytes {
  let second = Number.NaN;
  let prefix: Uint8Array = new Uint8Array(0);
  return {
    put(buf, at, time) {
      const ms = time % 1000;
      if (time - ms !== second) {
        second = time - ms;
        const iso = new Date(second).toISOString();
        prefix = bytes(iso.slice(0, iso.length - 4)); // "2026-11-23T11:26:39."
      }
      let end = put(buf, at, prefix);
      buf[end++] = ZERO + Math.trunc(ms / 100);
      buf[end++] = ZERO + (Math.trunc(ms / 10) % 10);
      buf[end++] = ZERO + (ms % 10);
      buf[end++] = 0x5a; // Z
      return end;
    },
  };
}

/**
 * Writes the line of `r` (without a newline) at `at` and returns where it ends. The caller makes
 * sure `maxLineBytes(r)` bytes are free from `at`.
 */
export function encodeAccessLogLine(
  buf: Buffer,
  at: number,
  r: RequestRecord,
  time: number,
  iso: IsoBytes,
): number {
  let i = put(buf, at, OPEN);
  i = iso.put(buf, i, time);
  i = putString(buf, put(buf, i, REMOTE_ADDR), r.remoteAddress);
  i = putString(buf, put(buf, i, METHOD), r.method);
  i = putString(buf, put(buf, i, URI), r.uri);
  i = putString(buf, put(buf, i, PROTOCOL), r.protocol);
  i = putString(buf, put(buf, i, HOST), r.host);
  i = putInt(buf, put(buf, i, STATUS), r.status);
  i = putInt(buf, put(buf, i, BYTES_SENT), r.bytesSent);
  i = putString(buf, put(buf, i, REFERER), r.referer);
  i = putString(buf, put(buf, i, USER_AGENT), r.userAgent);
  i = putInt(buf, put(buf, i, REQUEST_LENGTH), r.requestLength);
  i = putSeconds(buf, put(buf, i, REQUEST_TIME), r.requestTime);
  i = putString(buf, put(buf, i, UPSTREAM_NAME), r.upstream);
  i = putString(buf, put(buf, i, ALTERNATIVE_NAME), r.canary);
  // upstream_addr, _response_time, _status: NGINX-style lists once there were retries
  const tried = r.upstreamAddr !== '';
  i = put(buf, i, UPSTREAM_ADDR);
  if (!tried) i = put(buf, i, EMPTY);
  else i = putString(buf, i, r.previousAddrs === '' ? r.upstreamAddr : r.previousAddrs + r.upstreamAddr);
  i = put(buf, i, RESPONSE_LENGTH);
  i = r.upstreamResponseLength < 0 ? put(buf, i, NOT_OBSERVED) : putInt(buf, i, r.upstreamResponseLength);
  i = put(buf, i, RESPONSE_TIME);
  if (!tried) i = put(buf, i, EMPTY);
  else if (r.previousTimes !== '')
    i = putString(buf, i, r.previousTimes + (r.responseTime < 0 ? '-' : secondsText(r.responseTime)));
  else if (r.responseTime < 0) i = put(buf, i, NOT_OBSERVED);
  else {
    buf[i++] = QUOTE;
    i = putSeconds(buf, i, r.responseTime);
    buf[i++] = QUOTE;
  }
  i = put(buf, i, UPSTREAM_STATUS);
  if (!tried) i = put(buf, i, EMPTY);
  else if (r.previousStatuses !== '')
    i = putString(buf, i, r.previousStatuses + (r.upstreamStatus === 0 ? '-' : String(r.upstreamStatus)));
  else if (r.upstreamStatus === 0) i = put(buf, i, NOT_OBSERVED);
  else {
    buf[i++] = QUOTE;
    i = putInt(buf, i, r.upstreamStatus);
    buf[i++] = QUOTE;
  }
  i = putString(buf, put(buf, i, REQ_ID), r.requestId);
  i = putString(buf, put(buf, i, NAMESPACE), r.namespace);
  i = putString(buf, put(buf, i, INGRESS), r.ingress);
  i = putString(buf, put(buf, i, SERVICE), r.service);
  i = putString(buf, put(buf, i, SERVICE_PORT), r.servicePort);
  i = putString(buf, put(buf, i, LOCATION_PATH), r.path);
  return put(buf, i, CLOSE);
}

/** Seconds with NGINX's millisecond resolution, as NGINX prints them ("0.004"). */
export function secondsText(value: number): string {
  const ms = Math.round(value * 1000);
  const whole = Math.trunc(ms / 1000);
  const rest = ms - whole * 1000;
  return `${whole}.${rest < 10 ? '00' : rest < 100 ? '0' : ''}${rest}`;
}
