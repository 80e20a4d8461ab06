// The access log: one JSON line per request with the fields of ingress-nginx's log-format-upstream
// (plus namespace, ingress and service), written by pino through an asynchronous destination, so a
// slow disk or a full pipe never blocks a request (lines are dropped beyond a bounded buffer).
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

/** Seconds with NGINX's millisecond resolution; '-' when not observed. */
function seconds(value: number): number | string {
  return value < 0 ? '-' : Math.round(value * 1000) / 1000;
}

/** The line's fields: log-format-upstream's variables under their NGINX names. */
export function accessLogFields(r: RequestRecord): Record<string, unknown> {
  const tried = r.upstreamAddr !== '';
  return {
    remote_addr: r.remoteAddress,
    request_method: r.method,
    request_uri: r.uri,
    server_protocol: r.protocol,
    host: r.host,
    status: r.status,
    bytes_sent: r.bytesSent,
    http_referer: r.referer,
    http_user_agent: r.userAgent,
    request_length: r.requestLength,
    request_time: seconds(r.requestTime),
    proxy_upstream_name: r.upstream,
    proxy_alternative_upstream_name: r.canary,
    upstream_addr: tried ? r.previousAddrs + r.upstreamAddr : '',
    upstream_response_length: r.upstreamResponseLength < 0 ? '-' : r.upstreamResponseLength,
    upstream_response_time: tried ? r.previousTimes + String(seconds(r.responseTime)) : '',
    upstream_status: tried
      ? r.previousStatuses + (r.upstreamStatus === 0 ? '-' : String(r.upstreamStatus))
      : '',
    req_id: r.requestId,
    namespace: r.namespace,
    ingress: r.ingress,
    service: r.service,
    service_port: r.servicePort,
    location_path: r.path,
  };
}

function isStdout(path: string): boolean {
  return path === '' || path === NGINX_ACCESS_LOG_PATH || path === '/dev/stdout';
}

export function createAccessLog(options: AccessLogOptions): AccessLog {
  const stdout =
    options.stdout ??
    (options.pretty === true
      ? (pino.transport({ target: 'pino-pretty', options: { destination: 1 } }) as DestinationStream)
      : pino.destination({ dest: 1, sync: false, maxLength: MAX_BUFFERED_BYTES }));
  const make = (destination: DestinationStream) =>
    pino(
      {
        base: null,
        timestamp: pino.stdTimeFunctions.isoTime,
      },
      destination,
    );

  let logger = make(stdout);
  let file: ReturnType<typeof pino.destination> | null = null;
  let destination = 'stdout';
  let disabled = false;
  let skip: ReadonlySet<string> = new Set();

  const closeFile = (stream: ReturnType<typeof pino.destination>) =>
    new Promise<void>((resolve) => {
      stream.once('close', () => resolve());
      stream.once('error', () => resolve());
      stream.end();
    });

  const useStdout = () => {
    logger = make(stdout);
    destination = 'stdout';
  };

  return {
    write(record) {
      if (disabled || !record.accessLog || skip.has(record.uri)) return;
      logger.info(accessLogFields(record));
    },
    configure(settings) {
      disabled = settings.disabled;
      skip = new Set(settings.skipUrls);
      const wanted = isStdout(settings.path) ? 'stdout' : settings.path;
      if (wanted === destination) return;
      const previous = file;
      file = null;
      if (wanted === 'stdout') {
        useStdout();
      } else {
        const stream = pino.destination({
          dest: wanted,
          sync: false,
          mkdir: true,
          maxLength: MAX_BUFFERED_BYTES,
        });
        stream.on('error', (error: Error) => {
          options.log.error(
            { err: error, path: wanted },
            'access log file failed; access log lines go to stdout',
          );
          if (file === stream) {
            file = null;
            useStdout();
          }
        });
        file = stream;
        logger = make(stream);
        destination = wanted;
      }
      if (previous !== null) void closeFile(previous);
    },
    get destination() {
      return destination;
    },
    async close() {
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
