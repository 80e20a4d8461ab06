// The floor of a Node.js proxy, for comparison: `http.createServer` and one undici Pool, each request
// forwarded with `dispatch()` (headers passed through except Connection, no routing, no forwarded headers, no
// retries), the response head written with `writeHead` and the body chunks with backpressure. This is
// the "undici floor" contender of proxy-bench.ts. Run: node bench/support/bare-proxy.ts PORT UPSTREAM_PORT

import { createServer, type IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, Pool } from 'undici';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!port || !upstreamPort) {
  process.stderr.write('usage: bare-proxy.ts PORT UPSTREAM_PORT\n');
  process.exit(2);
}
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { connections: null });

createServer((req, res) => {
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
}).listen(port, '127.0.0.1');
