// The floor of a Node.js proxy, for comparison: `http.createServer` and one undici Pool, each request
// forwarded with `dispatch()` (headers passed through except Connection, no routing, no forwarded headers, no
// retries, no access log, no metrics), the response head written with `writeHead` and the body chunks with
// backpressure. This is the "undici floor" contender of proxy-bench.ts and threads-bench.ts.
// Run: node bench/support/bare-proxy.ts PORT UPSTREAM_PORT [THREADS]
// THREADS 1 (the default) serves on the main thread; THREADS N > 1 starts N worker threads, each with
// its own server and pool listening on PORT with `reusePort` (the kernel spreads connections across
// them), while the main thread only waits, as ingress-ts does with `worker-processes: N`.

import { createServer, type IncomingHttpHeaders } from 'node:http';
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { type Dispatcher, Pool } from 'undici';

interface Args {
  port: number;
  upstreamPort: number;
  threads: number;
}

function serve({ port, upstreamPort, threads }: Args): void {
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: null });
  const server = createServer((req, res) => {
    const handler: Dispatcher.DispatchHandler = {
      onResponseStart(controller, statusCode, headers: IncomingHttpHeaders) {
        delete headers.connection;
        delete headers['keep-alive'];
        res.writeHead(statusCode, headers);
        res.on('drain', () => controller.resume());
      },
      onResponseData(controller, chunk) {
        if (!res.write(chunk)) controller.pause();
      },
      onResponseEnd() {
        res.end();
      },
      onRequestStart() {},
      onResponseError() {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      },
    };
    // undici refuses hop-by-hop request headers; everything else goes through as it is
    const headers: string[] = [];
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.length === 10 && name.toLowerCase() === 'connection') continue;
      headers.push(name, raw[i + 1]!);
    }
    pool.dispatch({ path: req.url ?? '/', method: req.method ?? 'GET', headers, body: null }, handler);
  });
  server.listen({ port, host: '127.0.0.1', reusePort: threads > 1 });
}

if (isMainThread) {
  const [port, upstreamPort, threadsText] = process.argv.slice(2);
  const args: Args = {
    port: Number(port),
    upstreamPort: Number(upstreamPort),
    threads: threadsText === undefined ? 1 : Number(threadsText),
  };
  if (!args.port || !args.upstreamPort || !Number.isInteger(args.threads) || args.threads < 1) {
    process.stderr.write('usage: bare-proxy.ts PORT UPSTREAM_PORT [THREADS]\n');
    process.exit(2);
  }
  // exit on a signal, so that `node --cpu-prof` writes its profile
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
  if (args.threads === 1) serve(args);
  else {
    for (let i = 0; i < args.threads; i++) {
      // a thread that fails to listen (or dies) ends the floor: a partial floor would flatter ingress-ts
      new Worker(new URL(import.meta.url), { workerData: args }).on('error', (error) => {
        process.stderr.write(`bare-proxy thread: ${error.stack ?? String(error)}\n`);
        process.exit(1);
      });
    }
  }
} else serve(workerData as Args);
