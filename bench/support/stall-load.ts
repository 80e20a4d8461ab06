// The load side of swap-stall.ts, run as a worker thread so that it keeps sending while the data
// plane's thread is blocked: `connections` keep-alive connections, each sending its next request as
// soon as the previous answer arrived. Every request is recorded as (start, latency) on a clock both
// threads share (timeOrigin + now); the parent asks for the requests started within a window.

import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

export interface LoadOptions {
  port: number;
  host: string;
  connections: number;
}

export interface WindowStats {
  requests: number;
  p50: number;
  p99: number;
  max: number;
}

export type LoadMessage = { type: 'window'; from: number; to: number } | { type: 'stop' };

const now = (): number => performance.timeOrigin + performance.now();

function run(options: LoadOptions): void {
  const port = parentPort;
  if (port === null) throw new Error('stall-load.ts runs as a worker thread');
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const starts: number[] = [];
  const latencies: number[] = [];
  let running = true;
  const once = (): void => {
    if (!running) return;
    const start = now();
    const req = request(
      { port: options.port, host: '127.0.0.1', path: '/', headers: { host: options.host }, agent },
      (res) => {
        res.resume();
        res.on('end', () => {
          starts.push(start);
          latencies.push(now() - start);
          once();
        });
      },
    );
    req.on('error', () => setImmediate(once));
    req.end();
  };
  for (let i = 0; i < options.connections; i++) once();
  port.on('message', (message: LoadMessage) => {
    if (message.type === 'stop') {
      running = false;
      agent.destroy();
      port.close();
      return;
    }
    const inWindow: number[] = [];
    for (let i = 0; i < starts.length; i++) {
      const start = starts[i] as number;
      if (start >= message.from && start <= message.to) inWindow.push(latencies[i] as number);
    }
    inWindow.sort((a, b) => a - b);
    const at = (q: number): number =>
      inWindow[Math.min(inWindow.length - 1, Math.floor(q * inWindow.length))] ?? 0;
    const stats: WindowStats = {
      requests: inWindow.length,
      p50: at(0.5),
      p99: at(0.99),
      max: inWindow[inWindow.length - 1] ?? 0,
    };
    // keep the record short: only what a later window can still ask for
    starts.length = 0;
    latencies.length = 0;
    port.postMessage(stats);
  });
}

if (parentPort !== null && workerData !== undefined) run(workerData as LoadOptions);
