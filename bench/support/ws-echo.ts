// The WebSocket echo upstream of bench/ws-bench.ts: `node bench/support/ws-echo.ts PORT`. Listens on
// 127.0.0.1:PORT; a WebSocket message comes back unchanged (text as text, binary as binary), and a
// plain HTTP request gets 200 "ok" (the readiness probe, through ingress-ts too). No compression.

import http from 'node:http';
import { WebSocketServer } from 'ws';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write('usage: node bench/support/ws-echo.ts PORT\n');
  process.exit(2);
}

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' });
  res.end('ok\n');
});
const wss = new WebSocketServer({ server, perMessageDeflate: false, clientTracking: false });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('error', () => ws.terminate());
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening on 127.0.0.1:${port}\n`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
