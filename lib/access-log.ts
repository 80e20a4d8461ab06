// The access log: one JSON line per request with the fields of ingress-nginx's log-format-upstream
// (plus namespace, ingress and service), in pino's line format ({"level":30,"time":"<ISO>",...}),
// so pino-pretty and log pipelines that read the controller's own logs read these too.
//
// The hot part is specialised, because it runs once per request (bench/README.md, "metrics and
// access log on vs off"): the line is written by one function that knows the fields, instead of
// pino's generic serializer, and lines go out in batches (128 KiB, or after 100 ms) to pino's
// asynchronous destination (SonicBoom), so a slow disk or a full pipe never blocks a request (lines
// are dropped beyond a bounded buffer) and there is one write per batch, not one per request.
//
// Where lines go is the ConfigMap's `access-log-path`: ingress-nginx's default
// /var/log/nginx/access.log is a link to the container's stdout, so it, "" and /dev/stdout mean
// standard output here; any other path is a file (opened again when the key changes).
// `disable-access-log`, `enable-access-log` and `enable-access-log-for-default-backend` are
// already folded into `record.accessLog` by the runtime; `skip-access-log-urls` is applied here.

import { type DestinationStream, pino } from 'pino';
import type { RequestRecord } from './dataplane/request-record.ts';
import type { Logger } from './log.ts';

/** ingress-nginx's default access-log-path, which its image links to /dev/stdout. */
export const NGINX_ACCESS_LOG_PATH = '/var/log/nginx/access.log';
/** The most the asynchronous buffer holds before lines are dropped (SonicBoom maxLength). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Lines are written in batches of about this many characters... */
export const BATCH_CHARS = 128 * 1024;
/** ...or after this long, whichever comes first. */
const FLUSH_DELAY_MS = 100;
/** The largest single write to the destination (SonicBoom maxWrite): a batch fits in one. */
const MAX_WRITE_BYTES = 256 * 1024;

export interface AccessLogSettings {
  disabled: boolean;
  skipUrls: readonly string[];
  path: string;
}

export interface AccessLog {
  /** Writes the line of one finished request (unless its route or the settings say not to). */
  write(record: RequestRecord): void;
  /** Applies the ConfigMap's settings of a new model. */
  configure(settings: AccessLogSettings): void;
  /** the destination now in use: 'stdout' or a file path */
  readonly destination: string;
  /** Writes out what is buffered and closes a file destination. */
  close(): Promise<void>;
}

export interface AccessLogOptions {
  /** where problems with the log file are reported */
  log: Logger;
  /** standard output (tests pass a stream); default: an asynchronous destination on fd 1 */
  stdout?: DestinationStream;
  /** human-friendly lines (a terminal, not production) */
  pretty?: boolean;
}

/** Seconds with NGINX's millisecond resolution, as NGINX prints them ("0.004"). */
function seconds(value: number): string {
  return value.toFixed(3);
}

/** Characters a JSON string cannot hold as they are: quote, backslash, controls, surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be escaped
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A JSON string: most values need no escaping, and a test is cheaper than JSON.stringify. */
function str(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** pino's info level: what the controller's own logger writes for `log.info`. */
const INFO = 30;

/**
 * One line, without the trailing newline: pino's `level` and ISO `time`, then log-format-upstream's
 * variables under their NGINX names. Strings are escaped as JSON (headers and the URI are the
 * client's); numbers are written as such.
 */
export function accessLogLine(r: RequestRecord, isoTime: string): string {
  const tried = r.upstreamAddr !== '';
  const upstreamStatus = r.upstreamStatus === 0 ? '-' : String(r.upstreamStatus);
  const responseTime = r.responseTime < 0 ? '-' : seconds(r.responseTime);
  return (
    `{"level":${INFO},"time":"${isoTime}"` +
    `,"remote_addr":${str(r.remoteAddress)}` +
    `,"request_method":${str(r.method)}` +
    `,"request_uri":${str(r.uri)}` +
    `,"server_protocol":${str(r.protocol)}` +
    `,"host":${str(r.host)}` +
    `,"status":${r.status}` +
    `,"bytes_sent":${r.bytesSent}` +
    `,"http_referer":${str(r.referer)}` +
    `,"http_user_agent":${str(r.userAgent)}` +
    `,"request_length":${r.requestLength}` +
    `,"request_time":${seconds(r.requestTime)}` +
    `,"proxy_upstream_name":${str(r.upstream)}` +
    `,"proxy_alternative_upstream_name":${str(r.canary)}` +
    `,"upstream_addr":${str(tried ? r.previousAddrs + r.upstreamAddr : '')}` +
    `,"upstream_response_length":${r.upstreamResponseLength < 0 ? '"-"' : r.upstreamResponseLength}` +
    `,"upstream_response_time":${str(tried ? r.previousTimes + responseTime : '')}` +
    `,"upstream_status":${str(tried ? r.previousStatuses + upstreamStatus : '')}` +
    `,"req_id":${str(r.requestId)}` +
    `,"namespace":${str(r.namespace)}` +
    `,"ingress":${str(r.ingress)}` +
    `,"service":${str(r.service)}` +
    `,"service_port":${str(r.servicePort)}` +
    `,"location_path":${str(r.path)}}`
  );
}

/**
 * `new Date(now()).toISOString()`, with the costly part (~1.4 µs per call here) done once per second:
 * the milliseconds are appended to the second's prefix.
 */
export function isoClock(now: () => number = Date.now): () => string {
  let second = Number.NaN;
  let prefix = '';
  return () => {
    const t = now();
    const ms = t % 1000;
    if (t - ms !== second) {
      second = t - ms;
      const iso = new Date(second).toISOString();
      prefix = iso.slice(0, iso.length - 4); // "2026-11-23T11:26:39."
    }
    return `${prefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
  };
}

function isStdout(path: string): boolean {
  return path === '' || path === NGINX_ACCESS_LOG_PATH || path === '/dev/stdout';
}

type FileDestination = ReturnType<typeof pino.destination>;

export function createAccessLog(options: AccessLogOptions): AccessLog {
  const stdout =
    options.stdout ??
    (options.pretty === true
      ? (pino.transport({ target: 'pino-pretty', options: { destination: 1 } }) as DestinationStream)
      : pino.destination({ dest: 1, sync: false, maxWrite: MAX_WRITE_BYTES, maxLength: MAX_BUFFERED_BYTES }));

  let target: DestinationStream = stdout;
  let file: FileDestination | null = null;
  let destination = 'stdout';
  let disabled = false;
  let skip: ReadonlySet<string> = new Set();

  // Lines wait here, one string, until there are BATCH_CHARS of them or FLUSH_DELAY_MS passed:
  // every write to the destination costs a round trip through libuv's thread pool (whose thread
  // competes with this one for the core), so under load one write carries ~200 lines.
  let pending = '';
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (pending === '') return;
    const lines = pending;
    pending = '';
    target.write(lines);
  };

  const isoNow = isoClock();

  const closeFile = (stream: FileDestination) =>
    new Promise<void>((resolve) => {
      stream.once('close', () => resolve());
      stream.once('error', () => resolve());
      stream.end();
    });

  const switchTo = (next: DestinationStream, name: string) => {
    flush();
    target = next;
    destination = name;
  };

  return {
    write(record) {
      if (disabled || !record.accessLog || skip.has(record.uri)) return;
      pending += `${accessLogLine(record, isoNow())}\n`;
      if (pending.length >= BATCH_CHARS) flush();
      else if (timer === null) timer = setTimeout(flush, FLUSH_DELAY_MS);
    },
    configure(settings) {
      disabled = settings.disabled;
      skip = new Set(settings.skipUrls);
      const wanted = isStdout(settings.path) ? 'stdout' : settings.path;
      if (wanted === destination) return;
      const previous = file;
      file = null;
      if (wanted === 'stdout') {
        switchTo(stdout, 'stdout');
      } else {
        const stream = pino.destination({
          dest: wanted,
          sync: false,
          mkdir: true,
          maxWrite: MAX_WRITE_BYTES,
          maxLength: MAX_BUFFERED_BYTES,
        });
        stream.on('error', (error: Error) => {
          options.log.error(
            { err: error, path: wanted },
            'access log file failed; access log lines go to stdout',
          );
          if (file === stream) {
            file = null;
            switchTo(stdout, 'stdout');
          }
        });
        switchTo(stream, wanted);
        file = stream;
      }
      if (previous !== null) void closeFile(previous);
    },
    get destination() {
      return destination;
    },
    async close() {
      flush();
      const current = file;
      file = null;
      if (current !== null) await closeFile(current);
      else if (options.stdout === undefined && 'flushSync' in stdout) {
        try {
          (stdout as { flushSync(): void }).flushSync();
        } catch {
          // stdout closed or not ready: nothing more can be written
        }
      }
    },
  };
}
