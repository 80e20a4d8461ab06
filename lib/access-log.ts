// The access log: one line per request in the format of the ConfigMap's `log-format-upstream`
// (ingress-nginx's default text format unless set), compiled once per configuration by
// dataplane/access-log-format.ts.
//
// The hot part is specialised, because it runs once per request (bench/README.md, "What metrics and
// the access log cost"): the line is encoded straight into a batch buffer by the compiled format
// instead of being made as a string. A batch (128 KiB) is written out when full or after 100 ms, to
// pino's asynchronous destination (SonicBoom) in its buffer mode, so a slow disk or a full pipe never
// blocks a request (lines are dropped beyond a bounded buffer) and there is one write per batch, not
// one per request.
//
// Where lines go is the ConfigMap's `access-log-path`: ingress-nginx's default
// /var/log/nginx/access.log is a link to the container's stdout, so it, "" and /dev/stdout mean
// standard output here; any other path is a file (opened again when the key changes).
// `disable-access-log`, `enable-access-log` and `enable-access-log-for-default-backend` are
// already folded into `record.accessLog` by the runtime; `skip-access-log-urls` is applied here.
//
// With data-plane worker threads, each thread encodes its own lines with the same compiled format
// (dataplane/worker/thread-records.ts) and this writer only copies their buffers of whole lines, one
// after the other, into its batch (`writeLines`): the one destination gets whole lines.

import { type DestinationStream, pino } from 'pino';
import { AccessLogChoice, type LogLineSettings } from './dataplane/access-log-choice.ts';
import type { LogLineEncoder } from './dataplane/access-log-format.ts';
import type { RequestRecord } from './dataplane/request-record.ts';
import type { Logger } from './log.ts';

/** ingress-nginx's default access-log-path, which its image links to /dev/stdout. */
export const NGINX_ACCESS_LOG_PATH = '/var/log/nginx/access.log';
/** The most the asynchronous buffer holds before lines are dropped (SonicBoom maxLength). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Lines are written in batches of about this many bytes... */
export const BATCH_BYTES = 128 * 1024;
/** ...in a buffer with room for a long line beyond that (a longer line is written on its own). */
const BATCH_CAPACITY = BATCH_BYTES + 64 * 1024;
/** ...or after this long, whichever comes first. */
const FLUSH_DELAY_MS = 100;
/**
 * For measurement only (bench/instructions.ts), not a setting: another delay, in ms. Under valgrind a
 * process serves ~25 requests a second, so a 100 ms batch would carry 2-3 lines, each paying a timer
 * and a write through libuv's pool that natively hundreds of lines share; with a long delay, batches
 * fill up as they do on a busy core.
 */
export const FLUSH_DELAY_ENV = 'INGRESS_TS_BENCH_LOG_FLUSH_MS';

/** The batch delay: FLUSH_DELAY_MS unless `env` names another (from 1 ms to an hour). */
export function flushDelayOf(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env[FLUSH_DELAY_ENV]);
  return Number.isInteger(ms) && ms >= 1 && ms <= 3_600_000 ? ms : FLUSH_DELAY_MS;
}
/** The largest single write to the destination (SonicBoom maxWrite): a batch fits in one. */
const MAX_WRITE_BYTES = 256 * 1024;

export interface AccessLogSettings extends LogLineSettings {
  path: string;
}

export interface AccessLog {
  /**
   * Writes the line of one finished request (unless its route or the settings say not to); `time`:
   * when it ended, ms since the epoch [now].
   */
  write(record: RequestRecord, time?: number): void;
  /**
   * Writes lines a data-plane thread encoded (whole lines, each ending in a newline) after those
   * already waiting, never split: the thread already applied the settings of its model to them.
   */
  writeLines(lines: Uint8Array): void;
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

function isStdout(path: string): boolean {
  return path === '' || path === NGINX_ACCESS_LOG_PATH || path === '/dev/stdout';
}

type FileDestination = ReturnType<typeof pino.destination>;

const NEWLINE = 0x0a;

/** Where batches go, as bytes. */
interface Sink {
  write(bytes: Buffer): void;
  /** Writes out what the destination still holds, where it can (standard output at exit). */
  flushSync(): void;
}

/** pino's asynchronous destination in buffer mode: batches are written as they are. */
function sonicBoom(dest: number | string): FileDestination {
  return pino.destination({
    dest,
    sync: false,
    mkdir: typeof dest === 'string',
    contentMode: 'buffer',
    maxWrite: MAX_WRITE_BYTES,
    maxLength: MAX_BUFFERED_BYTES,
  });
}

function byteSink(stream: FileDestination): Sink {
  return {
    write: (bytes) => stream.write(bytes as unknown as string),
    flushSync() {
      try {
        stream.flushSync();
      } catch {
        // closed or not ready: nothing more can be written
      }
    },
  };
}

/** A stream that takes text (a transport, or a test's sink). */
function textSink(stream: DestinationStream): Sink {
  return { write: (bytes) => stream.write(bytes.toString('utf8')), flushSync() {} };
}

/** Standard output: SonicBoom destinations of ours take bytes; the pretty transport and a stream the
 * caller passes take text. */
function stdoutSink(options: AccessLogOptions): Sink {
  if (options.stdout !== undefined) return textSink(options.stdout);
  if (options.pretty === true)
    return textSink(
      pino.transport({ target: 'pino-pretty', options: { destination: 1 } }) as DestinationStream,
    );
  return byteSink(sonicBoom(1));
}

/** A line longer than a batch (`bytes` long), in a buffer of its size with its newline. */
function lineAlone(encoder: LogLineEncoder, record: RequestRecord, time: number, bytes: number): Buffer {
  const line = Buffer.allocUnsafe(bytes + 1);
  line[encoder.encode(line, 0, record, time)] = NEWLINE;
  return line;
}

export function createAccessLog(options: AccessLogOptions): AccessLog {
  const stdout = stdoutSink(options);

  let target: Sink = stdout;
  let file: FileDestination | null = null;
  let destination = 'stdout';
  const choice = new AccessLogChoice(false);

  // Lines wait here, encoded, until there are BATCH_BYTES of them or FLUSH_DELAY_MS passed: every
  // write to the destination costs a round trip through libuv's thread pool (whose thread competes
  // with this one for the core), so under load one write carries ~200 lines. A batch handed over is
  // the destination's until written: the next one gets a new buffer.
  let batch = Buffer.allocUnsafeSlow(BATCH_CAPACITY);
  let used = 0;
  let timer: NodeJS.Timeout | null = null;
  const delay = flushDelayOf();
  const flush = () => {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    if (used === 0) return;
    const bytes = batch.subarray(0, used);
    batch = Buffer.allocUnsafeSlow(BATCH_CAPACITY);
    used = 0;
    target.write(bytes);
  };

  const closeFile = (stream: FileDestination) =>
    new Promise<void>((resolve) => {
      stream.once('close', () => resolve());
      stream.once('error', () => resolve());
      stream.end();
    });

  const switchTo = (next: Sink, name: string) => {
    flush();
    target = next;
    destination = name;
  };

  return {
    write(record, time = Date.now()) {
      if (!choice.wants(record)) return;
      const encoder = choice.encoder;
      let end = encoder.encode(batch, used, record, time);
      if (end >= BATCH_CAPACITY && used > 0) {
        // it did not fit after the lines waiting: they go, and it is encoded again in a new batch
        flush();
        end = encoder.encode(batch, 0, record, time);
      }
      if (end >= BATCH_CAPACITY) {
        target.write(lineAlone(encoder, record, time, end));
        return;
      }
      used = end;
      batch[used++] = NEWLINE;
      if (used >= BATCH_BYTES) flush();
      else if (timer === null) timer = setTimeout(flush, delay);
    },
    writeLines(lines) {
      // copied into the batch, as lines encoded here are: the threads' batches (one per thread
      // every 50 ms) then make one write per batch here, not one each
      if (used + lines.byteLength > BATCH_CAPACITY || lines.byteLength > BATCH_BYTES) flush();
      if (lines.byteLength > BATCH_BYTES) {
        // a whole batch already: written as it is, after what waited
        target.write(Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength));
        return;
      }
      batch.set(lines, used);
      used += lines.byteLength;
      if (used >= BATCH_BYTES) flush();
      else if (timer === null) timer = setTimeout(flush, delay);
    },
    configure(settings) {
      choice.configure(settings);
      const wanted = isStdout(settings.path) ? 'stdout' : settings.path;
      if (wanted === destination) return;
      const previous = file;
      file = null;
      if (wanted === 'stdout') {
        switchTo(stdout, 'stdout');
      } else {
        const stream = sonicBoom(wanted);
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
        switchTo(byteSink(stream), wanted);
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
      else stdout.flushSync();
    },
  };
}
