// Small echo backends for the demo: each answers with its name and what it received, as JSON, and
// echoes WebSocket messages. They listen on 127.0.0.1 at the ports the demo EndpointSlices name.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export const DEMO_BACKENDS = [
  { name: 'app-1', port: 18081 },
  { name: 'app-2', port: 18082 },
  { name: 'api', port: 18083 },
  { name: 'preview', port: 18084 },
  { name: 'fallback', port: 18085 },
] as const;

export function echoServer(name: string): Server {
  const server = createServer((req, res) => {
    const body = JSON.stringify(
      { backend: name, method: req.method, url: req.url, headers: req.headers },
      null,
      2,
    );
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body) + 1,
      });
      res.end(`${body}\n`);
    });
  });
  const sockets = new WebSocketServer({ server });
  sockets.on('connection', (socket) => socket.on('message', (data, binary) => socket.send(data, { binary })));
  return server;
}

export async function startDemoBackends(host = '127.0.0.1'): Promise<{ close(): Promise<void> }> {
  const servers: Server[] = [];
  for (const { name, port } of DEMO_BACKENDS) {
    const server = echoServer(name);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new Error(`demo backend ${name} cannot listen on ${host}:${port}: ${error.code ?? error.message}`),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    servers.push(server);
  }
  return {
    async close() {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
        ),
      );
    },
  };
}

export function addressOf(server: Server): AddressInfo {
  return server.address() as AddressInfo;
}
