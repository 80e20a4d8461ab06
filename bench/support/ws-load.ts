// The WebSocket load generator of bench/ws-bench.ts, run as a child process:
//
//   node bench/support/ws-load.ts --url ws://127.0.0.1:PORT/ [--host HOST] --connections C --window W
//        --duration S [--warmup S] [--size BYTES]
//
// Opens C connections (no compression). Each keeps W text messages of SIZE bytes in flight: it sends W
// at once, then one more for each echo it receives. Echoes come back in order on a connection, so a
// FIFO of send times per connection gives each echo's round-trip time. After WARMUP seconds it prints
// {"event":"measuring"}; after DURATION more seconds it prints one result line:
//
//   {"event":"result","messages":N,"seconds":S,"rate":N/S,"p50Ms":..,"p99Ms":..,"errors":E,"connections":C}
//
// messages and the latencies count only echoes received between those two lines. errors counts the
// connections that failed (an error, a refused handshake included) or closed before the end of that
// window. Then it closes the connections and exits 0; it exits 1 when no connection opened and 2 on
// bad arguments.

import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { percentile } from './harness.ts';

export interface LoadResult {
  messages: number;
  seconds: number;
  rate: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  connections: number;
}

const HANDSHAKE_TIMEOUT_MS = 10000;

const connect = (url: string, host: string | undefined): WebSocket =>
  new WebSocket(url, {
    perMessageDeflate: false,
    handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    headers: host === undefined ? {} : { host },
  });

/** One connection, one message, its echo: for the benchmark's setup checks. */
export function echoOnce(url: string, host: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = connect(url, host);
    const message = `ping ${Date.now()}`;
    ws.on('open', () => ws.send(message));
    ws.on('message', (data) => {
      ws.close();
      const text = String(data);
      if (text === message) resolve(text);
      else reject(new Error(`echo of ${url} was "${text}", not "${message}"`));
    });
    ws.on('error', reject);
  });
}

/** Nearest-rank percentile (0 < q <= 1) of an ascending array. */
function usage(message: string): never {
  process.stderr.write(`ws-load: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: 'string' },
        host: { type: 'string' },
        connections: { type: 'string' },
        window: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string', default: '2' },
        size: { type: 'string', default: '64' },
      },
      strict: true,
    }));
  } catch (error) {
    usage((error as Error).message);
  }
  const count = (name: string, min: number): number => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n < min) usage(`--${name} expects a number >= ${min}`);
    return n;
  };
  const url = values.url ?? usage('--url is required');
  const host = values.host;
  const connections = Math.floor(count('connections', 1));
  const window = Math.floor(count('window', 1));
  const durationMs = count('duration', 0.1) * 1000;
  const warmupMs = count('warmup', 0) * 1000;
  const payload = Buffer.alloc(Math.floor(count('size', 1)), 'x');

  let running = true;
  let measuring = false;
  let ended = false;
  let errors = 0;
  let messages = 0;
  let samples = new Float64Array(1 << 20);

  const sockets: WebSocket[] = [];
  const opened: Array<Promise<boolean>> = [];
  for (let i = 0; i < connections; i++) {
    const ws = connect(url, host);
    sockets.push(ws);
    // send times of the messages in flight on this connection, oldest at `head`
    const sentAt = new Float64Array(window);
    let head = 0;
    let tail = 0;
    const send = () => {
      sentAt[tail] = performance.now();
      tail = (tail + 1) % window;
      ws.send(payload, { binary: false });
    };
    opened.push(
      new Promise((resolve) => {
        ws.once('open', () => resolve(true));
        ws.once('error', () => resolve(false));
        ws.once('close', () => resolve(false));
      }),
    );
    ws.on('open', () => {
      for (let k = 0; k < window; k++) send();
    });
    ws.on('message', () => {
      const now = performance.now();
      const rtt = now - sentAt[head]!;
      head = (head + 1) % window;
      if (measuring) {
        if (messages === samples.length) {
          const grown = new Float64Array(samples.length * 2);
          grown.set(samples);
          samples = grown;
        }
        samples[messages++] = rtt;
      }
      if (running) send();
    });
    // a connection counts once, whether it fails with an error, a close or both
    let failed = false;
    const failure = () => {
      if (!ended && !failed) {
        failed = true;
        errors++;
      }
    };
    ws.on('error', failure);
    ws.on('close', failure);
  }

  const open = (await Promise.all(opened)).filter(Boolean).length;
  if (open === 0) {
    process.stderr.write(`ws-load: no connection to ${url} opened (${errors} errors)\n`);
    process.exit(1);
  }
  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  measuring = true;
  const start = performance.now();
  process.stdout.write('{"event":"measuring"}\n');
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  const end = performance.now();
  measuring = false;
  running = false;
  ended = true;

  const sorted = samples.subarray(0, messages).sort();
  const seconds = (end - start) / 1000;
  const result: LoadResult = {
    messages,
    seconds,
    rate: messages / seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    errors,
    connections: open,
  };
  process.stdout.write(`${JSON.stringify({ event: 'result', ...result })}\n`);

  // close politely (the echoes still in flight arrive first), but do not wait long
  await Promise.race([
    Promise.all(
      sockets.map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) resolve();
            else {
              ws.once('close', () => resolve());
              ws.close(1000);
            }
          }),
      ),
    ),
    new Promise((resolve) => setTimeout(resolve, 3000)),
  ]);
  process.exit(0);
}

if (import.meta.main) await main();
