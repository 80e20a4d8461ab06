// The health listener (--healthz-port): GET /healthz answers 200 while serving, 500 once shutting
// down (ingress-nginx: load balancers stop sending before the listeners close); GET /metrics answers
// the Prometheus exposition when metrics are enabled.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Healthz {
  readonly server: Server;
  /** from now on /healthz answers 500 */
  shuttingDown(): void;
  listen(port: number, host: string): Promise<AddressInfo>;
  close(): Promise<void>;
}

/** Produces the /metrics answer. */
export type MetricsSource = () => Promise<{ contentType: string; body: string }>;

export function createHealthz(ready: () => boolean, metrics: MetricsSource | null = null): Healthz {
  let stopping = false;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics' && metrics !== null) {
      metrics().then(
        ({ contentType, body }) => res.writeHead(200, { 'Content-Type': contentType }).end(body),
        (error: unknown) =>
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${String(error)}\n`),
      );
      return;
    }
    if (path !== '/healthz') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    const ok = !stopping && ready();
    res.writeHead(ok ? 200 : 500, { 'Content-Type': 'text/plain' }).end(ok ? 'ok\n' : 'not ready\n');
  });
  return {
    server,
    shuttingDown() {
      stopping = true;
    },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host: host === '' ? undefined : host }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
