// The controller's log (pino JSON lines) kept in memory, with a promise per awaited message: a test
// waits for the line that says something happened instead of sleeping.
import { Writable } from 'node:stream';

export interface LogSink {
  readonly lines: Array<Record<string, unknown>>;
  /** the stream to give createLogger */
  readonly stream: Writable;
  /** the next line whose `msg` matches, from now on */
  next(msg: RegExp): Promise<Record<string, unknown>>;
}

export function logSink(): LogSink {
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{
    test: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
  }> = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const text of String(chunk).split('\n')) {
        if (text === '') continue;
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        for (const waiter of [...waiters]) {
          if (waiter.test(line)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(line);
          }
        }
      }
      callback();
    },
  });
  return {
    lines,
    stream,
    next(msg: RegExp): Promise<Record<string, unknown>> {
      return new Promise((resolve) => waiters.push({ test: (line) => msg.test(String(line.msg)), resolve }));
    },
  };
}
