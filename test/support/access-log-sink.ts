// The access log of an in-process controller (start()'s `accessLogStdout`), as lines a test can wait
// for: lines are written in batches, so a test awaits the one it needs instead of sleeping.
import { once } from 'node:events';
import { Writable } from 'node:stream';

export interface AccessLogSink {
  /** what to pass as `accessLogStdout` */
  stream: Writable;
  /** every line so far, in order */
  lines: string[];
  /** The first line containing all `parts`, once it is written. */
  line(...parts: string[]): Promise<string>;
}

export function accessLogSink(): AccessLogSink {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(line);
      stream.emit('lines');
      callback();
    },
  });
  return {
    stream,
    lines,
    async line(...parts) {
      for (;;) {
        const found = lines.find((l) => parts.every((p) => l.includes(p)));
        if (found !== undefined) return found;
        await once(stream, 'lines');
      }
    },
  };
}
