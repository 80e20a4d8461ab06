// The compressor between an exchange and its client, on real sockets: a client that stops reading
// pauses the compressor and, through it, the writer (its buffer stays bounded); clients that abort
// destroy their compressors (none left behind); an error in one destroys that response only.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGunzip, gunzipSync } from 'node:zlib';
import t from 'tap';
import {
  CompressingSink,
  compileCompression,
  compressResponse,
} from '../../lib/dataplane/responses/compression.ts';
import { type CompressionConfig, DEFAULT_COMPRESSION } from '../../lib/model/configmap/compression-keys.ts';

const config = structuredClone(DEFAULT_COMPRESSION) as CompressionConfig;
config.gzip.enabled = true;
const COMPRESSION = compileCompression(config);
if (COMPRESSION === null) throw new Error('expected compression on');

/** A server whose handler compresses its response and hands the sink to `serve`. */
async function server(serve: (sink: CompressingSink, res: ServerResponse) => void) {
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    const out: Array<string | string[]> = ['content-type', 'text/html'];
    const sink = compressResponse(
      COMPRESSION as NonNullable<typeof COMPRESSION>,
      req,
      res,
      200,
      { 'content-type': 'text/html' },
      out,
    );
    res.writeHead(200, out);
    if (!(sink instanceof CompressingSink)) throw new Error('expected a compressor');
    serve(sink, res);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { server: s, port: (s.address() as AddressInfo).port };
}

/** Hex of random bytes: compresses to about half, so the loopback buffers cannot hide it all. */
const noise = (n: number): Buffer => Buffer.from(randomBytes(n / 2).toString('hex'));

t.test('a client that stops reading pauses the compressor and the writer', async (t) => {
  const total = 48 << 20;
  const chunk = noise(64 << 10);
  const seen = { written: 0, maxBuffered: 0, finished: false };
  let paused!: () => void;
  const compressorPaused = new Promise<void>((resolve) => {
    paused = resolve;
  });
  const { server: s, port } = await server((sink, res) => {
    const pump = () => {
      while (seen.written < total) {
        seen.written += chunk.length;
        const more = sink.write(chunk);
        // the stream starts at the first write
        if (seen.written === chunk.length) sink.stream?.once('pause', () => paused());
        seen.maxBuffered = Math.max(seen.maxBuffered, res.writableLength);
        if (!more) {
          sink.stream?.once('drain', pump);
          return;
        }
      }
      seen.finished = true;
      paused(); // the writer got through: the client resumes, and the test says the pause never came
      sink.end();
    };
    pump();
  });
  t.teardown(() => s.close());
  const res = await new Promise<IncomingMessage>((resolve) => {
    request({ port, host: '127.0.0.1', headers: { 'accept-encoding': 'gzip' }, agent: false }, (r) => {
      r.pause();
      resolve(r);
    }).end();
  });
  await compressorPaused;
  t.notOk(seen.finished, `the writer was held after ${seen.written} of ${total} bytes`);
  t.ok(seen.maxBuffered < 1 << 20, `the response buffered at most ${seen.maxBuffered} bytes`);
  const gunzip = createGunzip();
  let got = 0;
  gunzip.on('data', (c: Buffer) => {
    got += c.length;
  });
  res.pipe(gunzip);
  await once(gunzip, 'end');
  t.equal(got, total, 'every byte once the client reads again');
});

t.test('clients that abort destroy their compressors', async (t) => {
  const n = 100;
  let closed = 0;
  let allDone!: () => void;
  const allClosed = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const { server: s, port } = await server((sink) => {
    // a body that never ends on its own
    sink.write(noise(16 << 10));
    const timer = setInterval(() => sink.write(noise(16 << 10)), 2);
    sink.stream?.once('close', () => {
      clearInterval(timer);
      closed++;
      if (closed === n) allDone();
    });
  });
  t.teardown(() => s.close());
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const req = request(
            { port, host: '127.0.0.1', headers: { 'accept-encoding': 'gzip' }, agent: false },
            (res) => {
              res.once('data', () => {
                req.destroy();
                resolve();
              });
            },
          );
          req.on('error', () => resolve());
          req.end();
        }),
    ),
  );
  await allClosed;
  t.equal(closed, n, 'every compressor closed');
});

t.test('an error in the compressor destroys its response only', async (t) => {
  let count = 0;
  const { server: s, port } = await server((sink) => {
    count++;
    sink.write(Buffer.from('<html>'));
    if (count === 1) sink.stream?.destroy(new Error('compressor failed'));
    else sink.end(Buffer.from('ok</html>'));
  });
  t.teardown(() => s.close());
  const fetch = () =>
    new Promise<string>((resolve) => {
      const req = request(
        { port, host: '127.0.0.1', headers: { 'accept-encoding': 'gzip' }, agent: false },
        (res) => {
          const gunzip = createGunzip();
          let body = '';
          gunzip.on('data', (c: Buffer) => {
            body += c.toString();
          });
          gunzip.on('end', () => resolve(`complete: ${body}`));
          gunzip.on('error', () => resolve('cut'));
          res.on('aborted', () => resolve('cut'));
          res.on('error', () => resolve('cut'));
          res.pipe(gunzip);
        },
      );
      req.on('error', () => resolve('cut'));
      req.end();
    });
  t.equal(await fetch(), 'cut', 'the failed response is cut');
  t.equal(await fetch(), 'complete: <html>ok</html>', 'the next one is whole');
});

t.test('a body that comes in one piece is compressed at once, without a stream', async (t) => {
  const body = Buffer.from('<p>one piece</p>'.repeat(500));
  let streamed: unknown = 'unset';
  const { server: s, port } = await server((sink) => {
    sink.end(body);
    streamed = sink.stream;
  });
  t.teardown(() => s.close());
  const got = await new Promise<Buffer>((resolve, reject) => {
    request({ port, host: '127.0.0.1', headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    }).end();
  });
  t.equal(streamed, null, 'no zlib stream');
  t.ok(got.length < body.length / 10, `${got.length} bytes for ${body.length}`);
  t.same(gunzipSync(got), body, 'decodes to the body');
});
